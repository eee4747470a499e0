package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/pricing"
	"github.com/nodewright/nodewright/shared/provision"
	"github.com/nodewright/nodewright/shared/scheduling"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
	"github.com/nodewright/nodewright/shared/state"
)

// The cluster the scale issue designs for: 5,000 nodes running 150,000
// pods, with a burst of 1,000 pending pods on top.
const (
	scaleNodes       = 5000
	scalePodsPerNode = 30
	scalePending     = 1000
	// scaleDeployments run the bound pods (besides the DaemonSets'), in
	// scaleNamespaces namespaces.
	scaleDeployments = 300
	scaleNamespaces  = 10
)

// scaleTypes are the node types the cluster runs: a mix of the production
// pool's (c/m/r, amd64 and arm64, 2xlarge..8xlarge), as its nodes would
// have been launched.
var scaleTypes = []string{
	"m5.2xlarge", "m5.4xlarge", "c5.4xlarge", "r5.2xlarge", "m6g.4xlarge", "c6g.4xlarge",
	"r6g.2xlarge", "m6i.8xlarge", "r6i.4xlarge", "m7g.4xlarge", "c7i.4xlarge",
}

// scaleCluster is one invocation's read of a cluster: the View and the
// state table's records (what a provision invocation reads each time).
type scaleCluster struct {
	view    *provision.View
	records []*state.NodeClaim
	bound   int
}

// scaleRequests are the requests the Deployments' pods draw from.
var (
	scaleCPU    = []string{"100m", "250m", "500m", "1"}
	scaleMemory = []string{"256Mi", "512Mi", "1Gi", "2Gi"}
)

// deployment is a Deployment of the benchmark cluster: its pods' shape.
type deployment struct {
	name, namespace, hash string
	cpu, memory           string
	kind                  int // 0, 1: zonal spread; 2: hostname spread; 3: required hostname anti-affinity; 4: preferred anti-affinity; else plain
}

func scaleDeployment(i int, rng *rand.Rand) deployment {
	return deployment{
		name: fmt.Sprintf("svc-%03d", i), namespace: fmt.Sprintf("team-%d", i%scaleNamespaces), hash: fmt.Sprintf("%08x", rng.Uint32()),
		cpu: scaleCPU[rng.IntN(len(scaleCPU))], memory: scaleMemory[rng.IntN(len(scaleMemory))], kind: i % 10,
	}
}

// pod is a pod of the Deployment, named after it.
func (d deployment) pod(name, node string) *corev1.Pod {
	l := map[string]string{"app": d.name, "pod-template-hash": d.hash, "team": d.namespace}
	o := st.PodOptions{Name: name, Namespace: d.namespace, Labels: l, CPU: d.cpu, Memory: d.memory, NodeName: node,
		Owner: "ReplicaSet/" + d.name + "-" + d.hash}
	sel := map[string]string{"app": d.name}
	switch d.kind {
	case 0, 1:
		o.Spread = []corev1.TopologySpreadConstraint{st.Spread(corev1.LabelTopologyZone, 1, corev1.DoNotSchedule, sel)}
		o.Spread[0].MatchLabelKeys = []string{"pod-template-hash"}
	case 2:
		o.Spread = []corev1.TopologySpreadConstraint{st.Spread(corev1.LabelHostname, 1, corev1.DoNotSchedule, sel)}
	case 3:
		o.AntiAffinity = []corev1.PodAffinityTerm{st.Term(corev1.LabelHostname, sel)}
	case 4:
		o.PreferredAntiAffinity = []corev1.WeightedPodAffinityTerm{st.Weighted(100, st.Term(corev1.LabelHostname, sel))}
	}
	p := st.Pod(o)
	p.CreationTimestamp = metav1.NewTime(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))
	return p
}

// scaleDaemonSets run a pod on every node, as an EKS cluster's do.
func scaleDaemonSets() []*appsv1.DaemonSet {
	all := []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	return []*appsv1.DaemonSet{
		st.DaemonSet(st.DaemonSetOptions{Name: "aws-node", CPU: "25m", Memory: "64Mi", Tolerations: all}),
		st.DaemonSet(st.DaemonSetOptions{Name: "kube-proxy", CPU: "100m", Memory: "128Mi", Tolerations: all}),
		st.DaemonSet(st.DaemonSetOptions{Name: "ebs-csi-node", CPU: "30m", Memory: "120Mi", Tolerations: all}),
	}
}

// buildScaleCluster builds a cluster of the given nodes, each running
// scalePodsPerNode pods (one per DaemonSet, a batch pod that packs it as
// consolidation would, the rest from the Deployments,
// no two of one Deployment on a node), and pending pods: the
// first Deployments scaled up (a zonal spread, a hostname spread and a
// hostname anti-affinity that count their bound pods), a zonal affinity to
// a running Deployment and a new plain Deployment.
func buildScaleCluster(tb testing.TB, nodes, pending int) scaleCluster {
	tb.Helper()
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var types []*catalog.InstanceType
	for _, name := range scaleTypes {
		it, ok := catalog.Default().Get(name)
		if !ok {
			tb.Fatalf("instance type %s is not in the catalog", name)
		}
		types = append(types, it)
	}
	deps := make([]deployment, scaleDeployments)
	for i := range deps {
		deps[i] = scaleDeployment(i, rng)
	}
	dss := scaleDaemonSets()
	zones := st.Zones()
	c := scaleCluster{view: &provision.View{DaemonSets: dss}}
	start := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < nodes; i++ {
		zone := zones[i%len(zones)]
		capacityType := apis.CapacityTypeSpot
		if i%4 == 0 {
			capacityType = apis.CapacityTypeOnDemand
		}
		name := fmt.Sprintf("ip-10-%d-%d-%d.ec2.internal", i/65536, (i/256)%256, i%256)
		instance := fmt.Sprintf("i-%017x", 0x1000+i)
		var pods []*corev1.Pod
		for _, ds := range dss {
			pods = append(pods, st.DaemonPod(ds, st.PodOptions{Name: fmt.Sprintf("%s-%05d", ds.Name, i), NodeName: name,
				CPU:    ds.Spec.Template.Spec.Containers[0].Resources.Requests.Cpu().String(),
				Memory: ds.Spec.Template.Spec.Containers[0].Resources.Requests.Memory().String()}))
		}
		for j := len(pods); j < scalePodsPerNode-1; j++ {
			d := deps[(i*scalePodsPerNode+j)%len(deps)]
			pods = append(pods, d.pod(fmt.Sprintf("%s-%s-%05d", d.name, d.hash, i), name))
		}
		// The node is a type its pods fit, packed (as consolidation keeps
		// nodes) by a batch pod that leaves a little room.
		var cpu, mem int64
		for _, p := range pods {
			cpu += p.Spec.Containers[0].Resources.Requests.Cpu().MilliValue()
			mem += p.Spec.Containers[0].Resources.Requests.Memory().Value()
		}
		var fit []*catalog.InstanceType
		for _, it := range types {
			a := it.Allocatable(nil)
			if a.Cpu().MilliValue() >= cpu+500 && a.Memory().Value() >= mem+1<<30 {
				fit = append(fit, it)
			}
		}
		if len(fit) == 0 {
			tb.Fatalf("no type fits node %d (%dm cpu, %d bytes)", i, cpu, mem)
		}
		it := fit[rng.IntN(len(fit))]
		a := it.Allocatable(nil)
		fillCPU := a.Cpu().MilliValue() - cpu - rng.Int64N(400)
		fillMem := (a.Memory().Value() - mem - rng.Int64N(1<<30)) >> 20
		pods = append(pods, st.Pod(st.PodOptions{Name: fmt.Sprintf("batch-%05d", i), Namespace: "batch", Labels: map[string]string{"app": "batch"},
			CPU: fmt.Sprintf("%dm", max(fillCPU, 0)), Memory: fmt.Sprintf("%dMi", max(fillMem, 0)), NodeName: name, Owner: "Job/batch"}))
		labels := it.Labels()
		for k, v := range map[string]string{
			corev1.LabelHostname: name, corev1.LabelTopologyZone: zone, corev1.LabelTopologyRegion: "us-east-1",
			apis.LabelCapacityType: capacityType, apis.LabelNodePool: "default", apis.LabelEC2NodeClass: "default",
			apis.LabelInitialized: "true", "karpenter.sh/registered": "true", "environment": "production", "team": "platform",
		} {
			labels[k] = v
		}
		n := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, CreationTimestamp: metav1.NewTime(start)},
			Spec:       corev1.NodeSpec{ProviderID: "aws:///" + zone + "/" + instance},
			Status: corev1.NodeStatus{Capacity: it.Capacity(), Allocatable: a,
				Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
		}
		c.view.Nodes = append(c.view.Nodes, n)
		c.view.Pods = append(c.view.Pods, pods...)
		c.records = append(c.records, &state.NodeClaim{
			Name: fmt.Sprintf("default-%05d", i), NodePool: "default", NodeClass: "default", Phase: state.Initialized,
			InstanceID: instance, InstanceType: it.Name, Zone: zone, CapacityType: capacityType,
			ProviderID: n.Spec.ProviderID, NodeName: name, CreatedAt: start,
		})
	}
	c.bound = len(c.view.Pods)
	affine := deployment{name: "cache", namespace: "team-5", hash: "c0ffee00", cpu: "250m", memory: "512Mi", kind: 9}
	fresh := deployment{name: "batch", namespace: "team-7", hash: "0ba7c400", cpu: "500m", memory: "1Gi", kind: 9}
	burst := []struct {
		d deployment
		n int
	}{{deps[0], pending * 35 / 100}, {deps[2], pending * 15 / 100}, {deps[3], pending * 15 / 100}, {affine, pending / 10}, {fresh, pending - pending*75/100}}
	for _, b := range burst {
		for k := 0; k < b.n; k++ {
			p := b.d.pod(fmt.Sprintf("%s-%s-new%04d", b.d.name, b.d.hash, k), "")
			if b.d.name == "cache" {
				p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{
					st.Term(corev1.LabelTopologyZone, map[string]string{"app": deps[5].name}),
				}}}
				p.Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0].Namespaces = []string{deps[5].namespace}
			}
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
			c.view.Pods = append(c.view.Pods, p)
		}
	}
	return c
}

// BenchmarkSolveAtScale is the provision function's decision path on the
// scale issue's cluster (5,000 nodes, 150,000 running pods, 1,000 pending)
// and on 2%, 10% and 30% of it: provision.Prepare (the View and records to
// the solve's input) then scheduling.Solve, warm: the catalog and the
// pools persist across invocations in a Lambda container and are built
// once, outside the timed loop, as is the cluster's read (the View and the
// records, which an invocation reads anew; their cost is the read's). One
// untimed call comes first. Metrics per invocation: wall-s and cpu-s (the
// process's CPU time: the machine is shared), peak-heap-MiB (live heap above
// the cluster's read, sampled), allocs/op and B/op, and the plan (nodes,
// pods on existing nodes, unschedulable).
func BenchmarkSolveAtScale(b *testing.B) {
	pools, classes, err := st.ProductionPool()
	if err != nil {
		b.Fatal(err)
	}
	cat := catalog.Default()
	spot := pricing.Model{Catalog: cat, Seed: 0}
	type size struct{ nodes, pending int }
	var sizes []size
	for _, pct := range []int{2, 10, 30, 100} {
		sizes = append(sizes, size{scaleNodes * pct / 100, scalePending})
	}
	// A small burst: at most 500 pending pods, the solve compares several
	// plans (scheduling's portfolio), each over every node.
	sizes = append(sizes, size{scaleNodes, 100})
	for _, sz := range sizes {
		nodes := sz.nodes
		name := fmt.Sprintf("nodes=%d/pods=%d", nodes, nodes*scalePodsPerNode)
		if sz.pending != scalePending {
			name += fmt.Sprintf("/pending=%d", sz.pending)
		}
		b.Run(name, func(b *testing.B) {
			c := buildScaleCluster(b, nodes, sz.pending)
			invoke := func() *scheduling.Result {
				prep := provision.Prepare(provision.Inputs{View: c.view, Records: c.records, NodePools: pools, NodeClasses: classes,
					Catalog: cat, Zones: st.Zones(), Spot: spot})
				if prep.Pending != sz.pending {
					b.Fatalf("%d pods pending, want %d (warnings: %v)", prep.Pending, sz.pending, prep.Warnings)
				}
				res, err := scheduling.Solve(prep.Input)
				if err != nil {
					b.Fatal(err)
				}
				return res
			}
			invoke()
			runtime.GC()
			base := liveHeap()
			peak := startPeakSampler()
			var res *scheduling.Result
			var elapsed, cpu time.Duration
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				start, cpu0 := time.Now(), cpuTime()
				res = invoke()
				elapsed, cpu = elapsed+time.Since(start), cpu+cpuTime()-cpu0
			}
			b.StopTimer()
			peakBytes := peak.stop()
			runtime.KeepAlive(c)
			placed := 0
			for _, e := range res.ExistingNodes {
				placed += len(e.Pods)
			}
			b.ReportMetric(elapsed.Seconds()/float64(b.N), "wall-s")
			b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
			b.ReportMetric(float64(peakBytes-min(base, peakBytes))/(1<<20), "peak-heap-MiB")
			b.ReportMetric(float64(len(res.NodeClaims)), "nodes")
			b.ReportMetric(float64(placed), "on-existing")
			b.ReportMetric(float64(len(res.Unschedulable)), "unschedulable")
			b.ReportMetric(res.PricePerHour, "price/h")
		})
	}
}

// TestSolveAtScaleSummarised: on the benchmark's cluster at 2% (100 nodes,
// 3,000 running pods, 1,000 pending), the plan provision.Prepare's
// summarised nodes give is the one the nodes with their pods read in full
// give, byte for byte.
func TestSolveAtScaleSummarised(t *testing.T) {
	pools, classes, err := st.ProductionPool()
	if err != nil {
		t.Fatal(err)
	}
	cat := catalog.Default()
	c := buildScaleCluster(t, scaleNodes*2/100, scalePending)
	prep := provision.Prepare(provision.Inputs{View: c.view, Records: c.records, NodePools: pools, NodeClasses: classes,
		Catalog: cat, Zones: st.Zones(), Spot: pricing.Model{Catalog: cat}})
	summarised := 0
	full := prep.Input
	full.Nodes = nil
	for _, n := range prep.Input.Nodes {
		if n.Bound != nil {
			summarised++
			c := *n
			c.Bound = nil
			n = &c
		}
		full.Nodes = append(full.Nodes, n)
	}
	if summarised != len(c.view.Nodes) {
		t.Fatalf("%d of %d nodes summarised", summarised, len(c.view.Nodes))
	}
	a, err := scheduling.Solve(prep.Input)
	if err != nil {
		t.Fatal(err)
	}
	b, err := scheduling.Solve(full)
	if err != nil {
		t.Fatal(err)
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if !bytes.Equal(ja, jb) {
		t.Fatalf("summarised and full plans differ:\n%s\n%s", ja, jb)
	}
	if len(a.NodeClaims) == 0 || len(a.ExistingNodes) == 0 {
		t.Fatalf("plan of %d NodeClaims and %d existing nodes: the cluster should need both", len(a.NodeClaims), len(a.ExistingNodes))
	}
}
