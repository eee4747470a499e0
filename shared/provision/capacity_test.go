package provision

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodewright/nodewright/shared/apis"
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

// TestNoCompatibleInstanceTypesEventOnTheNodePool: a round whose solve
// finds a NodePool's requirements leave it no instance type records
// Karpenter's NoCompatibleInstanceTypes on that NodePool, and on no other.
func TestNoCompatibleInstanceTypesEventOnTheNodePool(t *testing.T) {
	clock := testingclock.NewFakeClock(t0)
	pods := bigPods(1, t0)
	r, _, _, _ := testReconciler(t, clock, func(time.Time) (*View, error) { return &View{Pods: pods}, nil })
	ev := &fakeEvents{}
	r.Events = ev
	none := *r.NodePools[0]
	none.Name = "none"
	none.Spec.Template.Spec.Requirements = append(slices.Clone(none.Spec.Template.Spec.Requirements),
		apis.NodeSelectorRequirementWithMinValues{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"no-such.large"}})
	r.NodePools = append(r.NodePools, &none)
	if _, err := r.Round(context.Background(), testLease(clock)); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range ev.All() {
		if strings.Contains(e, " NoCompatibleInstanceTypes: ") {
			got = append(got, strings.SplitN(e, " ", 2)[0])
		}
	}
	if want := []string{"NodePool//none"}; !slices.Equal(slices.Compact(got), want) {
		t.Errorf("NoCompatibleInstanceTypes on %v, want %v (events %v)", got, want, ev.All())
	}
}
