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
	cone := coneTypes(types, lo, hi)
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

// zoneMask is the offering slots of zone z (an index into the universe's zones).
func (s *solver) zoneMask(z int) uint64 {
	return uint64(1<<len(capacityTypes)-1) << uint(z*len(capacityTypes))
}

// zonalShares is, per zone of the universe, the pods the plan's zonal
// spreads must put there: for each group on new claims with a required zone
// spread over its own pods only (no other pods count in it, and there are no
// existing nodes), ceil((n − (E−1)·maxSkew)/E) of its n pods in each of its E
// eligible zones. Nil when no group has such a spread.
func (s *solver) zonalShares() [][]podSet {
	if len(s.nodes) > 0 {
		return nil
	}
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
	var out [][]podSet
	for _, g := range groups {
		sp := ownZoneSpread(g, groups)
		if sp == nil {
			continue
		}
		eligible := s.eligibleDomains(g, sp)
		e := len(eligible)
		if e == 0 || e < sp.minDomains {
			continue
		}
		lo := (perGroup[g] - (e-1)*sp.maxSkew + e - 1) / e
		if lo <= 0 {
			continue
		}
		if out == nil {
			out = make([][]podSet, len(s.u.zones))
		}
		for _, zone := range eligible {
			if z := slices.Index(s.u.zones, zone); z >= 0 {
				out[z] = append(out[z], podSet{req: g.req, perNode: lbPerNode(g), n: lo})
			}
		}
	}
	return out
}

// ownZoneSpread is g's required zone spread that counts only its own pods
// among the groups on new claims, or nil.
func ownZoneSpread(g *group, groups []*group) *spread {
	for i := range g.spreads {
		sp := &g.spreads[i]
		if sp.dropped || sp.anyway || !sp.selfMatch || sp.key != apis.LabelZone {
			continue
		}
		if !slices.ContainsFunc(groups, func(o *group) bool { return o != g && slices.Contains(o.matches, sp.counter) }) {
			return sp
		}
	}
	return nil
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

// podSetBound is the zonal case of the per-set bound: a group that spreads
// over zones on its own (see zonalShares) must put at least a balanced share
// in each zone, so its cheapest cover is the cheapest split of its pods over
// the zones with each zone's share covered at that zone's prices.
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
	best := 0.0
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
// lo = ceil((n − (E−1)·s)/E); the bound is the cheapest split of the other
// n − E·lo pods over the zones with each zone's count covered at its own
// prices.
func (s *solver) zonalBound(g *group, groups []*group, n int) float64 {
	if len(s.nodes) > 0 {
		return 0
	}
	if sp := ownZoneSpread(g, groups); sp != nil {
		eligible := s.eligibleDomains(g, sp)
		e := len(eligible)
		if e == 0 || e < sp.minDomains || e > 8 {
			return 0
		}
		lo := max((n-(e-1)*sp.maxSkew+e-1)/e, 0)
		extra := n - lo*e
		if extra > 64 {
			return 0 // a wide skew: the split search would be long
		}
		perNode := lbPerNode(g)
		zoneCost := make([][]float64, e) // zoneCost[z][c-lo]
		for zi, zone := range eligible {
			z := slices.Index(s.u.zones, zone)
			if z < 0 {
				return 0
			}
			types := s.lpTypesIn(s.zoneMask(z))
			zoneCost[zi] = make([]float64, extra+1)
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
			for d := 0; d <= left; d++ {
				walk(zi+1, left-d, acc+zoneCost[zi][d])
			}
		}
		walk(0, extra, 0)
		if math.IsInf(best, 1) {
			return 0
		}
		return best
	}
	return 0
}

// maxExactStates bounds exactCover: the product over the sets of (pods + 1).
const maxExactStates = 1500

// exactCover is the cheapest way to put the sets' pods on nodes of the types
// when that is small enough to search exhaustively (ok false otherwise): by
// dynamic programming over the pods still to place, each node a mix of pods
// (at most each set's per-node limit) that fits a type, at the cheapest
// type it fits. It is the integer optimum of the relaxation the LP bound
// relaxes further, so it bounds small workloads where whole pods and whole
// nodes decide the price.
func exactCover(types []lpType, sets []podSet) (float64, bool) {
	states := 1
	for _, ps := range sets {
		states *= ps.n + 1
		if states > maxExactStates {
			return 0, false
		}
	}
	m := len(sets)
	digits := make([]int, states*m)
	for x := range states {
		r := x
		for i, ps := range sets {
			digits[x*m+i] = r % (ps.n + 1)
			r /= ps.n + 1
		}
	}
	radix := make([]int, m)
	r := 1
	for i, ps := range sets {
		radix[i] = r
		r *= ps.n + 1
	}
	// cost of a node holding mix c: the cheapest type it fits.
	cost := make([]float64, states)
	var mixes []int
	for c := 1; c < states; c++ {
		var need vec
		ok := true
		for i, ps := range sets {
			k := digits[c*m+i]
			if k > ps.perNode {
				ok = false
				break
			}
			need = need.add(ps.req.scale(int64(k)))
		}
		cost[c] = math.Inf(1)
		if !ok {
			continue
		}
		for _, t := range types {
			if t.price < cost[c] && need.fits(t.alloc) {
				cost[c] = t.price
			}
		}
		if !math.IsInf(cost[c], 1) {
			mixes = append(mixes, c)
		}
	}
	f := make([]float64, states)
	for x := 1; x < states; x++ {
		f[x] = math.Inf(1)
		for _, c := range mixes {
			if c > x {
				break
			}
			sub, fits := 0, true
			for i := range m {
				d := digits[x*m+i] - digits[c*m+i]
				if d < 0 {
					fits = false
					break
				}
				sub += d * radix[i]
			}
			if fits {
				f[x] = min(f[x], cost[c]+f[sub])
			}
		}
	}
	if math.IsInf(f[states-1], 1) {
		return 0, false
	}
	return f[states-1], true
}
