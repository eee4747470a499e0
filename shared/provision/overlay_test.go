package provision

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/scheduling"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
)

// A NodeOverlay that makes a type cheaper changes the solve's choice: the
// catalog and spot prices Prepare hands the solver are the overlaid ones,
// the cluster's overlay replaces the deployed one of its name, and the
// inputs are left as they were.
func TestPrepareAppliesNodeOverlays(t *testing.T) {
	pool := st.NodePool(st.NodePoolOptions{Requirements: []apis.NodeSelectorRequirementWithMinValues{
		st.PoolReq(apis.LabelCapacityType, corev1.NodeSelectorOpIn, apis.CapacityTypeOnDemand),
		st.PoolReq(apis.LabelInstanceType, corev1.NodeSelectorOpIn, "c5.large", "m5.large"),
	}})
	overlayOf := func(price string) *apis.NodeOverlay {
		o := &apis.NodeOverlay{}
		o.Name = "savings-plan"
		o.Spec.Price = &price
		o.Spec.Requirements = []corev1.NodeSelectorRequirement{{Key: apis.LabelInstanceFamily, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5"}}}
		return o
	}
	for _, tc := range []struct {
		name      string
		deployed  []*apis.NodeOverlay
		cluster   []*apis.NodeOverlay
		wantType  string
		wantPrice float64
	}{
		{"published prices", nil, nil, "c5.large", 0.085},
		{"deployed overlay", []*apis.NodeOverlay{overlayOf("0.05")}, nil, "m5.large", 0.05},
		{"the cluster's overlay replaces the deployed one", []*apis.NodeOverlay{overlayOf("0.05")}, []*apis.NodeOverlay{overlayOf("0.5")}, "c5.large", 0.085},
	} {
		t.Run(tc.name, func(t *testing.T) {
			view := &View{Pods: []*corev1.Pod{pending("a", "500m")}, NodeOverlays: tc.cluster}
			prep := Prepare(Inputs{View: view, NodePools: []*apis.NodePool{pool}, NodeClasses: []*apis.EC2NodeClass{st.NodeClass("default")},
				Catalog: cat, Zones: []string{"us-east-1a"}, NodeOverlays: MergeOverlays(tc.deployed, view)})
			res, err := scheduling.Solve(prep.Input)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.NodeClaims) != 1 || res.NodeClaims[0].InstanceTypes[0] != tc.wantType || res.PricePerHour != tc.wantPrice {
				t.Fatalf("plan %+v, want one %s at %v", res.NodeClaims, tc.wantType, tc.wantPrice)
			}
			if it, _ := prep.Catalog.Get(tc.wantType); it.OnDemandPrice != tc.wantPrice {
				t.Errorf("Prepared.Catalog prices %s at %v, want %v (decision records price with it)", tc.wantType, it.OnDemandPrice, tc.wantPrice)
			}
			if it, _ := cat.Get("m5.large"); it.OnDemandPrice != 0.096 {
				t.Errorf("the shared catalog changed: m5.large at %v", it.OnDemandPrice)
			}
		})
	}
}
