package scheduling

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"github.com/nodewright/nodewright/shared/requirements"
)

// explain says why the pods of g could not be placed, pool by pool, in words
// a person can act on.
func (s *solver) explain(g *group) string {
	if g.err != nil {
		return "invalid scheduling constraints: " + g.err.Error()
	}
	if len(g.unknown) > 0 {
		names := make([]string, len(g.unknown))
		for i, n := range g.unknown {
			names[i] = string(n)
		}
		sort.Strings(names)
		return fmt.Sprintf("no node or instance type offers %s", strings.Join(names, ", "))
	}
	s.prepare(g)
	if r, ok := g.cur.reqs.Get(requirements.FieldNodeName); ok {
		return fmt.Sprintf("the pod is pinned to node %s, which cannot take it", r)
	}
	if len(s.pools) == 0 {
		return "no existing node can take it and there is no NodePool"
	}
	var reasons []string
	for _, p := range s.pools {
		reasons = append(reasons, s.poolReason(p, g))
	}
	if len(reasons) == 1 {
		return reasons[0]
	}
	return strings.Join(reasons, "; ")
}

// poolReason is why a new node from p cannot take a pod of g.
func (s *solver) poolReason(p *pool, g *group) string {
	prefix := "NodePool " + p.name + ": "
	if p.err != nil {
		return prefix + p.err.Error()
	}
	if t, bad := untoleratedTaint(g.tolerations, p.taints(), !g.preferNoScheduleOK); bad {
		return prefix + fmt.Sprintf("did not tolerate taint %s", t.ToString())
	}
	if reason := s.daemonPortReason(p, g); reason != "" {
		return prefix + reason
	}
	if err := p.reqs.Compatible(g.cur.reqs, requirements.WellKnown); err != nil {
		return prefix + "incompatible requirements: " + err.Error()
	}
	if err := p.reqs.Intersect(g.cur.reqs).Satisfiable(); err != nil {
		return prefix + err.Error()
	}
	merged := s.merged(p.rs, g.cur)
	st := s.stateFor(p, merged, true)
	if st.viable.empty() {
		return prefix + fmt.Sprintf("no instance type satisfies %s", s.typeReqString(merged.reqs))
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
	return prefix + s.topologyReason(g)
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
		size := s.published(best, d, p.capacity[best][d])
		largest := fmt.Sprintf("%s with %s", s.u.types[best].Name, human(d, size))
		if size != bestV {
			largest += fmt.Sprintf(" (%s allocatable)", human(d, max(bestV, 0)))
		}
		return fmt.Sprintf("no instance type in NodePool %s has %s; largest is %s", p.name, s.reg.describe(d, g.req[d]), largest)
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

// smallestCapacity is the capacity of the cheapest type that holds req.
func (s *solver) smallestCapacity(p *pool, st *reqState, req vec) vec {
	f := s.fitSet(&claim{pool: p, cur: -1}, st, req)
	best, price := -1, math.Inf(1)
	f.each(func(t int) bool {
		if st.prices[t] < price {
			best, price = t, st.prices[t]
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

// topologyReason describes the topology constraints that stopped g.
func (s *solver) topologyReason(g *group) string {
	var parts []string
	for _, sp := range g.spreads {
		if !sp.dropped {
			parts = append(parts, fmt.Sprintf("topology spread on %s (maxSkew %d)", sp.key, sp.maxSkew))
		}
	}
	for _, t := range g.affinity {
		if !t.dropped {
			parts = append(parts, "pod affinity on "+t.key+" (no matching pod where a node can go)")
		}
	}
	for _, t := range g.anti {
		if !t.dropped {
			parts = append(parts, "pod anti-affinity on "+t.key)
		}
	}
	for _, i := range g.matches {
		if c := s.counters[i]; c.owner && c.total > 0 {
			parts = append(parts, "anti-affinity of running pods on "+c.key)
			break
		}
	}
	if len(g.hostPorts) > 0 {
		parts = append(parts, "host ports in use")
	}
	if len(parts) == 0 {
		return "no node could be planned for it"
	}
	return "cannot satisfy " + strings.Join(parts, ", ")
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
	if p.overhead[best][d] > bestV {
		return fmt.Sprintf("NodePool %s: its DaemonSets need more %s than any instance type has (%s); %s",
			p.name, s.reg.names[d], strings.Join(parts, ", "), largest)
	}
	return fmt.Sprintf("NodePool %s: its DaemonSets (%s) leave less than the pod's %s on every instance type; %s",
		p.name, strings.Join(parts, ", "), s.reg.describe(d, g.req[d]), largest)
}
