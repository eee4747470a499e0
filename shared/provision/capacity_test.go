package provision

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodewright/nodewright/shared/fleet"
)

// TestInsufficientCapacityEventOnTheRefusedNodeClaim: EC2 refuses a
// fleet's offerings for want of capacity: the NodeClaim it was for gets
// Karpenter's InsufficientCapacityError; a launch that fails otherwise
// does not.
func TestInsufficientCapacityEventOnTheRefusedNodeClaim(t *testing.T) {
	tests := []struct {
		name string
		code string
		want bool
	}{
		{name: "capacity refused", code: "InsufficientInstanceCapacity", want: true},
		{name: "another failure", code: "UnauthorizedOperation", want: false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clock := testingclock.NewFakeClock(t0)
			pods := bigPods(1, t0)
			r, fl, _, _ := testReconciler(t, clock, func(time.Time) (*View, error) { return &View{Pods: pods}, nil })
			ev := &fakeEvents{}
			r.Events = ev
			fl.launch = func(p *fleet.Plan, call int) ([]*fleet.Instance, error) {
				if call > 1 {
					return fl.instances(p, p.Count), nil
				}
				fe := fleet.FleetError{InstanceType: p.Templates[0].Types[0], Zone: p.Subnets[0].Zone, CapacityType: p.CapacityType, Code: tc.code}
				le := &fleet.LaunchError{Errors: []fleet.FleetError{fe}}
				if fleet.IsCapacityCode(tc.code) {
					le.Unavailable = []fleet.UnavailableOffering{{InstanceType: fe.InstanceType, Zone: fe.Zone, CapacityType: fe.CapacityType, Code: fe.Code}}
				}
				return nil, le
			}
			if _, err := r.Round(context.Background(), testLease(clock)); err != nil {
				t.Fatal(err)
			}
			first := fl.Calls()[0].NodeClaim
			got := slices.ContainsFunc(ev.All(), func(e string) bool {
				return strings.HasPrefix(e, "NodeClaim//"+first+" Warning InsufficientCapacityError: ")
			})
			if got != tc.want {
				t.Errorf("events %v: InsufficientCapacityError on NodeClaim %s is %v, want %v", ev.All(), first, got, tc.want)
			}
		})
	}
}
