package disruption

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/scheduling"
)

// minSaving is what a replacement of the candidates must save per hour:
// the largest of their pools' minimum-saving annotations, absolute and as
// a percentage of before (0: any saving). An annotation that cannot be
// read disables replacements for its pool (an error naming it).
func minSaving(cands []*nodeInfo, before float64) (float64, error) {
	need := 0.0
	seen := map[string]bool{}
	for _, c := range cands {
		p := c.pool
		if p == nil || seen[p.Name] {
			continue
		}
		seen[p.Name] = true
		if s, ok := p.Annotations[AnnotationMinSavings]; ok {
			v, err := strconv.ParseFloat(strings.TrimPrefix(strings.TrimSpace(s), "$"), 64)
			if err != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
				return 0, fmt.Errorf("NodePool %s: metadata.annotations[%s]: %q is not a price per hour such as \"0.05\": replacements are off until it is fixed", p.Name, AnnotationMinSavings, s)
			}
			need = max(need, v)
		}
		if s, ok := p.Annotations[AnnotationMinSavingsPercent]; ok {
			v, err := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(s), "%"), 64)
			if err != nil || v < 0 || v > 100 || math.IsNaN(v) {
				return 0, fmt.Errorf("NodePool %s: metadata.annotations[%s]: %q is not a percentage from 0 to 100 such as \"20\": replacements are off until it is fixed", p.Name, AnnotationMinSavingsPercent, s)
			}
			need = max(need, before*v/100)
		}
	}
	return need, nil
}

// worth says whether replacing before by after saves enough: strictly
// cheaper, and by at least need.
func worth(before, after, need float64) bool {
	saving := before - after
	return saving > 1e-9 && saving >= need-1e-9
}

// priceLimit is the price under which new capacity can replace before
// while saving need: types whose cheapest offering reaches it cannot.
func priceLimit(before, need float64) float64 {
	if need <= 0 {
		return before
	}
	return math.Nextafter(before-need, math.Inf(1))
}

// cannotHouse says why no replacement of candidates priced before can
// take what the other nodes cannot ("" when one may): new nodes must take
// at least short's requests, in at most maxClaims nodes of the k cheapest
// types (typesUnder), for less than before by need. A node holds no more
// than its type's vCPUs and memory and costs no less than its type's
// cheapest offering, so the requests alone bound the nodes and the price
// from below; the replacement simulation could only find more of either
// (daemonsets, placement), so it is not made. This keeps single-node
// consolidation of a packed cluster from solving once per node only to
// learn that.
func (v *view) cannotHouse(short shortfall, k int, before, need float64, maxClaims int) string {
	if (short.cpu <= 0 && short.mem <= 0) || k == 0 {
		return ""
	}
	var maxCPU, maxMem int64
	perCPU, perMem := math.Inf(1), math.Inf(1)
	for i, it := range v.typesByPrice[:k] {
		cpu, mem := int64(it.VCPU)*1000, it.MemoryMiB<<20
		if cpu <= 0 || mem <= 0 {
			return "" // a type the bound cannot reason about
		}
		maxCPU, maxMem = max(maxCPU, cpu), max(maxMem, mem)
		perCPU, perMem = min(perCPU, v.minPrices[i]/float64(cpu)), min(perMem, v.minPrices[i]/float64(mem))
	}
	nodes := max(ceilDiv(short.cpu, maxCPU), ceilDiv(short.mem, maxMem))
	if nodes > int64(maxClaims) {
		return fmt.Sprintf("its pods need at least %d new nodes (at most %d): the other nodes have no room for %s", nodes, maxClaims, short)
	}
	// Shaved by a billionth so that rounding never lifts it above a price.
	floor := max(float64(short.cpu)*perCPU, float64(short.mem)*perMem) * (1 - 1e-9)
	if !worth(before, floor, need) {
		return fmt.Sprintf("the cheapest replacement costs at least %s, the candidates %s: %s (the other nodes have no room for %s)",
			money(floor), money(before), savingWord(need), short)
	}
	return ""
}

// String is "<cpu> cpu and <memory> memory of its pods' requests".
func (s shortfall) String() string {
	return fmt.Sprintf("%s cpu and %s memory of its pods' requests", resource.NewMilliQuantity(s.cpu, resource.DecimalSI), resource.NewQuantity(s.mem, resource.BinarySI))
}

// ceilDiv is a/b rounded up, for a >= 0 and b > 0.
func ceilDiv(a, b int64) int64 { return a/b + min(a%b, 1) }

// option is an instance type a replacement may launch, at its cheapest
// offering in the replacement's zones and capacity types.
type option struct {
	it    *catalog.InstanceType
	price float64
}

// priced lists a planned NodeClaim's types at their prices for a
// replacement: spot only when the claim allows spot (the price filter
// assumes the spot price, so the launch must not fall back to a dearer
// on-demand one, as Karpenter adds the spot requirement), else on-demand.
// Types EC2 refused recently or not offered are left out. Sorted by price,
// then name.
func (v *view) priced(nc scheduling.NodeClaim) (capacityType string, opts []option) {
	switch {
	case slices.Contains(nc.CapacityTypes, apis.CapacityTypeSpot):
		capacityType = apis.CapacityTypeSpot
	case slices.Contains(nc.CapacityTypes, apis.CapacityTypeOnDemand):
		capacityType = apis.CapacityTypeOnDemand
	default:
		return "", nil
	}
	if v.in.Catalog == nil {
		return capacityType, nil
	}
	for _, name := range nc.InstanceTypes {
		it, ok := v.in.Catalog.Get(name)
		if !ok {
			continue
		}
		best := math.Inf(1)
		for _, z := range nc.Zones {
			best = min(best, v.price(it, z, capacityType))
		}
		if !math.IsInf(best, 1) {
			opts = append(opts, option{it: it, price: best + v.in.NodeCosts[nc.NodePool] + claimSurplus(it, nc)})
		}
	}
	sortOptions(opts)
	return capacityType, opts
}

func sortOptions(opts []option) {
	sort.SliceStable(opts, func(i, j int) bool {
		if opts[i].price != opts[j].price {
			return opts[i].price < opts[j].price
		}
		return opts[i].it.Name < opts[j].it.Name
	})
}

// replaceRule is what a replacement of some candidates must respect.
type replaceRule struct {
	before, need float64
	// maxClaims: single-node may split a node in two, multi-node replaces
	// by at most one.
	maxClaims int
	// sameType (multi-node): never replace several nodes by one of a type
	// being removed, nor by anything at least as dear as such a candidate
	// (Karpenter's filterOutSameInstanceType).
	sameType map[string]float64
	// allSpot: every candidate is spot, so a spot replacement is
	// spot-to-spot.
	allSpot    bool
	spotToSpot bool
}

// replacements narrows a simulation's new NodeClaims to the options that
// keep the action worth it: together strictly cheaper than the candidates
// by at least the minimum saving, whatever type each launches (the room
// left is shared among the claims in proportion to their cheapest
// price), minus the candidates' own types for multi-node, spot-to-spot
// only with SpotToSpotMinOptions cheaper spot options and then only the
// cheapest of them, minValues kept. It returns the narrowed claims and
// their expected price, or why there is none.
func (v *view) replacements(claims []scheduling.NodeClaim, r replaceRule) ([]scheduling.NodeClaim, float64, string) {
	if len(claims) > r.maxClaims {
		return nil, 0, fmt.Sprintf("its pods need %d new nodes (at most %d)", len(claims), r.maxClaims)
	}
	cts := make([]string, len(claims))
	opts := make([][]option, len(claims))
	cheapest := 0.0
	for i, nc := range claims {
		cts[i], opts[i] = v.priced(nc)
		if len(r.sameType) > 0 {
			limit := math.Inf(1)
			for _, o := range opts[i] {
				if p, ok := r.sameType[o.it.Name]; ok {
					limit = min(limit, p)
				}
			}
			opts[i] = slices.DeleteFunc(opts[i], func(o option) bool {
				_, same := r.sameType[o.it.Name]
				return same || o.price >= limit
			})
		}
		if len(opts[i]) == 0 {
			return nil, 0, fmt.Sprintf("no type for its pods in NodePool %s is cheaper than the %s it would replace", nc.NodePool, nodesWord(len(r.sameType)))
		}
		if cts[i] == apis.CapacityTypeSpot && r.allSpot && !r.spotToSpot {
			return nil, 0, "replacing spot with spot is off (SpotToSpot)"
		}
		cheapest += opts[i][0].price
	}
	budget := r.before - r.need
	if !worth(r.before, cheapest, r.need) {
		return nil, 0, fmt.Sprintf("the cheapest replacement costs %s, the candidates %s: %s", money(cheapest), money(r.before), savingWord(r.need))
	}
	out := make([]scheduling.NodeClaim, len(claims))
	after := 0.0
	for i, nc := range claims {
		limit := budget
		if len(claims) > 1 {
			share := 1 / float64(len(claims))
			if cheapest > 0 {
				share = opts[i][0].price / cheapest
			}
			limit = opts[i][0].price + (budget-cheapest)*share
		}
		kept := slices.DeleteFunc(slices.Clone(opts[i]), func(o option) bool {
			if r.need <= 0 {
				return o.price >= limit
			}
			return o.price > limit+1e-12
		})
		pool := v.pools[nc.NodePool]
		if cts[i] == apis.CapacityTypeSpot && r.allSpot {
			if len(kept) < SpotToSpotMinOptions {
				return nil, 0, fmt.Sprintf("spot-to-spot needs %d cheaper spot options, there are %d", SpotToSpotMinOptions, len(kept))
			}
			kept = kept[:max(SpotToSpotMinOptions, minValuesPrefix(kept, pool))]
		}
		if why := minValuesMet(kept, pool); why != "" {
			return nil, 0, why
		}
		out[i] = narrow(nc, cts[i], kept, v)
		after += out[i].PricePerHour
	}
	return out, roundPrice(after), ""
}

func nodesWord(sameType int) string {
	if sameType > 0 {
		return "nodes"
	}
	return "node"
}

func savingWord(need float64) string {
	if need > 0 {
		return "the NodePool asks for a saving of at least " + money(need)
	}
	return "no saving"
}

// minValuesPrefix is how many of the cheapest options it takes to meet the
// pool's minValues (0 when it has none, len+1 when they cannot be met).
func minValuesPrefix(opts []option, pool *apis.NodePool) int {
	if pool == nil {
		return 0
	}
	need := 0
	for _, req := range pool.Spec.Template.Spec.Requirements {
		if req.MinValues == nil {
			continue
		}
		seen := map[string]bool{}
		k := len(opts) + 1
		for i, o := range opts {
			if val, ok := o.it.Labels()[req.Key]; ok {
				seen[val] = true
			}
			if len(seen) >= *req.MinValues {
				k = i + 1
				break
			}
		}
		need = max(need, k)
	}
	return min(need, len(opts))
}

// minValuesMet says which minValues requirement of the pool the options
// miss ("" when none).
func minValuesMet(opts []option, pool *apis.NodePool) string {
	if pool == nil {
		return ""
	}
	for _, req := range pool.Spec.Template.Spec.Requirements {
		if req.MinValues == nil {
			continue
		}
		seen := map[string]bool{}
		for _, o := range opts {
			if val, ok := o.it.Labels()[req.Key]; ok {
				seen[val] = true
			}
		}
		if len(seen) < *req.MinValues {
			return fmt.Sprintf("NodePool %s needs %d distinct %s among the options, the cheaper ones have %d", pool.Name, *req.MinValues, req.Key, len(seen))
		}
	}
	return ""
}

// narrow rewrites a planned NodeClaim to the kept options: their types
// (cheapest first), the one capacity type, the zones they are offered in,
// the expected price, and requirements and labels to match.
func narrow(nc scheduling.NodeClaim, capacityType string, kept []option, v *view) scheduling.NodeClaim {
	out := nc
	out.InstanceTypes = make([]string, len(kept))
	zoneSet := map[string]bool{}
	for i, o := range kept {
		out.InstanceTypes[i] = o.it.Name
		for _, z := range nc.Zones {
			if !math.IsInf(v.price(o.it, z, capacityType), 1) {
				zoneSet[z] = true
			}
		}
	}
	out.Zones = slices.Sorted(maps.Keys(zoneSet))
	out.CapacityType, out.CapacityTypes = capacityType, []string{capacityType}
	out.PricePerHour = roundPrice(kept[0].price)
	out.Requirements = setRequirement(nc.Requirements, apis.LabelInstanceType, out.InstanceTypes)
	out.Requirements = setRequirement(out.Requirements, apis.LabelCapacityType, out.CapacityTypes)
	out.Requirements = setRequirement(out.Requirements, apis.LabelZone, out.Zones)
	out.Labels = map[string]string{}
	for k, val := range nc.Labels {
		out.Labels[k] = val
	}
	out.Labels[apis.LabelCapacityType] = capacityType
	delete(out.Labels, apis.LabelInstanceType)
	delete(out.Labels, apis.LabelZone)
	if len(out.InstanceTypes) == 1 {
		out.Labels[apis.LabelInstanceType] = out.InstanceTypes[0]
	}
	if len(out.Zones) == 1 {
		out.Labels[apis.LabelZone] = out.Zones[0]
	}
	return out
}

// setRequirement replaces the requirement on key by In values.
func setRequirement(reqs []corev1.NodeSelectorRequirement, key string, values []string) []corev1.NodeSelectorRequirement {
	out := make([]corev1.NodeSelectorRequirement, 0, len(reqs)+1)
	for _, r := range reqs {
		if r.Key != key {
			out = append(out, r)
		}
	}
	out = append(out, corev1.NodeSelectorRequirement{Key: key, Operator: corev1.NodeSelectorOpIn, Values: slices.Clone(values)})
	sort.SliceStable(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// roundPrice keeps prices to a millionth of a dollar, as the solver does.
func roundPrice(p float64) float64 { return math.Round(p*1e6) / 1e6 }
