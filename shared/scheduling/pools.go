package scheduling

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/nodecost"
	qty "github.com/nodewright/nodewright/shared/quantity"
	"github.com/nodewright/nodewright/shared/requirements"
)

// pool is a NodePool prepared for a solve: its requirements, the instance
// types it may launch (ordinary and exotic separately), each type's
// allocatable less the daemonsets that would run there, and its limits.
type pool struct {
	np        *apis.NodePool
	name      string
	weight    int32
	reqs      requirements.Requirements
	nodeReqs  requirements.Requirements // reqs and the labels every running node has
	rs        *reqSet
	nodeClass string
	settings  catalog.NodeSettings

	types  bitset // ordinary types the pool's requirements and offerings allow
	exotic bitset // GPU, accelerator and bare-metal types it allows
	mask   uint64 // (zone, capacity type) slots its requirements allow

	capacity []vec        // per type, as the node will report it
	overhead []vec        // daemonset requests per type
	daemons  []bitset     // per daemonset of the solve, the types it runs on
	alloc    []vec        // allocatable − overhead, what pods can use
	fit      [4]threshold // by allocatable, "at least"

	limits     vec
	limited    [numRes]bool
	capIndex   [numRes]threshold // by capacity, "at most", per limited resource
	nodeLimit  int64             // -1: none
	used       vec
	usedNodes  int64
	minValueOn []string // keys with minValues

	// nodeCost is what each node costs beyond its instance ($/h,
	// Input.NodeCosts); prices caches the offerings' prices with it, by
	// mask.
	nodeCost float64
	prices   map[uint64][]float64
	// burst is, per type, how a burstable type spends CPU above its
	// baseline (the zero Burst: not burstable); nil when the pool allows
	// no burstable type.
	burst []catalog.Burst
	// licence is, per type, the image's operating system licence per hour
	// (Windows; nil for the others), priced into every offering of the
	// pool with nodeCost.
	licence []float64

	err error // the pool cannot launch anything (bad requirement)
}

// fitDims are the dimensions the fit thresholds cover; other dimensions are checked
// type by type (few types have them).
var fitDims = [4]int{rCPU, rMemory, rPods, rEphemeral}

func (s *solver) newPool(np *apis.NodePool, classes map[string]*apis.EC2NodeClass) *pool {
	u := s.u
	p := &pool{np: np, name: np.Name, nodeLimit: -1, nodeCost: s.in.NodeCosts[np.Name]}
	if np.Spec.Weight != nil {
		p.weight = *np.Spec.Weight
	}
	if ref := np.Spec.Template.Spec.NodeClassRef; ref != nil {
		p.nodeClass = ref.Name
		p.settings = catalog.SettingsFor(classes[ref.Name])
		p.licence = s.licences(p.settings.AMIFamily)
	}
	switch {
	case np.DeletionTimestamp != nil:
		p.err = fmt.Errorf("it is being deleted and launches no more nodes")
		return p
	case np.Spec.Replicas != nil:
		p.err = fmt.Errorf("it is a static NodePool (spec.replicas): its nodes are kept at a fixed count, not launched for pending pods")
		return p
	}
	reqs, err := requirements.FromNodePool(np)
	if err != nil {
		p.err = err
		return p
	}
	reqs = imageRequirements(reqs, p.settings.AMIFamily)
	p.reqs, p.rs = reqs, s.intern(reqs)
	// Its nodes also get karpenter.sh/registered and initialized once up,
	// which DaemonSets may select.
	p.nodeReqs = reqs.Add(requirements.In(apis.LabelRegistered, "true")).Add(requirements.In(apis.LabelInitialized, "true"))
	for _, r := range reqs {
		if r.MinValues != nil {
			p.minValueOn = append(p.minValueOn, r.Key)
		}
	}
	p.mask = u.offeringMask(reqs) &^ u.reservedElsewhere(p.nodeClass)
	allowed := u.typeRequirementBits(reqs, u.all)
	allowed.and(u.offeredIn(p.mask))
	p.exotic = allowed.clone()
	p.exotic.and(u.exotic)
	p.types = allowed
	p.types.andNot(u.exotic)
	p.dropUnlaunchable(u)
	p.computeResources(s)
	p.buildFitIndex(u.n)
	p.setLimits(s.reg)
	p.buildCapIndex(u.n)
	return p
}

// dropUnlaunchable leaves out the types the pool's EC2NodeClass cannot
// launch (catalog.InstanceType.Launchable: nested virtualization,
// connection tracking, EFA-only interfaces).
func (p *pool) dropUnlaunchable(u *universe) {
	for _, set := range []bitset{p.types, p.exotic} {
		set.each(func(t int) bool {
			if !u.types[t].Launchable(p.settings) {
				set[t>>6] &^= 1 << (uint(t) & 63)
			}
			return true
		})
	}
}

// computeResources fills capacity, daemonset overhead and allocatable for
// every type the pool allows.
func (p *pool) computeResources(s *solver) {
	u := s.u
	p.capacity, p.overhead, p.alloc = make([]vec, u.n), make([]vec, u.n), make([]vec, u.n)
	both := p.types.clone()
	both.or(p.exotic)
	both.each(func(t int) bool {
		c, a := u.types[t].Compute(p.settings)
		p.capacity[t], p.alloc[t] = amountsVec(c).add(s.extra[t]), amountsVec(a).add(s.extra[t])
		if b, ok := u.types[t].Burstable(); ok {
			if p.burst == nil {
				p.burst = make([]catalog.Burst, u.n)
			}
			p.burst[t] = b
			if b.Mode == catalog.CreditsStandard {
				// Standard mode throttles to the baseline: pods (daemonsets
				// included) get no more requested CPU than it.
				p.alloc[t][rCPU] = min(p.alloc[t][rCPU], b.BaselineMilliCPU)
			}
		}
		return true
	})
	p.daemons = make([]bitset, len(s.daemons))
	for i, ds := range s.daemons {
		runsOn := p.daemonTypes(s, ds)
		runsOn.and(both)
		p.daemons[i] = runsOn
		runsOn.each(func(t int) bool {
			p.overhead[t] = p.overhead[t].add(ds.req)
			return true
		})
	}
	both.each(func(t int) bool {
		p.alloc[t] = p.alloc[t].sub(p.overhead[t])
		return true
	})
}

// daemonTypes is the types on which the daemonset's pod would run in this
// pool: it tolerates the pool's taints (startup taints are removed before
// pods run, so they don't count), and one of its node requirement
// alternatives is compatible with the pool and satisfied by the type.
func (p *pool) daemonTypes(s *solver, ds *daemon) bitset {
	out := newBitset(s.u.n)
	if !tolerates(ds.tolerations, p.np.Spec.Template.Spec.Taints, false) {
		return out
	}
	for _, alt := range ds.alts {
		typeReqs, nodeReqs := s.u.split(alt)
		if p.nodeReqs.Compatible(nodeReqs, requirements.WellKnown) != nil {
			continue
		}
		merged := p.nodeReqs.Intersect(nodeReqs)
		b := s.u.typeRequirementBits(typeReqs, s.u.all)
		b.and(s.u.offeredIn(s.u.offeringMask(merged)))
		out.or(b)
	}
	return out
}

func (p *pool) buildFitIndex(n int) {
	both := p.types.clone()
	both.or(p.exotic)
	for d, dim := range fitDims {
		p.fit[d] = newThreshold(both, n, func(t int) int64 { return p.alloc[t][dim] }, true)
	}
}

// fitting narrows dst (a copy of the candidate types) to the types whose
// allocatable holds need.
func (p *pool) fitting(dst bitset, need vec) {
	for d, dim := range fitDims {
		set := p.fit[d].atLeast(need[dim])
		if set == nil {
			clear(dst)
			return
		}
		dst.and(set)
	}
	for dim := rNvidiaGPU; dim < numRes; dim++ {
		if need[dim] <= 0 {
			continue
		}
		dst.each(func(t int) bool {
			if p.alloc[t][dim] < need[dim] {
				dst[t>>6] &^= 1 << (uint(t) & 63)
			}
			return true
		})
	}
}

func (p *pool) setLimits(reg *registry) {
	for name, q := range p.np.Spec.Limits {
		if name == "nodes" {
			p.nodeLimit = qty.Clamped(name, q)
			continue
		}
		i, ok := reg.slot(name, false)
		if !ok {
			continue // a limit on a resource no type has never binds
		}
		p.limited[i] = true
		// A limit too large to count saturates (validation refuses it):
		// it never binds, rather than wrapping negative and closing the pool.
		p.limits[i] = qty.Clamped(name, q)
	}
}

func (p *pool) buildCapIndex(n int) {
	both := p.types.clone()
	both.or(p.exotic)
	for d, on := range p.limited {
		if on {
			p.capIndex[d] = newThreshold(both, n, func(t int) int64 { return p.capacity[t][d] }, false)
		}
	}
}

// withinLimitsFor narrows dst to the types that, as c's type instead of its
// expected one (and as one more node, for a claim not yet counted), keep the
// pool within its limits.
func (p *pool) withinLimitsFor(c *claim, dst bitset) {
	if !p.hasLimits() {
		return
	}
	if p.nodeLimit >= 0 && c.cur < 0 && p.usedNodes+1 > p.nodeLimit {
		clear(dst)
		return
	}
	for d, on := range p.limited {
		if !on {
			continue
		}
		set := p.capIndex[d].atMost(p.limits[d] - p.used[d] + c.capacity[d])
		if set == nil {
			clear(dst)
			return
		}
		dst.and(set)
	}
}

// hasLimits says whether any limit applies.
func (p *pool) hasLimits() bool {
	return p.nodeLimit >= 0 || slices.Contains(p.limited[:], true)
}

// limitReason describes the limit a capacity increase would break.
func (p *pool) limitReason(reg *registry, extra vec) string {
	if p.nodeLimit >= 0 && p.usedNodes+1 > p.nodeLimit {
		return fmt.Sprintf("NodePool %s has reached its limit of %d nodes", p.name, p.nodeLimit)
	}
	for i, on := range p.limited {
		if on && p.used[i]+extra[i] > p.limits[i] {
			return fmt.Sprintf("NodePool %s would exceed its %s limit of %s (%s in use)", p.name, reg.names[i],
				human(i, p.limits[i]), human(i, p.used[i]))
		}
	}
	return ""
}

// countExisting adds an existing or in-flight node of the pool to its usage.
func (p *pool) countExisting(capacity vec) {
	p.used = p.used.add(capacity)
	p.usedNodes++
}

// taints are the taints pods must tolerate on the pool's nodes.
func (p *pool) taints() []corev1.Taint { return p.np.Spec.Template.Spec.Taints }

// surplus is what a node of type t bills per hour above its instance's
// price when its pods request cpu millicores (its daemonsets' requests
// added): unlimited mode's surplus above the type's baseline, 0 for types
// that are not burstable or are run in standard mode.
func (p *pool) surplus(t int, cpu int64) float64 {
	if p.burst == nil || p.burst[t].Mode != catalog.CreditsUnlimited {
		return 0
	}
	return p.burst[t].SurplusPerHour(cpu + p.overhead[t][rCPU])
}

// pricesIn is each type's cheapest offering within mask for a node of p
// (+Inf none): the instance's price plus what the pool's nodes cost beyond
// it.
func (s *solver) pricesIn(p *pool, mask uint64) []float64 {
	base := s.u.prices(mask)
	if p.nodeCost == 0 && p.licence == nil {
		return base
	}
	if pr, ok := p.prices[mask]; ok {
		return pr
	}
	pr := make([]float64, len(base))
	for t, b := range base {
		pr[t] = b + p.extraCost(t)
	}
	if p.prices == nil {
		p.prices = map[uint64][]float64{}
	}
	p.prices[mask] = pr
	return pr
}

// extraCost is what a node of type t in the pool costs beyond its
// instance's offering price: the pool's per-node cost and its image's
// licence.
func (p *pool) extraCost(t int) float64 {
	return p.nodeCost + p.licenceOf(t)
}

// licenceOf is the licence a node of type t pays per hour in the pool.
func (p *pool) licenceOf(t int) float64 {
	if p.licence == nil {
		return 0
	}
	return p.licence[t]
}

// licences are, per type, the hourly licence of a node of the AMI family
// (Windows; nil for families without one): the region's figure where the
// catalog has it (catalog.InstanceType.WindowsLicence), else the shipped
// per-vCPU estimate. Added to every offering of the pool, on-demand and
// spot alike.
func (s *solver) licences(family string) []float64 {
	perVCPU := nodecost.LicencePerVCPUHour(family)
	if perVCPU == 0 {
		return nil
	}
	out := make([]float64, s.u.n)
	for t, it := range s.u.types {
		out[t] = perVCPU * float64(it.VCPU)
		if it.WindowsLicence > 0 {
			out[t] = it.WindowsLicence
		}
	}
	return out
}
