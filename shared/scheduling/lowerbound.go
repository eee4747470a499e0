package scheduling

import (
	"maps"
	"math"
	"slices"
	"sort"

	"github.com/nodewright/nodewright/shared/apis"
)

// lowerBound is a price per hour no plan can beat for the pods this plan puts
// on new NodeClaims. It is the linear-programming relaxation of buying
// fractional nodes (each type at its cheapest offering any pool allows, with
// its best allocatable after daemonset overhead) subject to:
//
//   - covering the pods' total cpu, memory, pod slots and every other
//     resource they request, where every node's cpu and memory load keeps a
//     memory-to-cpu ratio between the pods' smallest and largest (a node
//     holding whole pods can't do otherwise);
//   - for each set of identical pods, and for the unions of the largest
//     ones: a node of type t holds at most K(t) of them (what fits its
//     allocatable, and what their hostname anti-affinity, hostname spread or
//     host ports allow on one node), so the nodes bought must hold them all
//     at that rate. This is what makes the bound exact for one Deployment
//     (the cheapest price per pod over the types) and tight for a few;
//   - the number of nodes a hostname anti-affinity or spread over several
//     groups forces.
//
// The per-set rows are added as cuts while the relaxation's solution
// violates them. The bound is the value of dual prices certified feasible
// (see coverLP), so it is valid whatever the simplex's precision.
//
// Pods that spread over zones on their own must put a share in every zone,
// so the same bound, summed over the zones for those shares at each zone's
// prices, is a bound too (see zonalShares); the plan's bound is the larger.
func (s *solver) lowerBound() float64 {
	sets := s.podSets()
	if len(sets) == 0 {
		return 0
	}
	n, smallest := s.forcedNodes()
	best := max(setsBound(s.lpTypes(), sets, n, smallest), s.podSetBound())
	if zones := s.zonalShares(); zones != nil {
		sum := 0.0
		for z, shares := range zones {
			if len(shares) > 0 {
				sum += setsBound(s.lpTypesIn(s.zoneMask(z)), shares, 0, vec{})
			}
		}
		best = max(best, sum)
	}
	return best
}

// setsBound is the LP bound of covering the pod sets with the types, with at
// least forced nodes that hold a pod of request smallest.
func setsBound(types []lpType, sets []podSet, forced int, smallest vec) float64 {
	var demand vec
	lo, hi := math.Inf(1), 0.0
	for _, ps := range sets {
		demand = demand.add(ps.req.scale(int64(ps.n)))
		lo, hi = ratioRange(ps.req, lo, hi)
	}
	if demand == (vec{}) {
		return 0
	}
	cone := coneTypes(burstColumns(types), lo, hi)
	var rows []lbRow
	for d := range numRes {
		if demand[d] > 0 {
			rows = append(rows, lbRow{dim: d, need: float64(demand[d])})
		}
	}
	if forced > 0 {
		rows = append(rows, lbRow{dim: -1, need: float64(forced), req: smallest, perNode: 1})
	}
	cuts := podSetRows(sets)
	lp := &coverLP{}
	for _, t := range cone {
		lp.price = append(lp.price, t.price)
	}
	setRows := func() {
		lp.a = lp.a[:0]
		lp.b = lp.b[:0]
		for _, r := range rows {
			lp.b = append(lp.b, r.need)
		}
		for _, t := range cone {
			a := make([]float64, len(rows))
			for i, r := range rows {
				a[i] = r.coefficient(t)
			}
			lp.a = append(lp.a, a)
		}
	}
	best := 0.0
	for _, ps := range sets {
		best = max(best, coverCost(types, ps.req, ps.perNode, ps.n))
	}
	if math.IsInf(best, 1) {
		best = 0 // a set no type holds: the LP still bounds the rest
	}
	if exact, ok := exactCover(types, sets); ok {
		best = max(best, exact)
	} else if forced == 0 {
		best = max(best, configBound(types, sets))
	}
	for round := 0; ; round++ {
		setRows()
		x, y := lp.solve()
		best = max(best, lp.value(y))
		if round == lbCutRounds || len(cuts) == 0 {
			break
		}
		// Add the cuts the relaxation's nodes violate, keep the others.
		var rest []lbRow
		added := false
		for _, r := range cuts {
			var held float64
			for j, t := range cone {
				held += x[j] * r.coefficient(t)
			}
			if held < r.need*(1-1e-9) {
				rows = append(rows, r)
				added = true
			} else {
				rest = append(rest, r)
			}
		}
		cuts = rest
		if !added {
			break
		}
	}
	return best
}

// lbCutRounds bounds how often the lower bound re-solves with more cuts.
const lbCutRounds = 6

// lbRow is a covering constraint of the lower bound: a resource dimension
// (dim ≥ 0: the nodes' allocatable must cover need; with only set, only the
// nodes that hold one pod of request req count: those of a set of pods live
// there), or a set of pods (dim -1: need pods, each at least req, at most
// perNode on one node).
type lbRow struct {
	dim     int
	need    float64
	req     vec
	perNode int
	only    bool
}

// coefficient is how much of the row one node of the cone point t covers.
func (r lbRow) coefficient(t lpType) float64 {
	if r.only && !r.req.fits(t.full) {
		return 0
	}
	switch {
	case r.dim == rCPU || r.dim == rMemory:
		return float64(t.alloc[r.dim])
	case r.dim >= 0:
		return float64(t.full[r.dim])
	}
	return float64(min(int64(r.perNode), r.req.howMany(t.full)))
}

// podSet is the pods on new claims with one request: interchangeable for
// the bound. A node holds at most perNode of them: the sum of each group's
// own limit (hostname anti-affinity, hostname spread or host ports bind a
// group's pods among themselves).
type podSet struct {
	req     vec
	perNode int
	n       int
}

// podSets lists the sets in the order their groups were placed.
func (s *solver) podSets() []podSet {
	index := map[vec]int{}
	seen := map[*group]bool{}
	var sets []podSet
	for _, c := range s.claims {
		for _, pl := range c.placements {
			i, ok := index[pl.g.req]
			if !ok {
				i = len(sets)
				index[pl.g.req] = i
				sets = append(sets, podSet{req: pl.g.req})
			}
			sets[i].n += len(pl.pods)
			if !seen[pl.g] {
				seen[pl.g] = true
				sets[i].perNode = min(sets[i].perNode+lbPerNode(pl.g), 1<<30)
			}
		}
	}
	return sets
}

// podSetRows are the candidate cuts: one per pod set and, for the pods that
// need most cpu and most memory, the unions of the largest sets (a node holds
// no more of a union than of its smallest member, nor more than its members'
// limits add up to).
func podSetRows(sets []podSet) []lbRow {
	var rows []lbRow
	for _, ps := range sets {
		rows = append(rows, lbRow{dim: -1, need: float64(ps.n), req: ps.req, perNode: ps.perNode})
	}
	for _, d := range []int{rCPU, rMemory} {
		sorted := slices.Clone(sets)
		sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].req[d] > sorted[j].req[d] })
		union := lbRow{dim: -1, req: sorted[0].req}
		var total vec
		for i, ps := range sorted {
			union.need += float64(ps.n)
			union.perNode = min(union.perNode+ps.perNode, 1<<30)
			for x := range union.req {
				union.req[x] = min(union.req[x], ps.req[x])
			}
			total = total.add(ps.req.scale(int64(ps.n)))
			if i > 0 {
				rows = append(rows, union)
			}
			// The union's cpu and memory, on the nodes that can hold its
			// smallest member.
			for _, r := range []int{rCPU, rMemory} {
				if total[r] > 0 {
					rows = append(rows, lbRow{dim: r, need: float64(total[r]), req: union.req, only: true})
				}
			}
		}
	}
	return rows
}

// lbPerNode is how many pods of g one node may hold by its required
// constraints alone (preferences a plan may ignore don't count).
func lbPerNode(g *group) int {
	n := 1 << 30
	for _, sp := range g.spreads {
		if !sp.dropped && !sp.anyway && sp.selfMatch && sp.key == apis.LabelHostname {
			n = min(n, sp.maxSkew)
		}
	}
	for _, t := range g.anti {
		if !t.dropped && !t.preferred && t.selfMatch && t.key == apis.LabelHostname {
			n = min(n, 1)
		}
	}
	if len(g.hostPorts) > 0 {
		n = min(n, 1)
	}
	return n
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
func (s *solver) lpTypes() []lpType { return s.lpTypesIn(math.MaxUint64) }

// lpTypesIn is lpTypes with offerings only in the (zone, capacity type)
// slots of mask.
func (s *solver) lpTypesIn(mask uint64) []lpType {
	best := map[int]lpType{}
	for _, p := range s.pools {
		if p.err != nil || p.mask&mask == 0 {
			continue
		}
		prices := s.pricesIn(p, p.mask&mask)
		both := p.types.clone()
		both.or(p.exotic)
		both.each(func(t int) bool {
			if math.IsInf(prices[t], 1) {
				return true
			}
			lt := lpType{price: prices[t], alloc: p.alloc[t]}
			if p.surplus(t, lt.alloc[rCPU]) > 0 {
				lt.rate = p.burst[t].SurplusPerVCPUHour / 1000
				lt.baseCPU = p.burst[t].BaselineMilliCPU - p.overhead[t][rCPU]
			}
			if old, ok := best[t]; ok {
				lt.price = min(old.price, lt.price)
				for i := range lt.alloc {
					lt.alloc[i] = max(old.alloc[i], lt.alloc[i])
				}
				// The relaxation keeps the smaller surplus of the pools'.
				if old.rate == 0 || lt.rate == 0 {
					lt.rate, lt.baseCPU = 0, 0
				} else {
					lt.baseCPU = max(old.baseCPU, lt.baseCPU)
				}
			}
			best[t] = lt
			return true
		})
	}
	keys := slices.Sorted(maps.Keys(best))
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
			full := t.alloc
			if t.full != (vec{}) {
				full = t.full
			}
			out = append(out, lpType{price: t.price, alloc: v, full: full})
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
	// rate is what a burstable type in unlimited mode bills per hour for
	// each millicore its pods request above baseCPU (its baseline less its
	// daemonsets'); 0 for other types.
	rate    float64
	baseCPU int64
}

// at is a node's price with its pods requesting cpu millicores.
func (t lpType) at(cpu int64) float64 {
	if t.rate == 0 || cpu <= t.baseCPU {
		return t.price
	}
	return t.price + t.rate*float64(cpu-t.baseCPU)
}

// burstColumns prices burstable types' surplus for the fractional LP: each
// becomes two columns, its baseline CPU at its price and its whole
// allocatable at its price plus the surplus. A node at any load between
// the two is their convex combination at exactly its cost (the surplus is
// linear above the baseline), so the LP still bounds every plan. The
// whole-node bounds price a node at its load (coverCost, exactCover) or at
// its price alone, which its cost never falls below (configBound).
func burstColumns(types []lpType) []lpType {
	out := make([]lpType, 0, len(types))
	for _, t := range types {
		if t.rate == 0 || t.baseCPU >= t.alloc[rCPU] {
			t.rate = 0
			out = append(out, t)
			continue
		}
		base := t
		base.alloc[rCPU] = max(t.baseCPU, 0)
		base.full, base.rate = t.alloc, 0
		whole := t
		whole.price, whole.full, whole.rate = t.at(t.alloc[rCPU]), t.alloc, 0
		out = append(out, base, whole)
	}
	return out
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
	keys := slices.Sorted(maps.Keys(classes))
	for _, k := range keys {
		c := classes[k]
		if n := (c.pods + c.perNode - 1) / c.perNode; n > best {
			best, smallest = n, c.smallest
		}
	}
	return best, smallest
}
