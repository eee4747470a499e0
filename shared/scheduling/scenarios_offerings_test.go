package scheduling_test

import (
	"math"
	"testing"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/scheduling"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
)

// typeCount: the pod's NodeClaim offers exactly n instance types.
func typeCount(pod string, n int) check {
	return func(t *testing.T, p *plan) {
		if nc, ok := p.claim(t, pod); ok && len(nc.InstanceTypes) != n {
			t.Errorf("%s: %d instance types, want %d", pod, len(nc.InstanceTypes), n)
		}
	}
}

// valuesAtLeast: the pod's NodeClaim's types span at least n values of a
// label (minValues).
func valuesAtLeast(pod, key string, n int) check {
	return func(t *testing.T, p *plan) {
		nc, ok := p.claim(t, pod)
		if !ok {
			return
		}
		seen := map[string]bool{}
		for _, name := range nc.InstanceTypes {
			seen[typeByName(p.in, name).Labels()[key]] = true
		}
		if len(seen) < n {
			t.Errorf("%s: %d values of %s among %d types, want at least %d", pod, len(seen), key, len(nc.InstanceTypes), n)
		}
	}
}

// sortedByPrice: the pod's NodeClaim lists its types by expected price, then
// name. A type's expected price is its cheapest offering in the claim's
// zones and capacity types, not counting spot offerings that cost more than
// the cheapest on-demand offering of the claim's types (those are dropped),
// plus a burstable type's surplus for the claim's CPU.
func sortedByPrice(pod string) check {
	return func(t *testing.T, p *plan) {
		nc, ok := p.claim(t, pod)
		if !ok {
			return
		}
		odMin := math.Inf(1)
		for _, name := range nc.InstanceTypes {
			odMin = math.Min(odMin, offeringPrice(p.in, typeByName(p.in, name), nc, math.Inf(1), onDemand))
		}
		price := func(name string) float64 {
			it := typeByName(p.in, name)
			return math.Min(offeringPrice(p.in, it, nc, odMin, spot), offeringPrice(p.in, it, nc, math.Inf(1), onDemand)) +
				surplusOf(it, nc.Requests.Cpu().MilliValue())
		}
		prev, prevName := 0.0, ""
		for _, name := range nc.InstanceTypes {
			pr := price(name)
			if pr < prev-1e-12 || pr == prev && name < prevName {
				t.Errorf("%s: %s (%v) listed after %s (%v)", pod, name, pr, prevName, prev)
				return
			}
			prev, prevName = pr, name
		}
		if first := price(nc.InstanceTypes[0]); math.Abs(first-nc.PricePerHour) > 1e-9 {
			t.Errorf("%s: claim price %v, its first type's cheapest offering %v", pod, nc.PricePerHour, first)
		}
	}
}

// offeringPrice is the type's cheapest available offering of capacity type
// ct in the claim's zones, if the claim allows ct and it costs at most ceiling.
func offeringPrice(in scheduling.Input, it *catalog.InstanceType, nc scheduling.NodeClaim, ceiling float64, ct string) float64 {
	best := math.Inf(1)
	allowed := false
	for _, c := range nc.CapacityTypes {
		allowed = allowed || c == ct
	}
	if !allowed {
		return best
	}
	for _, o := range it.Offerings(nc.Zones, in.Spot) {
		if o.CapacityType == ct && o.Price <= ceiling && (in.Unavailable == nil || !in.Unavailable(it.Name, o.Zone, o.CapacityType)) {
			best = math.Min(best, o.Price)
		}
	}
	return best
}

func spotAndOnDemand(name string) opt {
	return pools(pool(name, 0, req(ctKey, opIn, spot, onDemand)))
}

func offeringScenarios() []scenario {
	synth := st.SyntheticTypes(400)
	return []scenario{
		{
			name: "spot is chosen when it is cheaper",
			in:   input(spotAndOnDemand("default"), pods(pod(po{Name: "web", CPU: "500m"}))),
			want: []check{claims(1), firstType("web", "fake-it-0"), capacityType("web", spot), custom(func(t *testing.T, p *plan) {
				want := math.Inf(1)
				for _, z := range st.Zones() {
					pr, _ := p.in.Spot.SpotPrice("fake-it-0", z)
					want = math.Min(want, pr)
				}
				if math.Abs(p.res.PricePerHour-want) > 1e-9 {
					t.Errorf("price %v, want the cheapest spot price %v", p.res.PricePerHour, want)
				}
			})},
		},
		{
			name: "an on-demand pool launches on-demand",
			in:   input(pods(pod(po{Name: "web", CPU: "500m"}))),
			want: []check{claims(1), capacityType("web", onDemand), capacityTypes("web", onDemand)},
		},
		{
			name: "spot offerings pricier than the cheapest on-demand are dropped",
			in: input(spotAndOnDemand("default"), spotPricer(st.SyntheticSpot(synth).WithFactor("fake-it-0", 1.2)),
				pods(pod(po{Name: "web", CPU: "500m"}))),
			want: []check{claims(1), firstType("web", "fake-it-0"), capacityType("web", onDemand), capacityTypes("web", onDemand), price(0.027)},
		},
		{
			name: "a spot-only pool without spot prices is unschedulable",
			in:   input(pools(pool("spot-only", 0, req(ctKey, opIn, spot))), spotPricer(nil), pods(pod(po{Name: "web", CPU: "500m"}))),
			want: []check{claims(0), unschedulable("web", "spot")},
		},
		{
			name: "an unavailable spot offering falls back to on-demand",
			in: input(spotAndOnDemand("default"), unavailable(func(it, _, ct string) bool { return it == "fake-it-0" && ct == spot }),
				pods(pod(po{Name: "web", CPU: "500m"}))),
			want: []check{claims(1), firstType("web", "fake-it-0"), capacityType("web", onDemand), price(0.027)},
		},
		{
			name: "unavailable zones narrow the claim",
			in:   input(unavailable(func(_, zone, _ string) bool { return zone != zoneC }), pods(pod(po{Name: "web", CPU: "500m"}))),
			want: []check{claims(1), claimZones("web", zoneC)},
		},
		{
			name: "nothing available is unschedulable",
			in:   input(unavailable(func(string, string, string) bool { return true }), pods(pod(po{Name: "web", CPU: "500m"}))),
			want: []check{claims(0), unschedulable("web", "default")},
		},
		{
			name: "types without an on-demand price are not offered on demand",
			in: input(types(st.Type(st.TypeOptions{Name: "unpriced", VCPU: 1, Price: -1}), st.Type(st.TypeOptions{Name: "priced", VCPU: 2})),
				pods(pod(po{Name: "web", CPU: "500m"}))),
			want: []check{claims(1), firstType("web", "priced"), typeCount("web", 1)},
		},
		{
			name: "a NodeClaim offers at most 60 types, cheapest first",
			in:   input(realCatalog(), realPool("default", 0), pods(pod(po{Name: "tiny", CPU: "100m", Memory: "64Mi"}))),
			want: []check{claims(1), typeCount("tiny", scheduling.DefaultMaxInstanceTypes), sortedByPrice("tiny"), oracleFirst("tiny", false)},
		},
		{
			name: "MaxInstanceTypes caps the types of a NodeClaim",
			in:   input(maxTypes(5), pods(pod(po{Name: "web", CPU: "500m"}))),
			want: []check{claims(1), typeCount("web", 5), firstType("web", "fake-it-0"), sortedByPrice("web")},
		},
		{
			name: "minValues on instance-family",
			in: input(realCatalog(), pools(pool("default", 0, req(ctKey, opIn, spot, onDemand), req(categoryKey, opIn, "c", "m", "r"),
				st.PoolReqMin(3, familyKey, opExists))), pods(pod(po{Name: "web", CPU: "1", Memory: "2Gi"}))),
			want: []check{claims(1), valuesAtLeast("web", familyKey, 3)},
		},
		{
			name: "truncation to 60 types keeps minValues",
			in: input(realCatalog(), pools(pool("default", 0, req(ctKey, opIn, spot, onDemand), st.PoolReqMin(40, familyKey, opExists))),
				pods(pod(po{Name: "web", CPU: "250m", Memory: "256Mi"}))),
			want: []check{claims(1), valuesAtLeast("web", familyKey, 40), custom(func(t *testing.T, p *plan) {
				if nc, ok := p.claim(t, "web"); ok && len(nc.InstanceTypes) > scheduling.DefaultMaxInstanceTypes {
					t.Errorf("%d types", len(nc.InstanceTypes))
				}
			})},
		},
		{
			name: "minValues no set of types meets is unschedulable",
			in: input(realCatalog(), pools(pool("default", 0, req(ctKey, opIn, onDemand), st.PoolReqMin(3, familyKey, opIn, "c5", "m5"))),
				pods(pod(po{Name: "web", CPU: "1"}))),
			want: []check{claims(0), unschedulable("web", "minValues")},
		},
		{
			name: "minValues on instance-type in a synthetic pool",
			in:   input(pools(pool("default", 0, req(ctKey, opIn, onDemand), st.PoolReqMin(10, typeKey, opExists))), pods(pod(po{Name: "web", CPU: "3"}))),
			want: []check{claims(1), valuesAtLeast("web", typeKey, 10), firstType("web", "fake-it-3")},
		},
		{
			name: "the expected price is the cheapest offering of the first type",
			in:   input(realCatalog(), realPool("default", 0), pods(pod(po{Name: "api", CPU: "2", Memory: "8Gi"}))),
			want: []check{claims(1), sortedByPrice("api"), oracleFirst("api", false)},
		},
		{
			name: "capacity-type requirement of a pod narrows the claim",
			in:   input(spotAndOnDemand("default"), pods(pod(po{Name: "od", CPU: "100m", NodeSelector: labels(ctKey, onDemand)}))),
			want: []check{claims(1), capacityType("od", onDemand), capacityTypes("od", onDemand)},
		},
		{
			name: "a pool without capacity-type requirement still plans",
			in:   input(pools(pool("open", 0)), pods(pod(po{Name: "web", CPU: "100m"}))),
			want: []check{claims(1), firstType("web", "fake-it-0")},
		},
		{
			name: "the nodepool label of a pool is on its claims",
			in:   input(pods(pod(po{Name: "web", CPU: "100m"}))),
			want: []check{custom(func(t *testing.T, p *plan) {
				if nc, ok := p.claim(t, "web"); ok && nc.Labels[apis.LabelNodePool] != "default" {
					t.Errorf("labels %v", nc.Labels)
				}
			})},
		},
	}
}
