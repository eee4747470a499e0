package scheduling

import (
	"math"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/requirements"
)

func (s *solver) result() *Result {
	res := &Result{NodeClaims: []NodeClaim{}, ExistingNodes: []NodePlacement{}, Unschedulable: []Unschedulable{}}
	for _, n := range s.nodes {
		if len(n.placed) > 0 {
			res.ExistingNodes = append(res.ExistingNodes, NodePlacement{Node: n.name, InFlight: n.inFlight, Pods: sortedPodKeys(n.placed)})
		}
	}
	headroom := s.limitHeadroom()
	room := s.reservationRoom()
	for _, c := range s.claims {
		nc, reason := s.finalizeReserving(c, headroom[c.pool], room)
		if reason != "" {
			for _, p := range c.pods {
				res.Unschedulable = append(res.Unschedulable, Unschedulable{Pod: podKey(p), Reason: reason})
			}
			continue
		}
		res.NodeClaims = append(res.NodeClaims, nc)
		res.PricePerHour += nc.PricePerHour
	}
	sort.SliceStable(res.NodeClaims, func(i, j int) bool {
		a, b := res.NodeClaims[i], res.NodeClaims[j]
		if a.NodePool != b.NodePool {
			return a.NodePool < b.NodePool
		}
		return a.Pods[0] < b.Pods[0]
	})
	for _, g := range s.failed {
		reason := s.explain(g)
		for _, p := range g.pods {
			res.Unschedulable = append(res.Unschedulable, Unschedulable{Pod: podKey(p), Reason: reason})
		}
	}
	sort.Slice(res.Unschedulable, func(i, j int) bool { return res.Unschedulable[i].Pod < res.Unschedulable[j].Pod })
	for _, g := range s.deferred {
		res.Deferred = append(res.Deferred, podKeys(g.pods)...)
	}
	sort.Strings(res.Deferred)
	res.BudgetSpent = s.spentOn
	for _, p := range s.pools {
		if p.err == nil && p.types.empty() && p.exotic.empty() {
			res.NoCompatibleInstanceTypes = append(res.NoCompatibleInstanceTypes, p.name)
		}
	}
	slices.Sort(res.NoCompatibleInstanceTypes)
	res.PricePerHour = roundPrice(res.PricePerHour)
	return res
}

// sortedPodKeys are the pods' namespace/name keys, sorted.
func sortedPodKeys(pods []*corev1.Pod) []string {
	keys := podKeys(pods)
	slices.Sort(keys)
	return keys
}

// roundPrice keeps prices to a millionth of a dollar, so sums print stably.
func roundPrice(p float64) float64 { return math.Round(p*1e6) / 1e6 }

// option is an instance type a NodeClaim may launch, at its expected price.
type option struct {
	t       int
	price   float64 // the cheapest kept offering's, plus surplus
	surplus float64 // a burstable type's surplus for the claim's CPU ($/h)
	slots   uint64  // offerings kept
}

// limitHeadroom is, per pool with limits, what its limits leave once every
// planned claim counts its expected type: the room claims may share for
// larger fallback types.
func (s *solver) limitHeadroom() map[*pool]*vec {
	out := map[*pool]*vec{}
	for _, p := range s.pools {
		if p.hasLimits() {
			h := p.limits.sub(p.used)
			out[p] = &h
		}
	}
	return out
}

// finalize turns a planned claim into its NodeClaim: the types that fit,
// priced with the spot offerings that cost more than the cheapest on-demand
// one dropped, cheapest first, cut to MaxInstanceTypes keeping minValues. In
// a pool with limits a type may exceed the expected type's size in a limited
// resource only by what is left of the pool's headroom, which the claim then
// uses up, so that whatever EC2 launches keeps the pool within its limits.
func (s *solver) finalize(c *claim, headroom *vec, mask uint64) (NodeClaim, string) {
	st, p := c.state, c.pool
	fit := s.fitSet(c, st, c.total).clone()
	if headroom != nil {
		fit.each(func(t int) bool {
			for i, on := range p.limited {
				if on && p.capacity[t][i]-c.capacity[i] > headroom[i] {
					fit[t>>6] &^= 1 << (uint(t) & 63)
					break
				}
			}
			return true
		})
	}
	opts := s.priced(c, fit, mask, true)
	if len(st.minKeys) > 0 && !s.bestEffort {
		// Dropping dear spot offerings may drop types that minValues needs.
		if _, short := s.minValuesKept(p, s.truncate(opts, st.minKeys), st.minKeys); short != "" {
			opts = s.priced(c, fit, mask, false)
		}
	} else {
		opts = dropSurplusFirst(opts)
	}
	opts = s.truncate(opts, st.minKeys)
	minValues, short := s.minValuesKept(p, opts, st.minKeys)
	if short != "" && !s.bestEffort {
		return NodeClaim{}, short
	}
	if headroom != nil {
		var largest vec
		for _, o := range opts {
			for i := range largest {
				largest[i] = max(largest[i], p.capacity[o.t][i]-c.capacity[i])
			}
		}
		*headroom = headroom.sub(largest)
	}
	nc := s.nodeClaim(c, opts)
	nc.MinValues = minValues
	nc.MinValuesRelaxed = short != ""
	return nc, ""
}

// priced lists the types of fit with their offerings in mask, cheapest
// first, each priced with what it bills above its instance for c's CPU (a
// burstable type's surplus) and its image's licence in c's pool; with
// dropDearSpot, spot offerings dearer than the cheapest on-demand offering
// of any of them, so priced, are left out (and types left with none).
func (s *solver) priced(c *claim, fit bitset, mask uint64, dropDearSpot bool) []option {
	u := s.u
	surplus := func(t int) float64 { return c.pool.surplus(t, c.total[rCPU]) }
	extra := func(t int) float64 { return surplus(t) + c.pool.licenceOf(t) }
	odMin := math.Inf(1)
	if dropDearSpot {
		fit.each(func(t int) bool {
			for slot := 0; slot < u.slots; slot++ {
				if mask&(1<<uint(slot)) != 0 && capacityTypes[slot%len(capacityTypes)] == apis.CapacityTypeOnDemand {
					odMin = min(odMin, u.price[t*u.slots+slot]+extra(t))
				}
			}
			return true
		})
	}
	var opts []option
	fit.each(func(t int) bool {
		o := option{t: t, price: math.Inf(1), surplus: surplus(t)}
		for slot := 0; slot < u.slots; slot++ {
			pr := u.price[t*u.slots+slot]
			if mask&(1<<uint(slot)) == 0 || math.IsInf(pr, 1) {
				continue
			}
			if capacityTypes[slot%len(capacityTypes)] == apis.CapacityTypeSpot && pr+extra(t) > odMin {
				continue
			}
			o.slots |= 1 << uint(slot)
			o.price = min(o.price, pr+extra(t))
		}
		if o.slots != 0 {
			opts = append(opts, o)
		}
		return true
	})
	sort.SliceStable(opts, func(i, j int) bool { return opts[i].price < opts[j].price })
	return opts
}

// dropSurplusFirst leaves out the burstable types that bill a surplus and
// whose instance is cheaper than the expected type's: EC2's allocation
// strategies rank a claim's types by instance price alone, so it would
// launch one of them first, and pay its surplus on top.
func dropSurplusFirst(opts []option) []option {
	if len(opts) < 2 {
		return opts
	}
	bestInstance := opts[0].price - opts[0].surplus
	out := opts[:1]
	for _, o := range opts[1:] {
		if o.surplus > 0 && o.price-o.surplus < bestInstance {
			continue
		}
		out = append(out, o)
	}
	return out
}

func (s *solver) nodeClaim(c *claim, opts []option) NodeClaim {
	u, p := s.u, c.pool
	nc := NodeClaim{NodePool: p.name, NodeClass: p.nodeClass, Pods: sortedPodKeys(c.pods),
		Taints: p.np.Spec.Template.Spec.Taints, StartupTaints: p.np.Spec.Template.Spec.StartupTaints}
	var slots uint64
	for _, o := range opts {
		nc.InstanceTypes = append(nc.InstanceTypes, u.types[o.t].Name)
		nc.PriceOverlaid = nc.PriceOverlaid || u.types[o.t].PriceOverlaid
		slots |= o.slots
	}
	var zones, cts []string
	for slot := 0; slot < u.slots; slot++ {
		if slots&(1<<uint(slot)) != 0 {
			zones = append(zones, u.zones[slot/len(capacityTypes)])
			cts = append(cts, capacityTypes[slot%len(capacityTypes)])
		}
	}
	slices.Sort(zones)
	slices.Sort(cts)
	nc.Zones, nc.CapacityTypes = slices.Compact(zones), slices.Compact(cts)
	if len(opts) > 0 {
		best := opts[0]
		_, nc.CapacityType, nc.PricePerHour = u.cheapestOffering(best.t, best.slots)
		nc.PricePerHour += p.extraCost(best.t) + best.surplus
		nc.NodeCostPerHour = p.nodeCost
		nc.CPUSurplusPerHour = best.surplus
		nc.LicencePerHour = p.licenceOf(best.t)
		nc.Requests = s.reg.toList(c.total.add(p.overhead[best.t]))
	}
	reqs := c.rs.reqs.
		Add(requirements.In(apis.LabelInstanceType, nc.InstanceTypes...)).
		Add(requirements.In(apis.LabelZone, nc.Zones...)).
		Add(requirements.In(apis.LabelCapacityType, nc.CapacityTypes...))
	reqs = resolveCustomLabels(reqs)
	nc.Requirements = reqs.NodeSelectorRequirements()
	nc.Labels = map[string]string{}
	for k, v := range p.np.Spec.Template.ObjectMeta.Labels {
		nc.Labels[k] = v
	}
	for _, r := range reqs {
		if v, ok := r.Values(); ok && len(v) == 1 {
			nc.Labels[r.Key] = v[0]
			if alias, ok := apis.LabelAliases[r.Key]; ok {
				nc.Labels[alias] = v[0] // nodes carry both names
			}
		}
	}
	return nc
}

// resolveCustomLabels gives every label a NodePool defines beyond the
// well-known ones one value, as Karpenter resolves a NodeClaim's custom
// labels: the node must carry a label its pods may require to exist (a
// requirement Exists, NotIn, Gt or Lt, or In several values). The value is
// requirements.Requirement.Any (Karpenter picks an integer at random);
// DoesNotExist gets none.
func resolveCustomLabels(reqs requirements.Requirements) requirements.Requirements {
	out := reqs
	for _, r := range reqs {
		if requirements.WellKnown(r.Key) || r.Key == apis.LabelHostname || r.Key == requirements.FieldNodeName {
			continue
		}
		if values, finite := r.Values(); finite && len(values) == 1 {
			continue
		}
		if v, ok := r.Any(); ok {
			out = out.Add(requirements.In(r.Key, v))
		}
	}
	return out
}
