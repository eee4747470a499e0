package scheduling_test

import (
	"math"
	"slices"
	"testing"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/scheduling"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
)

// TestBurstableSurplusIsPriced is the example: 30 pods asking 900m
// each, in a pool that allows every type with spot and on-demand, went onto
// 15 t3a.medium at spot's $0.0118/h each, when each of those nodes bills
// 1.4 vCPU above its baseline in unlimited mode. Priced with the surplus,
// they no longer do, and every claim's price is its instance's plus its
// surplus.
func TestBurstableSurplusIsPriced(t *testing.T) {
	in := input(realCatalog(),
		pools(pool("default", 0, req(ctKey, opIn, onDemand, spot))),
		pods(st.Pods(30, st.PodOptions{Name: "p", CPU: "900m"})...))
	res, err := scheduling.Solve(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Unschedulable) > 0 {
		t.Fatalf("unschedulable: %v", res.Unschedulable)
	}
	burstable := 0
	for _, nc := range res.NodeClaims {
		it, _ := catalog.Default().Get(nc.InstanceTypes[0])
		if it.Name == "t3a.medium" {
			t.Errorf("a claim on t3a.medium at %v (%v of surplus)", nc.PricePerHour, nc.CPUSurplusPerHour)
		}
		if it.Family == "t1" {
			// t1.micro bursts with no published baseline: nothing it
			// sustains can be promised to a pod's CPU request.
			t.Errorf("a claim on %s at %v: 900m requested of a previous-generation burstable type", it.Name, nc.PricePerHour)
		}
		if b, ok := it.Burstable(); ok {
			burstable++
			cpu := nc.Requests.Cpu().MilliValue()
			if want := b.SurplusPerHour(cpu); math.Abs(nc.CPUSurplusPerHour-want) > 1e-9 {
				t.Errorf("%s at %dm: surplus %v, want %v", it.Name, cpu, nc.CPUSurplusPerHour, want)
			}
		}
	}
	if burstable == len(res.NodeClaims) {
		t.Logf("plan: %d claims, first %v at %v", len(res.NodeClaims), res.NodeClaims[0].InstanceTypes[:3], res.NodeClaims[0].PricePerHour)
		t.Errorf("all %d claims are burstable types (%v): the surplus is not priced", burstable, res.NodeClaims[0].InstanceTypes[:3])
	}
	if res.LowerBoundPricePerHour > res.PricePerHour+1e-9 {
		t.Errorf("lower bound %v above the plan's %v", res.LowerBoundPricePerHour, res.PricePerHour)
	}
	// The old plan, priced whole: 15 t3a.medium at their cheapest spot
	// offering, each billing 1.4 vCPU of surplus. The new plan costs less.
	t3a, _ := catalog.Default().Get("t3a.medium")
	spotMin := math.Inf(1)
	for _, z := range in.Zones {
		if p, ok := in.Spot.SpotPrice(t3a.Name, z); ok {
			spotMin = min(spotMin, p)
		}
	}
	if old := 15 * (spotMin + 1.4*0.05); !(res.PricePerHour < old) {
		t.Errorf("plan %v/h, not below 15 t3a.medium priced whole, %v/h", res.PricePerHour, old)
	}
}

// TestBurstableTypes: a burstable type wins where its pods stay near its
// baseline, loses to a steady type where they ask for more in unlimited
// mode, and in standard mode (t2) takes no more requested CPU than its
// baseline.
func TestBurstableTypes(t *testing.T) {
	types := func(ts ...*catalog.InstanceType) []*catalog.InstanceType { return ts }
	c := catalog.Default()
	get := func(name string) *catalog.InstanceType { it, _ := c.Get(name); return it }
	for _, tc := range []struct {
		name      string
		types     []*catalog.InstanceType
		pods      int
		cpu       string
		want      string
		claims    int
		bound     float64 // the lower bound at least (0: unchecked)
		notListed string
	}{
		// t3a.medium ($0.0376) bills 0.05·(1.8−0.4) = $0.07 at 1800m: a
		// c5a.large ($0.077) is cheaper for two 900m pods, and the bound (the
		// t3a.medium alone, $0.0376, before) counts the surplus.
		{"unlimited above the baseline loses", types(get("t3a.medium"), get("c5a.large")), 2, "900m", "c5a.large", 1,
			0.06, "t3a.medium"},
		// at 100m, the t3a.medium bills nothing above its instance.
		{"unlimited at the baseline wins", types(get("t3a.medium"), get("c5a.large")), 2, "100m", "t3a.medium", 1, 0, ""},
		// a t2.medium's baseline is 400m: two 300m pods need two nodes.
		{"standard mode caps requests at the baseline", types(get("t2.medium")), 2, "300m", "t2.medium", 2, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := input(pools(pool("default", 0, req(ctKey, opIn, onDemand))),
				func(in *scheduling.Input) { in.InstanceTypes = tc.types; in.Spot = nil },
				pods(st.Pods(tc.pods, st.PodOptions{Name: "p", CPU: tc.cpu})...))
			res, err := scheduling.Solve(in)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Unschedulable) > 0 || len(res.NodeClaims) != tc.claims {
				t.Fatalf("%d claims, %d unschedulable; want %d claims", len(res.NodeClaims), len(res.Unschedulable), tc.claims)
			}
			for _, nc := range res.NodeClaims {
				if nc.InstanceTypes[0] != tc.want {
					t.Errorf("claim on %v, want %s first", nc.InstanceTypes, tc.want)
				}
				// EC2 ranks a claim's types by instance price alone: a
				// burstable type cheaper by instance than the expected one
				// and billing a surplus is not listed, or it would launch.
				if tc.notListed != "" && slices.Contains(nc.InstanceTypes, tc.notListed) {
					t.Errorf("claim lists %s: %v", tc.notListed, nc.InstanceTypes)
				}
			}
			if res.LowerBoundPricePerHour < tc.bound-1e-9 || res.LowerBoundPricePerHour > res.PricePerHour+1e-9 {
				t.Errorf("lower bound %v, want in [%v, %v]", res.LowerBoundPricePerHour, tc.bound, res.PricePerHour)
			}
		})
	}
}

// TestBurstableLowerBoundCountsSurplus: with only a burstable type, the
// bound includes the surplus its pods' requests bill.
func TestBurstableLowerBoundCountsSurplus(t *testing.T) {
	it, _ := catalog.Default().Get("t3a.medium")
	in := input(pools(pool("default", 0, req(ctKey, opIn, onDemand))),
		func(in *scheduling.Input) { in.InstanceTypes = []*catalog.InstanceType{it}; in.Spot = nil },
		pods(st.Pods(10, st.PodOptions{Name: "p", CPU: "900m"})...))
	res, err := scheduling.Solve(in)
	if err != nil {
		t.Fatal(err)
	}
	instances := 5 * it.OnDemandPrice
	if res.PricePerHour < instances+5*0.07-1e-9 {
		t.Errorf("plan %v: want the instances' %v and 5 × $0.07 of surplus", res.PricePerHour, instances)
	}
	if res.LowerBoundPricePerHour <= instances+1e-9 || res.LowerBoundPricePerHour > res.PricePerHour+1e-9 {
		t.Errorf("lower bound %v: want above the instances' %v and at most the plan's %v", res.LowerBoundPricePerHour, instances, res.PricePerHour)
	}
}

var _ = apis.CapacityTypeSpot
