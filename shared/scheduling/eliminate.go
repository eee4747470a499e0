package scheduling

import (
	"slices"
	"sort"
)

// eliminate tries to remove lightly loaded NodeClaims after the greedy
// placement: a claim whose pods all fit in the free room of other claims'
// expected types (which costs nothing) or on existing nodes is dropped. The
// greedy places groups one after another, so a claim opened for an early
// group often ends up redundant once later groups have grown other claims.
// Pods of groups whose preferences were relaxed stay where they are.
func (s *solver) eliminate() {
	s.pruneNodes()
	cands := make([]*claim, 0, len(s.claims))
	for _, c := range s.claims {
		if !slices.ContainsFunc(c.placements, func(p placement) bool { return len(p.g.relaxed) > 0 }) {
			cands = append(cands, c)
		}
	}
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if len(a.pods) != len(b.pods) {
			return len(a.pods) < len(b.pods)
		}
		return a.price > b.price
	})
	for _, c := range cands {
		s.tryEliminate(c)
	}
	s.claims = slices.DeleteFunc(s.claims, func(c *claim) bool { return c.removed })
}

// roomElsewhere says whether each of c's placements has a pod that fits the
// free room of some other claim's expected type or an existing node: a cheap
// necessary condition for moving them.
func (s *solver) roomElsewhere(c *claim) bool {
	for _, pl := range c.placements {
		found := false
		for _, o := range s.claims {
			if o != c && !o.removed && o.cur >= 0 && pl.g.req.fits(o.pool.alloc[o.cur].sub(o.total)) {
				found = true
				break
			}
		}
		for _, n := range s.open {
			if found {
				break
			}
			found = !n.skip && pl.g.req.fits(n.alloc.sub(n.used))
		}
		if !found {
			return false
		}
	}
	return true
}

// tryEliminate moves c's pods elsewhere at no cost, or leaves everything as
// it was.
func (s *solver) tryEliminate(c *claim) bool {
	if !s.roomElsewhere(c) {
		return false
	}
	s.undo = newUndoLog(s)
	defer func() { s.undo = nil }()
	s.touchClaim(c)
	c.removed = true
	for _, pl := range c.placements {
		s.record(pl.g, claimDomain(c, c.rs), -len(pl.pods))
	}
	order := slices.Clone(c.placements)
	sort.SliceStable(order, func(i, j int) bool { return order[i].g.req[rCPU] > order[j].g.req[rCPU] })
	for _, pl := range order {
		g := pl.g
		saved := g.pods
		g.pods = slices.Clone(pl.pods)
		s.prepare(g)
		s.placeOnNodes(g)
		s.placeOnClaims(g, modeSlack)
		left := len(g.pods)
		g.pods = saved
		if left > 0 {
			s.undo.rollback()
			return false
		}
	}
	p := c.pool
	p.used = p.used.sub(c.capacity)
	p.usedNodes--
	return true
}

// undoLog records what a tentative move changes, so it can be taken back.
type undoLog struct {
	s      *solver
	claims map[*claim]claim
	nodes  map[*node]node
	counts []countChange
	pools  map[*pool][2]any
}

type countChange struct {
	counter int
	domain  string
	n       int
}

func newUndoLog(s *solver) *undoLog {
	u := &undoLog{s: s, claims: map[*claim]claim{}, nodes: map[*node]node{}, pools: map[*pool][2]any{}}
	for _, p := range s.pools {
		u.pools[p] = [2]any{p.used, p.usedNodes}
	}
	return u
}

// touchClaim saves c before a tentative change.
func (s *solver) touchClaim(c *claim) {
	if s.undo == nil {
		return
	}
	if _, ok := s.undo.claims[c]; !ok {
		s.undo.claims[c] = *c
	}
}

// touchNode saves n before a tentative change.
func (s *solver) touchNode(n *node) {
	if s.undo == nil {
		return
	}
	if _, ok := s.undo.nodes[n]; !ok {
		s.undo.nodes[n] = *n
	}
}

func (u *undoLog) rollback() {
	for i := len(u.counts) - 1; i >= 0; i-- {
		ch := u.counts[i]
		u.s.counters[ch.counter].add(ch.domain, -ch.n)
	}
	for c, saved := range u.claims {
		*c = saved
	}
	for n, saved := range u.nodes {
		*n = saved
	}
	for p, saved := range u.pools {
		p.used, p.usedNodes = saved[0].(vec), saved[1].(int64)
	}
}
