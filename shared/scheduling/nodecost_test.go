package scheduling_test

import (
	"math"
	"testing"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/nodecost"
	"github.com/nodewright/nodewright/shared/scheduling"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
)

// TestNodeCostsFavourFewerLargerNodes: what a node costs beyond its
// instance is paid per node, so with public IPv4 on, fewer, larger nodes win
// where many small ones were a little cheaper on instance price alone.
func TestNodeCostsFavourFewerLargerNodes(t *testing.T) {
	types := []*catalog.InstanceType{
		// 2 pods of 900m each, $0.0190 a pod.
		st.Type(st.TypeOptions{Name: "small.2x", VCPU: 2, Price: 0.038}),
		// 8 pods each, $0.0205 a pod.
		st.Type(st.TypeOptions{Name: "large.8x", VCPU: 8, Price: 0.164}),
	}
	rates, _ := nodecost.For(nodecost.ShippedRegion)
	for _, tc := range []struct {
		name       string
		public     bool
		fixed      string // the pool's own per-node cost annotation
		wantType   string
		wantClaims int
	}{
		{"volumes only: many small nodes", false, "", "small.2x", 8},
		{"public IPv4 on: fewer, larger nodes", true, "", "large.8x", 2},
		{"a per-node licence: fewer, larger nodes", false, "0.01", "large.8x", 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			class := st.NodeClass("default")
			class.Spec.AssociatePublicIPAddress = &tc.public
			in := scheduling.Input{
				InstanceTypes: types, Zones: []string{zoneA},
				NodePools:   []*apis.NodePool{pool("default", 0, req(ctKey, opIn, onDemand))},
				NodeClasses: []*apis.EC2NodeClass{class},
				Pods:        st.Pods(16, st.PodOptions{Name: "p", CPU: "900m"}),
			}
			if tc.fixed != "" {
				in.NodePools[0].Annotations = map[string]string{apis.AnnotationNodeCostPerHour: tc.fixed}
			}
			parts, err := nodecost.PerPool(in.NodePools, in.NodeClasses, nil, rates)
			if err != nil {
				t.Fatal(err)
			}
			extra := parts["default"].PerHour()
			if got := parts["default"].PublicIPv4PerHour > 0; got != tc.public {
				t.Fatalf("public IPv4 priced %v, want %v", got, tc.public)
			}
			in.NodeCosts = map[string]float64{"default": extra}
			res, err := scheduling.Solve(in)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Unschedulable) > 0 || len(res.NodeClaims) != tc.wantClaims {
				t.Fatalf("%d nodeclaims (%d unschedulable), want %d", len(res.NodeClaims), len(res.Unschedulable), tc.wantClaims)
			}
			var sum float64
			for _, nc := range res.NodeClaims {
				if nc.InstanceTypes[0] != tc.wantType {
					t.Errorf("nodeclaim %v: expected type %s, want %s", nc.Pods, nc.InstanceTypes[0], tc.wantType)
				}
				want := types[0].OnDemandPrice + extra
				if tc.wantType == "large.8x" {
					want = types[1].OnDemandPrice + extra
				}
				if math.Abs(nc.PricePerHour-want) > 1e-9 {
					t.Errorf("nodeclaim price %v, want the instance's and the node's extras, %v", nc.PricePerHour, want)
				}
				sum += nc.PricePerHour
			}
			if math.Abs(res.PricePerHour-sum) > 1e-5 {
				t.Errorf("plan price %v, want the claims' sum %v", res.PricePerHour, sum)
			}
			if res.LowerBoundPricePerHour > res.PricePerHour+1e-9 || res.LowerBoundPricePerHour <= 16*0.0190 {
				t.Errorf("lower bound %v: want above the instances' bound %v (it counts the extras) and at most the plan's %v",
					res.LowerBoundPricePerHour, 16*0.0190, res.PricePerHour)
			}
		})
	}
}
