package disruption

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
	"github.com/nodewright/nodewright/shared/state"
)

// now is the clock of every test.
var now = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

const zoneA, zoneB = "us-east-1a", "us-east-1b"

// world is a cluster described in a few lines: a catalog of types c1..c32
// (n vCPU, 4n GiB, $0.04n on demand, spot at half), one NodePool "default"
// (defaulted, budgets 100% so that tests that are not about budgets are not
// limited by them) and its EC2NodeClass, and the nodes, pods, PDBs and
// records the test adds.
type world struct {
	types   []catalog.InstanceType
	spot    fakeSpot
	pools   []*apis.NodePool
	classes []*apis.EC2NodeClass
	nodes   []*corev1.Node
	podList []*corev1.Pod
	recs    []*state.NodeClaim
	pdbs    []*policyv1.PodDisruptionBudget
	ds      []*appsv1.DaemonSet
	actions []*state.Action
	images  map[string]map[string]bool
	// subnets and sgs are the classes' resolved subnets and security
	// groups (nil: not resolved).
	subnets, sgs map[string]map[string]bool
	unavail      map[string]bool
	s2s          bool
	now          time.Time
	// notReady are the NodePools replacements may not be planned into.
	notReady map[string]bool
	// checks are the instances' EC2 status checks (nil: not polled).
	checks map[string]StatusCheck
}

// fakeSpot prices spot per type, the same in every zone; types it does not
// list cost half their on-demand price.
type fakeSpot map[string]float64

func newWorld() *world {
	w := &world{spot: fakeSpot{}, unavail: map[string]bool{}, s2s: true, now: now}
	for n := 1; n <= 32; n++ {
		it := st.Type(st.TypeOptions{Name: fmt.Sprintf("c%d", n), VCPU: n, MemoryMiB: int64(4096 * n), Price: 0.04 * float64(n), Family: "c", Size: fmt.Sprintf("%dx", n)})
		w.types = append(w.types, *it)
	}
	for _, it := range w.types {
		w.spot[it.Name] = it.OnDemandPrice / 2
	}
	w.pools = []*apis.NodePool{w.pool("default")}
	w.classes = []*apis.EC2NodeClass{st.NodeClass("default")}
	w.classes[0].Default()
	return w
}

// pool is a defaulted NodePool allowing both capacity types, with a 100%
// budget and consolidateAfter 0s.
func (w *world) pool(name string) *apis.NodePool {
	np := st.NodePool(st.NodePoolOptions{Name: name, Requirements: []apis.NodeSelectorRequirementWithMinValues{
		st.PoolReq(apis.LabelCapacityType, corev1.NodeSelectorOpIn, apis.CapacityTypeSpot, apis.CapacityTypeOnDemand),
	}})
	np.Spec.Disruption = apis.Disruption{}
	np.Default()
	np.Spec.Disruption.Budgets = []apis.Budget{{Nodes: "100%"}}
	return np
}

func (w *world) defaultPool() *apis.NodePool { return w.pools[0] }

func (w *world) catalog() *catalog.Catalog { return catalog.New(w.types) }

func (w *world) typ(name string) *catalog.InstanceType {
	for i := range w.types {
		if w.types[i].Name == name {
			return &w.types[i]
		}
	}
	panic("no type " + name)
}

// nodeOpt changes a node and its record as they are built.
type nodeOpt func(n *corev1.Node, r *state.NodeClaim)

func inPool(name string) nodeOpt {
	return func(n *corev1.Node, r *state.NodeClaim) {
		n.Labels[apis.LabelNodePool] = name
		r.NodePool = name
	}
}

func inZone(z string) nodeOpt {
	return func(n *corev1.Node, r *state.NodeClaim) {
		n.Labels[apis.LabelZone] = z
		n.Spec.ProviderID = state.ProviderIDFor(z, r.InstanceID)
		r.Zone = z
	}
}

func created(age time.Duration) nodeOpt {
	return func(_ *corev1.Node, r *state.NodeClaim) {
		r.CreatedAt = now.Add(-age)
		r.InitializedAt = r.CreatedAt.Add(time.Minute)
	}
}

func podsChanged(ago time.Duration) nodeOpt {
	return func(_ *corev1.Node, r *state.NodeClaim) { r.PodsChangedAt = now.Add(-ago) }
}

func annotated(k, v string) nodeOpt {
	return func(n *corev1.Node, _ *state.NodeClaim) {
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		n.Annotations[k] = v
	}
}

func phase(p state.Phase) nodeOpt { return func(_ *corev1.Node, r *state.NodeClaim) { r.Phase = p } }

func notReady() nodeOpt {
	return func(n *corev1.Node, _ *state.NodeClaim) { n.Status.Conditions[0].Status = corev1.ConditionFalse }
}

func deleting() nodeOpt {
	return func(n *corev1.Node, _ *state.NodeClaim) {
		t := metav1.NewTime(now.Add(-time.Minute))
		n.DeletionTimestamp = &t
		n.Finalizers = []string{apis.FinalizerTermination}
	}
}

func disrupting(action string) nodeOpt {
	return func(_ *corev1.Node, r *state.NodeClaim) {
		r.Phase = state.Disrupting
		r.Disruption = &state.Disruption{Action: action, Reason: string(ReasonUnderutilized), Since: now.Add(-time.Minute)}
	}
}

// node adds one of Nodewright's nodes of type typ and capacity type ct in
// us-east-1a, initialized a day ago, its pods unchanged for an hour, with
// its record (launched under the current pool and class hashes, ami-1).
func (w *world) node(name, typ, ct string, opts ...nodeOpt) *corev1.Node {
	it := w.typ(typ)
	n := st.Node(st.NodeOptions{Name: name, InstanceType: it, Zone: zoneA, CapacityType: ct, NodePool: "default"}).Node
	r := &state.NodeClaim{
		Name: "nc-" + name, NodePool: "default", NodeClass: "default", Phase: state.Initialized,
		InstanceID: "i-" + name, InstanceType: typ, Zone: zoneA, CapacityType: ct, ImageID: "ami-1",
		CreatedAt: now.Add(-24 * time.Hour), InitializedAt: now.Add(-24*time.Hour + time.Minute), PodsChangedAt: now.Add(-time.Hour),
	}
	n.Spec.ProviderID = state.ProviderIDFor(zoneA, r.InstanceID)
	for _, o := range opts {
		o(n, r)
	}
	// Registration labels the Node as its record moves on.
	n.Labels[apis.LabelRegistered] = "true"
	if r.Phase != state.Registered {
		n.Labels[apis.LabelInitialized] = "true"
	}
	for _, p := range w.pools {
		if p.Name == r.NodePool {
			r.NodePoolHash = p.Hash()
		}
	}
	r.NodeClassHash = w.classes[0].Hash()
	w.nodes = append(w.nodes, n)
	w.recs = append(w.recs, r)
	return n
}

// foreign adds a node Nodewright did not launch (a managed node group's).
func (w *world) foreign(name, typ string) *corev1.Node {
	n := st.Node(st.NodeOptions{Name: name, InstanceType: w.typ(typ), Zone: zoneA, CapacityType: apis.CapacityTypeOnDemand}).Node
	n.Spec.ProviderID = state.ProviderIDFor(zoneA, "i-"+name)
	w.nodes = append(w.nodes, n)
	return n
}

func (w *world) rec(name string) *state.NodeClaim {
	for _, r := range w.recs {
		if r.Name == "nc-"+name {
			return r
		}
	}
	panic("no record for " + name)
}

// podOpt changes a pod as it is built.
type podOpt func(p *corev1.Pod)

func podAnnotated(k, v string) podOpt {
	return func(p *corev1.Pod) {
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		p.Annotations[k] = v
	}
}

func labelled(k, v string) podOpt {
	return func(p *corev1.Pod) {
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		p.Labels[k] = v
	}
}

func owner(kind string) podOpt {
	return func(p *corev1.Pod) {
		yes := true
		p.OwnerReferences = []metav1.OwnerReference{{Kind: kind, Name: "owner", Controller: &yes}}
	}
}

func podPhase(ph corev1.PodPhase) podOpt { return func(p *corev1.Pod) { p.Status.Phase = ph } }

func terminating() podOpt {
	return func(p *corev1.Pod) {
		t := metav1.NewTime(now.Add(-time.Second))
		p.DeletionTimestamp = &t
	}
}

func inNamespace(ns string) podOpt { return func(p *corev1.Pod) { p.Namespace = ns } }

func priority(v int32) podOpt { return func(p *corev1.Pod) { p.Spec.Priority = &v } }

func antiAffinity(app string) podOpt {
	return func(p *corev1.Pod) {
		p.Labels["app"] = app
		p.Spec.Affinity = &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{st.Term(apis.LabelHostname, map[string]string{"app": app})},
		}}
	}
}

func unready() podOpt {
	return func(p *corev1.Pod) {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	}
}

// pods binds n pods of a ReplicaSet, each requesting cpu and 1Gi, to node
// (named <node>-p<i>, labelled app=web).
func (w *world) pods(node string, n int, cpu string, opts ...podOpt) []*corev1.Pod {
	var out []*corev1.Pod
	for i := 0; i < n; i++ {
		p := st.Pod(st.PodOptions{Name: fmt.Sprintf("%s-p%d", node, len(w.podsOn(node))), CPU: cpu, Memory: "1Gi", NodeName: node,
			Owner: "ReplicaSet/web", Labels: map[string]string{"app": "web"}})
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		for _, o := range opts {
			o(p)
		}
		w.podList = append(w.podList, p)
		out = append(out, p)
	}
	return out
}

func (w *world) podsOn(node string) []*corev1.Pod {
	var out []*corev1.Pod
	for _, p := range w.podList {
		if p.Spec.NodeName == node {
			out = append(out, p)
		}
	}
	return out
}

// pending adds an unschedulable pending pod.
func (w *world) pending(name, cpu string) *corev1.Pod {
	p := st.Pod(st.PodOptions{Name: name, CPU: cpu, Memory: "1Gi", Owner: "ReplicaSet/batch"})
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
	w.podList = append(w.podList, p)
	return p
}

// pdb adds a PodDisruptionBudget over app=<app> in ns with allowed
// disruptions.
func (w *world) pdb(name, ns, app string, allowed int32) *policyv1.PodDisruptionBudget {
	one := intstr.FromInt32(1)
	b := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}},
		Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: allowed},
	}
	w.pdbs = append(w.pdbs, b)
	return b
}

func (w *world) inputs() Inputs {
	var unavailable func(string, string, string) bool
	if len(w.unavail) > 0 {
		u := w.unavail
		unavailable = func(t, z, ct string) bool { return u[t+"/"+z+"/"+ct] || u[t+"/*/"+ct] }
	}
	return Inputs{
		Now: w.now, Nodes: w.nodes, Pods: w.podList, PDBs: w.pdbs, DaemonSets: w.ds, Records: w.recs, Actions: w.actions,
		NodePools: w.pools, NodeClasses: w.classes, Catalog: w.catalog(), Zones: []string{zoneA, zoneB}, Spot: w.spot,
		Unavailable: unavailable, CurrentImages: w.images, CurrentSubnets: w.subnets, CurrentSecurityGroups: w.sgs,
		SpotToSpot: w.s2s, NotReady: w.notReady,
		StatusChecks: w.checks,
	}
}

// SpotPrice implements catalog.SpotPricer.
func (f fakeSpot) SpotPrice(t, _ string) (float64, bool) {
	p, ok := f[t]
	return p, ok
}

// decide runs Decide and returns its commands and report.
func (w *world) decide(t *testing.T) ([]Command, Report) {
	t.Helper()
	cmds, rep := Decide(w.inputs())
	for _, c := range cmds {
		t.Logf("command: %s", c.Explanation)
	}
	for n, why := range rep.Skipped {
		t.Logf("skipped %s: %s", n, why)
	}
	for n, why := range rep.Rejected {
		t.Logf("rejected %s: %s", n, why)
	}
	return cmds, rep
}

// summary is a command in a comparable form: "method: nodes -> types".
func summary(c Command) string {
	var repl []string
	for _, r := range c.Replacements {
		first := ""
		if len(r.InstanceTypes) > 0 {
			first = r.InstanceTypes[0]
		}
		repl = append(repl, fmt.Sprintf("%s/%s", first, r.CapacityType))
	}
	s := string(c.Method) + ": " + strings.Join(c.Nodes, ",")
	if len(repl) > 0 {
		s += " -> " + strings.Join(repl, ",")
	}
	return s
}

func summaries(cmds []Command) []string {
	out := []string{}
	for _, c := range cmds {
		out = append(out, summary(c))
	}
	return out
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func policyAlwaysAllow() policyv1.UnhealthyPodEvictionPolicyType { return policyv1.AlwaysAllow }
