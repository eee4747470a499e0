package scheduling

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/requirements"
)

// explain says why the pods of g could not be placed, pool by pool, in words
// a person can act on: the constraint that failed and the NodePool it
// failed on.
func (s *solver) explain(g *group) string {
	if g.err != nil {
		return "invalid scheduling constraints: " + g.err.Error()
	}
	if g.volumeErr != "" {
		return g.volumeErr
	}
	if g.tooLarge != "" {
		return g.tooLarge
	}
	if len(g.unknown) > 0 {
		names := make([]string, len(g.unknown))
		for i, n := range g.unknown {
			names[i] = string(n)
		}
		sort.Strings(names)
		return fmt.Sprintf("it requests %s, which no existing node and no instance type of any NodePool offers", strings.Join(names, ", "))
	}
	s.prepare(g)
	if r, ok := g.cur.reqs.Get(requirements.FieldNodeName); ok {
		return s.pinnedReason(g, r)
	}
	if len(s.pools) == 0 {
		return "no existing node can take it and there is no NodePool"
	}
	if len(g.volumes) > 0 {
		if reason := s.volumeConflict(g); reason != "" {
			return reason
		}
	}
	var reasons []string
	for _, p := range s.pools {
		reasons = append(reasons, s.poolReason(p, g))
	}
	if len(g.volumes) > 0 {
		return strings.Join(reasons, "; ") + " (its volumes restrict its node to " + g.volumeFrom + ")"
	}
	return strings.Join(reasons, "; ")
}

// volumeConflict explains a pod whose node selection excludes every node
// its volumes allow, or "" when some alternative is compatible.
func (s *solver) volumeConflict(g *group) string {
	own := g.required[g.altIdx]
	for _, v := range g.volumes {
		if own.Intersect(v).Satisfiable() == nil {
			return ""
		}
	}
	return fmt.Sprintf("its node selection (%s) excludes every node its volumes allow (%s)", shortReqs(own), g.volumeFrom)
}

// pinnedReason explains a pod whose node affinity names nodes (matchFields
// on metadata.name), which no new node can be.
func (s *solver) pinnedReason(g *group, r requirements.Requirement) string {
	names, finite := r.Values()
	if finite && len(names) == 0 {
		return "its required node affinity has an empty nodeSelectorTerm (or no terms), which matches no node"
	}
	if !finite {
		return fmt.Sprintf("its required node affinity selects nodes by name (%s), and no existing node it selects can take it; a new node's name cannot be chosen", r)
	}
	var parts []string
	for _, name := range names {
		n := s.nodeByName[name]
		if n == nil {
			parts = append(parts, fmt.Sprintf("node %s is not in the cluster", name))
			continue
		}
		parts = append(parts, fmt.Sprintf("node %s %s", name, s.nodeReason(n, g)))
	}
	return "its required node affinity pins it to " + strings.Join(names, ", ") + " (a new node's name cannot be chosen): " + strings.Join(parts, "; ")
}

// nodeReason says why an existing node cannot take a pod of g.
func (s *solver) nodeReason(n *node, g *group) string {
	switch {
	case n.skip:
		return "is cordoned or being deleted"
	case !tolerates(g.tolerations, n.taints, !g.preferNoScheduleOK):
		t, _ := untoleratedTaint(g.tolerations, n.taints, !g.preferNoScheduleOK)
		return "has taint " + t.ToString() + ", which the pod does not tolerate"
	case !s.matchesNode(g, n):
		return "does not match its node selector or required node affinity"
	}
	free := n.alloc.sub(n.used)
	for d := range g.req {
		if g.req[d] > free[d] {
			return fmt.Sprintf("has %s free, less than the pod's %s", human(d, max(free[d], 0)), s.reg.describe(d, g.req[d]))
		}
	}
	if len(g.hostPorts) > 0 && conflicts(g.hostPorts, n.hostPorts) {
		return "already binds a host port the pod needs"
	}
	return "would break its topology spread or pod (anti-)affinity"
}

// poolReason is why a new node from p cannot take a pod of g.
func (s *solver) poolReason(p *pool, g *group) string {
	prefix := "NodePool " + p.name + ": "
	if p.err != nil {
		return prefix + p.err.Error()
	}
	if t, bad := untoleratedTaint(g.tolerations, p.taints(), !g.preferNoScheduleOK); bad {
		return prefix + fmt.Sprintf("the pod does not tolerate its taint %s", t.ToString())
	}
	if reason := s.daemonPortReason(p, g); reason != "" {
		return prefix + reason
	}
	if reason := s.requirementReason(p, g.cur.reqs); reason != "" {
		return prefix + reason
	}
	merged := s.merged(p.rs, g.cur)
	if merged == nil {
		return prefix + "the pod's node selection and the NodePool's requirements exclude each other"
	}
	st := s.stateFor(p, merged, true)
	if st.viable.empty() {
		return prefix + s.noTypeReason(p, merged.reqs)
	}
	if reason := s.tooBig(p, st, g); reason != "" {
		return reason
	}
	c := &claim{pool: p, rs: merged, cur: -1, exotic: true, state: st, name: "new"}
	if !s.fitsIn(c, st, g.req) {
		if r := p.limitReason(s.reg, s.smallestCapacity(p, st, g.req)); r != "" {
			return r
		}
		if reason := s.minValuesReason(c, st, g.req); reason != "" {
			return reason
		}
	}
	return prefix + s.topologyReason(p, merged, g)
}

// requirementReason names the first requirement of the pod that the pool's
// nodes cannot satisfy: a label they will not have, or values the pool
// excludes.
func (s *solver) requirementReason(p *pool, pod requirements.Requirements) string {
	for _, in := range pod {
		if in.Key == requirements.FieldNodeName {
			continue
		}
		own, ok := p.reqs.Get(in.Key)
		if !in.Satisfiable() {
			return fmt.Sprintf("the pod requires label %s to be in an empty list of values, which no node satisfies", in.Key)
		}
		switch {
		case ok && !own.Intersect(in).Satisfiable():
			return fmt.Sprintf("the pod requires %s and the NodePool allows only %s", shortReq(in), shortReq(own))
		case !ok && !in.AllowsAbsent() && !requirements.WellKnown(in.Key):
			if in.Key == apis.LabelHostname {
				return fmt.Sprintf("the pod requires %s, and a new node's hostname cannot be chosen", shortReq(in))
			}
			if typo := requirements.TypoOf(in.Key); typo != "" {
				return fmt.Sprintf("the pod requires %s, and the NodePool's nodes will not have label %s (typo of %s?)", shortReq(in), in.Key, typo)
			}
			return fmt.Sprintf("the pod requires %s, and the NodePool's nodes will not have label %s (add it to the NodePool's template labels or requirements)", shortReq(in), in.Key)
		}
	}
	return ""
}

// noTypeReason says which requirement leaves the pool no instance type:
// one that no type (or offering) of the pool satisfies alone, else all of
// them together.
func (s *solver) noTypeReason(p *pool, reqs requirements.Requirements) string {
	u := s.u
	both := p.types.clone()
	both.or(p.exotic)
	offered := u.offeredIn(p.mask)
	for _, r := range reqs {
		switch {
		case u.isOfferingKey(r.Key):
			if u.offeringMask(p.reqs.Add(r)) != 0 && u.offeredIn(u.offeringMask(p.reqs.Add(r))).intersects(both) {
				continue
			}
			if r.Key == apis.LabelCapacityType {
				return fmt.Sprintf("no instance type has an available offering with %s (capacity types with available offerings: %s)",
					shortReq(r), strings.Join(s.pricedCapacityTypes(both), ", "))
			}
			return fmt.Sprintf("no instance type is offered with %s (the cluster's zones are %s)", shortReq(r), strings.Join(s.u.zones, ", "))
		case u.isTypeKey(r.Key):
			b := u.typeBits(r).clone()
			b.and(both)
			b.and(offered)
			if !b.empty() {
				continue
			}
			return fmt.Sprintf("none of its instance types has %s (they have %s %s)", shortReq(r), r.Key, valueList(s.typeLabelValues(r.Key, both, nil)))
		}
	}
	for _, r := range reqs {
		if !u.isTypeKey(r.Key) && !u.isOfferingKey(r.Key) && strings.HasPrefix(r.Key, apis.AWSGroup+"/instance-") && !r.AllowsAbsent() {
			return fmt.Sprintf("it requires %s, and no instance type has label %s", shortReq(r), r.Key)
		}
	}
	return fmt.Sprintf("no instance type satisfies the pod's and the NodePool's requirements together: %s", s.typeReqString(reqs))
}

// pricedCapacityTypes lists the capacity types some of the types has a
// priced, available offering of.
func (s *solver) pricedCapacityTypes(types bitset) []string {
	var out []string
	for c, ct := range capacityTypes {
		for z := range s.u.zones {
			if s.u.offered[z*len(capacityTypes)+c].intersects(types) {
				out = append(out, ct)
				break
			}
		}
	}
	if len(out) == 0 {
		return []string{"none"}
	}
	return out
}

// daemonPortReason says which daemonset binds a host port the pod needs on
// every type of the pool.
func (s *solver) daemonPortReason(p *pool, g *group) string {
	if len(g.hostPorts) == 0 {
		return ""
	}
	all := p.types.clone()
	all.or(p.exotic)
	for i, ds := range s.daemons {
		for _, hp := range g.hostPorts {
			if !conflicts([]hostPort{hp}, ds.hostPorts) {
				continue
			}
			rest := all.clone()
			rest.andNot(p.daemons[i])
			if rest.empty() {
				return fmt.Sprintf("DaemonSet %s binds host port %d/%s on every node of the pool", ds.name, hp.port, hp.protocol)
			}
		}
	}
	return ""
}

// tooBig names the first resource no allowed type has enough of, and the
// DaemonSets when it is their overhead that leaves too little.
func (s *solver) tooBig(p *pool, st *reqState, g *group) string {
	for d := range g.req {
		if g.req[d] <= st.maxAlloc[d] || (d == rPods && g.req[d] <= 1 && st.maxAlloc[d] >= 1) {
			continue
		}
		if reason := s.daemonOverheadReason(p, st, g, d); reason != "" {
			return reason
		}
		best, bestV := -1, int64(math.MinInt64)
		st.viable.each(func(t int) bool {
			if v := p.alloc[t][d]; v > bestV {
				best, bestV = t, v
			}
			return true
		})
		if best < 0 {
			break
		}
		if p.capacity[best][d] <= 0 {
			return fmt.Sprintf("NodePool %s: none of its instance types has %s (the pod requests %s)", p.name, s.reg.names[d], human(d, g.req[d]))
		}
		size := s.published(best, d, p.capacity[best][d])
		largest := fmt.Sprintf("%s with %s", s.u.types[best].Name, human(d, size))
		if size != bestV {
			largest += fmt.Sprintf(" (%s allocatable)", human(d, max(bestV, 0)))
		}
		return fmt.Sprintf("NodePool %s: no instance type has %s; the largest is %s", p.name, s.reg.describe(d, g.req[d]), largest)
	}
	return ""
}

// published is a type's size as EC2 publishes it (vCPUs, memory), which is
// what people recognise, for the dimensions EC2 publishes; else capacity.
func (s *solver) published(t, d int, capacity int64) int64 {
	it := s.u.types[t]
	switch d {
	case rCPU:
		return int64(it.VCPU) * 1000
	case rMemory:
		return it.MemoryMiB << 20
	}
	return capacity
}

// smallestCapacity is the capacity of the cheapest type that holds req,
// whatever the pool's limits.
func (s *solver) smallestCapacity(p *pool, st *reqState, req vec) vec {
	f := st.viable.clone()
	p.fitting(f, req)
	best, price := -1, math.Inf(1)
	f.each(func(t int) bool {
		if pr := st.prices[t] + p.surplus(t, req[rCPU]); pr < price {
			best, price = t, pr
		}
		return true
	})
	if best < 0 {
		return req
	}
	return p.capacity[best]
}

// typeReqString shows the requirements that select instance types.
func (s *solver) typeReqString(r requirements.Requirements) string {
	var parts []string
	for _, req := range r {
		if s.u.isTypeKey(req.Key) || s.u.isOfferingKey(req.Key) {
			parts = append(parts, shortReq(req))
		}
	}
	if len(parts) == 0 {
		return "the requirements (no instance type is offered in the zones and capacity types allowed)"
	}
	return strings.Join(parts, "; ")
}

// topologyReason says which of g's topology constraints no node of p can
// satisfy, with the counts that stop it.
func (s *solver) topologyReason(p *pool, merged *reqSet, g *group) string {
	var parts []string
	for i := range g.spreads {
		sp := &g.spreads[i]
		if sp.dropped {
			continue
		}
		if r := s.spreadReason(p, merged, g, sp); r != "" {
			parts = append(parts, r)
		}
	}
	for _, t := range g.affinity {
		if !t.dropped {
			where := "in the same " + t.key
			if t.key == apis.LabelHostname {
				where = "on the same node"
			}
			parts = append(parts, fmt.Sprintf("its required pod affinity on %s needs a pod matching %s %s, and none runs or is planned where the NodePool can put a node",
				t.key, selectorString(s.counters[t.counter]), where))
		}
	}
	for _, t := range g.anti {
		if t.dropped {
			continue
		}
		c := s.counters[t.counter]
		if t.key == apis.LabelHostname {
			parts = append(parts, fmt.Sprintf("its required pod anti-affinity on %s repels pods matching %s", t.key, selectorString(c)))
			continue
		}
		parts = append(parts, fmt.Sprintf("its required pod anti-affinity on %s repels pods matching %s, which run or are planned in every %s the NodePool can use (%s)",
			t.key, selectorString(c), t.key, s.domainCounts(c, s.poolDomains(p, merged.reqs, t.key))))
	}
	for _, i := range g.matches {
		if c := s.counters[i]; c.owner && c.total > 0 && !g.repelsOnKey(c.key) {
			parts = append(parts, fmt.Sprintf("pods with required anti-affinity against it on %s run or are planned in every %s the NodePool can use (%s)",
				c.key, c.key, s.domainCounts(c, s.poolDomains(p, merged.reqs, c.key))))
			break
		}
	}
	if len(parts) == 0 {
		return "a new node could hold it, yet none was planned for it"
	}
	return strings.Join(parts, "; ")
}

// spreadReason says why a spread constraint stops g on p's nodes, or "".
func (s *solver) spreadReason(p *pool, merged *reqSet, g *group, sp *spread) string {
	if sp.key == apis.LabelHostname {
		return ""
	}
	eligible := g.eligible(sp)
	name := fmt.Sprintf("its topology spread on %s (maxSkew %d", sp.key, sp.maxSkew)
	if sp.minDomains > 1 {
		name += fmt.Sprintf(", minDomains %d", sp.minDomains)
	}
	name += ")"
	if len(eligible) == 0 {
		return name + fmt.Sprintf(" needs nodes labelled %s, and no node or NodePool gives that label a value", sp.key)
	}
	reach := s.poolDomains(p, merged.reqs, sp.key)
	if len(reach) == 0 {
		return name + fmt.Sprintf(": the NodePool gives its nodes no value of %s", sp.key)
	}
	c := s.counters[sp.counter]
	msg := name + fmt.Sprintf(" allows no more matching pods in the %s the NodePool can use: %s (all domains: %s)",
		sp.key, s.domainCounts(c, reach), s.domainCounts(c, eligible))
	if len(eligible) < sp.minDomains {
		msg += fmt.Sprintf("; fewer than minDomains %d domains exist, so each may hold at most maxSkew", sp.minDomains)
	}
	return msg
}

// domainCounts lists how many pods counter c counts in each domain, at
// most 8 of them.
func (s *solver) domainCounts(c *counter, domains []string) string {
	if len(domains) == 0 {
		return "none"
	}
	var parts []string
	for i, d := range domains {
		if i == 8 {
			parts = append(parts, fmt.Sprintf("and %d more", len(domains)-8))
			break
		}
		parts = append(parts, fmt.Sprintf("%s has %d", d, c.counts[d]))
	}
	return strings.Join(parts, ", ")
}

// selectorString shows a counter's label selector, "every pod" when empty.
func selectorString(c *counter) string {
	if str := c.sel.String(); str != "" {
		return str
	}
	return "every pod"
}

// shortReq describes a requirement for people, listing at most 8 values.
func shortReq(r requirements.Requirement) string {
	var parts []string
	for _, ns := range r.NodeSelectorRequirements() {
		part := ns.Key + " " + string(ns.Operator)
		if n := len(ns.Values); n > 8 {
			part += fmt.Sprintf(" [%s ... and %d more]", strings.Join(ns.Values[:8], " "), n-8)
		} else if n > 0 {
			part += " [" + strings.Join(ns.Values, " ") + "]"
		}
		parts = append(parts, part)
	}
	return strings.Join(parts, ", ")
}

// daemonOverheadReason explains a resource d that some allowed type would
// have enough of but for the DaemonSets that run on it: it names them, with
// what they request, and the largest type.
func (s *solver) daemonOverheadReason(p *pool, st *reqState, g *group, d int) string {
	best, bestV := -1, int64(math.MinInt64)
	st.viable.each(func(t int) bool {
		if v := p.alloc[t][d] + p.overhead[t][d]; v > bestV {
			best, bestV = t, v
		}
		return true
	})
	if best < 0 || g.req[d] > bestV {
		return ""
	}
	var parts []string
	for i, ds := range s.daemons {
		if ds.req[d] > 0 && p.daemons[i].has(best) {
			parts = append(parts, fmt.Sprintf("%s requests %s", ds.name, human(d, ds.req[d])))
		}
	}
	largest := fmt.Sprintf("the largest, %s, has %s allocatable", s.u.types[best].Name, human(d, bestV))
	if len(parts) == 0 {
		parts = append(parts, "together")
	}
	if p.overhead[best][d] > bestV {
		return fmt.Sprintf("NodePool %s: its DaemonSets need more %s than any instance type has: %s; %s",
			p.name, s.reg.names[d], strings.Join(parts, ", "), largest)
	}
	return fmt.Sprintf("NodePool %s: its DaemonSets leave less than the pod's %s on every instance type: %s; %s",
		p.name, s.reg.describe(d, g.req[d]), strings.Join(parts, ", "), largest)
}

// repelsOnKey says whether g has an active required anti-affinity term on
// key (whose reason then covers the pods it repels).
func (g *group) repelsOnKey(key string) bool {
	for _, t := range g.anti {
		if !t.dropped && !t.preferred && t.key == key {
			return true
		}
	}
	return false
}

// valueList shows label values for people: a range when they are all
// integers, else at most 8 of them.
func valueList(values []string) string {
	if len(values) == 0 {
		return "none"
	}
	lo, hi, numeric := int64(math.MaxInt64), int64(math.MinInt64), true
	for _, v := range values {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			numeric = false
			break
		}
		lo, hi = min(lo, n), max(hi, n)
	}
	if numeric && len(values) > 2 {
		return fmt.Sprintf("%d to %d", lo, hi)
	}
	if len(values) > 8 {
		return strings.Join(values[:8], ", ") + fmt.Sprintf(" and %d more", len(values)-8)
	}
	return strings.Join(values, ", ")
}
