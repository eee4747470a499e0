// Package karpenter runs Karpenter's own scheduler (sigs.k8s.io/karpenter,
// pinned in this module's go.mod) on exactly the pods, NodePools and instance
// types Nodewright solves in its cost suite and diverse benchmark, so that
// the two plans' prices and times can be compared side by side. It is a
// build module of its own, like the tools under test/tools, so the product's
// go.mod never carries Karpenter or its dependencies; `make bench-karpenter`
// runs it and `make test` does not.
package karpenter

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	resourcehelper "k8s.io/component-helpers/resource"
	"k8s.io/utils/clock"
	fakecr "sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/log"

	v1 "sigs.k8s.io/karpenter/pkg/apis/v1"
	"sigs.k8s.io/karpenter/pkg/cloudprovider"
	"sigs.k8s.io/karpenter/pkg/cloudprovider/fake"
	kscheduling "sigs.k8s.io/karpenter/pkg/controllers/provisioning/scheduling"
	"sigs.k8s.io/karpenter/pkg/controllers/state"
	"sigs.k8s.io/karpenter/pkg/events"
	"sigs.k8s.io/karpenter/pkg/operator/injection"
	"sigs.k8s.io/karpenter/pkg/operator/logging"
	"sigs.k8s.io/karpenter/pkg/operator/options"
	kreq "sigs.k8s.io/karpenter/pkg/scheduling"
	"sigs.k8s.io/karpenter/pkg/test"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/scheduling"
)

// Version is the Karpenter release this module pins (the newest the Go
// module proxy serves that builds with the project's Go toolchain; v1.14.3
// and v1.15.0 need a newer Go).
const Version = "v1.14.1"

func init() {
	log.SetLogger(logging.NopLogger)
}

// Plan is what Karpenter's scheduler plans for an input: the whole price
// per hour of its NodeClaims, how many (in all and per NodePool), how many
// pods it could not place, and how long the solve took. Each NodeClaim is
// priced as Nodewright prices its own: the cheapest offering of its
// cheapest instance type option (what a launch would buy, EC2 ranking the
// options by instance price), plus its NodePool's node cost
// (Input.NodeCosts: volumes, address, the pool's own) and, on a burstable
// type, the surplus unlimited mode bills for the CPU its pods and
// DaemonSets request above the baseline.
type Plan struct {
	Price         float64
	NodeClaims    int
	NodesPerPool  map[string]int
	Unschedulable int
	Duration      time.Duration
}

// Solve runs Karpenter's scheduler on a Nodewright input: the same pods,
// NodePools (converted field for field: both are Karpenter's v1 schema),
// DaemonSets and ordinary instance types (not exotic: see instanceTypes), each type with the labels Nodewright gives
// it, its capacity, an overhead that leaves exactly Nodewright's allocatable,
// and one offering per zone and capacity type at Nodewright's price.
func Solve(in scheduling.Input) (Plan, error) {
	ctx := options.ToContext(injection.WithControllerName(context.Background(), "provisioner"), test.Options())
	nodePools := make([]*v1.NodePool, 0, len(in.NodePools))
	byPool := map[string][]*cloudprovider.InstanceType{}
	for _, np := range in.NodePools {
		knp, err := convertNodePool(np)
		if err != nil {
			return Plan{}, err
		}
		nodePools = append(nodePools, knp)
		its, err := instanceTypes(in, np)
		if err != nil {
			return Plan{}, err
		}
		byPool[knp.Name] = its
	}
	var daemonPods []*corev1.Pod
	for _, ds := range in.DaemonSets {
		daemonPods = append(daemonPods, daemonPod(ds))
	}
	pods := make([]*corev1.Pod, len(in.Pods))
	for i, p := range in.Pods {
		pods[i] = p.DeepCopy()
		pods[i].Status.Phase = corev1.PodPending
	}
	cp := fake.NewCloudProvider()
	client := fakecr.NewFakeClient()
	clk := &clock.RealClock{}
	cluster := state.NewCluster(clk, client, cp)
	start := time.Now()
	topology, err := kscheduling.NewTopology(ctx, client, cluster, nil, nodePools, byPool, pods)
	if err != nil {
		return Plan{}, fmt.Errorf("karpenter topology: %w", err)
	}
	s := kscheduling.NewScheduler(ctx, client, nodePools, cluster, nil, topology, byPool, daemonPods,
		events.NewRecorder(&record.FakeRecorder{}), clk, nil, nil)
	res, err := s.Solve(ctx, pods)
	if err != nil {
		return Plan{}, fmt.Errorf("karpenter solve: %w", err)
	}
	plan := Plan{Duration: time.Since(start), NodeClaims: len(res.NewNodeClaims), NodesPerPool: map[string]int{}, Unschedulable: len(res.PodErrors)}
	types := map[string]*catalog.InstanceType{}
	for _, it := range in.InstanceTypes {
		types[it.Name] = it
	}
	for _, nc := range res.NewNodeClaims {
		cheapest, typ := math.Inf(1), ""
		for _, it := range nc.InstanceTypeOptions {
			if o := it.Offerings.Available().Compatible(nc.Requirements).Cheapest(); o != nil && o.Price < cheapest {
				cheapest, typ = o.Price, it.Name
			}
		}
		if math.IsInf(cheapest, 1) {
			return Plan{}, fmt.Errorf("karpenter nodeclaim with %d pods has no offering", len(nc.Pods))
		}
		pool := nc.NodeClaimTemplate.NodePoolName
		plan.NodesPerPool[pool]++
		plan.Price += cheapest + in.NodeCosts[pool]
		if b, ok := types[typ].Burstable(); ok {
			plan.Price += b.SurplusPerHour(requestedCPU(nc.Pods) + requestedCPU(daemonPods))
		}
	}
	plan.Price = math.Round(plan.Price*1e6) / 1e6
	return plan, nil
}

// convertNodePool decodes Nodewright's NodePool into Karpenter's type: the
// same v1 schema, so JSON carries every field.
func convertNodePool(np *apis.NodePool) (*v1.NodePool, error) {
	data, err := json.Marshal(np)
	if err != nil {
		return nil, fmt.Errorf("nodepool %s: %w", np.Name, err)
	}
	// Nulls and empty strings are fields a pool built in Go left unset (YAML would
	// leave them out): drop them so Karpenter's defaults apply.
	var generic any
	if err := json.Unmarshal(data, &generic); err != nil {
		return nil, err
	}
	if data, err = json.Marshal(dropEmpty(generic)); err != nil {
		return nil, err
	}
	out := &v1.NodePool{}
	if err := json.Unmarshal(data, out); err != nil {
		return nil, fmt.Errorf("nodepool %s as karpenter's: %w", np.Name, err)
	}
	out.UID = types.UID("nodepool-" + np.Name)
	out.Spec.Limits = nil
	return out, nil
}

// dropEmpty removes null and empty-string values from decoded JSON objects.
func dropEmpty(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if s, ok := e.(string); e == nil || ok && s == "" {
				delete(x, k)
				continue
			}
			x[k] = dropEmpty(e)
		}
	case []any:
		for i := range x {
			x[i] = dropEmpty(x[i])
		}
	}
	return v
}

// instanceTypes converts the input's catalog for one NodePool (its node
// class's kubelet settings decide capacity and allocatable).
func instanceTypes(in scheduling.Input, np *apis.NodePool) ([]*cloudprovider.InstanceType, error) {
	var nc *apis.EC2NodeClass
	for _, c := range in.NodeClasses {
		if ref := np.Spec.Template.Spec.NodeClassRef; ref != nil && ref.Name == c.Name {
			nc = c
		}
	}
	settings := catalog.SettingsFor(nc)
	var out []*cloudprovider.InstanceType
	for _, it := range in.InstanceTypes {
		if it.Exotic() {
			// GPU, accelerator and bare-metal types: Nodewright launches
			// them only for pods that ask for their hardware or that nothing
			// else holds, and no pod of the compared inputs does, so both
			// schedulers choose among the same types. (With them, Karpenter
			// puts mix2-zonal-spread/unrestricted-spot on a1.metal spot
			// nodes, 1.9% below Nodewright's plan on the ordinary types.)
			continue
		}
		offers := it.Offerings(in.Zones, in.Spot)
		if len(offers) == 0 {
			continue
		}
		labels := it.Labels()
		reqs := kreq.NewRequirements()
		for k, v := range labels {
			v1.WellKnownLabels.Insert(k) // as Karpenter's AWS provider registers its labels
			reqs.Add(kreq.NewRequirement(k, corev1.NodeSelectorOpIn, v))
		}
		var zones, cts []string
		var offerings cloudprovider.Offerings
		for _, o := range offers {
			zones = append(zones, o.Zone)
			cts = append(cts, o.CapacityType)
			offerings = append(offerings, &cloudprovider.Offering{
				Requirements: kreq.NewLabelRequirements(map[string]string{corev1.LabelTopologyZone: o.Zone, v1.CapacityTypeLabelKey: o.CapacityType}),
				Price:        o.Price,
				Available:    true,
			})
		}
		reqs.Add(kreq.NewRequirement(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, zones...))
		reqs.Add(kreq.NewRequirement(v1.CapacityTypeLabelKey, corev1.NodeSelectorOpIn, cts...))
		capacity, alloc := it.Compute(settings)
		capList, allocList := capacity.ResourceList(), alloc.ResourceList()
		reserved := corev1.ResourceList{}
		for name, q := range capList {
			r := q.DeepCopy()
			if a, ok := allocList[name]; ok {
				r.Sub(a)
			}
			if r.Sign() > 0 {
				reserved[name] = r
			}
		}
		out = append(out, &cloudprovider.InstanceType{
			Name: it.Name, Requirements: reqs, Offerings: offerings, Capacity: capList,
			Overhead: &cloudprovider.InstanceTypeOverhead{KubeReserved: reserved, SystemReserved: corev1.ResourceList{}, EvictionThreshold: corev1.ResourceList{}},
		})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("nodepool %s: no instance type has an offering", np.Name)
	}
	return out, nil
}

// requestedCPU is the pods' CPU requests in millicores.
func requestedCPU(pods []*corev1.Pod) int64 {
	var cpu int64
	for _, p := range pods {
		req := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
		cpu += req.Cpu().MilliValue()
	}
	return cpu
}

// daemonPod is the pod a DaemonSet runs on every node.
func daemonPod(ds *appsv1.DaemonSet) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: *ds.Spec.Template.ObjectMeta.DeepCopy(), Spec: *ds.Spec.Template.Spec.DeepCopy()}
	p.Namespace, p.Name = ds.Namespace, ds.Name
	return p
}
