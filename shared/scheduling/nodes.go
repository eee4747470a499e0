package scheduling

import (
	"sort"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/podstate"
	"github.com/nodewright/nodewright/shared/requirements"
)

// node is an existing node or a launched NodeClaim in a solve: fixed labels,
// taints and allocatable, with what its bound pods already use.
type node struct {
	node      *corev1.Node
	aliased   *corev1.Node // node with both names of aliased labels (selectedBy builds it)
	u         *universe    // where aliased is kept for the solve's other plans
	name      string
	labels    map[string]string
	taints    []corev1.Taint
	alloc     vec
	used      vec
	pods      []*corev1.Pod // the bound pods its summary does not hold
	bound     *Bound
	hostPorts []hostPort
	inFlight  bool
	pool      *pool
	placed    []*corev1.Pod // pending pods placed here in this solve
	skip      bool          // cordoned or being deleted
	coming    bool          // comingUp, read once
}

func (s *solver) buildNodes() {
	in := s.in
	for _, n := range in.Nodes {
		if n == nil || n.Node == nil {
			continue
		}
		nd := &node{node: n.Node, name: n.Node.Name, taints: n.Node.Spec.Taints, inFlight: n.InFlight,
			pods: unsummarised(n), bound: n.Bound, skip: n.Node.Spec.Unschedulable || n.Node.DeletionTimestamp != nil}
		nd.coming = nd.isComingUp()
		nd.labels = s.u.labelsOf(n.Node)
		nd.u = s.u
		nd.alloc, _ = s.reg.fromList(n.Node.Status.Allocatable, true)
		if b := n.Bound; b != nil {
			nd.used = s.reg.resolve(nd.used, b.pods, b.requests)
			nd.hostPorts = append(nd.hostPorts, b.hostPorts...)
		}
		for _, p := range nd.pods {
			if podstate.Terminal(p) {
				continue
			}
			req, _ := s.reg.podRequests(p)
			nd.used = nd.used.add(req)
			nd.hostPorts = append(nd.hostPorts, podHostPorts(p)...)
		}
		s.nodes = append(s.nodes, nd)
	}
	// Initialized nodes first, then nodes still coming up, then launched
	// NodeClaims (as Karpenter orders them); by name within each.
	stage := func(n *node) int {
		switch {
		case n.inFlight:
			return 2
		case n.comingUp():
			return 1
		}
		return 0
	}
	stages := make(map[*node]int, len(s.nodes))
	for _, n := range s.nodes {
		stages[n] = stage(n)
	}
	sort.SliceStable(s.nodes, func(i, j int) bool {
		a, b := s.nodes[i], s.nodes[j]
		if sa, sb := stages[a], stages[b]; sa != sb {
			return sa < sb
		}
		return a.name < b.name
	})
	s.nodeByName = map[string]*node{}
	for _, n := range s.nodes {
		s.nodeByName[n.name] = n
	}
}

// attachPools links nodes to their NodePool (by label), counts their
// capacity against the pool's limits, and sets the taints that count on
// the nodes still coming up.
func (s *solver) attachPools() {
	defer s.settleComingUp()
	byName := map[string]*pool{}
	for _, p := range s.pools {
		byName[p.name] = p
	}
	for i, n := range s.in.Nodes {
		_ = i
		if n == nil || n.Node == nil {
			continue
		}
		p := byName[n.Node.Labels[apis.LabelNodePool]]
		if p == nil {
			continue
		}
		capacity, _ := s.reg.fromList(n.Node.Status.Capacity, true)
		if capacity == (vec{}) {
			capacity, _ = s.reg.fromList(n.Node.Status.Allocatable, true)
		}
		p.countExisting(capacity)
		s.nodeByName[n.Node.Name].pool = p
	}
}

func (n *node) domain(key string) string { return n.labels[key] }

// pruneNodes keeps in open the nodes with room for a pod of some group. A
// node's free room only shrinks during a solve (placements on existing
// nodes are never taken back, except by an undo, to what it was when the
// undo session began), so a node without room for any group now never has
// it later. It must not run inside an undo session.
func (s *solver) pruneNodes() {
	if s.undo != nil {
		return
	}
	open := s.open[:0:0]
	for _, n := range s.open {
		if n.skip {
			continue
		}
		free := n.alloc.sub(n.used)
		for _, g := range s.groups {
			if len(g.unknown) == 0 && g.req.howMany(free) > 0 {
				open = append(open, n)
				break
			}
		}
	}
	s.open = open
}

// labelsOf is the node's labels as a solve reads them (only read once
// built): its own, both names of aliased labels, its hostname (its name
// when it has none) and metadata.name.
func (u *universe) labelsOf(n *corev1.Node) map[string]string {
	if l, ok := u.nodeLabels[n]; ok {
		return l
	}
	l := make(map[string]string, len(n.Labels)+2)
	for k, v := range n.Labels {
		l[k] = v
	}
	addLabelAliases(l)
	if _, ok := l[apis.LabelHostname]; !ok {
		l[apis.LabelHostname] = n.Name
	}
	l[requirements.FieldNodeName] = n.Name
	u.nodeLabels[n] = l
	return l
}

// aliasedOf is withLabelAliases(n), built once per solve (nil u: each
// time).
func (u *universe) aliasedOf(n *corev1.Node) *corev1.Node {
	if u == nil {
		return withLabelAliases(n)
	}
	if a, ok := u.nodeAliased[n]; ok {
		return a
	}
	a := withLabelAliases(n)
	u.nodeAliased[n] = a
	return a
}

// room is how many pods of g fit on the node, ignoring topology.
func (s *solver) nodeRoom(n *node, g *group) int {
	if n.skip || len(g.unknown) > 0 {
		return 0
	}
	// Room first: it is the cheapest test, and a full node fails it.
	k := int(g.req.howMany(n.alloc.sub(n.used)))
	if k <= 0 {
		return 0
	}
	if !tolerates(g.tolerations, n.taints, !g.preferNoScheduleOK) {
		return 0
	}
	if !s.matchesNode(g, n) {
		return 0
	}
	if len(g.hostPorts) > 0 {
		if conflicts(g.hostPorts, n.hostPorts) {
			return 0
		}
		k = 1
	}
	return k
}

// matchesNode is node selection on an existing node as kube-scheduler does
// it: the pod's nodeSelector and any one of its required node affinity terms
// (component-helpers), plus the preferred term the group treats as required
// while it does.
func (s *solver) matchesNode(g *group, n *node) bool {
	if !n.selectedBy(g.nodeAffinity) {
		return false
	}
	if g.volIdx < len(g.volumes) && !g.volumes[g.volIdx].Matches(n.labels) {
		return false
	}
	return g.prefNodeIdx >= len(g.preferredNode) || g.preferredNode[g.prefNodeIdx].reqs.Matches(n.labels)
}

// placeOnNode puts k pods of g on n.
func (s *solver) placeOnNode(g *group, n *node, k int) {
	s.touchNode(n)
	pods := g.pods[:k]
	n.placed = append(n.placed, pods...)
	n.used = n.used.add(g.req.scale(int64(k)))
	n.hostPorts = append(n.hostPorts, g.hostPorts...)
	s.record(g, n.domain, k)
	g.pods = g.pods[k:]
}

// settleComingUp drops, on every managed node that is not initialized yet,
// the taints it will lose once it is (Karpenter's known ephemeral taints
// and its pool's startup taints), so that pending pods that tolerate
// everything else count on it instead of causing a second launch.
//
// Its allocatable is taken, where the node still reports none or zero of a
// resource, from its instance type as the catalog computes it (the kubelet
// reports extended resources such as GPUs as zero until their device
// plugin registers), as Karpenter takes it from the NodeClaim.
func (s *solver) settleComingUp() {
	for _, n := range s.nodes {
		if !n.comingUp() {
			continue
		}
		var startup []corev1.Taint
		settings := catalog.NodeSettings{}
		if n.pool != nil {
			startup = n.pool.np.Spec.Template.Spec.StartupTaints
			settings = n.pool.settings
		}
		n.taints = comingUpTaints(n.taints, startup)
		if t, ok := s.u.index[n.labels[apis.LabelInstanceType]]; ok {
			_, a := s.u.types[t].Compute(settings)
			typed := amountsVec(a).add(s.extra[t])
			for d := range n.alloc {
				if n.alloc[d] <= 0 && typed[d] > 0 {
					n.alloc[d] = typed[d]
				}
			}
		}
	}
}

// comingUp says whether the node is one Nodewright or Karpenter launched
// (it carries a NodePool label, or is a NodeClaim in flight) that has not
// been initialized: no karpenter.sh/initialized=true label. A node whose
// Ready condition is Unknown has a kubelet that stopped reporting: it is
// going down, not coming up.
// It is read once per node (isComingUp) when the solve builds it.
func (n *node) comingUp() bool { return n.coming }

func (n *node) isComingUp() bool {
	if n.inFlight {
		return true
	}
	if _, managed := n.node.Labels[apis.LabelNodePool]; !managed || n.node.Labels[apis.LabelInitialized] == "true" {
		return false
	}
	for _, c := range n.node.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionUnknown {
			return false
		}
	}
	return true
}

// nodeSelection is the pod's nodeSelector and required node affinity as
// component-helpers matches them against a Node, or nil when it has
// neither (it then selects every node).
func nodeSelection(p *corev1.Pod) *nodeaffinity.RequiredNodeAffinity {
	a := p.Spec.Affinity
	if len(p.Spec.NodeSelector) == 0 && (a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil) {
		return nil
	}
	r := nodeaffinity.GetRequiredNodeAffinity(p)
	return &r
}

// selectedBy says whether the node passes a pod's nodeSelector and required
// node affinity (nil passes every node). They are matched against the node
// with both names of each aliased well-known label, as the kubelet and the
// cloud controller label nodes.
func (n *node) selectedBy(a *nodeaffinity.RequiredNodeAffinity) bool {
	if a == nil {
		return true
	}
	if n.aliased == nil {
		n.aliased = n.u.aliasedOf(n.node)
	}
	ok, err := a.Match(n.aliased)
	return err == nil && ok
}

// missingAliases are the names labels lacks of the well-known labels that
// have a deprecated alias (the alias of a stable label it has, the stable
// name of an alias it has), with their values; nil when none.
func missingAliases(labels map[string]string) map[string]string {
	var missing map[string]string
	for stable, alias := range apis.LabelAliases {
		v, hasStable := labels[stable]
		a, hasAlias := labels[alias]
		switch {
		case hasStable && !hasAlias:
			if missing == nil {
				missing = map[string]string{}
			}
			missing[alias] = v
		case hasAlias && !hasStable:
			if missing == nil {
				missing = map[string]string{}
			}
			missing[stable] = a
		}
	}
	return missing
}

// addLabelAliases adds to labels the names it lacks of aliased well-known
// labels.
func addLabelAliases(labels map[string]string) {
	for k, v := range missingAliases(labels) {
		labels[k] = v
	}
}

// withLabelAliases is the node with both names of each well-known label that
// has a deprecated alias; a node that already has both (or neither) is
// returned as is.
func withLabelAliases(n *corev1.Node) *corev1.Node {
	missing := missingAliases(n.Labels)
	if missing == nil {
		return n
	}
	c := *n
	c.Labels = make(map[string]string, len(n.Labels)+len(missing))
	for k, v := range n.Labels {
		c.Labels[k] = v
	}
	for k, v := range missing {
		c.Labels[k] = v
	}
	return &c
}
