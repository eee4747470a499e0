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
// cheap. Options come in instance price order (then name), so ties keep the
// first.
func frontier(opts []packOption) []packOption {
	byK := map[int]packOption{}
	maxK := 0
	for _, o := range opts {
		// A burstable type's surplus can make a later option cheaper for
		// its k: keep the cheapest (ties: the first).
		if old, ok := byK[o.k]; !ok || o.price < old.price {
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
	return newCoverTableWith(opts, n, nil)
}

// newCoverTableWith solves it with a node of option o holding j pods costing
// o.price less credit(o, j) (nil: no credit).
func newCoverTableWith(opts []packOption, n int, credit func(o packOption, j int) float64) *coverTable {
	ct := &coverTable{opts: opts, cost: make([]float64, n+1), pick: make([]int, n+1)}
	for r := 1; r <= n; r++ {
		ct.cost[r], ct.pick[r] = math.Inf(1), -1
		for i, o := range opts {
			price := o.price
			if credit != nil {
				price -= credit(o, min(o.k, r))
			}
			c := price + ct.cost[max(r-o.k, 0)]
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
			opts = append(opts, packOption{t, k, st.prices[t] + c.pool.surplus(t, c.total[rCPU]+int64(k)*g.req[rCPU])})
		}
	}
	if s.residual {
		return opts
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
	var credit func(o packOption, j int) float64
	if s.residual {
		credit = s.roomCredit(c.pool, g)
	}
	ct := newCoverTableWith(s.packOptions(c, st, g, perNode), max(n, len(g.pods)), credit)
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

// Sizing for mixed pods. A group sized on its own buys what is cheapest for
// its pods alone, but the room its nodes leave is not lost: the groups placed
// after it fill it first. With residual sizing (one of the two policies Solve
// compares) a node's price is credited with what its free room would cost to
// buy for the later groups' pods, at the marginal prices of cpu and memory
// for the whole workload (the dual prices of the lower bound's relaxation,
// which never credit more than a node costs), as far as those pods need it
// and fit in it. Groups then fill larger types together instead of each
// taking the type that suits it alone.

// laterDemand records, for each group in placement order, the requests of
// every group after it and the smallest of those requests.
func (s *solver) laterDemand() {
	s.later = make(map[*group]vec, len(s.groups))
	s.laterMin = make(map[*group]vec, len(s.groups))
	var sum vec
	smallest := vec{}
	for i := range smallest {
		smallest[i] = math.MaxInt64
	}
	for i := len(s.groups) - 1; i >= 0; i-- {
		g := s.groups[i]
		s.later[g], s.laterMin[g] = sum, smallest
		sum = sum.add(g.req.scale(int64(len(g.pods))))
		for d := range smallest {
			smallest[d] = min(smallest[d], g.req[d])
		}
	}
}

// resourcePrices are the marginal prices of a millicore and a byte of memory
// for the whole workload: the dual prices of covering its cpu and memory with
// the types of every pool.
func (s *solver) resourcePrices() (cpu, mem float64) {
	if s.prices != nil {
		return s.prices[0], s.prices[1]
	}
	var total vec
	for _, g := range s.groups {
		total = total.add(g.req.scale(int64(len(g.pods))))
	}
	lp := &coverLP{b: []float64{float64(max(total[rCPU], 1)), float64(max(total[rMemory], 1))}}
	for _, t := range burstColumns(s.lpTypes()) {
		if t.alloc[rCPU] <= 0 && t.alloc[rMemory] <= 0 {
			continue
		}
		lp.a = append(lp.a, []float64{float64(max(t.alloc[rCPU], 0)), float64(max(t.alloc[rMemory], 0))})
		lp.price = append(lp.price, t.price)
	}
	_, y := lp.solve()
	s.prices = []float64{y[0], y[1]}
	return y[0], y[1]
}

// roomCredit is the credit residual sizing gives a node of pool p holding j
// pods of g: the free room's cpu and memory at the marginal prices, each no
// more than the later groups need, and nothing when the room cannot hold the
// smallest later pod.
func (s *solver) roomCredit(p *pool, g *group) func(o packOption, j int) float64 {
	need, smallest := s.later[g], s.laterMin[g]
	if need[rCPU] <= 0 && need[rMemory] <= 0 {
		return nil
	}
	pc, pm := s.resourcePrices()
	return func(o packOption, j int) float64 {
		room := p.alloc[o.t].sub(g.req.scale(int64(j)))
		if room[rCPU] < smallest[rCPU] || room[rMemory] < smallest[rMemory] || room[rPods] < 1 {
			return 0
		}
		return pc*float64(min(room[rCPU], need[rCPU])) + pm*float64(min(room[rMemory], need[rMemory]))
	}
}
