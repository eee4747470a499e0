package scheduling

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/podstate"
	qty "github.com/nodewright/nodewright/shared/quantity"
)

// Bound is what a solve reads of the pods bound to a node, summarised once
// (Summarise) so that a solve among 150,000 running pods reads each of them
// once instead of in every plan it compares, and reads of them only what
// its constraints can see: their summed requests, the host ports they bind,
// each DaemonSet's newest pod, the label keys their selectors look at, how
// many of them each selector of the pending pods' constraints matches, and
// the required anti-affinity terms among them that repel a pending pod.
//
// It summarises the node's first Summarised() pods (Node.Pods[:n]); pods
// appended to Node.Pods later are read in full.
type Bound struct {
	covered   int
	pods      int64    // pods not finished (each takes a pod slot)
	requests  []amount // their requests by resource name, each pod's clamped as a vec holds it
	daemons   []*corev1.Pod
	daemonN   int64 // the daemon pods among them
	daemonReq []amount
	hostPorts []hostPort
	keys      []string    // label keys their selectors look at
	owners    []ownerTerm // repelling required anti-affinity terms of the counted pods, first seen first
	counts    []int       // counted pods matched by each of index's selectors
	index     *boundIndex
}

// Summarised is how many of the node's pods (the first ones) the summary
// holds.
func (b *Bound) Summarised() int {
	if b == nil {
		return 0
	}
	return b.covered
}

// amount is a resource's summed requests.
type amount struct {
	name corev1.ResourceName
	n    int64
}

func addAmount(sum []amount, name corev1.ResourceName, n int64) []amount {
	for i := range sum {
		if sum[i].name == name {
			sum[i].n += n
			return sum
		}
	}
	return append(sum, amount{name, n})
}

// resolve adds the amounts that have a dimension in the registry now to v,
// as podRequests reads a pod (names without a slot are left out).
func (r *registry) resolve(v vec, pods int64, sum []amount) vec {
	for _, a := range sum {
		if i, ok := r.slot(a.name, false); ok {
			v[i] += a.n
		}
	}
	v[rPods] += pods
	return v
}

// ownerTerm is a required anti-affinity term some counted pods bound to
// node carry (n of them), as registerOwnerTerms counts it.
type ownerTerm struct {
	key  string
	all  bool
	ns   []string
	sel  labels.Selector
	node string
	n    int
}

// podSelector is a selector of a pending pod's spread or pod (anti-)affinity
// term: the namespaces it looks in and the labels it selects.
type podSelector struct {
	all bool
	ns  []string
	sel labels.Selector
}

func (ps podSelector) matches(ns string, l map[string]string) bool {
	return (ps.all || slices.Contains(ps.ns, ns)) && ps.sel.Matches(labels.Set(l))
}

// selectorID names a selector the way counters are told apart (less the
// topology key): a counter's is counterID's tail.
func selectorID(ns []string, all bool, sel labels.Selector) string {
	var b strings.Builder
	if all {
		b.WriteString("*")
	} else {
		b.WriteString(strings.Join(ns, ","))
	}
	b.WriteString("|" + sel.String())
	return b.String()
}

// boundIndex is the selectors of the pending pods a summary counts for,
// and those pods (a solve of others cannot use the summary).
type boundIndex struct {
	selectors []podSelector
	byID      map[string]int
	// byKey indexes the selectors that require a label value by the first
	// such key and its values; any are the others.
	byKey   map[string]map[string][]int
	keys    []string
	any     []int
	pending map[*corev1.Pod]bool
}

func newBoundIndex(pending []*corev1.Pod) *boundIndex {
	x := &boundIndex{byID: map[string]int{}, byKey: map[string]map[string][]int{}, pending: make(map[*corev1.Pod]bool, len(pending))}
	add := func(all bool, ns []string, sel labels.Selector) {
		id := selectorID(ns, all, sel)
		if _, ok := x.byID[id]; ok {
			return
		}
		i := len(x.selectors)
		x.byID[id] = i
		x.selectors = append(x.selectors, podSelector{all, ns, sel})
		key, values := requiredValues(sel)
		if key == "" {
			x.any = append(x.any, i)
			return
		}
		if x.byKey[key] == nil {
			x.byKey[key] = map[string][]int{}
			x.keys = append(x.keys, key)
		}
		for _, v := range values {
			x.byKey[key][v] = append(x.byKey[key][v], i)
		}
	}
	for _, p := range pending {
		x.pending[p] = true
		for _, c := range p.Spec.TopologySpreadConstraints {
			if sel, err := selectorWithKeys(c.LabelSelector, c.MatchLabelKeys, nil, p.Labels); err == nil {
				add(false, []string{p.Namespace}, sel)
			}
		}
		for _, t := range affinityTerms(p) {
			if sel, err := selectorWithKeys(t.LabelSelector, t.MatchLabelKeys, t.MismatchLabelKeys, p.Labels); err == nil {
				all, ns := termNamespaces(t, p.Namespace)
				add(all, ns, sel)
			}
		}
	}
	return x
}

// requiredValues is the first label key sel requires a value of (by
// equality or set membership), with the values it allows; "" when none.
func requiredValues(sel labels.Selector) (string, []string) {
	reqs, ok := sel.Requirements()
	if !ok {
		return "", nil
	}
	for _, r := range reqs {
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
			return r.Key(), r.Values().List()
		}
	}
	return "", nil
}

// count adds one pod to counts for each selector that matches it.
func (x *boundIndex) count(counts []int, p *corev1.Pod) {
	for _, k := range x.keys {
		v, ok := p.Labels[k]
		if !ok {
			continue
		}
		for _, i := range x.byKey[k][v] {
			if x.selectors[i].matches(p.Namespace, p.Labels) {
				counts[i]++
			}
		}
	}
	for _, i := range x.any {
		if x.selectors[i].matches(p.Namespace, p.Labels) {
			counts[i]++
		}
	}
}

// repels says whether a selector matches a pending pod.
func (x *boundIndex) repels(ps podSelector) bool {
	for p := range x.pending {
		if ps.matches(p.Namespace, p.Labels) {
			return true
		}
	}
	return false
}

// summariser summarises nodes for one index, keeping the anti-affinity
// terms it has read (pods of one workload carry the same).
type summariser struct {
	index   *boundIndex
	terms   map[string]*termInfo
	keys    map[string]bool     // scratch: the keys of one node's pods
	keySets map[string][]string // interned key lists
	amounts []amount            // scratch: one pod's requests
}

type termInfo struct {
	ok      bool // a valid term that repels a pending pod
	key, id string
	ps      podSelector
}

// Summarise returns the nodes with the pods bound to each summarised
// (Node.Bound) for a solve of pending, or of some of those pods: the plan
// is the one the nodes with their pods give, byte for byte. Nodes without
// pods, or summarised already, are returned as they are; it modifies
// nothing it is given.
func Summarise(nodes []*Node, pending []*corev1.Pod) []*Node {
	s := &summariser{index: newBoundIndex(pending), terms: map[string]*termInfo{}, keys: map[string]bool{}, keySets: map[string][]string{}}
	out := make([]*Node, len(nodes))
	for i, n := range nodes {
		if n == nil || n.Bound != nil || len(n.Pods) == 0 {
			out[i] = n
			continue
		}
		c := *n
		c.Bound = s.summarise(n.Pods)
		out[i] = &c
	}
	return out
}

func (s *summariser) summarise(pods []*corev1.Pod) *Bound {
	b := &Bound{covered: len(pods), index: s.index, counts: make([]int, len(s.index.selectors))}
	keys := s.keys
	clear(keys)
	var owners map[[2]string]int // term id, node -> index in b.owners
	for _, p := range pods {
		if len(p.Spec.TopologySpreadConstraints) > 0 || p.Spec.Affinity != nil {
			visitSelectorKeys(p, keys)
		}
		if !podstate.Terminal(p) {
			b.pods++
			s.amounts = appendAmounts(s.amounts[:0], boundRequests(p))
			for _, a := range s.amounts {
				b.requests = addAmount(b.requests, a.name, a.n)
			}
			if hasHostPorts(p) {
				b.hostPorts = append(b.hostPorts, podHostPorts(p)...)
			}
			if name, ok := daemonSetOf(p); ok {
				b.daemonN++
				for _, a := range s.amounts {
					b.daemonReq = addAmount(b.daemonReq, a.name, a.n)
				}
				b.keepNewestDaemon(p, name)
			}
		}
		if !counted(p) {
			continue
		}
		s.index.count(b.counts, p)
		if a := p.Spec.Affinity; a != nil && a.PodAntiAffinity != nil {
			for _, t := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
				ti := s.term(t, p)
				if !ti.ok {
					continue
				}
				k := [2]string{ti.id, p.Spec.NodeName}
				if owners == nil {
					owners = map[[2]string]int{}
				}
				if j, ok := owners[k]; ok {
					b.owners[j].n++
					continue
				}
				owners[k] = len(b.owners)
				b.owners = append(b.owners, ownerTerm{key: ti.key, all: ti.ps.all, ns: ti.ps.ns, sel: ti.ps.sel, node: p.Spec.NodeName, n: 1})
			}
		}
	}
	b.keys = s.internKeys(keys)
	return b
}

// internKeys is keys sorted, one slice for every node whose pods' selectors
// read the same keys.
func (s *summariser) internKeys(keys map[string]bool) []string {
	if len(keys) == 0 {
		return nil
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	slices.Sort(sorted)
	id := strings.Join(sorted, "\x00")
	if k, ok := s.keySets[id]; ok {
		return k
	}
	s.keySets[id] = sorted
	return sorted
}

// hasHostPorts says whether a container of p binds a host port.
func hasHostPorts(p *corev1.Pod) bool {
	for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range cs {
			for _, port := range cs[i].Ports {
				if port.HostPort > 0 {
					return true
				}
			}
		}
	}
	return false
}

// keepNewestDaemon keeps p if it is the newest pod of its DaemonSet on the
// node so far (liveDaemonPods chooses among these).
func (b *Bound) keepNewestDaemon(p *corev1.Pod, ds string) {
	for i, q := range b.daemons {
		if qds, _ := daemonSetOf(q); qds == ds && q.Namespace == p.Namespace {
			if newer(p, q) {
				b.daemons[i] = p
			}
			return
		}
	}
	b.daemons = append(b.daemons, p)
}

// appendAmounts appends each resource of rl but the pod slot, clamped as a
// vec holds it. A list of cpu and memory alone (the common pod's) is read
// by lookups, cheaper than walking the map.
func appendAmounts(out []amount, rl corev1.ResourceList) []amount {
	if len(rl) <= 2 {
		found := 0
		for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			if q, ok := rl[name]; ok {
				out = append(out, amount{name, qty.Clamped(name, q)})
				found++
			}
		}
		if found == len(rl) {
			return out
		}
		out = out[:len(out)-found]
	}
	for name, q := range rl {
		if name != corev1.ResourcePods {
			out = append(out, amount{name, qty.Clamped(name, q)})
		}
	}
	return out
}

// boundRequests is the pod's requests as podRequests reads them, without
// copying the common pod (one container, no init containers, overhead,
// pod-level resources or limits without requests).
func boundRequests(p *corev1.Pod) corev1.ResourceList {
	if len(p.Spec.Containers) == 1 && len(p.Spec.InitContainers) == 0 && p.Spec.Overhead == nil &&
		p.Spec.Resources == nil && !needsDefaultRequests(p) {
		return p.Spec.Containers[0].Resources.Requests
	}
	return podResourceList(p)
}

// term is a required anti-affinity term of p as registerOwnerTerms reads
// it, looked up by what it depends on: the term, p's namespace and the
// values of p's labels it names.
func (s *summariser) term(t corev1.PodAffinityTerm, p *corev1.Pod) *termInfo {
	data, _ := t.Marshal()
	var b strings.Builder
	b.Write(data)
	b.WriteString("\x00" + p.Namespace)
	for _, list := range [][]string{t.MatchLabelKeys, t.MismatchLabelKeys} {
		b.WriteByte(0)
		for _, k := range list {
			if v, ok := p.Labels[k]; ok {
				b.WriteString(k + "=" + v + "\x01")
			} else {
				b.WriteString(k + "\x02")
			}
		}
	}
	ck := b.String()
	if ti, ok := s.terms[ck]; ok {
		return ti
	}
	ti := &termInfo{}
	s.terms[ck] = ti
	sel, err := selectorWithKeys(t.LabelSelector, t.MatchLabelKeys, t.MismatchLabelKeys, p.Labels)
	if err != nil {
		return ti
	}
	all, ns := termNamespaces(t, p.Namespace)
	ti.key, ti.ps = apis.NormalizeLabel(t.TopologyKey), podSelector{all, ns, sel}
	ti.id = ti.key + "|" + selectorID(ns, all, sel)
	// A term that repels no pending pod counts in no placement.
	ti.ok = s.index.repels(ti.ps)
	return ti
}

// checkBound says why the nodes' summaries cannot serve a solve of pods:
// some pod is not one they were summarised for.
func checkBound(nodes []*Node, pods []*corev1.Pod) error {
	seen := map[*boundIndex]bool{}
	for _, n := range nodes {
		if n == nil || n.Node == nil || n.Bound == nil || seen[n.Bound.index] {
			continue
		}
		seen[n.Bound.index] = true
		for _, p := range pods {
			if !n.Bound.index.pending[p] {
				return fmt.Errorf("scheduling: node %s's pods were summarised for other pending pods than %s/%s (Summarise with the pods to place)", n.Node.Name, p.Namespace, p.Name)
			}
		}
	}
	return nil
}

// unsummarised is the node's pods its summary does not hold.
func unsummarised(n *Node) []*corev1.Pod {
	return n.Pods[min(n.Bound.Summarised(), len(n.Pods)):]
}

// registerBoundOwners registers the repelling anti-affinity terms of the
// node's summarised pods, as registerOwnerTerms does for a pod read in full.
func (s *solver) registerBoundOwners(n *node) {
	if n.bound == nil {
		return
	}
	for _, o := range n.bound.owners {
		c := s.counters[s.ownerCounterFor(o.key, o.ns, o.all, o.sel)]
		if at := s.nodeByName[o.node]; at != nil {
			c.add(at.domain(o.key), o.n)
		}
	}
}

// countBound counts the summarised pods in the counters of the pending
// pods' constraints, as countExistingPods counts the pods read in full.
func (s *solver) countBound() {
	for _, c := range s.counters {
		if c.owner {
			continue
		}
		id := selectorID(c.namespaces, c.all, c.sel)
		var index *boundIndex
		j := -1
		for _, n := range s.nodes {
			b := n.bound
			if b == nil {
				continue
			}
			if b.index != index {
				i, ok := b.index.byID[id]
				if !ok {
					panic(fmt.Sprintf("node %s's pods were summarised without the selector %s", n.name, id))
				}
				index, j = b.index, i
			}
			c.add(n.domain(c.key), b.counts[j])
		}
	}
}

// newestDaemons is each DaemonSet's newest pod among the summarised ones
// (nil summary: none).
func (b *Bound) newestDaemons() []*corev1.Pod {
	if b == nil {
		return nil
	}
	return b.daemons
}
