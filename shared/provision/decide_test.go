package provision

import (
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/scheduling"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
	"github.com/nodewright/nodewright/shared/state"
)

var cat = catalog.Default()

var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func pending(name string, cpu string) *corev1.Pod {
	p := st.Pod(st.PodOptions{Name: name, CPU: cpu, Memory: "256Mi", Owner: "ReplicaSet/web-1"})
	p.UID = types.UID("uid-" + name)
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
	return p
}

func bound(name, node string) *corev1.Pod {
	p := st.Pod(st.PodOptions{Name: name, CPU: "500m", Memory: "256Mi", Owner: "ReplicaSet/web-1", NodeName: node})
	p.Spec.NodeName = node
	p.Status.Phase = corev1.PodRunning
	return p
}

func node(name, instance string) *corev1.Node {
	it, _ := cat.Get("m6g.large")
	n := st.Node(st.NodeOptions{Name: name, InstanceType: it, Zone: "us-east-1a", CapacityType: "spot", NodePool: "default"}).Node
	n.Spec.ProviderID = "aws:///us-east-1a/" + instance
	return n
}

func record(name string, phase state.Phase, instance string) *state.NodeClaim {
	return &state.NodeClaim{
		Name: name, NodePool: "default", NodeClass: "default", Phase: phase, InstanceID: instance, Group: name,
		InstanceType: "m6g.large", Zone: "us-east-1b", CapacityType: "spot", CreatedAt: t0, LaunchedAt: t0,
		Claim: scheduling.NodeClaim{NodePool: "default", NodeClass: "default", InstanceTypes: []string{"m6g.large", "c6g.xlarge"},
			Labels: map[string]string{"team": "a"}, Taints: []corev1.Taint{{Key: "dedicated", Value: "a", Effect: corev1.TaintEffectNoSchedule}}},
	}
}

func podKeys(pods []*corev1.Pod) []string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Namespace+"/"+p.Name)
	}
	return out
}

func TestPrepare(t *testing.T) {
	deleting := node("ip-3", "i-3")
	deleting.DeletionTimestamp = &metav1.Time{Time: t0}
	daemon := bound("ds-pod", "ip-3")
	daemon.OwnerReferences[0].Kind = "DaemonSet"
	disrupted := record("default-ddddd", state.Disrupting, "i-2")
	disrupted.Disruption = &state.Disruption{Action: "interruption-i-2", Reschedule: true}
	validating := record("default-vvvvv", state.Disrupting, "i-4")
	validating.Disruption = &state.Disruption{Action: "consolidation-1"} // not yet moving its pods
	done := bound("done", "ip-1")
	done.Status.Phase = corev1.PodSucceeded
	view := &View{
		Pods: []*corev1.Pod{pending("p2", "1"), pending("p1", "1"), bound("a", "ip-1"), bound("b", "ip-2"), bound("c", "ip-3"),
			daemon, bound("d", "ip-4"), done, bound("lost", "ip-9")},
		Nodes: []*corev1.Node{node("ip-1", "i-1"), node("ip-2", "i-2"), deleting, node("ip-4", "i-4")},
	}
	records := []*state.NodeClaim{
		record("default-aaaaa", state.Initialized, "i-1"), disrupted, validating,
		record("default-fffff", state.Launched, "i-5"), // in flight
		record("default-ggggg", state.Launching, ""),   // in flight, type unknown
		record("default-hhhhh", state.Terminating, "i-6"),
	}
	got := Prepare(Inputs{View: view, Records: records, Catalog: cat, Zones: []string{"us-east-1a"}})
	if want := []string{"default/b", "default/c", "default/p1", "default/p2"}; !reflect.DeepEqual(podKeys(got.Input.Pods), want) {
		t.Errorf("pods to place %v, want %v (pending, and the pods of a deleted node and a node whose pods move; never a DaemonSet's)", podKeys(got.Input.Pods), want)
	}
	if got.Pending != 2 || got.Reschedulable != 2 || got.InFlight != 2 {
		t.Errorf("pending %d reschedulable %d in flight %d, want 2 2 2", got.Pending, got.Reschedulable, got.InFlight)
	}
	var names []string
	for _, n := range got.Input.Nodes {
		names = append(names, n.Node.Name)
		if n.Node.Name == "ip-4" && (len(n.Pods) != 1 || n.Pods[0].Name != "d") {
			t.Errorf("ip-4 (validating, pods stay) pods %v", podKeys(n.Pods))
		}
		if n.Node.Name == "ip-1" && len(n.Pods) != 1 {
			t.Errorf("ip-1 pods %v: a finished pod counts nowhere", podKeys(n.Pods))
		}
	}
	if want := []string{"default-fffff", "default-ggggg", "ip-1", "ip-4"}; !reflect.DeepEqual(names, want) {
		t.Errorf("nodes %v, want %v", names, want)
	}
	for _, p := range got.Input.Pods {
		if p.Spec.NodeName != "" {
			t.Errorf("pod %s to place keeps nodeName %q", p.Name, p.Spec.NodeName)
		}
	}
	if view.Pods[4].Spec.NodeName != "ip-3" {
		t.Error("Prepare modified its input")
	}
	if len(got.Warnings) != 1 || !strings.Contains(got.Warnings[0], "ip-9") {
		t.Errorf("warnings %v, want one for the pod bound to an unlisted node", got.Warnings)
	}
	only := Prepare(Inputs{View: view, Records: records, Catalog: cat, Only: map[string]bool{"default/c": true}})
	if want := []string{"default/c"}; !reflect.DeepEqual(podKeys(only.Input.Pods), want) {
		t.Errorf("Only: pods %v, want %v (never the cluster's other pending pods)", podKeys(only.Input.Pods), want)
	}
	// A pod named to move whose node is gone (the instance ended before
	// its Node was seen) is placed, not left out as unbound.
	gone := Prepare(Inputs{View: view, Records: records, Catalog: cat, Only: map[string]bool{"default/lost": true}})
	if want := []string{"default/lost"}; !reflect.DeepEqual(podKeys(gone.Input.Pods), want) || gone.Reschedulable != 1 {
		t.Errorf("Only a pod of a gone node: pods %v (reschedulable %d), want %v", podKeys(gone.Input.Pods), gone.Reschedulable, want)
	}
	// A disrupted record whose Node is gone: its pods move in every solve.
	goneRec := record("default-lllll", state.Disrupting, "i-9")
	goneRec.NodeName = "ip-9"
	goneRec.Disruption = &state.Disruption{Action: "interruption-i-9", Reschedule: true}
	withGone := Prepare(Inputs{View: view, Records: append(records, goneRec), Catalog: cat, Zones: []string{"us-east-1a"}})
	if !slices.Contains(podKeys(withGone.Input.Pods), "default/lost") || len(withGone.Warnings) != 0 {
		t.Errorf("pods %v, warnings %v: the pod of a disrupted record's gone node should move", podKeys(withGone.Input.Pods), withGone.Warnings)
	}
}

func TestInFlightNode(t *testing.T) {
	launched := record("default-fffff", state.Launched, "i-5")
	n, err := InFlightNode(launched, cat, nil)
	if err != nil {
		t.Fatal(err)
	}
	it, _ := cat.Get("m6g.large")
	_, alloc := it.Compute(catalog.NodeSettings{})
	if got := n.Status.Allocatable.Cpu().MilliValue(); got != alloc.MilliCPU {
		t.Errorf("allocatable cpu %dm, want m6g.large's %dm", got, alloc.MilliCPU)
	}
	for k, v := range map[string]string{apis.LabelInstanceType: "m6g.large", apis.LabelZone: "us-east-1b", apis.LabelRegion: "us-east-1",
		apis.LabelCapacityType: "spot", apis.LabelNodePool: "default", "team": "a", apis.LabelHostname: "default-fffff"} {
		if n.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, n.Labels[k], v)
		}
	}
	if len(n.Spec.Taints) != 1 {
		t.Errorf("taints %v, want the pool's", n.Spec.Taints)
	}
	unknown := record("default-ggggg", state.Launching, "")
	unknown.InstanceType, unknown.Zone, unknown.CapacityType = "", "", ""
	n, err = InFlightNode(unknown, cat, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := n.Labels[apis.LabelInstanceType]; ok {
		t.Error("a claim whose type is unknown is labelled with a type")
	}
	if got := n.Status.Allocatable.Cpu().MilliValue(); got > alloc.MilliCPU {
		t.Errorf("unknown type: cpu %dm, want the smallest option's (at most %dm)", got, alloc.MilliCPU)
	}
	bad := record("default-xxxxx", state.Launched, "i-7")
	bad.InstanceType = "nope.large"
	if _, err := InFlightNode(bad, cat, nil); err == nil {
		t.Error("an unknown type gave no error")
	}
}

func TestRegistrations(t *testing.T) {
	ready := node("ip-1", "i-1")
	ready.Finalizers = []string{apis.FinalizerTermination}
	ready.Labels[apis.LabelRegistered] = "true"
	starting := node("ip-2", "i-2")
	starting.Spec.Taints = []corev1.Taint{{Key: "example.com/agent", Effect: corev1.TaintEffectNoSchedule}}
	notReady := node("ip-3", "i-3")
	notReady.Status.Conditions[0].Status = corev1.ConditionFalse
	pool := st.NodePool(st.NodePoolOptions{StartupTaints: []corev1.Taint{{Key: "example.com/agent", Effect: corev1.TaintEffectNoSchedule}}})
	recs := []*state.NodeClaim{
		record("default-aaaaa", state.Launched, "i-1"),
		record("default-bbbbb", state.Launched, "i-2"),
		record("default-ccccc", state.Registered, "i-3"),
		record("default-ddddd", state.Launched, "i-404"),
	}
	for _, r := range recs {
		r.InstanceType = "m6g.large"
	}
	got := Registrations(recs, []*corev1.Node{ready, starting, notReady}, []*apis.NodePool{pool}, cat)
	type row struct {
		name  string
		phase state.Phase
		mark  bool
	}
	var rows []row
	for _, g := range got {
		rows = append(rows, row{g.Record.Name, g.Phase, g.Mark})
	}
	want := []row{
		{"default-aaaaa", state.Initialized, true}, // labelled registered but not initialized yet
		{"default-bbbbb", state.Registered, true},  // startup taint still on
		{"default-ccccc", "", true},                // not Ready: stays registered
	}
	if !reflect.DeepEqual(rows, want) {
		t.Errorf("registrations %+v\nwant %+v", rows, want)
	}
	gpu := record("gpu-aaaaa", state.Registered, "i-9")
	gpu.InstanceType = "g5.xlarge"
	gnode := node("ip-9", "i-9")
	if got := Registrations([]*state.NodeClaim{gpu}, []*corev1.Node{gnode}, nil, cat); len(got) != 1 || got[0].Phase != "" {
		t.Errorf("a GPU node without nvidia.com/gpu reported: %+v, want it not initialized", got)
	}
}

func TestLiveness(t *testing.T) {
	now := t0.Add(time.Hour)
	late := record("default-late0", state.Launched, "i-late")
	late.LaunchedAt = now.Add(-16 * time.Minute)
	fresh := record("default-fresh", state.Launched, "i-fresh")
	fresh.LaunchedAt = now.Add(-time.Minute)
	gone := record("default-gone0", state.Initialized, "i-gone")
	gone.LaunchedAt = now.Add(-30 * time.Minute)
	justGone := record("default-new00", state.Launched, "i-new")
	justGone.LaunchedAt = now.Add(-10 * time.Second) // DescribeInstances may not list it yet
	ending := record("default-end00", state.Terminating, "i-end")
	launching := record("default-grp00", state.Launching, "")
	launching.CreatedAt = now.Add(-time.Minute)
	// A launch that never got its instance recorded, past the timeout: its
	// record goes and its group's instance is an orphan.
	stuck := record("default-stk00", state.Launching, "")
	stuck.CreatedAt = now.Add(-16 * time.Minute)
	running := func(id, claim string, age time.Duration, managed bool) fleet.Running {
		return fleet.Running{InstanceID: id, State: "running", NodeClaim: claim, LaunchTime: now.Add(-age), ManagedBy: managed}
	}
	instances := []fleet.Running{
		running("i-late", "default-late0", 16*time.Minute, true),
		running("i-fresh", "default-fresh", time.Minute, true),
		running("i-orphan", "default-zzzzz", 10*time.Minute, true),
		running("i-young", "default-yyyyy", time.Minute, true),    // within the grace period
		running("i-karpenter", "default-kkkkk", time.Hour, false), // not ours
		running("i-grp", "default-grp00", 10*time.Minute, true),   // its record is still launching
		running("i-stuck", "default-stk00", 16*time.Minute, true), // its record is past the timeout
		{InstanceID: "i-end", State: "shutting-down", LaunchTime: now.Add(-time.Hour), ManagedBy: true},
	}
	gnode := node("ip-gone", "i-gone")
	c := Liveness([]*state.NodeClaim{late, fresh, gone, justGone, ending, launching, stuck}, instances, []*corev1.Node{gnode}, now, 15*time.Minute, 5*time.Minute)
	if want := []string{"i-late", "i-orphan", "i-stuck"}; !reflect.DeepEqual(slices.Sorted(maps.Keys(c.Terminate)), want) {
		t.Errorf("terminate %v, want %v", slices.Sorted(maps.Keys(c.Terminate)), want)
	}
	var removed []string
	for _, r := range c.DeleteRecords {
		removed = append(removed, r.Name)
	}
	if want := []string{"default-end00", "default-gone0", "default-late0", "default-stk00"}; !reflect.DeepEqual(removed, want) {
		t.Errorf("records removed %v, want %v", removed, want)
	}
	if want := []string{"ip-gone"}; !reflect.DeepEqual(c.DeleteNodes, want) {
		t.Errorf("nodes deleted %v, want %v", c.DeleteNodes, want)
	}
}

func TestMergeConfigClusterObjectsWin(t *testing.T) {
	deployed := st.NodePool(st.NodePoolOptions{Name: "default", Labels: map[string]string{"from": "dir"}})
	other := st.NodePool(st.NodePoolOptions{Name: "batch"})
	applied := st.NodePool(st.NodePoolOptions{Name: "default", Labels: map[string]string{"from": "cluster"}})
	pools, classes, warns := MergeConfig([]*apis.NodePool{deployed, other}, []*apis.EC2NodeClass{st.NodeClass("default")},
		&View{NodePools: []*apis.NodePool{applied}, NodeClasses: []*apis.EC2NodeClass{st.NodeClass("gpu")}})
	if len(pools) != 2 || pools[0].Name != "batch" || pools[1].Spec.Template.ObjectMeta.Labels["from"] != "cluster" {
		t.Errorf("pools %v", pools)
	}
	if len(classes) != 2 || len(warns) != 1 || !strings.Contains(warns[0], "NodePool default") {
		t.Errorf("classes %d, warnings %v", len(classes), warns)
	}
}

func TestDecisionNamesEveryPod(t *testing.T) {
	rep := &Report{Pending: 3, Plan: &scheduling.Result{
		ExistingNodes: []scheduling.NodePlacement{{Node: "ip-1", Pods: []string{"default/a"}}, {Node: "default-fffff", InFlight: true, Pods: []string{"default/b"}}},
		Unschedulable: []scheduling.Unschedulable{{Pod: "default/c", Reason: "no instance type in NodePool default has 2Ti memory"}},
	}, Launches: []Launch{{NodeClaim: "default-x7k2p", Claim: scheduling.NodeClaim{Pods: []string{"default/d"}, InstanceTypes: []string{"m7g.large"}},
		Instance: &fleet.Instance{InstanceType: "m7g.large", CapacityType: "spot", Zone: "us-east-1b", PricePerHour: 0.03}}}}
	d := Decision(rep)
	want := map[string]string{
		"default/a": "node ip-1", "default/b": "in-flight nodeclaim default-fffff",
		"default/c": "pending: no instance type in NodePool default has 2Ti memory",
		"default/d": "nodeclaim default-x7k2p (m7g.large, spot, us-east-1b, $0.0300/h; options: m7g.large)",
	}
	if !reflect.DeepEqual(d.Pods, want) {
		t.Errorf("pods %v\nwant %v", d.Pods, want)
	}
	if !strings.Contains(d.Summary, "launched 1 NodeClaims") {
		t.Errorf("summary %q", d.Summary)
	}
}

// fixedSpot prices every type's spot offering at a fixed share of its
// on-demand price.
type fixedSpot struct {
	cat   *catalog.Catalog
	share float64
}

func (f fixedSpot) SpotPrice(instanceType, _ string) (float64, bool) {
	it, ok := f.cat.Get(instanceType)
	return it.OnDemandPrice * f.share, ok
}

func TestDecidedNodeClaimsPriceTheOptionsCheapestFirst(t *testing.T) {
	cat := catalog.Default()
	od := func(name string) float64 { it, _ := cat.Get(name); return it.OnDemandPrice }
	types := []string{"m5.2xlarge", "m5.large", "nosuch.type", "m5.xlarge", "c5.large", "c5.xlarge", "r5.large", "r5.xlarge", "m6i.large", "m6i.xlarge", "t3.large", "t3.xlarge"}
	claim := func(cts ...string) scheduling.NodeClaim {
		return scheduling.NodeClaim{NodePool: "default", InstanceTypes: types, CapacityTypes: cts, Zones: []string{"us-east-1a"}, Pods: []string{"a/p", "a/q"}}
	}
	rep := &Report{Launches: []Launch{
		{NodeClaim: "default-a", Claim: claim("on-demand"), Instance: &fleet.Instance{InstanceType: "c5.large", CapacityType: "on-demand", Zone: "us-east-1a", PricePerHour: od("c5.large")}},
		{NodeClaim: "default-b", Claim: claim("spot", "on-demand"), Error: "InsufficientInstanceCapacity"},
	}}
	got := DecidedNodeClaims(rep, cat, fixedSpot{cat, 0.5})
	if len(got) != 2 {
		t.Fatalf("%d claims, want 2", len(got))
	}
	a, b := got[0], got[1]
	if a.Name != "default-a" || a.InstanceType != "c5.large" || a.PricePerHour != od("c5.large") || a.Pods != 2 || a.OptionsTotal != len(types) {
		t.Errorf("launched claim %+v", a)
	}
	if len(a.Options) != state.MaxDecidedOptions {
		t.Fatalf("%d options, want %d", len(a.Options), state.MaxDecidedOptions)
	}
	for i, o := range a.Options {
		if o.CapacityType != "on-demand" || o.PricePerHour != od(o.InstanceType) {
			t.Errorf("option %d %+v: want the on-demand price %v", i, o, od(o.InstanceType))
		}
		if i > 0 && o.PricePerHour < a.Options[i-1].PricePerHour {
			t.Errorf("options not cheapest first: %+v", a.Options)
		}
		if o.InstanceType == "nosuch.type" || o.InstanceType == "m5.2xlarge" {
			t.Errorf("option %s kept over cheaper ones (or an unpriced one): %+v", o.InstanceType, a.Options)
		}
	}
	if b.Error == "" || b.InstanceType != "" || b.Options[0].CapacityType != "spot" || b.Options[0].PricePerHour != od(b.Options[0].InstanceType)*0.5 {
		t.Errorf("failed claim %+v", b)
	}
	if none := DecidedNodeClaims(rep, nil, nil); none[0].Options[0].PricePerHour != 0 || len(none[0].Options) != state.MaxDecidedOptions {
		t.Errorf("without a catalog: %+v", none[0].Options)
	}
}

func TestSolveBudget(t *testing.T) {
	at := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	now := func() time.Time { return at }
	var o Options
	o.defaults()
	cases := []struct {
		name    string
		left    time.Duration
		bounded bool
		want    time.Duration
	}{
		{"no deadline: the solve's own minute", 0, false, DefaultSolveTime},
		{"a long invocation: the solve's own minute", 4 * time.Minute, true, DefaultSolveTime},
		{"2.5 minutes left: the solve's own minute, a minute kept for launching", 150 * time.Second, true, DefaultSolveTime},
		{"90 s left: half of it, the other half kept for launching", 90 * time.Second, true, 45 * time.Second},
		{"40 s left: still 20 s to solve", 40 * time.Second, true, 20 * time.Second},
		{"nothing left: no time", 0, true, 0},
	}
	for _, tc := range cases {
		b := budgetFor(o, now, tc.left, tc.bounded)
		if b.MaxGroups != DefaultSolveGroups || !b.Deadline.Equal(at.Add(tc.want)) || b.Now == nil || !b.Now().Equal(at) {
			t.Errorf("%s: budget %d groups until %v, want %d until %v", tc.name, b.MaxGroups, b.Deadline, DefaultSolveGroups, at.Add(tc.want))
		}
	}
}

func TestParseRegistrationTimeout(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		err  string
	}{
		{"15m", 15 * time.Minute, ""},
		{"2m", 2 * time.Minute, ""},
		{"24h", 24 * time.Hour, ""},
		{"1m59s", 0, "want 2m0s to 24h0m0s"},
		{"25h", 0, "want 2m0s to 24h0m0s"},
		{"-5m", 0, "want 2m0s to 24h0m0s"},
		{"soon", 0, "want a duration"},
	} {
		got, err := ParseRegistrationTimeout(tc.in)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%q: %v, %v; want %v, %q", tc.in, got, err, tc.want, tc.err)
		}
	}
	r := &Reconciler{}
	if r.RegistrationTimeout() != DefaultRegistrationTimeout {
		t.Errorf("default %v", r.RegistrationTimeout())
	}
	r.Options.RegistrationTimeout = 20 * time.Minute
	if r.RegistrationTimeout() != 20*time.Minute {
		t.Errorf("set: %v", r.RegistrationTimeout())
	}
}

// A record whose Node has registered but reports no capacity yet is still
// capacity in flight: its Node is left out of the solve, and without the
// record the pods it was launched for would get a second NodeClaim.
func TestPrepareCountsANodeWithoutCapacityInFlight(t *testing.T) {
	empty := node("ip-5", "i-5")
	empty.Status.Capacity, empty.Status.Allocatable = nil, nil
	view := &View{Pods: []*corev1.Pod{pending("p1", "1")}, Nodes: []*corev1.Node{empty}}
	records := []*state.NodeClaim{record("default-fffff", state.Launched, "i-5")}
	got := Prepare(Inputs{View: view, Records: records, Catalog: cat, Zones: []string{"us-east-1a"}})
	if got.InFlight != 1 || len(got.Input.Nodes) != 1 || !got.Input.Nodes[0].InFlight {
		t.Errorf("in flight %d, nodes %d: want the record's in-flight node in the solve", got.InFlight, len(got.Input.Nodes))
	}
}
