package provision

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/fleet"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
)

// TestReservationsFillFirstThenOverflow: an H100 pool that allows reserved
// and on-demand launches its pods into the reservation its EC2NodeClass
// selects while it has room, and the rest on-demand; when EC2 refuses the
// reservation as full, the round marks the reserved offering unavailable
// and launches on-demand instead; a Capacity Block about to end takes none.
func TestReservationsFillFirstThenOverflow(t *testing.T) {
	h100 := fleet.Reservation{ID: "cr-h100", InstanceType: "p5.48xlarge", Zone: "us-east-1b", Type: apis.CapacityReservationTypeDefault, Available: 2}
	ending := h100
	ending.Type, ending.Expiring = apis.CapacityReservationTypeCapacityBlock, true
	cases := []struct {
		name        string
		reservation fleet.Reservation
		full        bool // EC2 answers ReservationCapacityExceeded
		want        map[string]int
	}{
		{"fills, then on-demand", h100, false, map[string]int{"reserved cr-h100": 2, "on-demand": 1}},
		{"full: on-demand", h100, true, map[string]int{"on-demand": 3}},
		{"an ending block takes none", ending, false, map[string]int{"on-demand": 3}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			clock := testingclock.NewFakeClock(t0)
			var pods []*corev1.Pod
			for i := range 3 {
				p := unschedulableAt(fmt.Sprintf("train-%d", i), t0.Add(-time.Minute), t0.Add(-time.Minute))
				p.Spec.Containers[0].Resources.Limits = st.Resources{"nvidia.com/gpu": "8"}.List()
				p.Spec.Containers[0].Resources.Requests = st.Resources{"cpu": "100", "memory": "100Gi", "nvidia.com/gpu": "8"}.List()
				pods = append(pods, p)
			}
			r, fl, _, _ := testReconciler(t, clock, func(time.Time) (*View, error) { return &View{Pods: pods}, nil })
			class := r.NodeClasses[0].Name
			r.NodePools = []*apis.NodePool{st.NodePool(st.NodePoolOptions{Name: "h100", NodeClass: class, Requirements: []apis.NodeSelectorRequirementWithMinValues{
				st.PoolReq(apis.LabelCapacityType, corev1.NodeSelectorOpIn, apis.CapacityTypeReserved, apis.CapacityTypeOnDemand),
				st.PoolReq(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, "p5.48xlarge"),
			}})}
			fl.reservations = map[string][]fleet.Reservation{class: {tc.reservation}}
			fl.launch = func(p *fleet.Plan, call int) ([]*fleet.Instance, error) {
				if tc.full && p.CapacityType == apis.CapacityTypeReserved {
					fe := fleet.FleetError{InstanceType: "p5.48xlarge", Zone: "us-east-1b", CapacityType: apis.CapacityTypeReserved, Code: fleet.CodeReservationCapacityExceeded}
					return nil, &fleet.LaunchError{Errors: []fleet.FleetError{fe},
						Unavailable: []fleet.UnavailableOffering{{InstanceType: fe.InstanceType, Zone: fe.Zone, CapacityType: fe.CapacityType, Code: fe.Code}}}
				}
				return fl.instances(p, p.Count), nil
			}
			if _, err := r.Round(context.Background(), testLease(clock)); err != nil {
				t.Fatal(err)
			}
			records, err := r.Store.NodeClaims(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]int{}
			for _, rec := range records {
				if rec.InstanceID == "" {
					continue
				}
				k := rec.CapacityType
				if id := rec.Claim.CapacityReservationID; id != "" {
					k += " " + id
					if rec.Claim.Labels[apis.LabelCapacityReservationID] != id || rec.Zone != h100.Zone {
						t.Errorf("reserved record %s: labels %v, zone %s", rec.Name, rec.Claim.Labels, rec.Zone)
					}
				}
				got[k]++
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("launched %v, want %v", got, tc.want)
			}
		})
	}
}
