package scheduling

import (
	"fmt"

	resourcehelper "k8s.io/component-helpers/resource"

	qty "github.com/nodewright/nodewright/shared/quantity"
)

// largest is, per dimension, the most any instance type of any pool or any
// existing node can give a pod (allocatable, before other pods), with where
// that is.
func (s *solver) largest() (most vec, where [numRes]string) {
	for _, p := range s.pools {
		if p.err != nil {
			continue
		}
		both := p.types.clone()
		both.or(p.exotic)
		both.each(func(t int) bool {
			for d, v := range p.alloc[t] {
				if v > most[d] {
					most[d], where[d] = v, s.u.types[t].Name
				}
			}
			return true
		})
	}
	for _, n := range s.nodes {
		if n.skip {
			continue
		}
		for d, v := range n.alloc {
			if v > most[d] {
				most[d], where[d] = v, "node "+n.name
			}
		}
	}
	return most, where
}

// screenOversized marks the groups whose pods ask for more of a resource than
// any instance type or node offers, or for a negative amount: they are unschedulable at once and never
// enter placement (whose sums an amount too large to count, saturated at
// quantity.Max inside the solve, could otherwise overflow). explain gives
// the per-pool reason; for a saturated amount, the request as the pod wrote
// it.
func (s *solver) screenOversized() {
	most, where := s.largest()
	for _, g := range s.groups {
		if g.err != nil {
			continue
		}
		for d := range g.req {
			if g.req[d] < 0 {
				// The API server and the loaders refuse these; a solve
				// must not place them either (they would make room).
				g.oversized = true
				g.tooLarge = fmt.Sprintf("it requests %s, a negative amount", s.asked(g, d))
				break
			}
			saturated := g.req[d] >= qty.Max
			if d == rPods || !saturated && (g.req[d] <= most[d] || most[d] <= 0) {
				continue
			}
			g.oversized = true
			if !saturated {
				break
			}
			asked := s.asked(g, d)
			if most[d] <= 0 {
				g.tooLarge = fmt.Sprintf("it requests %s, which no existing node and no instance type of any NodePool offers", asked)
			} else {
				g.tooLarge = fmt.Sprintf("it requests %s, more than any existing node or instance type of any NodePool offers (the most is %s allocatable, on %s)",
					asked, s.reg.describe(d, most[d]), where[d])
			}
			break
		}
	}
}

// asked is g's request of dimension d as the pod wrote it ("1E cpu").
func (s *solver) asked(g *group, d int) string {
	if q, ok := resourcehelper.PodRequests(g.rep, resourcehelper.PodResourcesOptions{})[s.reg.names[d]]; ok {
		return q.String() + " " + string(s.reg.names[d])
	}
	return s.reg.describe(d, g.req[d])
}
