package scheduling

import (
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
	cone := coneTypes(s.lpTypes(), lo, hi)
	var rows []lbRow
	for d := range numRes {
		if demand[d] > 0 {
			rows = append(rows, lbRow{dim: d, need: float64(demand[d])})
		}
	}
	if n, smallest := s.forcedNodes(); n > 0 {
		rows = append(rows, lbRow{dim: -1, need: float64(n), req: smallest, perNode: 1})
	}
	cuts := s.podSetRows()
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
	best := s.podSetBound()
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
func (s *solver) podSetRows() []lbRow {
	sets := s.podSets()
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
		prices := s.u.prices(p.mask & mask)
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

// podSetBound is the most any one set of identical pods costs on its own,
// exactly: the cheapest cover of its pods by nodes of the types (each holding
// what fits, at most its per-node limit, at its cheapest offering; see
// newCoverTable). A plan for all the pods is a plan for each set, so each
// set's optimum is a lower bound. A set that is one group spreading over
// zones on its own (a required spread that only its own pods count, with no
// existing nodes) must put at least a balanced share in each zone, so its
// bound covers each zone's share at that zone's prices.
func (s *solver) podSetBound() float64 {
	perGroup := map[*group]int{}
	var groups []*group
	for _, c := range s.claims {
		for _, pl := range c.placements {
			if _, ok := perGroup[pl.g]; !ok {
				groups = append(groups, pl.g)
			}
			perGroup[pl.g] += len(pl.pods)
		}
	}
	types := s.lpTypes()
	best := 0.0
	for _, ps := range s.podSets() {
		best = max(best, coverCost(types, ps.req, ps.perNode, ps.n))
	}
	for _, g := range groups {
		best = max(best, s.zonalBound(g, groups, perGroup[g]))
	}
	return best
}

// coverCost is the cheapest cover of n pods of request req, at most perNode
// on a node, by the types (+Inf when none holds one).
func coverCost(types []lpType, req vec, perNode, n int) float64 {
	sorted := slices.Clone(types)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].price < sorted[j].price })
	var opts []packOption
	for i, t := range sorted {
		if k := int(min(int64(perNode), req.howMany(t.alloc))); k > 0 {
			opts = append(opts, packOption{i, k, t.price})
		}
	}
	if len(opts) == 0 {
		return math.Inf(1)
	}
	return newCoverTable(frontier(opts), n).cost[n]
}

// zonalBound is podSetBound's zonal case for group g with n pods on new
// claims (0 when it does not apply): with counts c_z in the eligible zones,
// a required maxSkew s and Σ c_z = n, every zone holds at least
// ceil((n − (E−1)·s)/E) and at most that plus s; the bound is the cheapest
// such split with each zone's share covered at its own prices.
func (s *solver) zonalBound(g *group, groups []*group, n int) float64 {
	if len(s.nodes) > 0 {
		return 0
	}
	for i := range g.spreads {
		sp := &g.spreads[i]
		if sp.dropped || sp.anyway || !sp.selfMatch || sp.key != apis.LabelZone {
			continue
		}
		for _, o := range groups {
			if o != g && slices.Contains(o.matches, sp.counter) {
				return 0 // other pods count in the spread too
			}
		}
		eligible := s.eligibleDomains(g, sp)
		e := len(eligible)
		if e == 0 || e < sp.minDomains || e > 8 {
			return 0
		}
		lo := max((n-(e-1)*sp.maxSkew+e-1)/e, 0)
		perNode := lbPerNode(g)
		zoneCost := make([][]float64, e) // zoneCost[z][c-lo]
		for zi, zone := range eligible {
			z := slices.Index(s.u.zones, zone)
			if z < 0 {
				return 0
			}
			mask := uint64(1<<len(capacityTypes)-1) << uint(z*len(capacityTypes))
			types := s.lpTypesIn(mask)
			zoneCost[zi] = make([]float64, sp.maxSkew+1)
			for d := range zoneCost[zi] {
				if lo+d == 0 {
					continue
				}
				zoneCost[zi][d] = coverCost(types, g.req, perNode, lo+d)
			}
		}
		// The cheapest split: a small search over each zone's extra pods.
		best := math.Inf(1)
		var walk func(zi, left int, acc float64)
		walk = func(zi, left int, acc float64) {
			if acc >= best {
				return
			}
			if zi == e {
				if left == 0 {
					best = acc
				}
				return
			}
			for d := 0; d <= sp.maxSkew && d <= left; d++ {
				walk(zi+1, left-d, acc+zoneCost[zi][d])
			}
		}
		walk(0, n-lo*e, 0)
		if math.IsInf(best, 1) {
			return 0
		}
		return best
	}
	return 0
}
