package schedtest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/nodecost"
	"github.com/nodewright/nodewright/shared/pricing"
	"github.com/nodewright/nodewright/shared/scheduling"
)

// Shape is one workload of the cost suite: the pods of a few everyday
// Deployments (and perhaps a DaemonSet) on an empty cluster, solved against
// the real catalog with one NodePool. The suite's shapes are what the cost
// tests, `make bench` and the Karpenter comparison all run.
type Shape struct {
	// Name is "<workload>/<pool>-<capacity>", e.g. "30x1cpu-2Gi/production-ondemand".
	Name     string
	Workload string
	// Pool is "production" (shared/examples/nodepool-default.yaml: c/m/r,
	// medium..8xlarge, three zones, limits lifted) or "unrestricted" (every
	// type of the catalog, three zones).
	Pool string
	// Spot says whether the pool allows spot beside on-demand.
	Spot        bool
	Pods        []*corev1.Pod
	DaemonSets  []*appsv1.DaemonSet
	NodePools   []*apis.NodePool
	NodeClasses []*apis.EC2NodeClass
	Types       []*catalog.InstanceType
	SpotPricer  catalog.SpotPricer
	Zones       []string
}

// Input is the shape as the solver takes it.
func (s Shape) Input() scheduling.Input {
	return scheduling.Input{Pods: s.Pods, DaemonSets: s.DaemonSets, NodePools: s.NodePools, NodeClasses: s.NodeClasses,
		InstanceTypes: s.Types, Spot: s.SpotPricer, Zones: s.Zones, NodeCosts: s.NodeCosts()}
}

// NodeCosts are what a node of each of the shape's NodePools costs beyond
// its instance (shared/nodecost at the shipped rates; the shapes' subnets
// map no public address): whole-node prices, as the functions solve with.
func (s Shape) NodeCosts() map[string]float64 {
	rates, _ := nodecost.For(nodecost.ShippedRegion)
	parts, err := nodecost.PerPool(s.NodePools, s.NodeClasses, nil, rates)
	if err != nil {
		panic(fmt.Sprintf("shape %s: %v", s.Name, err)) // the suite's own classes always price
	}
	return nodecost.PerHour(parts)
}

// Fingerprint identifies the shape's input: a hash of its pods, DaemonSets,
// NodePools, EC2NodeClasses, zones and node costs, so that a record made from the shape
// (test/bench/testdata/karpenter.json) can tell whether it still describes
// it. The instance types and prices have CatalogFingerprint.
func (s Shape) Fingerprint() string {
	return fingerprint(s.Pods, s.DaemonSets, s.NodePools, s.NodeClasses, s.Zones, s.NodeCosts())
}

// CatalogFingerprint identifies the instance types a shape is solved
// against, their offerings' prices in its zones and burstable types'
// baselines (every shape of the
// suite shares them).
func (s Shape) CatalogFingerprint() string {
	offerings := make([][]catalog.Offering, len(s.Types))
	bursts := map[string]catalog.Burst{}
	for i, it := range s.Types {
		offerings[i] = it.Offerings(s.Zones, s.SpotPricer)
		if b, ok := it.Burstable(); ok {
			bursts[it.Name] = b
		}
	}
	return fingerprint(s.Types, offerings, bursts)
}

// fingerprint is the first 16 hex digits of the SHA-256 of the values' JSON
// (maps' keys sorted, so the same values give the same digits).
func fingerprint(values ...any) string {
	h := sha256.New()
	enc := json.NewEncoder(h)
	for _, v := range values {
		if err := enc.Encode(v); err != nil {
			panic(fmt.Sprintf("fingerprint: %v", err)) // the suite's own values always encode
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// Deployment is n identical pods of one Deployment in namespace default,
// named <name>-0 .. <name>-<n-1> and labelled app=<name>.
type Deployment struct {
	Name        string
	Replicas    int
	CPU, Memory string
	// ZoneSpread adds a zonal topology spread (maxSkew 1, DoNotSchedule)
	// over the Deployment's own pods.
	ZoneSpread bool
}

// Pods builds the Deployment's pending pods.
func (d Deployment) Pods() []*corev1.Pod {
	l := map[string]string{"app": d.Name}
	o := PodOptions{Name: d.Name, CPU: d.CPU, Memory: d.Memory, Labels: l, Owner: "ReplicaSet/" + d.Name + "-5d8f"}
	if d.ZoneSpread {
		o.Spread = []corev1.TopologySpreadConstraint{Spread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, l)}
	}
	return Pods(d.Replicas, o)
}

// ShapeWorkload is a workload of the suite: Deployments and DaemonSets.
type ShapeWorkload struct {
	Name        string
	Deployments []Deployment
	DaemonSets  []DaemonSetOptions
}

// PodCount is the workload's number of pods.
func (w ShapeWorkload) PodCount() int {
	n := 0
	for _, d := range w.Deployments {
		n += d.Replicas
	}
	return n
}

func uniform(n int, cpu, mem string) ShapeWorkload {
	name := fmt.Sprintf("%dx%scpu-%s", n, cpu, mem)
	return ShapeWorkload{Name: name, Deployments: []Deployment{{Name: "app", Replicas: n, CPU: cpu, Memory: mem}}}
}

// ShapeWorkloads are the suite's workloads: uniform Deployments with pods
// from 100m to 16 cpu and 1 to 8 GiB per cpu, including sizes just above
// half, a third and a quarter of common nodes once their reserved resources
// are taken off; mixes of two to five Deployments; a DaemonSet; zonal
// topology spread.
func ShapeWorkloads() []ShapeWorkload {
	return []ShapeWorkload{
		uniform(200, "100m", "128Mi"),
		uniform(100, "250m", "512Mi"),
		uniform(60, "500m", "1Gi"),
		uniform(30, "1", "2Gi"),   // just above half a large (2 vCPU) node
		uniform(40, "1", "8Gi"),   // half an r large (16 GiB) node, 1:8
		uniform(24, "2", "4Gi"),   // just above half an xlarge node
		uniform(30, "2.7", "5Gi"), // just above a third of a 2xlarge node
		uniform(20, "3", "3Gi"),   // 1:1
		uniform(50, "4", "8Gi"),
		uniform(20, "4.1", "8Gi"), // just above a quarter of a 4xlarge node
		uniform(20, "2", "16Gi"),  // 1:8
		uniform(12, "8", "32Gi"),
		uniform(6, "16", "32Gi"),
		{Name: "mix2-web-worker", Deployments: []Deployment{
			{Name: "web", Replicas: 20, CPU: "1", Memory: "2Gi"},
			{Name: "worker", Replicas: 40, CPU: "250m", Memory: "512Mi"},
		}},
		{Name: "mix3-api-cache-jobs", Deployments: []Deployment{
			{Name: "api", Replicas: 10, CPU: "4", Memory: "8Gi"},
			{Name: "cache", Replicas: 30, CPU: "1", Memory: "4Gi"},
			{Name: "jobs", Replicas: 60, CPU: "200m", Memory: "256Mi"},
		}},
		{Name: "mix5-platform", Deployments: []Deployment{
			{Name: "frontend", Replicas: 30, CPU: "500m", Memory: "1Gi"},
			{Name: "api", Replicas: 20, CPU: "1", Memory: "2Gi"},
			{Name: "worker", Replicas: 10, CPU: "2", Memory: "8Gi"},
			{Name: "cache", Replicas: 6, CPU: "1", Memory: "8Gi"},
			{Name: "batch", Replicas: 8, CPU: "4", Memory: "4Gi"},
		}},
		{Name: "30x1cpu-2Gi+daemonset", Deployments: []Deployment{{Name: "app", Replicas: 30, CPU: "1", Memory: "2Gi"}},
			DaemonSets: []DaemonSetOptions{{Name: "node-agent", CPU: "200m", Memory: "256Mi"}}},
		{Name: "30x1cpu-2Gi-zonal-spread", Deployments: []Deployment{{Name: "app", Replicas: 30, CPU: "1", Memory: "2Gi", ZoneSpread: true}}},
		{Name: "mix2-zonal-spread", Deployments: []Deployment{
			{Name: "web", Replicas: 24, CPU: "500m", Memory: "1Gi", ZoneSpread: true},
			{Name: "api", Replicas: 12, CPU: "2", Memory: "4Gi", ZoneSpread: true},
		}},
	}
}

// ShapePools are the pools of the suite, by name.
var ShapePools = []string{"production", "unrestricted"}

// Shapes is every workload of ShapeWorkloads on every pool of ShapePools,
// on-demand only and with spot beside on-demand, on the real catalog with
// the spot price model (seed 0).
func Shapes() ([]Shape, error) {
	var out []Shape
	for _, w := range ShapeWorkloads() {
		for _, pool := range ShapePools {
			for _, spot := range []bool{false, true} {
				s, err := NewShape(w, pool, spot)
				if err != nil {
					return nil, err
				}
				out = append(out, s)
			}
		}
	}
	return out, nil
}

// NewShape builds workload w on a pool of the suite.
func NewShape(w ShapeWorkload, pool string, spot bool) (Shape, error) {
	cts := []string{apis.CapacityTypeOnDemand}
	capacity := "ondemand"
	if spot {
		cts = []string{apis.CapacityTypeSpot, apis.CapacityTypeOnDemand}
		capacity = "spot"
	}
	s := Shape{Name: w.Name + "/" + pool + "-" + capacity, Workload: w.Name, Pool: pool, Spot: spot,
		Types: catalog.Default().Types(), SpotPricer: pricing.Model{Catalog: catalog.Default(), Seed: 0}, Zones: Zones()}
	switch pool {
	case "production":
		nps, ncs, err := ProductionPool()
		if err != nil {
			return Shape{}, err
		}
		for _, np := range nps {
			for i, r := range np.Spec.Template.Spec.Requirements {
				if r.Key == apis.LabelCapacityType {
					np.Spec.Template.Spec.Requirements[i].Values = cts
				}
			}
		}
		s.NodePools, s.NodeClasses = nps, ncs
	case "unrestricted":
		s.NodePools = []*apis.NodePool{NodePool(NodePoolOptions{Name: "default", Requirements: []apis.NodeSelectorRequirementWithMinValues{
			PoolReq(apis.LabelCapacityType, corev1.NodeSelectorOpIn, cts...),
			PoolReq(apis.LabelZone, corev1.NodeSelectorOpIn, Zones()...),
		}})}
		s.NodeClasses = []*apis.EC2NodeClass{NodeClass("default")}
	default:
		return Shape{}, fmt.Errorf("unknown shape pool %q", pool)
	}
	for _, d := range w.Deployments {
		s.Pods = append(s.Pods, d.Pods()...)
	}
	for _, ds := range w.DaemonSets {
		s.DaemonSets = append(s.DaemonSets, DaemonSet(ds))
	}
	return s, nil
}
