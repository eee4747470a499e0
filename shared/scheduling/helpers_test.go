package scheduling_test

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/pricing"
	qty "github.com/nodewright/nodewright/shared/quantity"
	"github.com/nodewright/nodewright/shared/requirements"
	"github.com/nodewright/nodewright/shared/scheduling"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
)

// Short names for the scenario tables.
type (
	po  = st.PodOptions
	res = st.Resources
)

const (
	zoneKey     = corev1.LabelTopologyZone
	hostKey     = corev1.LabelHostname
	archKey     = corev1.LabelArchStable
	ctKey       = apis.LabelCapacityType
	poolKey     = apis.LabelNodePool
	familyKey   = apis.LabelInstanceFamily
	categoryKey = apis.LabelInstanceCategory
	typeKey     = corev1.LabelInstanceTypeStable
	zoneA       = "us-east-1a"
	zoneB       = "us-east-1b"
	zoneC       = "us-east-1c"
	onDemand    = apis.CapacityTypeOnDemand
	spot        = apis.CapacityTypeSpot
	opIn        = corev1.NodeSelectorOpIn
	opNotIn     = corev1.NodeSelectorOpNotIn
	opExists    = corev1.NodeSelectorOpExists
	opGt        = corev1.NodeSelectorOpGt
	opLt        = corev1.NodeSelectorOpLt
	opDNE       = corev1.NodeSelectorOpDoesNotExist
	dns         = corev1.DoNotSchedule
	anyway      = corev1.ScheduleAnyway
	noSched     = corev1.TaintEffectNoSchedule
	preferNo    = corev1.TaintEffectPreferNoSchedule
	noExec      = corev1.TaintEffectNoExecute
)

// opt changes a scenario's input.
type opt func(*scheduling.Input)

// input is a scenario's cluster: by default the 400 synthetic types with
// their spot prices, zones us-east-1a..c, one on-demand NodePool "default"
// and its EC2NodeClass; opts change it.
func input(opts ...opt) scheduling.Input {
	types := st.SyntheticTypes(400)
	in := scheduling.Input{
		InstanceTypes: types,
		Spot:          st.SyntheticSpot(types),
		Zones:         st.Zones(),
		NodePools:     []*apis.NodePool{pool("default", 0, req(ctKey, opIn, onDemand))},
		NodeClasses:   []*apis.EC2NodeClass{st.NodeClass("default")},
	}
	for _, o := range opts {
		o(&in)
	}
	return in
}

func pods(ps ...*corev1.Pod) opt {
	return func(in *scheduling.Input) { in.Pods = append(in.Pods, ps...) }
}

func podList(lists ...[]*corev1.Pod) opt {
	return func(in *scheduling.Input) {
		for _, l := range lists {
			in.Pods = append(in.Pods, l...)
		}
	}
}

func pools(ps ...*apis.NodePool) opt {
	return func(in *scheduling.Input) { in.NodePools = ps }
}

func nodes(ns ...*scheduling.Node) opt {
	return func(in *scheduling.Input) { in.Nodes = append(in.Nodes, ns...) }
}

func daemonSets(ds ...*appsv1.DaemonSet) opt {
	return func(in *scheduling.Input) { in.DaemonSets = append(in.DaemonSets, ds...) }
}

func nodeClasses(ncs ...*apis.EC2NodeClass) opt {
	return func(in *scheduling.Input) { in.NodeClasses = ncs }
}

// types replaces the catalog (and prices spot for it).
func types(ts ...*catalog.InstanceType) opt {
	return func(in *scheduling.Input) {
		in.InstanceTypes = ts
		in.Spot = st.SyntheticSpot(ts)
	}
}

func spotPricer(sp catalog.SpotPricer) opt {
	return func(in *scheduling.Input) { in.Spot = sp }
}

func unavailable(f func(it, zone, ct string) bool) opt {
	return func(in *scheduling.Input) { in.Unavailable = f }
}

func maxTypes(n int) opt { return func(in *scheduling.Input) { in.MaxInstanceTypes = n } }

// realCatalog uses the embedded catalog and the spot price model (seed 0).
func realCatalog() opt {
	return func(in *scheduling.Input) {
		in.InstanceTypes = catalog.Default().Types()
		in.Spot = pricing.Model{Catalog: catalog.Default(), Seed: 0}
	}
}

// pool is a NodePool with requirements (weight 0: unset).
func pool(name string, weight int32, reqs ...apis.NodeSelectorRequirementWithMinValues) *apis.NodePool {
	return st.NodePool(st.NodePoolOptions{Name: name, Weight: weight, Requirements: reqs})
}

// poolWith is a NodePool built from full options.
func poolWith(o st.NodePoolOptions) *apis.NodePool { return st.NodePool(o) }

func req(key string, op corev1.NodeSelectorOperator, values ...string) apis.NodeSelectorRequirementWithMinValues {
	return st.PoolReq(key, op, values...)
}

func nsr(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
	return st.Req(key, op, values...)
}

func pod(o po) *corev1.Pod { return st.Pod(o) }

func podsN(n int, o po) []*corev1.Pod { return st.Pods(n, o) }

func labels(kv ...string) map[string]string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return m
}

// plan is a solve's result indexed by pod.
type plan struct {
	in      scheduling.Input
	res     *scheduling.Result
	claimOf map[string]int    // pod -> index in res.NodeClaims
	nodeOf  map[string]string // pod -> existing or in-flight node
	reason  map[string]string // pod -> unschedulable reason
}

func newPlan(in scheduling.Input, r *scheduling.Result) *plan {
	p := &plan{in: in, res: r, claimOf: map[string]int{}, nodeOf: map[string]string{}, reason: map[string]string{}}
	for i, nc := range r.NodeClaims {
		for _, pod := range nc.Pods {
			p.claimOf[pod] = i
		}
	}
	for _, n := range r.ExistingNodes {
		for _, pod := range n.Pods {
			p.nodeOf[pod] = n.Node
		}
	}
	for _, u := range r.Unschedulable {
		p.reason[u.Pod] = u.Reason
	}
	return p
}

// claim returns the NodeClaim of a pod ("default/" is added to bare names).
func (p *plan) claim(t *testing.T, pod string) (scheduling.NodeClaim, bool) {
	t.Helper()
	i, ok := p.claimOf[podKey(pod)]
	if !ok {
		t.Errorf("%s is not on a new NodeClaim (%s)", podKey(pod), p.where(pod))
		return scheduling.NodeClaim{}, false
	}
	return p.res.NodeClaims[i], true
}

func (p *plan) where(pod string) string {
	k := podKey(pod)
	if i, ok := p.claimOf[k]; ok {
		nc := p.res.NodeClaims[i]
		return fmt.Sprintf("on NodeClaim %d: pool %s, %s %v, zones %v", i, nc.NodePool, nc.CapacityType, head(nc.InstanceTypes), nc.Zones)
	}
	if n, ok := p.nodeOf[k]; ok {
		return "on node " + n
	}
	if r, ok := p.reason[k]; ok {
		return "unschedulable: " + r
	}
	return "nowhere"
}

func head(s []string) []string {
	if len(s) > 3 {
		return append(s[:3:3], "...")
	}
	return s
}

func podKey(pod string) string {
	if strings.Contains(pod, "/") {
		return pod
	}
	return "default/" + pod
}

func typeByName(in scheduling.Input, name string) *catalog.InstanceType {
	for _, it := range in.InstanceTypes {
		if it.Name == name {
			return it
		}
	}
	return nil
}

// check is one expected fact of a plan.
type check func(t *testing.T, p *plan)

// claims: the plan launches n NodeClaims.
func claims(n int) check {
	return func(t *testing.T, p *plan) {
		if got := len(p.res.NodeClaims); got != n {
			t.Errorf("%d NodeClaims, want %d: %s", got, n, summary(p.res))
		}
	}
}

// podsPerClaim: the NodeClaims hold these numbers of pods (any order).
func podsPerClaim(counts ...int) check {
	return func(t *testing.T, p *plan) {
		var got []int
		for _, nc := range p.res.NodeClaims {
			got = append(got, len(nc.Pods))
		}
		sort.Ints(got)
		want := append([]int(nil), counts...)
		sort.Ints(want)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("pods per NodeClaim %v, want %v", got, want)
		}
	}
}

// allScheduled: no pod is unschedulable.
func allScheduled() check {
	return func(t *testing.T, p *plan) {
		for _, u := range p.res.Unschedulable {
			t.Errorf("%s unschedulable: %s", u.Pod, u.Reason)
		}
	}
}

// firstType: the pod's NodeClaim ranks this instance type first.
func firstType(pod, name string) check {
	return func(t *testing.T, p *plan) {
		if nc, ok := p.claim(t, pod); ok && nc.InstanceTypes[0] != name {
			t.Errorf("%s: first instance type %s, want %s (types %v)", pod, nc.InstanceTypes[0], name, head(nc.InstanceTypes))
		}
	}
}

// firstTypeIs: the pod's NodeClaim's first type satisfies pred.
func firstTypeIs(pod, what string, pred func(*catalog.InstanceType) bool) check {
	return func(t *testing.T, p *plan) {
		nc, ok := p.claim(t, pod)
		if !ok {
			return
		}
		if it := typeByName(p.in, nc.InstanceTypes[0]); it == nil || !pred(it) {
			t.Errorf("%s: first instance type %s is not %s", pod, nc.InstanceTypes[0], what)
		}
	}
}

// everyType: every instance type of the pod's NodeClaim satisfies pred.
func everyType(pod, what string, pred func(*catalog.InstanceType) bool) check {
	return func(t *testing.T, p *plan) {
		nc, ok := p.claim(t, pod)
		if !ok {
			return
		}
		for _, name := range nc.InstanceTypes {
			if it := typeByName(p.in, name); it == nil || !pred(it) {
				t.Errorf("%s: instance type %s is not %s", pod, name, what)
				return
			}
		}
	}
}

// capacityType: the pod's NodeClaim expects this capacity type.
func capacityType(pod, ct string) check {
	return func(t *testing.T, p *plan) {
		if nc, ok := p.claim(t, pod); ok && nc.CapacityType != ct {
			t.Errorf("%s: capacity type %s, want %s", pod, nc.CapacityType, ct)
		}
	}
}

// capacityTypes: the pod's NodeClaim may use exactly these capacity types.
func capacityTypes(pod string, cts ...string) check {
	return func(t *testing.T, p *plan) {
		if nc, ok := p.claim(t, pod); ok && fmt.Sprint(sorted(nc.CapacityTypes)) != fmt.Sprint(sorted(cts)) {
			t.Errorf("%s: capacity types %v, want %v", pod, nc.CapacityTypes, cts)
		}
	}
}

// claimZones: the pod's NodeClaim may launch exactly in these zones.
func claimZones(pod string, zs ...string) check {
	return func(t *testing.T, p *plan) {
		if nc, ok := p.claim(t, pod); ok && fmt.Sprint(sorted(nc.Zones)) != fmt.Sprint(sorted(zs)) {
			t.Errorf("%s: zones %v, want %v", pod, nc.Zones, zs)
		}
	}
}

// notInZone: the pod's NodeClaim cannot launch in zone.
func notInZone(pod, zone string) check {
	return func(t *testing.T, p *plan) {
		nc, ok := p.claim(t, pod)
		if !ok {
			return
		}
		for _, z := range nc.Zones {
			if z == zone {
				t.Errorf("%s: NodeClaim may launch in %s (zones %v)", pod, zone, nc.Zones)
			}
		}
	}
}

// fromPool: the pod's NodeClaim comes from this NodePool.
func fromPool(pod, name string) check {
	return func(t *testing.T, p *plan) {
		if nc, ok := p.claim(t, pod); ok && nc.NodePool != name {
			t.Errorf("%s: NodePool %s, want %s", pod, nc.NodePool, name)
		}
	}
}

// sameNode: the pods share one NodeClaim or node.
func sameNode(ps ...string) check {
	return func(t *testing.T, p *plan) {
		first := p.location(ps[0])
		for _, pod := range ps[1:] {
			if loc := p.location(pod); loc != first || loc == "" {
				t.Errorf("%s (%s) and %s (%s) are not on one node", ps[0], p.where(ps[0]), pod, p.where(pod))
			}
		}
	}
}

// separate: no two of the pods share a NodeClaim or node.
func separate(ps ...string) check {
	return func(t *testing.T, p *plan) {
		seen := map[string]string{}
		for _, pod := range ps {
			loc := p.location(pod)
			if loc == "" {
				t.Errorf("%s is not placed: %s", pod, p.where(pod))
				continue
			}
			if other, ok := seen[loc]; ok {
				t.Errorf("%s and %s share %s", other, pod, loc)
			}
			seen[loc] = pod
		}
	}
}

func (p *plan) location(pod string) string {
	k := podKey(pod)
	if i, ok := p.claimOf[k]; ok {
		return fmt.Sprintf("claim %d", i)
	}
	if n, ok := p.nodeOf[k]; ok {
		return "node " + n
	}
	return ""
}

// onNode: the pod goes to an existing (or in-flight) node.
func onNode(pod, node string) check {
	return func(t *testing.T, p *plan) {
		if got := p.nodeOf[podKey(pod)]; got != node {
			t.Errorf("%s: %s, want on node %s", pod, p.where(pod), node)
		}
	}
}

// inFlightPlacement: the placement on node is marked in flight or not.
func inFlightPlacement(node string, want bool) check {
	return func(t *testing.T, p *plan) {
		for _, n := range p.res.ExistingNodes {
			if n.Node == node {
				if n.InFlight != want {
					t.Errorf("placement on %s: inFlight %v, want %v", node, n.InFlight, want)
				}
				return
			}
		}
		t.Errorf("no placement on %s", node)
	}
}

// notOnNode: the pod does not go to this existing node.
func notOnNode(pod, node string) check {
	return func(t *testing.T, p *plan) {
		if p.nodeOf[podKey(pod)] == node {
			t.Errorf("%s placed on %s", pod, node)
		}
	}
}

// unschedulable: the pod cannot be placed, for a reason with these words
// (case-insensitive).
func unschedulable(pod string, words ...string) check {
	return func(t *testing.T, p *plan) {
		r, ok := p.reason[podKey(pod)]
		if !ok {
			t.Errorf("%s: %s, want unschedulable", pod, p.where(pod))
			return
		}
		for _, w := range words {
			if !strings.Contains(strings.ToLower(r), strings.ToLower(w)) {
				t.Errorf("%s: reason %q lacks %q", pod, r, w)
			}
		}
	}
}

// unschedulableCount: exactly n pods are unschedulable, each for a reason with
// these words.
func unschedulableCount(n int, words ...string) check {
	return func(t *testing.T, p *plan) {
		if len(p.res.Unschedulable) != n {
			t.Errorf("%d unschedulable pods, want %d: %+v", len(p.res.Unschedulable), n, p.res.Unschedulable)
		}
		for _, u := range p.res.Unschedulable {
			for _, w := range words {
				if !strings.Contains(strings.ToLower(u.Reason), strings.ToLower(w)) {
					t.Errorf("%s: reason %q lacks %q", u.Pod, u.Reason, w)
				}
			}
		}
	}
}

// podZoneCounts: the pods with these labels are spread over single-zone
// NodeClaims and nodes in these numbers (sorted, any zone).
func podZoneCounts(sel map[string]string, counts ...int) check {
	return func(t *testing.T, p *plan) {
		perZone := p.zoneCounts(t, sel)
		var got []int
		for _, n := range perZone {
			got = append(got, n)
		}
		sort.Ints(got)
		want := append([]int(nil), counts...)
		sort.Ints(want)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("pods per zone %v (%v), want %v", got, perZone, want)
		}
	}
}

// zoneCounts counts the scheduled pods matching sel per zone; every
// NodeClaim holding one must be in a single zone.
func (p *plan) zoneCounts(t *testing.T, sel map[string]string) map[string]int {
	t.Helper()
	match := func(key string) bool {
		for _, pod := range p.in.Pods {
			if pod.Namespace+"/"+pod.Name == key {
				for k, v := range sel {
					if pod.Labels[k] != v {
						return false
					}
				}
				return true
			}
		}
		return false
	}
	out := map[string]int{}
	for _, nc := range p.res.NodeClaims {
		for _, pod := range nc.Pods {
			if !match(pod) {
				continue
			}
			if len(nc.Zones) != 1 {
				t.Errorf("NodeClaim of %s may launch in %v; a spread pod needs one zone", pod, nc.Zones)
				continue
			}
			out[nc.Zones[0]]++
		}
	}
	for pod, node := range p.nodeOf {
		if match(pod) {
			out[p.nodeZone(node)]++
		}
	}
	return out
}

func (p *plan) nodeZone(name string) string {
	for _, n := range p.in.Nodes {
		if n.Node.Name == name {
			return n.Node.Labels[zoneKey]
		}
	}
	return ""
}

// sameZone: the pods' NodeClaims are all in one single zone.
func sameZone(ps ...string) check {
	return func(t *testing.T, p *plan) {
		var zone string
		for _, pod := range ps {
			nc, ok := p.claim(t, pod)
			if !ok {
				return
			}
			if len(nc.Zones) != 1 {
				t.Errorf("%s: zones %v, want one", pod, nc.Zones)
				return
			}
			if zone == "" {
				zone = nc.Zones[0]
			} else if nc.Zones[0] != zone {
				t.Errorf("%s in %s, others in %s", pod, nc.Zones[0], zone)
			}
		}
	}
}

// price: the plan costs this much per hour (to a millionth).
func price(want float64) check {
	return func(t *testing.T, p *plan) {
		if math.Abs(p.res.PricePerHour-want) > 1e-6 {
			t.Errorf("price %v, want %v", p.res.PricePerHour, want)
		}
	}
}

// custom is a one-off fact.
func custom(f check) check { return f }

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

func summary(r *scheduling.Result) string {
	var b strings.Builder
	for i, nc := range r.NodeClaims {
		fmt.Fprintf(&b, "\n  claim %d: %s %s %v %v pods=%v", i, nc.NodePool, nc.CapacityType, head(nc.InstanceTypes), nc.Zones, nc.Pods)
	}
	for _, n := range r.ExistingNodes {
		fmt.Fprintf(&b, "\n  node %s: %v", n.Node, n.Pods)
	}
	for _, u := range r.Unschedulable {
		fmt.Fprintf(&b, "\n  unschedulable %s: %s", u.Pod, u.Reason)
	}
	return b.String()
}

// checkInvariants checks what every plan must satisfy whatever the
// scenario: each pending pod placed exactly once; NodeClaims with known,
// distinct instance types (at most the cap) in the input's zones, each type
// satisfying the pool's and every pod's required node selection and holding
// all the claim's pods; placements on nodes within their free allocatable;
// prices that add up; a lower bound no higher than the price.
func checkInvariants(t *testing.T, in scheduling.Input, r *scheduling.Result) {
	t.Helper()
	pending := map[string]*corev1.Pod{}
	for _, p := range in.Pods {
		pending[p.Namespace+"/"+p.Name] = p
	}
	placed := map[string]int{}
	total := 0.0
	for i, nc := range r.NodeClaims {
		checkClaim(t, in, i, nc, pending)
		total += nc.PricePerHour
		for _, p := range nc.Pods {
			placed[p]++
		}
	}
	for _, n := range r.ExistingNodes {
		checkPlacement(t, in, n, pending)
		for _, p := range n.Pods {
			placed[p]++
		}
	}
	for _, u := range r.Unschedulable {
		checkReason(t, in, u)
		placed[u.Pod]++
	}
	for _, d := range r.Deferred {
		placed[d]++
	}
	if (len(r.Deferred) > 0) != (r.BudgetSpent != "") {
		t.Errorf("%d pods deferred, budget spent on %q", len(r.Deferred), r.BudgetSpent)
	}
	for k := range pending {
		if placed[k] != 1 {
			t.Errorf("pod %s appears %d times in the plan", k, placed[k])
		}
	}
	for k := range placed {
		if pending[k] == nil {
			t.Errorf("plan places %s, which is not pending", k)
		}
	}
	if math.Abs(total-r.PricePerHour) > 1e-6 {
		t.Errorf("pricePerHour %v, NodeClaims add up to %v", r.PricePerHour, total)
	}
	if r.LowerBoundPricePerHour < 0 || r.LowerBoundPricePerHour > r.PricePerHour+1e-9 {
		t.Errorf("lower bound %v above price %v", r.LowerBoundPricePerHour, r.PricePerHour)
	}
}

func checkClaim(t *testing.T, in scheduling.Input, i int, nc scheduling.NodeClaim, pending map[string]*corev1.Pod) {
	t.Helper()
	limit := in.MaxInstanceTypes
	if limit == 0 {
		limit = scheduling.DefaultMaxInstanceTypes
	}
	if len(nc.InstanceTypes) == 0 || len(nc.InstanceTypes) > limit || len(nc.Pods) == 0 || nc.PricePerHour <= 0 {
		t.Errorf("claim %d: %d types (cap %d), %d pods, price %v", i, len(nc.InstanceTypes), limit, len(nc.Pods), nc.PricePerHour)
		return
	}
	zoneOK := map[string]bool{}
	for _, z := range in.Zones {
		zoneOK[z] = true
	}
	for _, z := range nc.Zones {
		if !zoneOK[z] {
			t.Errorf("claim %d: zone %s not among %v", i, z, in.Zones)
		}
	}
	np := poolNamed(in, nc.NodePool)
	if np == nil {
		t.Errorf("claim %d: unknown NodePool %q", i, nc.NodePool)
		return
	}
	poolReqs, err := requirements.FromNodePool(np)
	if err != nil {
		t.Fatal(err)
	}
	settings := catalog.SettingsFor(nodeClassOf(in, np))
	checkMinValues(t, in, i, nc, poolReqs)
	seen := map[string]bool{}
	for _, name := range nc.InstanceTypes {
		it := typeByName(in, name)
		if it == nil || seen[name] {
			t.Errorf("claim %d: instance type %s unknown or repeated", i, name)
			continue
		}
		seen[name] = true
		checkTypeFits(t, i, it, np, poolReqs, settings, nc, pending)
	}
}

// checkTypeFits: some offering of the type in the claim's zones and capacity
// types satisfies the pool's requirements and each pod's node selection (one
// of its required terms), and the type's allocatable holds the pods' requests.
func checkTypeFits(t *testing.T, i int, it *catalog.InstanceType, np *apis.NodePool, poolReqs requirements.Requirements,
	settings catalog.NodeSettings, nc scheduling.NodeClaim, pending map[string]*corev1.Pod) {
	t.Helper()
	lbls := it.Labels()
	if apis.IsWindowsFamily(settings.AMIFamily) {
		// The image, not the type, decides the operating system.
		lbls[osKey], lbls[corev1.LabelWindowsBuild] = "windows", nc.Labels[corev1.LabelWindowsBuild]
	}
	for k, v := range np.Spec.Template.ObjectMeta.Labels {
		lbls[k] = v
	}
	for k, v := range nc.Labels {
		if _, typeLabel := lbls[k]; !typeLabel {
			lbls[k] = v
		}
	}
	lbls[poolKey] = np.Name
	matchesSome := func(reqs requirements.Requirements) bool {
		for _, z := range nc.Zones {
			for _, ct := range nc.CapacityTypes {
				lbls[zoneKey], lbls[ctKey] = z, ct
				if reqs.Matches(lbls) {
					return true
				}
			}
		}
		return false
	}
	if !matchesSome(poolReqs) {
		t.Errorf("claim %d: %s in zones %v as %v does not satisfy NodePool %s", i, it.Name, nc.Zones, nc.CapacityTypes, np.Name)
	}
	var cpu, mem, count int64
	for _, key := range nc.Pods {
		p := pending[key]
		if p == nil {
			continue
		}
		alts, err := requirements.FromPod(p)
		if err != nil {
			t.Fatal(err)
		}
		ok := false
		for _, alt := range alts {
			ok = ok || matchesSome(alt)
		}
		if !ok {
			t.Errorf("claim %d: %s does not satisfy the node selection of %s", i, it.Name, key)
		}
		rl := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
		c, cerr := qty.Milli(*rl.Cpu())
		m, merr := qty.Value(*rl.Memory())
		if cerr != nil || merr != nil || c < 0 || m < 0 {
			t.Errorf("claim %d: %s holds %s, whose requests (%s cpu, %s memory) no node can hold", i, it.Name, key, rl.Cpu(), rl.Memory())
		}
		cpu += c
		mem += m
		count++
	}
	_, alloc := it.Compute(settings)
	if cpu > alloc.MilliCPU || mem > alloc.MemoryBytes || count > alloc.Pods {
		t.Errorf("claim %d: %s (allocatable %dm, %d bytes, %d pods) cannot hold its pods (%dm, %d bytes, %d pods)",
			i, it.Name, alloc.MilliCPU, alloc.MemoryBytes, alloc.Pods, cpu, mem, count)
	}
}

func checkPlacement(t *testing.T, in scheduling.Input, pl scheduling.NodePlacement, pending map[string]*corev1.Pod) {
	t.Helper()
	var node *scheduling.Node
	for _, n := range in.Nodes {
		if n.Node.Name == pl.Node {
			node = n
		}
	}
	if node == nil {
		t.Errorf("placement on unknown node %s", pl.Node)
		return
	}
	if pl.InFlight != node.InFlight {
		t.Errorf("placement on %s: inFlight %v, node's %v", pl.Node, pl.InFlight, node.InFlight)
	}
	used := corev1.ResourceList{}
	add := func(p *corev1.Pod) {
		for k, v := range resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}) {
			q := used[k]
			q.Add(v)
			used[k] = q
		}
		q := used[corev1.ResourcePods]
		q.Add(resource.MustParse("1"))
		used[corev1.ResourcePods] = q
	}
	for _, p := range node.Pods {
		add(p)
	}
	for _, k := range pl.Pods {
		if p := pending[k]; p != nil {
			add(p)
		}
	}
	for name, q := range used {
		if a, ok := node.Node.Status.Allocatable[name]; ok && q.Cmp(a) > 0 {
			t.Errorf("node %s: %s %s requested, %s allocatable", pl.Node, name, q.String(), a.String())
		}
	}
}

func poolNamed(in scheduling.Input, name string) *apis.NodePool {
	for _, np := range in.NodePools {
		if np.Name == name {
			return np
		}
	}
	return nil
}

func nodeClassOf(in scheduling.Input, np *apis.NodePool) *apis.EC2NodeClass {
	ref := np.Spec.Template.Spec.NodeClassRef
	for _, nc := range in.NodeClasses {
		if ref != nil && nc.Name == ref.Name {
			return nc
		}
	}
	return nil
}

// resultJSON is the plan as `nodewright plan` prints it.
func resultJSON(t *testing.T, r *scheduling.Result) []byte {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// cheapest is the oracle of the real-catalog scenarios: the cheapest
// available offering, in the input's zones, of a type that satisfies the
// pool's requirements and reqs (the pod's), whose allocatable holds requests
// (plus one pod), and that is not exotic unless exotic is true. It returns
// the type's name and the offering.
func cheapest(t *testing.T, in scheduling.Input, np *apis.NodePool, reqs requirements.Requirements, requests corev1.ResourceList, exotic bool) (string, catalog.Offering) {
	t.Helper()
	poolReqs, err := requirements.FromNodePool(np)
	if err != nil {
		t.Fatal(err)
	}
	all := poolReqs.Intersect(reqs)
	settings := catalog.SettingsFor(nodeClassOf(in, np))
	best, bestOff := "", catalog.Offering{}
	for _, it := range in.InstanceTypes {
		if it.Exotic() && !exotic || !fits(it, settings, requests) {
			continue
		}
		lbls := it.Labels()
		for k, v := range np.Spec.Template.ObjectMeta.Labels {
			lbls[k] = v
		}
		lbls[poolKey] = np.Name
		for _, o := range it.Offerings(in.Zones, in.Spot) {
			if in.Unavailable != nil && in.Unavailable(it.Name, o.Zone, o.CapacityType) {
				continue
			}
			lbls[zoneKey], lbls[ctKey] = o.Zone, o.CapacityType
			if !all.Matches(lbls) {
				continue
			}
			// A burstable type in unlimited mode bills the pod's CPU above
			// its baseline on top of the offering.
			o.Price += surplusOf(it, requests.Cpu().MilliValue())
			if best == "" || o.Price < bestOff.Price || o.Price == bestOff.Price && it.Name < best {
				best, bestOff = it.Name, o
			}
		}
	}
	if best == "" {
		t.Fatalf("oracle: no offering fits %v", requests)
	}
	return best, bestOff
}

// surplusOf is what a node of it bills above its instance's price for cpu
// requested millicores (0 unless burstable in unlimited mode).
func surplusOf(it *catalog.InstanceType, cpu int64) float64 {
	b, _ := it.Burstable()
	return b.SurplusPerHour(cpu)
}

func fits(it *catalog.InstanceType, s catalog.NodeSettings, requests corev1.ResourceList) bool {
	_, a := it.Compute(s)
	if b, ok := it.Burstable(); ok && b.Mode == catalog.CreditsStandard {
		a.MilliCPU = min(a.MilliCPU, b.BaselineMilliCPU)
	}
	alloc := a.ResourceList()
	for name, q := range requests {
		have := alloc[name]
		if q.Cmp(have) > 0 {
			return false
		}
	}
	return a.Pods >= 1
}

// oracleFirst: the pod's NodeClaim ranks first the type the oracle finds
// cheapest for the pod in its NodeClaim's pool, with that offering's
// capacity type and price.
func oracleFirst(podName string, exotic bool) check {
	return func(t *testing.T, p *plan) {
		nc, ok := p.claim(t, podName)
		if !ok {
			return
		}
		var pd *corev1.Pod
		for _, x := range p.in.Pods {
			if x.Namespace+"/"+x.Name == podKey(podName) {
				pd = x
			}
		}
		alts, err := requirements.FromPod(pd)
		if err != nil {
			t.Fatal(err)
		}
		requests := resourcehelper.PodRequests(pd, resourcehelper.PodResourcesOptions{})
		name, off := cheapest(t, p.in, poolNamed(p.in, nc.NodePool), alts[0], requests, exotic)
		if nc.InstanceTypes[0] != name || nc.CapacityType != off.CapacityType || math.Abs(nc.PricePerHour-off.Price) > 1e-9 {
			t.Errorf("%s: first %s %s at %v, want the cheapest offering %s %s at %v (%s)",
				podName, nc.InstanceTypes[0], nc.CapacityType, nc.PricePerHour, name, off.CapacityType, off.Price, off.Zone)
		}
	}
}

func taints(ts ...corev1.Taint) []corev1.Taint { return ts }

func tols(ts ...corev1.Toleration) []corev1.Toleration { return ts }

func nsrs(rs ...corev1.NodeSelectorRequirement) []corev1.NodeSelectorRequirement { return rs }

// checkMinValues: the claim's instance types (and zones, capacity types)
// keep every minValues of its pool, or the lower ones it says it relaxed to.
func checkMinValues(t *testing.T, in scheduling.Input, i int, nc scheduling.NodeClaim, poolReqs requirements.Requirements) {
	t.Helper()
	for _, r := range poolReqs {
		if r.MinValues == nil {
			continue
		}
		want := *r.MinValues
		if got, ok := nc.MinValues[r.Key]; !ok || got != want {
			if !nc.MinValuesRelaxed || !ok || got > want {
				t.Errorf("claim %d: minValues %v, pool asks %s: %d (relaxed %v)", i, nc.MinValues, r.Key, want, nc.MinValuesRelaxed)
			}
			want = got
		}
		var n int
		switch r.Key {
		case zoneKey:
			n = len(nc.Zones)
		case ctKey:
			n = len(nc.CapacityTypes)
		default:
			seen := map[string]bool{}
			for _, name := range nc.InstanceTypes {
				if it := typeByName(in, name); it != nil {
					if v, ok := it.Labels()[r.Key]; ok {
						seen[v] = true
					}
				}
			}
			n = len(seen)
		}
		if n < want {
			t.Errorf("claim %d: %d distinct %s among its instance types, minValues %d: %v", i, n, r.Key, want, nc.InstanceTypes)
		}
	}
}

// checkReason: an unschedulable pod's reason is words a person can act on:
// not empty, no empty parentheses or brackets, and, unless the pod itself
// rules out every new node (invalid constraints, a node pinned by name, a
// resource nothing offers), naming every NodePool it failed on.
func checkReason(t *testing.T, in scheduling.Input, u scheduling.Unschedulable) {
	t.Helper()
	r := u.Reason
	if r == "" {
		t.Errorf("%s unschedulable without a reason", u.Pod)
		return
	}
	for _, bad := range []string{"()", "[]", "( ", " )", ";;", "  "} {
		if strings.Contains(r, bad) {
			t.Errorf("%s: reason %q contains %q", u.Pod, r, bad)
		}
	}
	for _, self := range []string{"invalid scheduling constraints", "its required node affinity", "it requests ",
		"its PersistentVolume", "its StorageClass", "its volumes'", "its node selection ("} {
		if strings.HasPrefix(r, self) {
			return
		}
	}
	if len(in.NodePools) == 0 {
		if !strings.Contains(r, "no NodePool") {
			t.Errorf("%s: reason %q does not say there is no NodePool", u.Pod, r)
		}
		return
	}
	for _, np := range in.NodePools {
		if !strings.Contains(r, "NodePool "+np.Name) {
			t.Errorf("%s: reason %q does not name NodePool %s", u.Pod, r, np.Name)
		}
	}
}
