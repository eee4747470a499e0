package provision

import (
	"math"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/nodecost"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
)

// Prepare prices each pool's nodes with their volumes and, where the
// class's resolved subnets map public IPv4 addresses, their address; a
// class the rates cannot price leaves the solve on instance prices, with a
// warning.
func TestPrepareNodeCosts(t *testing.T) {
	pool := st.NodePool(st.NodePoolOptions{Requirements: []apis.NodeSelectorRequirementWithMinValues{
		st.PoolReq(apis.LabelCapacityType, corev1.NodeSelectorOpIn, apis.CapacityTypeOnDemand)}})
	root := 20 * 0.08 / nodecost.HoursPerMonth
	resolved := func(public bool) []fleet.Resolution {
		return []fleet.Resolution{{Name: "default", Class: &fleet.NodeClass{Name: "default",
			Subnets: []fleet.Subnet{{ID: "subnet-a", Zone: "us-east-1a"}, {ID: "subnet-b", Zone: "us-east-1b", MapsPublicIPv4: public}}}}}
	}
	bad := st.NodeClass("default")
	kind := "gp9"
	bad.Spec.BlockDeviceMappings = []*apis.BlockDeviceMapping{{EBS: &apis.BlockDevice{VolumeType: &kind}}}
	for _, tc := range []struct {
		name     string
		class    *apis.EC2NodeClass
		resolved []fleet.Resolution
		want     float64
		warning  string
	}{
		{"private subnets: the root volume", st.NodeClass("default"), resolved(false), root, ""},
		{"a subnet maps public IPv4", st.NodeClass("default"), resolved(true), root + 0.005, ""},
		{"an unpriced volume type", bad, resolved(true), 0, `"gp9"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			zones := []string{"us-east-1a", "us-east-1b"}
			prep := Prepare(Inputs{View: &View{Pods: []*corev1.Pod{pending("a", "500m")}}, NodePools: []*apis.NodePool{pool},
				NodeClasses: []*apis.EC2NodeClass{tc.class}, Catalog: cat, Zones: zones,
				NodeCostRates: NodeCostRates(zones), PublicIPv4: PublicIPv4(tc.resolved)})
			if got := prep.Input.NodeCosts[pool.Name]; math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("NodeCosts[%s] = %v, want %v", pool.Name, got, tc.want)
			}
			// Consolidation prices nodes with the same figures.
			costs, err := NodeCosts([]*apis.NodePool{pool}, []*apis.EC2NodeClass{tc.class}, zones, tc.resolved)
			if (err != nil) != (tc.warning != "") || math.Abs(costs[pool.Name]-prep.Input.NodeCosts[pool.Name]) > 1e-12 {
				t.Errorf("NodeCosts = %v, %v; want Prepare's %v", costs, err, prep.Input.NodeCosts)
			}
			warned := strings.Join(prep.Warnings, "\n")
			if (tc.warning == "") != (warned == "") || !strings.Contains(warned, tc.warning) {
				t.Errorf("warnings %q, want one with %q", warned, tc.warning)
			}
		})
	}
}
