package scheduling

import (
	"math"
	"slices"

	"github.com/nodewright/nodewright/shared/apis"
)

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
