package scheduling

import (
	"slices"
	"sort"
)

// improve is a local search after the greedy placement and eliminate, for
// solves small enough to afford it: each NodeClaim in turn (the least filled
// first) is taken out and its pods placed again as a group is placed, into
// other claims' free room, by growing other claims, or on new claims sized
// by the cover of what is left; the change is kept only when the plan's
// price drops. The greedy sizes each group's nodes before it knows which
// later groups will share them; re-placing a claim's pods once the others
// are known lets mixed Deployments end up on the larger types they fill
// together. Pods of groups whose preferences were relaxed stay where they
// are.
func (s *solver) improve(pairs bool) {
	s.pruneNodes()
	for pass := 0; pass < improvePasses; pass++ {
		cands := make([]*claim, 0, len(s.claims))
		for _, c := range s.claims {
			if !c.removed && s.movable(c) {
				cands = append(cands, c)
			}
		}
		sort.SliceStable(cands, func(i, j int) bool { return s.fill(cands[i]) < s.fill(cands[j]) })
		improved := false
		for _, c := range cands {
			if !c.removed && s.tryReplace(c) {
				improved = true
			}
		}
		s.claims = slices.DeleteFunc(s.claims, func(c *claim) bool { return c.removed })
		if pairs && len(s.claims) <= improvePairsMax && s.improvePairs() {
			improved = true
		}
		if !improved {
			return
		}
	}
}

// improvePairsMax is the most claims a plan may have for improve to also
// try every pair of them.
const improvePairsMax = 40

// improvePairs takes out two claims at a time (pairs that share no pod
// group's constraints are as free to merge as any) and keeps the first
// re-placement that makes the plan cheaper, pair after pair.
func (s *solver) improvePairs() bool {
	improved := false
	for i := 0; i < len(s.claims); i++ {
		for j := i + 1; j < len(s.claims); j++ {
			a, b := s.claims[i], s.claims[j]
			if a.removed || b.removed || a.pool != b.pool || !s.movable(a) || !s.movable(b) {
				continue
			}
			if s.tryReplace(a, b) {
				improved = true
			}
		}
	}
	s.claims = slices.DeleteFunc(s.claims, func(c *claim) bool { return c.removed })
	return improved
}

// movable says whether improve may take c out: none of its pods' groups
// had preferences relaxed.
func (s *solver) movable(c *claim) bool {
	return !slices.ContainsFunc(c.placements, func(p placement) bool { return len(p.g.relaxed) > 0 })
}

// improvePasses bounds improve's rounds over the claims.
const improvePasses = 2

// fill is how full a claim's expected type is: the larger of its cpu and
// memory shares.
func (s *solver) fill(c *claim) float64 {
	a := c.pool.alloc[c.cur]
	return max(float64(c.total[rCPU])/float64(max(a[rCPU], 1)), float64(c.total[rMemory])/float64(max(a[rMemory], 1)))
}

// planPrice is the expected price of the claims not removed.
func (s *solver) planPrice() float64 {
	var sum float64
	for _, c := range s.claims {
		if !c.removed {
			sum += c.price
		}
	}
	return sum
}

// tryReplace takes the claims out and places their pods again; it keeps the
// result when the plan gets cheaper, else puts everything back.
func (s *solver) tryReplace(cs ...*claim) bool {
	before := s.planPrice()
	n := len(s.claims)
	s.undo = newUndoLog(s)
	defer func() { s.undo = nil }()
	var order []placement
	for _, c := range cs {
		s.touchClaim(c)
		c.removed = true
		p := c.pool
		p.used = p.used.sub(c.capacity)
		p.usedNodes--
		for _, pl := range c.placements {
			s.record(pl.g, claimDomain(c, c.rs), -len(pl.pods))
		}
		order = append(order, c.placements...)
	}
	sort.SliceStable(order, func(i, j int) bool { return order[i].g.req[rCPU] > order[j].g.req[rCPU] })
	ok := true
	for _, pl := range order {
		g := pl.g
		saved := g.pods
		g.pods = slices.Clone(pl.pods)
		s.prepare(g)
		s.placeOnNodes(g)
		s.placeOnClaims(g, modeSlack)
		s.placeOnClaims(g, modeGrow)
		s.placeOnNewClaims(g)
		left := len(g.pods)
		g.pods = saved
		if left > 0 {
			ok = false
			break
		}
	}
	if ok && s.planPrice() < before-1e-9 {
		return true
	}
	s.undo.rollback() // pools too: the new claims never counted
	s.claims = s.claims[:n]
	return false
}
