package scheduling

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
)

// claim is a NodeClaim being planned: the pool it comes from, the
// requirements its pods added, the instance types still possible, and the
// pods it holds. Its expected type is the cheapest possible one that fits.
type claim struct {
	id       int
	name     string
	pool     *pool
	rs       *reqSet
	exotic   bool
	state    *reqState
	total    vec
	pods     []*corev1.Pod
	ports    []hostPort
	cur      int // expected type, -1 before the first pod
	target   int // type a new claim was sized for while its group fills it, -1: none
	price    float64
	capacity vec // of the expected type, counted against the pool's limits

	placements []placement
	removed    bool
	// quota is, for a seed's claim, how many more pods of each group it is
	// for (seeds.go).
	quota map[*group]int
}

// placement is pods of one group put on a claim together.
type placement struct {
	g    *group
	pods []*corev1.Pod
}

// reqState is what a requirement set allows in a pool: shared by every claim
// with the same requirements.
type reqState struct {
	mask     uint64
	viable   bitset // types the requirements and offerings allow
	maxAlloc vec    // per-dimension maximum allocatable over viable
	prices   []float64
	minKeys  []minKey
	order    []int // viable types by price, built on first use
	// perVCPU: prices carry a licence that differs by type, so they are
	// not in the universe's order.
	perVCPU bool
}

// stateFor returns the shared state of rs in pool p (exotic: GPU and other
// exotic types included).
func (s *solver) stateFor(p *pool, rs *reqSet, exotic bool) *reqState {
	ck := stateKey{p, rs.id, exotic}
	if st, ok := s.states[ck]; ok {
		return st
	}
	u := s.u
	st := &reqState{mask: u.offeringMask(rs.reqs)}
	base := p.types
	if exotic {
		base = p.types.clone()
		base.or(p.exotic)
	}
	st.viable = u.typeRequirementBits(rs.reqs, base)
	st.viable.and(u.offeredIn(st.mask))
	for i := range st.maxAlloc {
		st.maxAlloc[i] = math.MinInt64
	}
	st.viable.each(func(t int) bool {
		for i, x := range p.alloc[t] {
			st.maxAlloc[i] = max(st.maxAlloc[i], x)
		}
		return true
	})
	st.prices, st.perVCPU = s.pricesIn(p, st.mask), p.licence != nil
	st.minKeys = s.minValueKeys(rs)
	s.states[ck] = st
	return st
}

// fits says whether some viable type holds need (with minValues kept and
// within the pool's limits), into scratch.
func (s *solver) fitsIn(c *claim, st *reqState, need vec) bool {
	if !need.fits(st.maxAlloc) {
		return false
	}
	f := s.fitSet(c, st, need)
	if f.empty() {
		return false
	}
	return s.minValuesOK(f, st.mask, st.minKeys)
}

// fitSet is the viable types that hold need and keep c's pool within its
// limits; it reuses a scratch bitset.
func (s *solver) fitSet(c *claim, st *reqState, need vec) bitset {
	copy(s.scratch, st.viable)
	c.pool.fitting(s.scratch, need)
	c.pool.withinLimitsFor(c, s.scratch)
	return s.scratch
}

// cheapest picks the expected type for need: the cheapest viable type that
// holds it (then by name), within limits.
func (s *solver) cheapest(c *claim, st *reqState, need vec) (int, float64) {
	f := s.fitSet(c, st, need)
	best, price := -1, math.Inf(1)
	f.each(func(t int) bool {
		if p := st.prices[t] + c.pool.surplus(t, need[rCPU]); p < price {
			best, price = t, p
		}
		return true
	})
	return best, price
}

// growthTolerance is how much more than a fresh, efficiently sized node a
// claim may charge per added pod when it grows to a larger type.
const growthTolerance = 1.0

// growthCandidates bounds how many larger types a growth step compares.
const growthCandidates = 24

type mode int

const (
	modeSlack mode = iota // only what fits the expected type: free
	modeGrow              // a larger type, when it is as cheap per pod as a fresh node
	modeNew               // a new claim: the type with the lowest price per pod
	modeSeed              // a seed's claim: up to its quota, within its type
)

// capacityFor is how many pods of g claim c can take in state st under mode
// m; a new claim is sized for horizon pods (see newStep).
func (s *solver) capacityFor(c *claim, st *reqState, g *group, limit, horizon int, m mode) int {
	if limit <= 0 || !c.total.add(g.req).fits(st.maxAlloc) {
		return 0
	}
	switch m {
	case modeSlack:
		rt := c.roomType()
		if rt < 0 || !st.viable.has(rt) {
			return 0
		}
		k := int(min(int64(limit), g.req.howMany(c.pool.alloc[rt].sub(c.total))))
		if k > 0 && (len(st.minKeys) > 0 || c.pool.hasLimits()) && !s.fitsIn(c, st, c.total.add(g.req.scale(int64(k)))) {
			return 0
		}
		return k
	case modeGrow:
		return s.bestStep(c, st, g, limit, c.price, g.unit*(1+growthTolerance))
	case modeSeed:
		t := c.target
		if t < 0 || !st.viable.has(t) {
			return 0
		}
		k := int(min(int64(limit), int64(c.quota[g]), g.req.howMany(c.pool.alloc[t].sub(c.total))))
		if k > 0 && !s.fitsIn(c, st, c.total.add(g.req.scale(int64(k)))) {
			return 0
		}
		return k
	default:
		return s.newStep(c, st, g, limit, horizon)
	}
}

// bestStep finds the type that takes pods of g at the lowest added price per
// pod (ties: more pods), among the cheapest larger types that hold at least
// one more pod; it returns how many pods that type takes, 0 when none is
// within maxPerPod.
func (s *solver) bestStep(c *claim, st *reqState, g *group, limit int, base, maxPerPod float64) int {
	p := c.pool
	one := s.fitSet(c, st, c.total.add(g.req))
	if one.empty() {
		return 0
	}
	order := s.byPrice(st)
	i := sort.Search(len(order), func(i int) bool { return st.prices[order[i]] >= base })
	bestK, bestRate, seen := 0, math.Inf(1), 0
	for ; i < len(order) && seen < growthCandidates; i++ {
		t := order[i]
		if !one.has(t) {
			continue
		}
		seen++
		if st.prices[t]-base > float64(limit)*maxPerPod {
			break // by price: every later type adds more
		}
		k := int(min(int64(limit), g.req.howMany(p.alloc[t].sub(c.total))))
		added := st.prices[t] + p.surplus(t, c.total[rCPU]+int64(k)*g.req[rCPU]) - base
		rate := added / float64(k)
		if rate > maxPerPod || rate > bestRate || (rate == bestRate && k <= bestK) {
			continue
		}
		if !s.fitsIn(c, st, c.total.add(g.req.scale(int64(k)))) {
			continue
		}
		bestK, bestRate = k, rate
	}
	return bestK
}

// byPrice is every type offered in the state's mask, by price then name;
// callers skip the ones not viable.
func (s *solver) byPrice(st *reqState) []int {
	if st.order == nil {
		st.order = s.u.orderByPrice(st.mask)
		if st.perVCPU {
			// Re-sort by the pool's own prices (stable: name order on ties,
			// as the universe's), so that searches by price stay valid.
			st.order = slices.Clone(st.order)
			slices.SortStableFunc(st.order, func(a, b int) int { return cmp.Compare(st.prices[a], st.prices[b]) })
		}
	}
	return st.order
}

// unitPrice is the lowest price per pod of g on a fresh node of any pool g
// can use, for the pods that remain and no more per node than g's topology
// allows: what growing a claim is compared with.
func (s *solver) unitPrice(g *group) float64 {
	perNode := int64(min(len(g.pods), g.perNode()))
	best := math.Inf(1)
	for _, p := range s.pools {
		if p.err != nil || !s.toleratesPool(g, p) {
			continue
		}
		merged := s.merged(p.rs, g.cur)
		if merged == nil {
			continue
		}
		for _, exotic := range []bool{false, true} {
			st := s.stateFor(p, merged, exotic)
			for _, t := range s.byPrice(st) {
				if !st.viable.has(t) {
					continue
				}
				k := min(perNode, g.req.howMany(p.alloc[t]))
				if k > 0 {
					best = min(best, (st.prices[t]+p.surplus(t, k*g.req[rCPU]))/float64(k))
				}
			}
			if !math.IsInf(best, 1) {
				break
			}
		}
	}
	return best
}

// claimDomain returns the claim's value for a topology key under rs: its
// own name for hostname, else the single value rs allows ("" when open).
func claimDomain(c *claim, rs *reqSet) func(string) string {
	return func(key string) string {
		if key == apis.LabelHostname {
			return c.name
		}
		r, ok := rs.reqs.Get(key)
		if !ok {
			return ""
		}
		if v, finite := r.Values(); finite && len(v) == 1 {
			return v[0]
		}
		return ""
	}
}

// tryClaim works out how many pods of g claim c takes under mode m, and the
// requirements it then has; k is 0 when it takes none.
func (s *solver) tryClaim(c *claim, g *group, m mode) (k int, rs *reqSet) {
	if c.removed || len(g.unknown) > 0 || !s.toleratesPool(g, c.pool) {
		return 0, nil
	}
	if m == modeSlack && (c.roomType() < 0 || !g.req.fits(c.pool.alloc[c.roomType()].sub(c.total))) {
		return 0, nil
	}
	// Requirements only narrow the types, so if none of the claim's types
	// can hold one more pod, none will.
	if !c.total.add(g.req).fits(c.state.maxAlloc) {
		return 0, nil
	}
	limit := len(g.pods)
	if len(g.hostPorts) > 0 {
		if conflicts(g.hostPorts, c.ports) {
			return 0, nil
		}
		limit = 1
	}
	rs = s.merged(c.rs, g.cur)
	if rs == nil {
		return 0, nil
	}
	for _, tk := range g.topoKeys {
		if claimDomain(c, rs)(tk) != "" {
			continue
		}
		v := s.chooseDomain(c, g, rs, tk)
		if v == "" {
			return 0, nil
		}
		rs = s.pinned(rs, tk, v)
	}
	st := s.stateFor(c.pool, rs, c.exotic)
	limit = min(limit, s.topologyCap(g, claimDomain(c, rs), g.eligible))
	horizon := limit
	if m == modeNew {
		horizon = s.horizon(g, claimDomain(c, rs))
	}
	return s.capacityFor(c, st, g, limit, horizon, m), rs
}

// chooseDomain picks the value to pin a claim's open topology key to for g:
// among the values its requirements allow, one the topology accepts, the
// least loaded by g's spread on the key, then the cheapest, then by name.
func (s *solver) chooseDomain(c *claim, g *group, rs *reqSet, key string) string {
	r, hasReq := rs.reqs.Get(key)
	values := s.keyValues(c.pool, rs, key)
	type cand struct {
		v     string
		load  int
		price float64
	}
	var cands []cand
	need := c.total.add(g.req)
	for _, v := range values {
		if hasReq && !r.Has(v) {
			continue
		}
		pinned := s.pinned(rs, key, v)
		if s.topologyCapOn(g, claimDomain(c, pinned), g.eligible, key) <= 0 {
			continue
		}
		st := s.stateFor(c.pool, pinned, c.exotic)
		if !s.fitsIn(c, st, need) {
			continue
		}
		_, price := s.cheapest(c, st, need)
		cands = append(cands, cand{v, s.spreadLoad(g, key, v), price})
	}
	if len(cands) == 0 {
		return ""
	}
	best := slices.MinFunc(cands, func(a, b cand) int {
		switch {
		case a.load != b.load:
			return a.load - b.load
		case a.price < b.price:
			return -1
		case a.price > b.price:
			return 1
		}
		return 0
	})
	return best.v
}

// spreadLoad is the count of g's first active spread on key in domain v.
func (s *solver) spreadLoad(g *group, key, v string) int {
	for _, sp := range g.spreads {
		if !sp.dropped && sp.key == key {
			return s.counters[sp.counter].counts[v]
		}
	}
	return 0
}

// addToClaim places k pods of g on c under the merged requirements.
func (s *solver) addToClaim(c *claim, g *group, k int, rs *reqSet) {
	s.touchClaim(c)
	c.rs, c.state = rs, s.stateFor(c.pool, rs, c.exotic)
	c.total = c.total.add(g.req.scale(int64(k)))
	c.pods = append(c.pods, g.pods[:k]...)
	c.placements = append(c.placements, placement{g, g.pods[:k:k]})
	c.ports = append(c.ports, g.hostPorts...)
	s.record(g, claimDomain(c, rs), k)
	g.pods = g.pods[k:]
	s.reprice(c)
}

// reprice sets the claim's expected type and accounts its capacity to the
// pool's limits.
func (s *solver) reprice(c *claim) {
	t, price := s.cheapest(c, c.state, c.total)
	if t < 0 {
		// Cannot happen: placements check fitsIn first.
		panic(fmt.Sprintf("nodeclaim %s: no type fits %v", c.name, c.total))
	}
	p := c.pool
	if c.cur < 0 {
		p.usedNodes++
	} else {
		p.used = p.used.sub(c.capacity)
	}
	c.cur, c.price, c.capacity = t, price, p.capacity[t]
	p.used = p.used.add(c.capacity)
}

// newClaim starts a NodeClaim from pool p for group g, or returns nil when the
// pool cannot hold one pod of g.
func (s *solver) newClaim(p *pool, g *group) *claim {
	if p.err != nil || len(g.unknown) > 0 || !s.toleratesPool(g, p) {
		return nil
	}
	c := &claim{id: s.claimSeq, pool: p, rs: p.rs, cur: -1, target: -1}
	c.name = fmt.Sprintf("nodeclaim-%d", c.id)
	c.exotic = needsExotic(g.req)
	c.state = s.stateFor(p, c.rs, c.exotic)
	k, rs := s.tryClaim(c, g, modeNew)
	if k == 0 && !c.exotic && !p.exotic.empty() {
		c.exotic = true
		c.state = s.stateFor(p, c.rs, true)
		k, rs = s.tryClaim(c, g, modeNew)
	}
	if k == 0 {
		return nil
	}
	s.claimSeq++ // names stay unique when claims are removed
	s.claims = append(s.claims, c)
	s.addToClaim(c, g, k, rs)
	return c
}

// needsExotic says whether requests need accelerators only exotic types have.
func needsExotic(req vec) bool {
	for d := rNvidiaGPU; d <= rNeuronCore; d++ {
		if req[d] > 0 {
			return true
		}
	}
	return false
}

// toleratesPool says, cached per group and pool, whether g tolerates p's
// taints (the cache is reset when g starts tolerating PreferNoSchedule).
func (s *solver) toleratesPool(g *group, p *pool) bool {
	if g.tolerated == nil {
		g.tolerated = make(map[*pool]bool, len(s.pools))
	}
	ok, seen := g.tolerated[p]
	if !seen {
		ok = tolerates(g.tolerations, p.taints(), !g.preferNoScheduleOK)
		g.tolerated[p] = ok
	}
	return ok
}
