package scheduling

import (
	"fmt"
	"math"
	"slices"
	"sort"
)

// Seeded plans. For a small workload of plain Deployments (no topology, no
// node selection, no volumes) the configuration LP (configlp.go) says which
// mixes of pods on which types cover the pods most cheaply. Its solution,
// made whole, is a plan of its own: the nodes the LP buys in whole numbers
// (rounded down), and the few pods left over covered exactly by the LP's
// mixes when that search is small. The solver turns such a plan into
// NodeClaims through its ordinary placement, so every constraint is checked
// as always: each seed is a NodeClaim sized for its type, taking up to its
// mix's count of each group's pods as the groups arrive; whatever the seeds
// do not take is placed as usual. Solve compares the seeded plans with the
// others and keeps the cheapest.

// seedPattern is one node of a seeded plan: a type of a pool, and how many
// pods of each group it is for (by the group's first pod, stable across
// solves of the same input).
type seedPattern struct {
	pool   string
	t      int
	counts map[string]int
}

// seed is a seedPattern bound to one solve's pool and groups.
type seed struct {
	pool  *pool
	t     int
	quota map[*group]int
	claim *claim
}

// seedMaxStates bounds the exact cover of what the rounded-down LP leaves.
const seedMaxStates = 20000

// seedGroups are the groups a seeded plan covers: placeable, with no
// topology, node selection, preferences, host ports or volume restriction.
func (s *solver) seedGroups() []*group {
	var out []*group
	for _, g := range s.groups {
		if g.hopeless() || len(g.unknown) > 0 || g.rankOf() != 3 || len(g.required) != 1 || len(g.required[0]) != 0 ||
			len(g.preferredNode) > 0 || len(g.volumes) > 0 || len(g.pods) == 0 {
			continue
		}
		out = append(out, g)
	}
	return out
}

// seedPlans are the seeded plans of a solver that has built its groups
// and not placed them yet; nil when they do not apply.
func (s *solver) seedPlans() [][]seedPattern {
	groups := s.seedGroups()
	if len(groups) == 0 || len(groups) > configMaxSets {
		return nil
	}
	sets := make([]podSet, len(groups))
	for i, g := range groups {
		sets[i] = podSet{req: g.req, perNode: min(g.perNode(), 1<<30), n: len(g.pods)}
	}
	// The ordinary types of the first pool (by weight, as pools are tried)
	// whose taints every group tolerates.
	type candidate struct {
		p *pool
		t int
	}
	var cands []candidate
	var types []lpType
	for _, p := range s.pools {
		if p.err != nil || slices.ContainsFunc(groups, func(g *group) bool { return !s.toleratesPool(g, p) }) {
			continue
		}
		prices := s.pricesIn(p, p.mask)
		p.types.each(func(t int) bool {
			if !math.IsInf(prices[t], 1) && prices[t] > 0 {
				cands = append(cands, candidate{p, t})
				types = append(types, lpType{price: prices[t], alloc: p.alloc[t]})
			}
			return true
		})
		if len(cands) > 0 {
			break
		}
	}
	keep := undominatedIndex(types)
	var kept []lpType
	var keptCands []candidate
	for _, i := range keep {
		kept = append(kept, types[i])
		keptCands = append(keptCands, cands[i])
	}
	c := solveConfigLP(kept, sets)
	if c == nil {
		return nil
	}
	pattern := func(j int) seedPattern {
		cand := keptCands[c.colType[j]]
		sp := seedPattern{pool: cand.p.name, t: cand.t, counts: map[string]int{}}
		for i, g := range groups {
			if k := int(c.lp.a[j][i]); k > 0 {
				sp.counts[podKey(g.rep)] = k
			}
		}
		return sp
	}
	// Rounded down.
	var floor []seedPattern
	left := make([]int, len(sets))
	for i, ps := range sets {
		left[i] = ps.n
	}
	for j, x := range c.x {
		for n := int(math.Floor(x + 1e-9)); n > 0; n-- {
			floor = append(floor, pattern(j))
			for i := range left {
				left[i] -= int(c.lp.a[j][i])
			}
		}
	}
	plans := [][]seedPattern{floor}
	// And the rest covered exactly by the LP's mixes, when that is small.
	for i := range left {
		left[i] = max(left[i], 0)
	}
	if rest, ok := exactColumns(c, left); ok && len(rest) > 0 {
		full := slices.Clone(floor)
		for _, j := range rest {
			full = append(full, pattern(j))
		}
		plans = append(plans, full)
	}
	return plans
}

// undominatedIndex is undominated's choice as indexes into types, by price.
func undominatedIndex(types []lpType) []int {
	order := make([]int, len(types))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return types[order[a]].price < types[order[b]].price })
	var out []int
	for _, i := range order {
		dominated := false
		for _, j := range out {
			if types[i].alloc.fits(types[j].alloc) {
				dominated = true
				break
			}
		}
		if !dominated {
			out = append(out, i)
		}
	}
	return out
}

// exactColumns is the cheapest multiset of the LP's columns that covers
// need (pods of each set), by dynamic programming over what is left to
// cover; false when that has more than seedMaxStates states.
func exactColumns(c *configLP, need []int) ([]int, bool) {
	states := 1
	radix := make([]int, len(need))
	for i, n := range need {
		radix[i] = states
		states *= n + 1
		if states > seedMaxStates {
			return nil, false
		}
	}
	f := make([]float64, states)
	pick := make([]int, states)
	digit := func(x, i int) int { return (x / radix[i]) % (need[i] + 1) }
	for x := 1; x < states; x++ {
		f[x], pick[x] = math.Inf(1), -1
		for j, a := range c.lp.a {
			sub := 0
			for i := range need {
				sub += max(digit(x, i)-int(a[i]), 0) * radix[i]
			}
			if sub == x {
				continue
			}
			if v := c.lp.price[j] + f[sub]; v < f[x]-1e-12 {
				f[x], pick[x] = v, j
			}
		}
		if pick[x] < 0 {
			return nil, false
		}
	}
	var out []int
	for x := states - 1; x > 0; {
		j := pick[x]
		out = append(out, j)
		sub := 0
		for i := range need {
			sub += max(digit(x, i)-int(c.lp.a[j][i]), 0) * radix[i]
		}
		x = sub
	}
	return out, true
}

// bindSeeds binds a seeded plan to this solve's pools and groups.
func (s *solver) bindSeeds(plan []seedPattern) {
	pools := map[string]*pool{}
	for _, p := range s.pools {
		pools[p.name] = p
	}
	groups := map[string]*group{}
	for _, g := range s.groups {
		groups[podKey(g.rep)] = g
	}
	for _, sp := range plan {
		sd := &seed{pool: pools[sp.pool], t: sp.t, quota: map[*group]int{}}
		if sd.pool == nil {
			continue
		}
		for key, k := range sp.counts {
			if g := groups[key]; g != nil {
				sd.quota[g] = k
			}
		}
		s.seeds = append(s.seeds, sd)
	}
}

// placeOnSeeds puts pods of g on the seeds that are for them: a seed's
// NodeClaim opens with the first group it is for.
func (s *solver) placeOnSeeds(g *group) {
	for _, sd := range s.seeds {
		if len(g.pods) == 0 {
			return
		}
		if sd.quota[g] <= 0 {
			continue
		}
		if sd.claim == nil {
			sd.claim = s.newSeedClaim(sd, g)
			continue
		}
		if sd.claim.removed {
			continue
		}
		if k, rs := s.tryClaim(sd.claim, g, modeSeed); k > 0 {
			s.addToClaim(sd.claim, g, k, rs)
			sd.claim.quota[g] -= k
		}
	}
}

// newSeedClaim opens the seed's NodeClaim with pods of g, or returns nil
// when it cannot take one.
func (s *solver) newSeedClaim(sd *seed, g *group) *claim {
	p := sd.pool
	if p.err != nil || len(g.unknown) > 0 || !s.toleratesPool(g, p) {
		return nil
	}
	c := &claim{id: s.claimSeq, pool: p, rs: p.rs, cur: -1, target: sd.t, quota: sd.quota}
	c.name = fmt.Sprintf("nodeclaim-%d", c.id)
	c.state = s.stateFor(p, c.rs, false)
	k, rs := s.tryClaim(c, g, modeSeed)
	if k == 0 {
		return nil
	}
	s.claimSeq++
	s.claims = append(s.claims, c)
	s.addToClaim(c, g, k, rs)
	c.quota[g] -= k
	return c
}
