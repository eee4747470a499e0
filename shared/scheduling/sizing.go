package scheduling

import (
	"math"

	"github.com/nodewright/nodewright/shared/apis"
)

// Sizing new NodeClaims: a group's pods are identical, so the cheapest way to
// put r of them on fresh nodes is a covering problem in one dimension: each
// type t holds K(t) pods (what fits its allocatable after reserved resources
// and daemonset overhead, and no more than the group's topology allows on one
// node) at its price, and the cheapest cover of r pods is found exactly by
// dynamic programming over r. A new claim takes the first node of that cover:
// the type with the lowest price per pod for the bulk of a group, and for its
// leftover pods the cheapest type (or types) that hold them, never another
// copy of the big type.

// packOption is a type as a node for pods of one group: how many it holds
// and its price.
type packOption struct {
	t     int
	k     int
	price float64
}

// coverTable is the cheapest cover, for every number of pods up to its
// length, by a set of pack options.
type coverTable struct {
	opts []packOption // by k ascending, price ascending (a Pareto front)
	cost []float64    // cost[r]: cheapest cover of r pods
	pick []int        // pick[r]: the option of the first node of that cover
}

type coverKey struct {
	st      *reqState
	perNode int
}

// frontier reduces options to those no other option beats: for every k the
// cheapest type, and only if no type holding at least as many pods is as
// cheap. Options come in price order (then name), so ties keep the first.
func frontier(opts []packOption) []packOption {
	byK := map[int]packOption{}
	maxK := 0
	for _, o := range opts {
		if _, ok := byK[o.k]; !ok {
			byK[o.k] = o
			maxK = max(maxK, o.k)
		}
	}
	var out []packOption
	best := math.Inf(1)
	for k := maxK; k >= 1; k-- {
		o, ok := byK[k]
		if ok && o.price < best {
			out = append(out, o)
			best = o.price
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return out
}

// newCoverTable solves the covering problem for up to n pods.
func newCoverTable(opts []packOption, n int) *coverTable {
	ct := &coverTable{opts: opts, cost: make([]float64, n+1), pick: make([]int, n+1)}
	for r := 1; r <= n; r++ {
		ct.cost[r], ct.pick[r] = math.Inf(1), -1
		for i, o := range opts {
			c := o.price + ct.cost[max(r-o.k, 0)]
			// Ties: fewer, larger nodes (the later option).
			if c <= ct.cost[r]*(1+1e-12) {
				ct.cost[r], ct.pick[r] = c, i
			}
		}
	}
	return ct
}

// packOptions is every type of st that holds one more pod of g on claim c
// (within the pool's limits), with how many pods of g it holds, at most
// perNode.
func (s *solver) packOptions(c *claim, st *reqState, g *group, perNode int) []packOption {
	one := s.fitSet(c, st, c.total.add(g.req))
	if one.empty() {
		return nil
	}
	var opts []packOption
	for _, t := range s.byPrice(st) {
		if !one.has(t) {
			continue
		}
		k := int(min(int64(perNode), g.req.howMany(c.pool.alloc[t].sub(c.total))))
		if k > 0 {
			opts = append(opts, packOption{t, k, st.prices[t]})
		}
	}
	return frontier(opts)
}

// cover returns the cover table of g's pods on fresh claims in state st, for
// at least n pods; cached per group while the pool has no limits (limits
// change which types a claim may still use).
func (s *solver) cover(c *claim, st *reqState, g *group, n int) *coverTable {
	perNode := min(g.perNode(), len(g.pods))
	key := coverKey{st, perNode}
	limited := c.pool.hasLimits()
	if !limited {
		if ct, ok := g.covers[key]; ok && len(ct.cost) > n {
			return ct
		}
	}
	ct := newCoverTable(s.packOptions(c, st, g, perNode), max(n, len(g.pods)))
	if !limited {
		if g.covers == nil {
			g.covers = map[coverKey]*coverTable{}
		}
		g.covers[key] = ct
	}
	return ct
}

// newStep is how many pods of g (at most limit) a new claim c in state st
// takes: the first node of the cheapest cover of the pods it sizes for, the
// horizon (limit, or more when a zonal spread will bring this claim's domain
// more pods later). A claim sized for more than it takes now keeps the type
// as its target, so the group's later pods fill it as free room.
func (s *solver) newStep(c *claim, st *reqState, g *group, limit, horizon int) int {
	horizon = max(horizon, limit)
	ct := s.cover(c, st, g, horizon)
	i := ct.pick[horizon]
	if i < 0 {
		return 0
	}
	o := ct.opts[i]
	k := min(o.k, limit)
	if !s.fitsIn(c, st, c.total.add(g.req.scale(int64(k)))) {
		// minValues or limits need more types than hold k pods: the
		// price-per-pod search finds a smaller step that keeps them.
		return s.bestStep(c, st, g, limit, 0, math.Inf(1))
	}
	if k < o.k && k < horizon {
		c.target = o.t
	}
	return k
}

// horizon is how many pods of g a new claim whose domains are given will end
// up with, as far as g's spreads over zones (or other keys but the hostname)
// tell: the level the remaining pods raise every eligible domain to, less
// what the claim's domain has; len(g.pods) when nothing spreads them.
func (s *solver) horizon(g *group, domain func(string) string) int {
	h := len(g.pods)
	for i := range g.spreads {
		sp := &g.spreads[i]
		if sp.dropped || !sp.selfMatch || sp.key == apis.LabelHostname {
			continue
		}
		eligible := g.eligible(sp)
		d := domain(sp.key)
		if len(eligible) == 0 || d == "" {
			continue
		}
		counts := s.counters[sp.counter].counts
		total := len(g.pods)
		for _, e := range eligible {
			total += counts[e]
		}
		level := (total + len(eligible) - 1) / len(eligible)
		h = min(h, max(level-counts[d], 1))
	}
	return h
}

// roomType is the type whose allocatable bounds the free room of c: its
// target while the group that sized it is placed, else its expected type.
func (c *claim) roomType() int {
	if c.target >= 0 {
		return c.target
	}
	return c.cur
}
