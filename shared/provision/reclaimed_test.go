package provision

import (
	"context"
	"fmt"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
	"github.com/nodewright/nodewright/shared/state"
)

// zoneSpot prices spot at a share of on-demand, cheapest in us-east-1c.
type zoneSpot struct{}

func (zoneSpot) SpotPrice(typ, zone string) (float64, bool) {
	it, ok := cat.Get(typ)
	if !ok {
		return 0, false
	}
	if zone == "us-east-1c" {
		return it.OnDemandPrice * 0.3, true
	}
	return it.OnDemandPrice * 0.4, true
}

func (zoneSpot) Ensure(context.Context) error { return nil }

// A replacement never lands on the offering being reclaimed: the
// replacement for a spot-interrupted c6a.2xlarge in us-east-1c, launched
// 200 ms after the interruption marked that offering unavailable, is not
// a c6a.2xlarge spot in us-east-1c, though that offering is the cheapest
// of the fleet's overrides (EC2 picks by price among the types and zones
// it is given). Both with the mark in the table and with the offering
// passed to Replace alone (the mark's write failed).
func TestReplacementAvoidsTheReclaimedOffering(t *testing.T) {
	for _, tc := range []struct {
		name        string
		mark, avoid bool
	}{
		{name: "marked unavailable", mark: true},
		{name: "passed to the replacement", avoid: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := testingclock.NewFakeClock(t0)
			ctx := context.Background()
			it, _ := cat.Get("c6a.2xlarge")
			n := st.Node(st.NodeOptions{Name: "ip-old", InstanceType: it, Zone: "us-east-1c", CapacityType: apis.CapacityTypeSpot, NodePool: "default"}).Node
			n.Spec.ProviderID = "aws:///us-east-1c/i-old"
			var pods []*corev1.Pod
			var keys []string
			for i := range 3 {
				p := st.Pod(st.PodOptions{Name: fmt.Sprintf("web-%d", i), CPU: "2", Memory: "2Gi", Owner: "ReplicaSet/web-1", NodeName: n.Name,
					NodeRequirements: []corev1.NodeSelectorRequirement{{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"c6a.2xlarge", "c6i.2xlarge"}}}})
				p.Spec.NodeName = n.Name
				p.Status.Phase = corev1.PodRunning
				pods = append(pods, p)
				keys = append(keys, p.Namespace+"/"+p.Name)
			}
			r, fl, _, _ := testReconciler(t, clock, func(time.Time) (*View, error) {
				return &View{Pods: pods, Nodes: []*corev1.Node{n}}, nil
			})
			r.Spot = zoneSpot{}
			fl.pick = func(typ, zone string) bool { return typ == "c6a.2xlarge" && zone == "us-east-1c" }
			old := record("default-old00", state.Initialized, "i-old")
			old.InstanceType, old.Zone, old.CapacityType, old.NodeName = "c6a.2xlarge", "us-east-1c", apis.CapacityTypeSpot, n.Name
			old.Claim.Taints, old.Claim.Labels = nil, nil
			old.Disruption = &state.Disruption{Action: "interruption-i-old", Reason: "SpotInterruption", Since: t0, Reschedule: true}
			if err := r.Store.PutNodeClaim(ctx, old); err != nil {
				t.Fatal(err)
			}
			reclaimed := state.Offering{InstanceType: "c6a.2xlarge", Zone: "us-east-1c", CapacityType: apis.CapacityTypeSpot, Code: "SpotInterruption"}
			if tc.mark {
				if err := r.Store.MarkUnavailable(ctx, []state.Offering{reclaimed}, state.UnavailableTTL); err != nil {
					t.Fatal(err)
				}
			}
			clock.Step(200 * time.Millisecond)
			var avoid []state.Offering
			if tc.avoid {
				avoid = append(avoid, reclaimed)
			}
			rep, err := r.Replace(ctx, testLease(clock), keys, "replacement for default-old00: SpotInterruption", avoid...)
			if err != nil {
				t.Fatal(err)
			}
			launched := rep.Launched()
			if len(launched) == 0 {
				t.Fatalf("nothing launched: %+v", rep)
			}
			for _, in := range launched {
				if in.InstanceType == "c6a.2xlarge" && in.Zone == "us-east-1c" && in.CapacityType == apis.CapacityTypeSpot {
					t.Errorf("replacement %s launched as %s %s %s: the offering being reclaimed", in.NodeClaim, in.InstanceType, in.Zone, in.CapacityType)
				}
			}
		})
	}
}
