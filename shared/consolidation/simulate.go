package consolidation

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
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
	res, err := scheduling.Solve(s.input(nil, v.waiting, v.typesByPrice))
	if err != nil {
		v.warn("simulate pending pods: %v", err)
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
// those this run removed), with the pods this run moved and reserved in
// place, offering types for new NodeClaims.
func (s *sim) input(skip map[string]bool, pods []*corev1.Pod, types []*catalog.InstanceType) scheduling.Input {
	v := s.v
	nodes := make([]*scheduling.Node, 0, len(v.nodes)+len(v.inflight)+len(s.added))
	for _, n := range v.nodes {
		name := n.name()
		if n.going || !n.capacity || skip[name] || s.removed[name] || s.avoid[name] {
			continue
		}
		node := n.node
		if len(node.Status.Allocatable) == 0 {
			c := *node
			c.Status.Allocatable = node.Status.Capacity
			node = &c
		}
		nodes = append(nodes, &scheduling.Node{Node: node, Pods: withExtra(n.pods, v.reserved[name], s.extra[name])})
	}
	for _, f := range v.inflight {
		name := f.Node.Name
		nodes = append(nodes, &scheduling.Node{Node: f.Node, InFlight: true, Pods: withExtra(nil, v.reserved[name], s.extra[name])})
	}
	nodes = append(nodes, s.added...)
	return scheduling.Input{
		Pods: pods, Nodes: nodes, NodePools: v.in.NodePools, NodeClasses: v.in.NodeClasses, DaemonSets: v.in.DaemonSets,
		InstanceTypes: types, Zones: v.in.Zones, Spot: v.in.Spot, Unavailable: v.in.Unavailable,
	}
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
	res, err := scheduling.Solve(s.input(skip, pods, types))
	if err != nil {
		return outcome{fail: err.Error()}
	}
	out := outcome{res: res}
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
		if pl.InFlight {
			out.fail = fmt.Sprintf("pods would rely on nodeclaim %s, launched but not registered yet", pl.Node)
			return out
		}
		if n := s.v.byName[pl.Node]; n != nil && !n.ready {
			out.fail = fmt.Sprintf("pods would rely on node %s, not initialized yet", pl.Node)
			return out
		}
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
