package scheduling

import (
	"math"
	"sort"

	"github.com/nodewright/nodewright/shared/apis"
)

// lowerBound is a price per hour no plan can beat for the pods this plan puts
// on new NodeClaims. It is the linear-programming relaxation of buying
// fractional nodes to cover their total cpu and memory (each type's
// allocatable after daemonset overhead, at its cheapest offering any pool
// allows), where every node's load must keep a memory-to-cpu ratio between
// the pods' smallest and largest (a node holding whole pods can't do
// otherwise), and, for each accelerator they request, the cheapest price per
// device times the devices.
func (s *solver) lowerBound() float64 {
	var demand vec
	lo, hi := math.Inf(1), 0.0
	for _, c := range s.claims {
		demand = demand.add(c.total)
		for _, pl := range c.placements {
			lo, hi = ratioRange(pl.g.req, lo, hi)
		}
	}
	if demand == (vec{}) {
		return 0
	}
	types := s.lpTypes()
	cone := coneTypes(types, lo, hi)
	lb := lp2(cone, float64(demand[rCPU]), float64(demand[rMemory]))
	if n, smallest := s.forcedNodes(); n > 0 {
		lb = max(lb, lpWithNodes(cone, float64(demand[rCPU]), float64(demand[rMemory]), float64(n), smallest))
	}
	for d := rNvidiaGPU; d < numRes; d++ {
		if demand[d] <= 0 {
			continue
		}
		perUnit := math.Inf(1)
		for _, lt := range types {
			if lt.alloc[d] > 0 {
				perUnit = min(perUnit, lt.price/float64(lt.alloc[d]))
			}
		}
		if !math.IsInf(perUnit, 1) {
			lb = max(lb, perUnit*float64(demand[d]))
		}
	}
	return lb
}

// ratioRange widens [lo, hi] to a pod request's memory-per-millicore ratio.
func ratioRange(req vec, lo, hi float64) (float64, float64) {
	switch {
	case req[rCPU] <= 0:
		return lo, math.Inf(1)
	case req[rMemory] <= 0:
		return 0, hi
	}
	r := float64(req[rMemory]) / float64(req[rCPU])
	return min(lo, r), max(hi, r)
}

// lpTypes is every type any pool may launch, with the best allocatable and
// the cheapest offering over the pools.
func (s *solver) lpTypes() []lpType {
	best := map[int]lpType{}
	for _, p := range s.pools {
		if p.err != nil {
			continue
		}
		prices := s.u.prices(p.mask)
		both := p.types.clone()
		both.or(p.exotic)
		both.each(func(t int) bool {
			if math.IsInf(prices[t], 1) {
				return true
			}
			lt := lpType{price: prices[t], alloc: p.alloc[t]}
			if old, ok := best[t]; ok {
				lt.price = min(old.price, lt.price)
				for i := range lt.alloc {
					lt.alloc[i] = max(old.alloc[i], lt.alloc[i])
				}
			}
			best[t] = lt
			return true
		})
	}
	keys := make([]int, 0, len(best))
	for t := range best {
		keys = append(keys, t)
	}
	sort.Ints(keys)
	types := make([]lpType, len(keys))
	for i, t := range keys {
		types[i] = best[t]
	}
	return types
}

// coneTypes replaces each type by the loads it can serve whose memory/cpu
// ratio lies in [lo, hi]: the corners of its allocatable rectangle cut by
// the two ratio lines.
func coneTypes(types []lpType, lo, hi float64) []lpType {
	if lo > hi {
		return types
	}
	var out []lpType
	for _, t := range types {
		a, b := float64(t.alloc[rCPU]), float64(t.alloc[rMemory])
		if a <= 0 || b <= 0 {
			continue
		}
		add := func(x, y float64) {
			var v vec
			v[rCPU], v[rMemory] = int64(x), int64(y)
			out = append(out, lpType{price: t.price, alloc: v, full: t.alloc})
		}
		r := b / a
		if r >= lo && r <= hi {
			add(a, b)
		}
		// Lower line b = lo·a and upper line b = hi·a, cut by the rectangle.
		if lo > 0 {
			x := min(a, b/lo)
			add(x, lo*x)
		} else {
			add(a, 0)
		}
		if !math.IsInf(hi, 1) {
			x := min(a, b/hi)
			add(x, hi*x)
		} else {
			add(0, b)
		}
	}
	return out
}

type lpType struct {
	price float64
	alloc vec
	full  vec // the type's whole allocatable (coneTypes keeps it)
}

// forcedNodes is how many distinct new nodes the pods on new NodeClaims need
// at least: the most, over every hostname anti-affinity or hostname spread
// that limits how many of its pods share a node, of its pods divided by that
// limit; with the smallest request among those pods.
func (s *solver) forcedNodes() (int, vec) {
	type class struct {
		pods     int
		perNode  int
		smallest vec
	}
	classes := map[int]*class{}
	add := func(counter, perNode int, p placement) {
		c := classes[counter]
		if c == nil {
			c = &class{perNode: perNode, smallest: p.g.req}
			classes[counter] = c
		}
		c.pods += len(p.pods)
		for i := range c.smallest {
			c.smallest[i] = min(c.smallest[i], p.g.req[i])
		}
	}
	for _, c := range s.claims {
		for _, p := range c.placements {
			for _, sp := range p.g.spreads {
				if !sp.dropped && !sp.anyway && sp.selfMatch && sp.key == apis.LabelHostname {
					add(sp.counter, sp.maxSkew, p)
				}
			}
			for _, t := range p.g.anti {
				if !t.dropped && !t.preferred && t.selfMatch && t.key == apis.LabelHostname {
					add(t.counter, 1, p)
				}
			}
		}
	}
	best, smallest := 0, vec{}
	keys := make([]int, 0, len(classes))
	for k := range classes {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	for _, k := range keys {
		c := classes[k]
		if n := (c.pods + c.perNode - 1) / c.perNode; n > best {
			best, smallest = n, c.smallest
		}
	}
	return best, smallest
}

// lpWithNodes is lp2 with the extra constraint that at least n nodes able to
// hold a pod of size smallest are bought, relaxed by a multiplier μ: for
// every μ ≥ 0, μ·n + lp2 with those nodes μ cheaper is a lower bound (weak
// duality), and the bound is concave in μ, so a ternary search over
// 0 ≤ μ < the cheapest such node finds the best one.
func lpWithNodes(cone []lpType, C, M, n float64, smallest vec) float64 {
	counts := make([]bool, len(cone))
	cheapest := math.Inf(1)
	for i, t := range cone {
		if smallest.fits(t.full) {
			counts[i] = true
			cheapest = min(cheapest, t.price)
		}
	}
	if math.IsInf(cheapest, 1) {
		return 0
	}
	shifted := make([]lpType, len(cone))
	at := func(mu float64) float64 {
		for i, t := range cone {
			shifted[i] = t
			if counts[i] {
				shifted[i].price -= mu
			}
		}
		return mu*n + lp2(shifted, C, M)
	}
	lo, hi := 0.0, cheapest*(1-1e-9)
	for range 60 {
		m1, m2 := lo+(hi-lo)/3, hi-(hi-lo)/3
		if at(m1) < at(m2) {
			lo = m1
		} else {
			hi = m2
		}
	}
	return max(at(lo), at(0))
}

// lp2 solves min Σ price·x subject to Σ cpu·x ≥ C, Σ mem·x ≥ M, x ≥ 0. An
// optimal vertex uses one type or two; only types not dominated in cpu and
// memory per dollar can be in it.
func lp2(types []lpType, C, M float64) float64 {
	type pt struct{ a, b, price, cpu, mem float64 }
	var pts []pt
	for _, t := range types {
		cpu, mem := float64(t.alloc[rCPU]), float64(t.alloc[rMemory])
		if (cpu <= 0 && mem <= 0) || t.price <= 0 {
			continue
		}
		pts = append(pts, pt{cpu / t.price, mem / t.price, t.price, cpu, mem})
	}
	// Pareto front of resources per dollar: sort by a desc, keep b rising.
	sort.Slice(pts, func(i, j int) bool {
		if pts[i].a != pts[j].a {
			return pts[i].a > pts[j].a
		}
		return pts[i].b > pts[j].b
	})
	var front []pt
	bestB := -1.0
	for _, p := range pts {
		if p.b > bestB {
			front = append(front, p)
			bestB = p.b
		}
	}
	best := math.Inf(1)
	for _, p := range front {
		best = min(best, p.price*max(safeDiv(C, p.cpu), safeDiv(M, p.mem)))
	}
	for i := range front {
		for j := i + 1; j < len(front); j++ {
			s, t := front[i], front[j]
			det := s.cpu*t.mem - t.cpu*s.mem
			if det == 0 {
				continue
			}
			xs := (C*t.mem - t.cpu*M) / det
			xt := (s.cpu*M - C*s.mem) / det
			if xs >= 0 && xt >= 0 {
				best = min(best, xs*s.price+xt*t.price)
			}
		}
	}
	if math.IsInf(best, 1) {
		return 0
	}
	return best
}

// safeDiv is x/y, +Inf when y is 0 and x positive.
func safeDiv(x, y float64) float64 {
	if y <= 0 {
		if x <= 0 {
			return 0
		}
		return math.Inf(1)
	}
	return x / y
}
