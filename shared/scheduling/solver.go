package scheduling

import (
	"fmt"
	"slices"
	"sort"
	"time"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/requirements"
)

// solver holds one solve's state.
type solver struct {
	in       *Input
	u        *universe
	reg      *registry
	extra    map[int]vec // Input.Capacity by type index
	pools    []*pool     // weight order
	nodes    []*node
	daemons  []*daemon
	groups   []*group
	claims   []*claim
	counters []*counter

	nodeByName map[string]*node
	// open are the nodes, in order, with room for a pod of some group:
	// the only ones placing can use (see pruneNodes).
	open       []*node
	counterIdx map[string]int
	states     map[stateKey]*reqState
	sets       map[string]*reqSet
	merges     map[setPair]*reqSet
	pins       map[pinOp]*reqSet
	scratch    bitset
	failed     []*group
	deferred   []*group // not reached within the budget
	attempts   int      // group placements made
	spentOn    string   // the budget bound that stopped the run
	undo       *undoLog

	// residual selects residual sizing (see roomCredit); later, laterMin
	// and prices serve it.
	residual bool
	claimSeq int
	later    map[*group]vec
	laterMin map[*group]vec
	prices   []float64

	// seeds are a seeded plan's NodeClaims to be (seeds.go).
	seeds []*seed

	bestEffort bool // MinValuesPolicy BestEffort
}

// Solve plans where in.Pods go. It returns an error only for input it cannot
// work with at all; pods it cannot place come back in Result.Unschedulable.
func Solve(in Input) (res *Result, err error) {
	defer func() {
		if r := recover(); r != nil {
			res, err = nil, fmt.Errorf("scheduling: internal error: %v", r)
		}
	}()
	if in.MaxInstanceTypes <= 0 {
		in.MaxInstanceTypes = DefaultMaxInstanceTypes
	}
	switch in.MinValuesPolicy {
	case "", MinValuesStrict, MinValuesBestEffort:
	default:
		return nil, fmt.Errorf("scheduling: minValuesPolicy %q is not one of %s, %s", in.MinValuesPolicy, MinValuesStrict, MinValuesBestEffort)
	}
	switch in.PreferencePolicy {
	case "", PreferencesRespect, PreferencesIgnore:
	default:
		return nil, fmt.Errorf("scheduling: preferencePolicy %q is not one of %s, %s", in.PreferencePolicy, PreferencesRespect, PreferencesIgnore)
	}
	if len(in.NodePools) > MaxNodePools {
		return nil, fmt.Errorf("scheduling: %d NodePools, more than the %d a solve accepts", len(in.NodePools), MaxNodePools)
	}
	if err := checkBound(in.Nodes, in.Pods); err != nil {
		return nil, err
	}
	u := newUniverse(&in)
	best := newSolver(&in, u, false, byCPU).solve()
	if len(in.Pods) <= portfolioMaxPods {
		for _, alt := range []struct {
			residual bool
			order    groupOrder
		}{{true, byCPU}, {false, byMemory}, {true, byMemory}} {
			if s := newSolver(&in, u, alt.residual, alt.order).solve(); s.better(best) {
				best = s
			}
		}
		// The seeded plans compete after the local search: the cheapest
		// before it is not always the cheapest after.
		var seeded *solver
		for _, plan := range newSolver(&in, u, false, byCPU).seedPlans() {
			s := newSolver(&in, u, false, byCPU)
			s.bindSeeds(plan)
			if s = s.solve(); seeded == nil || s.better(seeded) {
				seeded = s
			}
		}
		best.improve(true)
		if seeded != nil {
			if seeded.improve(true); seeded.better(best) {
				best = seeded
			}
		}
	}
	res = best.result()
	if !in.SkipLowerBound {
		res.LowerBoundPricePerHour = roundPrice(best.lowerBound())
	}
	return res, nil
}

// portfolioMaxPods is the largest solve that compares sizing policies (group
// by group, and residual) and group orders (larger cpu first, larger memory
// first) and keeps the cheapest plan; larger ones use the first only, to keep
// their speed.
const portfolioMaxPods = 500

// better says whether s's plan beats o's: more pods placed, then cheaper
// (by more than rounding).
func (s *solver) better(o *solver) bool {
	if a, b := s.unplaced(), o.unplaced(); a != b {
		return a < b
	}
	return s.planPrice() < o.planPrice()-1e-6
}

// unplaced is how many pods the solve could not place (or did not reach
// within its budget).
func (s *solver) unplaced() int {
	n := 0
	for _, g := range s.failed {
		n += len(g.pods)
	}
	for _, g := range s.deferred {
		n += len(g.pods)
	}
	return n
}

// newSolver prepares one solve over a shared universe (its caches only
// grow): nodes, pools, daemonsets and the pending pods' groups, in order.
func newSolver(in *Input, u *universe, residual bool, order groupOrder) *solver {
	s := &solver{in: in, reg: newRegistry(), counterIdx: map[string]int{}, states: map[stateKey]*reqState{},
		sets: map[string]*reqSet{}, merges: map[setPair]*reqSet{}, pins: map[pinOp]*reqSet{}, residual: residual}
	s.bestEffort = in.MinValuesPolicy == MinValuesBestEffort
	s.u = u
	s.scratch = newBitset(s.u.n)
	s.buildNodes()
	s.buildExtra()
	s.buildDaemons()
	s.buildPools()
	s.attachPools()
	s.reserveDaemons()
	s.buildGroups(in.Pods)
	s.screenOversized()
	s.countExistingPods()
	s.matchCounters()
	sortGroups(s.groups, order)
	s.laterDemand()
	s.open = s.nodes
	s.pruneNodes()
	return s
}

// solve places the groups and improves the plan; the caller builds the
// result of the plan it keeps.
func (s *solver) solve() *solver {
	s.run()
	s.eliminate()
	if len(s.in.Pods) <= portfolioMaxPods {
		s.improve(false)
	}
	return s
}

func (s *solver) buildPools() {
	classes := map[string]*apis.EC2NodeClass{}
	for _, nc := range s.in.NodeClasses {
		classes[nc.Name] = nc
	}
	nps := slices.Clone(s.in.NodePools)
	sort.SliceStable(nps, func(i, j int) bool {
		wi, wj := weight(nps[i]), weight(nps[j])
		if wi != wj {
			return wi > wj
		}
		return nps[i].Name < nps[j].Name
	})
	for _, np := range nps {
		s.pools = append(s.pools, s.newPool(np, classes))
	}
}

func weight(np *apis.NodePool) int32 {
	if np.Spec.Weight == nil {
		return 0
	}
	return *np.Spec.Weight
}

// run places every group: on each round, each group goes to existing nodes,
// then the slack of planned NodeClaims, then grows planned NodeClaims, then
// opens new ones, relaxing its preferences while pods remain; groups that
// could not be placed wait for the next round (other groups may make room for
// their affinity) as long as a round places something.
func (s *solver) run() {
	// Groups no node can take fail at once, whatever the budget.
	var queue, hopeless []*group
	for _, g := range s.groups {
		if g.hopeless() {
			hopeless = append(hopeless, g)
		} else {
			queue = append(queue, g)
		}
	}
	s.failed = hopeless
	for len(queue) > 0 {
		progress := false
		var retry []*group
		for i, g := range queue {
			if s.spent() {
				// Not reached: the rest of this round, and the groups
				// waiting for another.
				s.deferred = append(append(s.deferred, retry...), queue[i:]...)
				return
			}
			s.attempts++
			before := len(g.pods)
			s.placeGroup(g)
			if len(g.pods) < before {
				progress = true
			}
			if len(g.pods) > 0 {
				retry = append(retry, g)
			}
		}
		queue = retry
		if !progress {
			break
		}
	}
	s.failed = append(s.failed, queue...)
}

// spent says whether the budget allows no further group placement, and
// records which bound stopped it.
func (s *solver) spent() bool {
	b := &s.in.Budget
	switch {
	case b.MaxGroups > 0 && s.attempts >= b.MaxGroups:
		s.spentOn = "groups"
	case !b.Deadline.IsZero() && !s.budgetNow().Before(b.Deadline):
		s.spentOn = "deadline"
	default:
		return false
	}
	return true
}

func (s *solver) budgetNow() time.Time {
	if s.in.Budget.Now != nil {
		return s.in.Budget.Now()
	}
	return time.Now()
}

// placeGroup places as many pods of g as it can, relaxing preferences.
func (s *solver) placeGroup(g *group) {
	if g.hopeless() {
		return
	}
	steps := []func(*group){
		s.placeOnNodes,
		func(g *group) { s.placeOnClaims(g, modeSlack) },
		func(g *group) { s.placeOnClaims(g, modeGrow) },
		s.placeOnNewClaims,
	}
	if len(s.seeds) > 0 {
		steps = slices.Insert(steps, 1, s.placeOnSeeds)
	}
	for {
		if len(g.volumes) <= 1 {
			s.prepare(g)
			for _, step := range steps {
				step(g)
			}
		} else {
			// Each step tries every alternative of the pod's volumes
			// before the next: an existing node that holds one comes
			// before a new node for another, as in Karpenter.
			for _, step := range steps {
				for v := range g.volumes {
					if len(g.pods) == 0 {
						break
					}
					g.volIdx = v
					s.prepare(g)
					step(g)
				}
			}
		}
		if len(g.pods) == 0 || !g.relax() {
			return
		}
	}
}

// prepare caches g's current requirements, topology keys and eligible domains.
func (s *solver) prepare(g *group) {
	g.cur = s.intern(g.nodeReqs())
	g.topoKeys = s.topologyKeys(g)
	cache := map[string][]string{}
	g.eligible = func(sp *spread) []string {
		if sp.key == apis.LabelHostname {
			return nil // a new node is always a domain with no pods
		}
		if v, ok := cache[sp.key]; ok {
			return v
		}
		v := s.eligibleDomains(g, sp)
		cache[sp.key] = v
		return v
	}
}

// eligibleDomains is the values of sp's key that g could land in: from the
// pools it may use and the existing nodes, honouring its node affinity
// unless the constraint's nodeAffinityPolicy is Ignore.
func (s *solver) eligibleDomains(g *group, sp *spread) []string {
	// Only required node affinity counts, as in kube-scheduler: a preferred
	// term treated as required must not shrink the domains a spread balances.
	strict := s.intern(g.required[g.altIdx])
	seen := map[string]bool{}
	for _, n := range s.nodes {
		if n.skip {
			continue
		}
		if sp.honorAffinity {
			if !n.selectedBy(g.nodeAffinity) {
				continue
			}
		}
		if sp.honorTaints && !tolerates(g.tolerations, n.taints, false) {
			continue
		}
		if v, ok := n.labels[sp.key]; ok {
			seen[v] = true
		}
	}
	for _, p := range s.pools {
		if p.err != nil || (sp.honorTaints && !tolerates(g.tolerations, p.taints(), false)) {
			continue
		}
		reqs := p.reqs
		if sp.honorAffinity {
			m := s.merged(p.rs, strict)
			if m == nil {
				continue
			}
			reqs = m.reqs
		}
		for _, v := range s.poolDomains(p, reqs, sp.key) {
			seen[v] = true
		}
	}
	out := make([]string, 0, len(seen))
	for v := range seen {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// poolDomains lists the values a pool's nodes may take for key under reqs,
// as Karpenter's topology discovers domains: the zones and capacity types
// its offerings allow, the values its instance types have of a type label,
// and the values its requirements and template labels list (In) of any
// other key.
func (s *solver) poolDomains(p *pool, reqs requirements.Requirements, key string) []string {
	switch {
	case key == apis.LabelZone || key == apis.LabelCapacityType:
		var out []string
		for _, v := range s.offeringValues(key) {
			m := s.u.offeringMask(reqs.Add(requirements.In(key, v)))
			if m != 0 && (s.u.offeredIn(m).intersects(p.types) || s.u.offeredIn(m).intersects(p.exotic)) {
				out = append(out, v)
			}
		}
		return out
	case s.u.isTypeKey(key):
		both := p.types.clone()
		both.or(p.exotic)
		allowed := s.u.typeRequirementBits(reqs, both)
		allowed.and(s.u.offeredIn(s.u.offeringMask(reqs)))
		return s.typeLabelValues(key, allowed, reqs)
	}
	if r, ok := reqs.Get(key); ok {
		v, _ := r.Values()
		return v
	}
	return nil
}

// offeringValues is every value of an offering key (zone, capacity type).
func (s *solver) offeringValues(key string) []string {
	if key == apis.LabelZone {
		return s.u.zones
	}
	return capacityTypes
}

// typeLabelValues is the values of type label key among the types of set
// that reqs' requirement on key (if any) allows, sorted.
func (s *solver) typeLabelValues(key string, set bitset, reqs requirements.Requirements) []string {
	ki := s.u.keys[key]
	r, has := reqs.Get(key)
	var out []string
	for i, v := range ki.values {
		if (!has || r.Has(v)) && ki.sets[i].intersects(set) {
			out = append(out, v)
		}
	}
	return out
}

// keyValues is the values a claim of pool p under rs may be pinned to for
// a topology key: what the pool's offerings or types allow, or the values
// rs lists.
func (s *solver) keyValues(p *pool, rs *reqSet, key string) []string {
	switch {
	case key == apis.LabelZone || key == apis.LabelCapacityType:
		return s.offeringValues(key)
	case s.u.isTypeKey(key):
		both := p.types.clone()
		both.or(p.exotic)
		return s.typeLabelValues(key, s.u.typeRequirementBits(rs.reqs, both), rs.reqs)
	}
	if r, ok := rs.reqs.Get(key); ok {
		v, _ := r.Values()
		return v
	}
	return nil
}

func (s *solver) placeOnNodes(g *group) {
	for _, n := range s.open {
		if len(g.pods) == 0 {
			return
		}
		k := min(s.nodeRoom(n, g), len(g.pods))
		if k <= 0 {
			continue
		}
		k = min(k, s.topologyCap(g, n.domain, g.eligible))
		if k > 0 {
			s.placeOnNode(g, n, k)
		}
	}
}

func (s *solver) placeOnClaims(g *group, m mode) {
	if m == modeSlack {
		s.placeOn(g, s.bestFit(g), m)
		return
	}
	s.placeOn(g, s.claims, m)
}

// bestFit orders the claims whose expected type has room for a pod of g by
// how little room would be left, as the sum of squares of the cpu and memory
// left over each's allocatable (tightest first): pods then go where they
// complement what is there, so a claim's cpu and memory fill together.
func (s *solver) bestFit(g *group) []*claim {
	type scored struct {
		c     *claim
		score float64
	}
	var cs []scored
	for _, c := range s.claims {
		if c.removed || c.cur < 0 {
			continue
		}
		a := c.pool.alloc[c.cur]
		room := a.sub(c.total).sub(g.req)
		if room[rCPU] < 0 || room[rMemory] < 0 || room[rPods] < 0 {
			continue
		}
		rc := float64(room[rCPU]) / float64(max(a[rCPU], 1))
		rm := float64(room[rMemory]) / float64(max(a[rMemory], 1))
		cs = append(cs, scored{c, rc*rc + rm*rm})
	}
	sort.SliceStable(cs, func(i, j int) bool { return cs[i].score < cs[j].score })
	out := make([]*claim, len(cs))
	for i := range cs {
		out[i] = cs[i].c
	}
	return out
}

// placeOn offers claims to g under mode m, in order.
func (s *solver) placeOn(g *group, claims []*claim, m mode) {
	priced := -1
	for _, c := range claims {
		if len(g.pods) == 0 {
			return
		}
		if c.removed {
			continue
		}
		// Growing is compared with a fresh node for the pods that remain:
		// a few stragglers would get a small node, not a share of a big one.
		if m == modeGrow && priced != len(g.pods) {
			g.unit, priced = s.unitPrice(g), len(g.pods)
		}
		if k, rs := s.tryClaim(c, g, m); k > 0 {
			s.addToClaim(c, g, k, rs)
		}
	}
}

// placeOnNewClaims opens NodeClaims for g, pool by pool in weight order.
// When g spreads over zones or capacity types, each new claim raises the
// spread's minimum, so the claims opened so far are offered the remaining
// pods again before another is opened.
func (s *solver) placeOnNewClaims(g *group) {
	var fresh []*claim
	revisit := g.spreadsBeyondHostname()
	for _, p := range s.pools {
		for len(g.pods) > 0 {
			c := s.newClaim(p, g)
			if c == nil {
				break
			}
			fresh = append(fresh, c)
			for revisit && len(g.pods) > 0 {
				before := len(g.pods)
				s.placeOnNodes(g)
				s.placeOn(g, fresh, modeSlack)
				s.placeOn(g, fresh, modeGrow)
				if len(g.pods) == before {
					break
				}
			}
		}
	}
	// A claim's target is for its own group; later groups see its expected type.
	for _, c := range fresh {
		c.target = -1
	}
}
