package disruption

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/quantity"
	"github.com/nodewright/nodewright/shared/scheduling"
)

// taintPlanned keeps the solver from placing pods on a replacement this run
// has planned but not launched: it counts against its pool's limits, and
// no other command relies on it.
const taintPlanned = "nodewright.io/planned"

// sim is a run's picture of the cluster as its commands change it: the
// nodes they remove, the pods they move onto remaining nodes, and the
// replacements they plan.
type sim struct {
	v *view
	// avoid are nodes no pod may move to (they go in this run too).
	avoid   map[string]bool
	removed map[string]bool
	extra   map[string][]*corev1.Pod
	added   []*scheduling.Node
}

func newSim(v *view) *sim {
	return &sim{v: v, avoid: map[string]bool{}, removed: map[string]bool{}, extra: map[string][]*corev1.Pod{}}
}

// baseline places the pods that wait for room (unschedulable pods, pods of
// going nodes) on the cluster as it is, before any consolidation: the room
// they take on existing nodes and launched NodeClaims is reserved for
// them, and the Nodes they land on are nominated (not candidates), so
// consolidation never takes room the provision function is about to use.
func (v *view) baseline() map[string]bool {
	nominated := map[string]bool{}
	if len(v.waiting) == 0 {
		return nominated
	}
	s := newSim(v)
	in, _ := s.input(nil, v.waiting, v.typesByPrice)
	res, err := v.solve(in)
	if err != nil {
		v.warn("simulate pending pods: %v", err)
		if v.work.cut != "" && v.work.spent == "" {
			// Without the pending pods' places no node is known to be
			// free of them: the run stops here.
			v.work.spent = v.work.cut
		}
		return nominated
	}
	byKey := map[string]*corev1.Pod{}
	for _, p := range v.waiting {
		byKey[podKey(p)] = p
	}
	for _, pl := range res.ExistingNodes {
		for _, k := range pl.Pods {
			c := *byKey[k]
			c.Spec.NodeName = pl.Node
			v.reserved[pl.Node] = append(v.reserved[pl.Node], &c)
		}
		if !pl.InFlight {
			nominated[pl.Node] = true
		}
	}
	return nominated
}

// input is a solve of pods over the cluster without the nodes in skip (and
// those this run removed or avoids), with the pods this run moved and
// reserved in place, offering types for new NodeClaims. short is what the
// initialized nodes cannot take of the pods (requests alone: a solve
// cannot do better): with homeless pods a deletion is ruled out without
// solving, and a replacement must house at least short's requests.
//
// When the pods to place have no inter-pod constraint (pod affinity or
// anti-affinity, topology spread) nor host ports, a node's bound pods
// matter only for the room they take, unless one of them repels others
// (required anti-affinity): such nodes are given as their free room alone
// (allocatable less their pods' requests, one pod slot each), and left out
// when they have no room for any of the pods and count against no
// NodePool's limits. The placements are the same, for a fraction of the
// solver's work.
func (s *sim) input(skip map[string]bool, pods []*corev1.Pod, types []*catalog.InstanceType) (in scheduling.Input, short shortfall) {
	v := s.v
	compact := !constrained(pods)
	asks := make([]room, len(pods))
	for i, p := range pods {
		asks[i] = podRoom(p)
	}
	housed := make([]bool, len(pods))
	// bound is the run's summaries of the nodes' bound pods, read when a
	// node is given with its pods.
	var run *runBound
	looked := false
	bound := func() *runBound {
		if !looked {
			run, looked = v.boundFor(pods), true
		}
		return run
	}
	// housable bounds what the initialized nodes can take: on each, its
	// free room, and no more than the pods that fit there one by one.
	var housable room
	nodes := make([]*scheduling.Node, 0, len(v.nodes)+len(v.inflight)+len(s.added))
	for _, n := range v.nodes {
		name := n.name()
		if n.going || !n.capacity || skip[name] || s.removed[name] || s.avoid[name] || (n.rec != nil && n.rec.Disruption != nil) {
			continue // gone, going, or under another action: no place for pods
		}
		extra := withExtra(nil, v.reserved[name], s.extra[name])
		free := v.freeRoom(n, extra)
		useful := false
		left := v.leftOn(n, free, extra)
		var fit room
		for i, a := range asks {
			if left.holds(a) {
				useful = true
				if n.ready {
					housed[i] = true
					fit = fit.plus(a)
				}
			}
		}
		housable = housable.plus(room{cpu: min(left.cpu, fit.cpu), mem: min(left.mem, fit.mem)})
		if n.repels == nil {
			n.repels = ptrTo(repelsAny(n.pods))
		}
		// A node not initialized yet is offered after the initialized ones
		// (as the solver offers capacity in flight), as Karpenter's
		// scheduler does; strict simulations refuse to rely on it.
		if compact && !*n.repels && !repelsAny(extra) {
			if useful || v.limited(n) {
				nodes = append(nodes, &scheduling.Node{Node: free, InFlight: !n.ready})
			}
			continue
		}
		nodes = append(nodes, &scheduling.Node{Node: n.schedNode(), Pods: withExtra(n.pods, extra), Bound: bound().of(n), InFlight: !n.ready})
	}
	for _, f := range v.inflight {
		name := f.Node.Name
		nodes = append(nodes, &scheduling.Node{Node: f.Node, InFlight: true, Pods: withExtra(nil, v.reserved[name], s.extra[name])})
	}
	nodes = append(nodes, s.added...)
	var homeless, rest room
	for i, h := range housed {
		if h {
			rest = rest.plus(asks[i])
		} else {
			homeless = homeless.plus(asks[i])
			short.homeless++
		}
	}
	short.cpu = homeless.plus(room{cpu: max(rest.cpu-housable.cpu, 0)}).cpu
	short.mem = homeless.plus(room{mem: max(rest.mem-housable.mem, 0)}).mem
	if summariseBound {
		nodes = summarised(nodes, pods)
	}
	return scheduling.Input{
		Pods: pods, Nodes: nodes, NodePools: v.launchable, NodeClasses: v.in.NodeClasses, DaemonSets: v.in.DaemonSets,
		InstanceTypes: types, Zones: v.in.Zones, Spot: v.in.Spot, Unavailable: v.in.Unavailable, Volumes: v.in.Volumes,
		NodeCosts: v.in.NodeCosts,
	}, short
}

// shortfall is what the initialized nodes a simulation offers cannot take
// of the pods it places: homeless counts the pods none of them has the
// room for; cpu and memory bound from below the requests new capacity
// must take (the homeless pods', and what the others ask beyond the room
// the nodes have for them).
type shortfall struct {
	homeless int
	cpu, mem int64
}

// limited reports whether the node counts against a NodePool's limits (by
// its nodepool label, as the solver counts it), read once a run.
func (v *view) limited(n *nodeInfo) bool {
	if n.limits == nil {
		p := v.pools[n.node.Labels[apis.LabelNodePool]]
		n.limits = ptrTo(p != nil && len(p.Spec.Limits) > 0)
	}
	return *n.limits
}

// leftOn is the room free (the node less its pods and extra) leaves; with
// no extra pods it is read once a run.
func (v *view) leftOn(n *nodeInfo, free *corev1.Node, extra []*corev1.Pod) room {
	if len(extra) > 0 {
		return roomOf(free.Status.Allocatable)
	}
	if n.left == nil {
		n.left = ptrTo(roomOf(free.Status.Allocatable))
	}
	return *n.left
}

// room is what a node has left, or what a pod asks for, in the dimensions
// every pod uses.
type room struct{ cpu, mem, pods int64 }

// roomOf reads allocatable; a dimension it does not list does not limit.
// Amounts too large to count saturate (shared/quantity), never wrap.
func roomOf(l corev1.ResourceList) room {
	r := room{math.MaxInt64, math.MaxInt64, math.MaxInt64}
	for _, d := range []struct {
		name corev1.ResourceName
		dst  *int64
	}{{corev1.ResourceCPU, &r.cpu}, {corev1.ResourceMemory, &r.mem}, {corev1.ResourcePods, &r.pods}} {
		if q, ok := l[d.name]; ok {
			*d.dst = quantity.Clamped(d.name, q)
		}
	}
	return r
}

// podRoom is what a pod asks for; a request too large to count saturates
// (it fits no node) instead of wrapping to a negative amount that fits
// every node.
func podRoom(p *corev1.Pod) room {
	req := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
	return room{cpu: quantity.Clamped(corev1.ResourceCPU, *req.Cpu()), mem: quantity.Clamped(corev1.ResourceMemory, *req.Memory()), pods: 1}
}

func (r room) holds(a room) bool { return r.cpu >= a.cpu && r.mem >= a.mem && r.pods >= a.pods }

// plus adds two rooms, saturating (never wrapping) in each dimension.
func (r room) plus(a room) room {
	add := func(x, y int64) int64 {
		if x > math.MaxInt64-y {
			return math.MaxInt64
		}
		return x + y
	}
	return room{cpu: add(r.cpu, a.cpu), mem: add(r.mem, a.mem), pods: add(r.pods, a.pods)}
}

func withExtra(pods []*corev1.Pod, more ...[]*corev1.Pod) []*corev1.Pod {
	n := len(pods)
	for _, m := range more {
		n += len(m)
	}
	if n == len(pods) {
		return pods
	}
	out := make([]*corev1.Pod, 0, n)
	out = append(out, pods...)
	for _, m := range more {
		out = append(out, m...)
	}
	return out
}

// outcome is where a simulation puts the candidates' pods.
type outcome struct {
	res *scheduling.Result
	// fail says why the pods do not all have a place ("" when they do).
	fail string
	// spent: the run's work budget was spent before this simulation, which
	// was not made (the candidates were not reached).
	spent bool
	// short is what the other initialized nodes cannot take of the moving
	// pods (see sim.input).
	short shortfall
}

// errBudget: the run's work budget (Inputs.Budget) is spent; the
// simulation was not made.
var errBudget = errors.New("the run's work budget is spent")

// work is what a run has spent of Inputs.Budget.
type work struct {
	solves int
	// spent names the bound that stopped the run ("" while none has).
	spent string
	// cut names the bound that cut the last solve short ("" if none did).
	cut string
}

// solve is one simulation within the run's work budget: refused once the
// budget is spent; a solve the budget cut short (pods deferred) fails, as
// its placements are incomplete.
func (v *view) solve(in scheduling.Input) (*scheduling.Result, error) {
	b := v.in.Budget
	now := time.Now
	if b.Now != nil {
		now = b.Now
	}
	v.work.cut = ""
	switch {
	case v.work.spent != "":
	case b.MaxSolves > 0 && v.work.solves >= b.MaxSolves:
		v.work.spent = "solves"
	case !b.Deadline.IsZero() && !now().Before(b.Deadline):
		v.work.spent = "deadline"
	}
	if v.work.spent != "" {
		return nil, fmt.Errorf("%w (%s)", errBudget, v.work.spent)
	}
	v.work.solves++
	in.Budget = scheduling.Budget{MaxGroups: b.MaxGroups, Deadline: b.Deadline, Now: b.Now}
	// A simulation compares plans, never their lower bound.
	in.SkipLowerBound = true
	res, err := scheduling.Solve(in)
	if err != nil {
		return nil, err
	}
	if res.BudgetSpent != "" {
		v.work.cut = res.BudgetSpent
		if res.BudgetSpent == "deadline" {
			v.work.spent = "deadline"
		}
		return nil, fmt.Errorf("the simulation's work budget (%s) ran out with %d pods not placed", res.BudgetSpent, len(res.Deferred))
	}
	return res, nil
}

// simulate removes the candidates and places their reschedulable pods on
// the rest of the cluster, with new NodeClaims of the given types. With
// strict, every pod must be placed, and none on a node that is not
// initialized yet (Karpenter never bets a disruption on such a node).
func (s *sim) simulate(cands []*nodeInfo, types []*catalog.InstanceType, strict bool) outcome {
	skip := map[string]bool{}
	var pods []*corev1.Pod
	for _, c := range cands {
		skip[c.name()] = true
		pods = append(pods, s.moving(c)...)
	}
	if len(pods) == 0 {
		return outcome{res: &scheduling.Result{}}
	}
	in, short := s.input(skip, pods, types)
	if strict && short.homeless > 0 && len(types) == 0 {
		return outcome{fail: fmt.Sprintf("%d of its pods have no room on any other initialized node", short.homeless), short: short}
	}
	res, err := s.v.solve(in)
	if err != nil {
		return outcome{fail: err.Error(), spent: errors.Is(err, errBudget), short: short}
	}
	out := outcome{res: res, short: short}
	if !strict {
		return out
	}
	if len(res.Unschedulable) > 0 {
		u := res.Unschedulable[0]
		more := ""
		if len(res.Unschedulable) > 1 {
			more = fmt.Sprintf(" (and %d more pods)", len(res.Unschedulable)-1)
		}
		out.fail = fmt.Sprintf("pod %s would have no place: %s%s", u.Pod, u.Reason, more)
		return out
	}
	for _, pl := range res.ExistingNodes {
		if !pl.InFlight {
			continue
		}
		if s.v.byName[pl.Node] != nil {
			out.fail = fmt.Sprintf("pods would rely on node %s, not initialized yet", pl.Node)
		} else {
			out.fail = fmt.Sprintf("pods would rely on nodeclaim %s, launched but not registered yet", pl.Node)
		}
		return out
	}
	return out
}

// moving are the pods that move when c goes: its own, and those an
// earlier command of this run moved onto it.
func (s *sim) moving(c *nodeInfo) []*corev1.Pod {
	extra := s.extra[c.name()]
	if len(extra) == 0 {
		return c.moving
	}
	out := append([]*corev1.Pod(nil), c.moving...)
	for _, p := range extra {
		u := *p
		u.Spec.NodeName = ""
		out = append(out, &u)
	}
	return out
}

// apply records a decided command in the run's picture: its candidates are
// gone, their pods moved where the simulation put them, and its
// replacements are planned capacity.
func (s *sim) apply(cands []*nodeInfo, res *scheduling.Result, replacements []scheduling.NodeClaim) {
	byKey := map[string]*corev1.Pod{}
	for _, c := range cands {
		for _, p := range s.moving(c) {
			byKey[podKey(p)] = p
		}
		s.removed[c.name()] = true
	}
	if res != nil {
		for _, pl := range res.ExistingNodes {
			for _, k := range pl.Pods {
				if p := byKey[k]; p != nil {
					c := *p
					c.Spec.NodeName = pl.Node
					s.extra[pl.Node] = append(s.extra[pl.Node], &c)
				}
			}
		}
	}
	for _, nc := range replacements {
		if n := s.plannedNode(nc, len(s.added)); n != nil {
			s.added = append(s.added, n)
		}
	}
}

// plannedNode is a planned replacement as the solver counts it: its
// cheapest type's capacity against the pool's limits, tainted so that no
// pod relies on it.
func (s *sim) plannedNode(nc scheduling.NodeClaim, i int) *scheduling.Node {
	v := s.v
	if v.in.Catalog == nil || len(nc.InstanceTypes) == 0 {
		return nil
	}
	it, ok := v.in.Catalog.Get(nc.InstanceTypes[0])
	if !ok {
		return nil
	}
	capacity, alloc := it.Compute(catalog.SettingsFor(v.classes[nc.NodeClass]))
	n := &corev1.Node{}
	n.Name = fmt.Sprintf("planned-replacement-%d", i)
	n.Labels = map[string]string{}
	for k, val := range nc.Labels {
		n.Labels[k] = val
	}
	for k, val := range it.Labels() {
		n.Labels[k] = val
	}
	n.Labels[apis.LabelNodePool] = nc.NodePool
	n.Labels[apis.LabelHostname] = n.Name
	n.Spec.Taints = append(append([]corev1.Taint(nil), nc.Taints...), corev1.Taint{Key: taintPlanned, Effect: corev1.TaintEffectNoSchedule})
	n.Status.Capacity, n.Status.Allocatable = capacity.ResourceList(), alloc.ResourceList()
	return &scheduling.Node{Node: n, InFlight: true}
}

// podList names pods for explanations: the first few, then how many more.
func podList(keys []string, limit int) string {
	if len(keys) <= limit {
		return strings.Join(keys, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(keys[:limit], ", "), len(keys)-limit)
}

func ptrTo[T any](v T) *T { return &v }

// constrained reports whether any of the pods has an inter-pod constraint
// or binds a host port.
func constrained(pods []*corev1.Pod) bool {
	for _, p := range pods {
		if len(p.Spec.TopologySpreadConstraints) > 0 {
			return true
		}
		if a := p.Spec.Affinity; a != nil && (a.PodAffinity != nil || a.PodAntiAffinity != nil) {
			return true
		}
		for _, c := range append(append([]corev1.Container(nil), p.Spec.InitContainers...), p.Spec.Containers...) {
			for _, port := range c.Ports {
				if port.HostPort != 0 {
					return true
				}
			}
		}
	}
	return false
}

// repelsAny reports whether any of the pods has required pod
// anti-affinity (which keeps other pods off its node or domain).
func repelsAny(pods []*corev1.Pod) bool {
	for _, p := range pods {
		if a := p.Spec.Affinity; a != nil && a.PodAntiAffinity != nil && len(a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution) > 0 {
			return true
		}
	}
	return false
}

// schedNode is the Node a solve sees: allocatable falls back to capacity.
func (n *nodeInfo) schedNode() *corev1.Node {
	if len(n.node.Status.Allocatable) > 0 {
		return n.node
	}
	c := *n.node
	c.Status.Allocatable = n.node.Status.Capacity
	return &c
}

// freeRoom is the node with its allocatable reduced by its pods' and the
// extra pods' requests (and one pod slot each), as a node without pods.
func (v *view) freeRoom(n *nodeInfo, extra []*corev1.Pod) *corev1.Node {
	if n.free == nil {
		c := *n.node
		c.Status.Allocatable = subtractPods(n.schedNode().Status.Allocatable, n.pods)
		n.free = &c
	}
	if len(extra) == 0 {
		return n.free
	}
	c := *n.free
	c.Status.Allocatable = subtractPods(n.free.Status.Allocatable, extra)
	return &c
}

// subtractPods is alloc less the pods' requests as the kubelet admits them
// (component-helpers, as the solver computes them) and a pod slot each;
// never below zero.
func subtractPods(alloc corev1.ResourceList, pods []*corev1.Pod) corev1.ResourceList {
	out := alloc.DeepCopy()
	if out == nil {
		out = corev1.ResourceList{}
	}
	for _, p := range pods {
		for name, q := range resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}) {
			if have, ok := out[name]; ok {
				have.Sub(q)
				out[name] = have
			}
		}
		if have, ok := out[corev1.ResourcePods]; ok {
			have.Sub(*resource.NewQuantity(1, resource.DecimalSI))
			out[corev1.ResourcePods] = have
		}
	}
	for name, q := range out {
		if q.Sign() < 0 {
			out[name] = *resource.NewQuantity(0, q.Format)
		}
	}
	return out
}
