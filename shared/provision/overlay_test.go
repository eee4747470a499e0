package provision

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/scheduling"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
	"github.com/nodewright/nodewright/shared/state"
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
		// wantOverlaid: a type of the claim was priced by an overlay, so
		// the fleet launches in the solve's order.
		wantOverlaid bool
	}{
		{"published prices", nil, nil, "c5.large", 0.085, false},
		{"deployed overlay", []*apis.NodeOverlay{overlayOf("0.05")}, nil, "m5.large", 0.05, true},
		{"the cluster's overlay replaces the deployed one", []*apis.NodeOverlay{overlayOf("0.05")}, []*apis.NodeOverlay{overlayOf("0.5")}, "c5.large", 0.085, true},
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
			if got := res.NodeClaims[0].PriceOverlaid; got != tc.wantOverlaid {
				t.Errorf("claim's PriceOverlaid %v, want %v", got, tc.wantOverlaid)
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

// A NodeOverlay's capacity lets a pod that asks for an extended resource
// (hugepages) onto the types the overlay gives it, and a NodeClaim in
// flight of such a type counts it, so its pod causes no second launch.
func TestPrepareAddsNodeOverlayCapacity(t *testing.T) {
	pool := st.NodePool(st.NodePoolOptions{Requirements: []apis.NodeSelectorRequirementWithMinValues{
		st.PoolReq(apis.LabelCapacityType, corev1.NodeSelectorOpIn, apis.CapacityTypeOnDemand),
		st.PoolReq(apis.LabelInstanceFamily, corev1.NodeSelectorOpIn, "c5", "m5"),
	}})
	pages := &apis.NodeOverlay{}
	pages.Name = "hugepages"
	pages.Spec.Capacity = corev1.ResourceList{"hugepages-2Mi": resource.MustParse("1Gi")}
	pages.Spec.Requirements = []corev1.NodeSelectorRequirement{{Key: apis.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.xlarge"}}}
	pod := pending("a", "500m")
	pod.Spec.Containers[0].Resources.Requests["hugepages-2Mi"] = resource.MustParse("512Mi")
	pod.Spec.Containers[0].Resources.Limits = corev1.ResourceList{"hugepages-2Mi": resource.MustParse("512Mi")}
	inFlight := record("default-abc", state.Launched, "")
	inFlight.InstanceType, inFlight.Claim.Labels, inFlight.Claim.Taints = "m5.xlarge", nil, nil
	for _, tc := range []struct {
		name     string
		overlays []*apis.NodeOverlay
		records  []*state.NodeClaim
		want     string // the new NodeClaim's cheapest type, "" none
		existing bool   // the pod goes to the NodeClaim in flight
	}{
		{"no overlay: unschedulable", nil, nil, "", false},
		{"spec.capacity", []*apis.NodeOverlay{pages}, nil, "m5.xlarge", false},
		{"in flight", []*apis.NodeOverlay{pages}, []*state.NodeClaim{inFlight}, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			prep := Prepare(Inputs{View: &View{Pods: []*corev1.Pod{pod}}, Records: tc.records, NodePools: []*apis.NodePool{pool},
				NodeClasses: []*apis.EC2NodeClass{st.NodeClass("default")}, Catalog: cat, Zones: []string{"us-east-1a"}, NodeOverlays: tc.overlays})
			res, err := scheduling.Solve(prep.Input)
			if err != nil {
				t.Fatal(err)
			}
			got := ""
			if len(res.NodeClaims) == 1 {
				got = res.NodeClaims[0].InstanceTypes[0]
			}
			if got != tc.want || (len(res.ExistingNodes) == 1) != tc.existing || (tc.want == "" && !tc.existing && len(res.Unschedulable) != 1) {
				t.Fatalf("plan %+v", res)
			}
			if tc.want != "" && (len(res.NodeClaims[0].InstanceTypes) != 1) {
				t.Errorf("types without the resource offered: %v", res.NodeClaims[0].InstanceTypes)
			}
		})
	}
}
