package scheduling

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/podstate"
)

// counter counts, per topology domain, the pods a selector matches (or, for
// an owner counter, the pods that carry a required anti-affinity term with
// that selector, which repel the pods the selector matches).
type counter struct {
	key        string
	all        bool
	namespaces []string
	sel        labels.Selector
	owner      bool
	counts     map[string]int
	total      int
}

func (c *counter) matches(ns string, l map[string]string) bool {
	return (c.all || slices.Contains(c.namespaces, ns)) && c.sel.Matches(labels.Set(l))
}

func (c *counter) add(domain string, n int) {
	if domain == "" || n == 0 {
		return
	}
	c.counts[domain] += n
	c.total += n
}

// record counts n pods (negative: removes them) in counter i, logging the
// change while an undo session is open.
func (s *solver) count(i int, domain string, n int) {
	if domain == "" || n == 0 {
		return
	}
	s.counters[i].add(domain, n)
	if s.undo != nil {
		s.undo.counts = append(s.undo.counts, countChange{i, domain, n})
	}
}

func (s *solver) counterID(key string, ns []string, all, owner bool, sel labels.Selector) string {
	var b strings.Builder
	if owner {
		b.WriteString("owner|")
	}
	b.WriteString(key + "|")
	b.WriteString(selectorID(ns, all, sel))
	return b.String()
}

func (s *solver) counterFor(key string, ns []string, all bool, sel labels.Selector) int {
	return s.getCounter(key, ns, all, false, sel)
}

func (s *solver) ownerCounterFor(key string, ns []string, all bool, sel labels.Selector) int {
	return s.getCounter(key, ns, all, true, sel)
}

func (s *solver) getCounter(key string, ns []string, all, owner bool, sel labels.Selector) int {
	id := s.counterID(key, ns, all, owner, sel)
	if i, ok := s.counterIdx[id]; ok {
		return i
	}
	s.counters = append(s.counters, &counter{key: key, all: all, namespaces: ns, sel: sel, owner: owner, counts: map[string]int{}})
	s.counterIdx[id] = len(s.counters) - 1
	return len(s.counters) - 1
}

// countExistingPods registers the required anti-affinity terms of pods already
// on nodes (inverse anti-affinity) and counts every bound pod in the counters
// it matches.
func (s *solver) countExistingPods() {
	for _, n := range s.nodes {
		s.registerBoundOwners(n)
		for _, p := range n.pods {
			if counted(p) {
				s.registerOwnerTerms(p)
			}
		}
	}
	for _, n := range s.nodes {
		for _, p := range n.pods {
			if !counted(p) {
				continue
			}
			for _, c := range s.counters {
				if c.owner {
					continue
				}
				if c.matches(p.Namespace, p.Labels) {
					c.add(n.domain(c.key), 1)
				}
			}
		}
	}
	s.countBound()
}

// counted says whether a bound pod counts in topology: not finished and not
// being deleted, as kube-scheduler and Karpenter count.
func counted(p *corev1.Pod) bool {
	return podstate.Active(p)
}

func (s *solver) registerOwnerTerms(p *corev1.Pod) {
	a := p.Spec.Affinity
	if a == nil || a.PodAntiAffinity == nil {
		return
	}
	for _, t := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
		sel, err := selectorWithKeys(t.LabelSelector, t.MatchLabelKeys, t.MismatchLabelKeys, p.Labels)
		if err != nil {
			continue
		}
		all, ns := termNamespaces(t, p.Namespace)
		key := apis.NormalizeLabel(t.TopologyKey)
		c := s.counters[s.ownerCounterFor(key, ns, all, sel)]
		if n := s.nodeByName[p.Spec.NodeName]; n != nil {
			c.add(n.domain(key), 1)
		}
	}
}

// matchCounters records which counters each group's pods match.
//
// A counter whose selector requires a label value (key=value, key in (...))
// can only match groups carrying it, so those are looked up by label rather
// than tried one by one: with every pod selecting its own label, trying each
// counter against each group was quadratic (10,000 distinct pods: 10^8
// selector matches, most of a solve). Counters are visited in order, so each
// group's matches stay sorted.
func (s *solver) matchCounters() {
	byLabel := map[[2]string][]*group{}
	for _, g := range s.groups {
		g.matches = g.matches[:0]
		for k, v := range g.labels {
			byLabel[[2]string{k, v}] = append(byLabel[[2]string{k, v}], g)
		}
	}
	for i, c := range s.counters {
		candidates, narrowed := s.groupsWithRequiredLabel(c.sel, byLabel)
		if !narrowed {
			candidates = s.groups
		}
		for _, g := range candidates {
			if c.matches(g.ns, g.labels) {
				g.matches = append(g.matches, i)
			}
		}
	}
}

// groupsWithRequiredLabel returns the groups that carry a value sel requires
// of some label (by the first equality or set-membership requirement), in
// group order, without duplicates; narrowed is false when sel requires no
// label value.
func (s *solver) groupsWithRequiredLabel(sel labels.Selector, byLabel map[[2]string][]*group) ([]*group, bool) {
	reqs, ok := sel.Requirements()
	if !ok {
		return nil, false
	}
	for _, r := range reqs {
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
		default:
			continue
		}
		values := r.Values().List()
		if len(values) == 1 {
			return byLabel[[2]string{r.Key(), values[0]}], true
		}
		seen := map[*group]bool{}
		for _, v := range values {
			for _, g := range byLabel[[2]string{r.Key(), v}] {
				seen[g] = true
			}
		}
		out := make([]*group, 0, len(seen))
		for _, g := range s.groups {
			if seen[g] {
				out = append(out, g)
			}
		}
		return out, true
	}
	return nil, false
}

// record counts k pods of g placed in a target with the given domains.
func (s *solver) record(g *group, domain func(key string) string, k int) {
	for _, i := range g.matches {
		if c := s.counters[i]; !c.owner {
			s.count(i, domain(c.key), k)
		}
	}
	for _, i := range g.owners {
		s.count(i, domain(s.counters[i].key), k)
	}
}

// topologyKeys is the keys whose domain must be known when g is placed on a
// new NodeClaim, which then gets pinned to one value of each: every key of
// g's own spreads and pod (anti-)affinity terms and of the anti-affinity of
// other pods that repel g (whatever the key: zone, capacity type, an
// instance-type label, a label a NodePool defines), and the zone and
// capacity type of other pods' constraints that count g's pods (so that
// they are counted where they land). The hostname needs no pin: a new
// claim is its own hostname domain.
func (s *solver) topologyKeys(g *group) []string {
	var keys []string
	add := func(k string, any bool) {
		if k == apis.LabelHostname || slices.Contains(keys, k) {
			return
		}
		if any || k == apis.LabelZone || k == apis.LabelCapacityType {
			keys = append(keys, k)
		}
	}
	for _, sp := range g.spreads {
		if !sp.dropped {
			add(sp.key, true)
		}
	}
	for _, ts := range [][]term{g.affinity, g.anti} {
		for _, t := range ts {
			if !t.dropped {
				add(t.key, true)
			}
		}
	}
	for _, i := range g.matches {
		add(s.counters[i].key, s.counters[i].owner)
	}
	for _, i := range g.owners {
		add(s.counters[i].key, true)
	}
	slices.Sort(keys)
	return keys
}

// topologyCap is how many more pods of g the topology allows in a target whose
// domains are given (math.MaxInt32 when unconstrained); hostnameMin is the
// smallest count of the hostname domains g could also use (0 when a new node
// is possible).
func (s *solver) topologyCap(g *group, domain func(string) string, eligible func(sp *spread) []string) int {
	return s.topologyCapOn(g, domain, eligible, "")
}

// topologyCapOn is topologyCap counting only the constraints on key (all
// when key is ""), for choosing the value of one key while others are open.
func (s *solver) topologyCapOn(g *group, domain func(string) string, eligible func(sp *spread) []string, key string) int {
	skip := func(k string) bool { return key != "" && k != key }
	limit := 1 << 30
	for i := range g.spreads {
		sp := &g.spreads[i]
		if sp.dropped || skip(sp.key) {
			continue
		}
		limit = min(limit, s.spreadCap(sp, domain(sp.key), eligible(sp)))
		if limit <= 0 {
			return 0
		}
	}
	for _, t := range g.affinity {
		if t.dropped || skip(t.key) {
			continue
		}
		c := s.counters[t.counter]
		d := domain(t.key)
		if c.counts[d] == 0 && (c.total > 0 || !t.selfMatch) {
			return 0
		}
		if c.total == 0 && t.selfMatch && d == "" {
			return 0 // the first pod of a self-affine group needs a known domain
		}
	}
	for _, t := range g.anti {
		if t.dropped || skip(t.key) {
			continue
		}
		c := s.counters[t.counter]
		d := domain(t.key)
		if d == "" || c.counts[d] > 0 {
			return 0
		}
		if t.selfMatch {
			limit = min(limit, 1)
		}
	}
	for _, i := range g.matches {
		if c := s.counters[i]; c.owner && !skip(c.key) {
			if d := domain(c.key); d == "" || c.counts[d] > 0 {
				return 0
			}
		}
	}
	return limit
}

// spreadCap applies one spread constraint to domain d given the eligible
// domains: placing pods in d may not put it more than maxSkew above the
// least-loaded eligible domain (0 when fewer than minDomains domains exist).
func (s *solver) spreadCap(sp *spread, d string, eligible []string) int {
	if d == "" {
		return 0
	}
	c := s.counters[sp.counter]
	globalMin := 1 << 30
	for _, e := range eligible {
		globalMin = min(globalMin, c.counts[e])
	}
	if len(eligible) < sp.minDomains || len(eligible) == 0 {
		globalMin = 0
	}
	room := sp.maxSkew + globalMin - c.counts[d]
	if !sp.selfMatch {
		if c.counts[d]-globalMin > sp.maxSkew {
			return 0
		}
		return 1 << 30
	}
	return max(room, 0)
}
