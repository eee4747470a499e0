package provision

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/fleet"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
	"github.com/nodewright/nodewright/shared/state"
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

// relabellingNodes records the labels each Relabel call sets (nil:
// removed), or fails every call.
type relabellingNodes struct {
	sweepNodes
	fail   bool
	marked map[string][]map[string]*string
}

func (n *relabellingNodes) Relabel(_ context.Context, name string, labels map[string]*string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.fail {
		return errors.New("the API server is unavailable")
	}
	n.marked[name] = append(n.marked[name], labels)
	return nil
}

// TestEndedReservationNodesGoOnDemand: when a default reservation ends,
// its running nodes are relabelled on-demand and their records priced
// on-demand, as Karpenter does; they are not drained. While it is active
// they stay reserved. The Node is relabelled before the record moves: a
// relabel that fails leaves the record reserved, for the next round.
func TestEndedReservationNodesGoOnDemand(t *testing.T) {
	for _, tc := range []struct{ ended, fail bool }{{true, false}, {false, false}, {true, true}} {
		ended := tc.ended
		t.Run(fmt.Sprintf("ended=%v,relabelFails=%v", ended, tc.fail), func(t *testing.T) {
			clock := testingclock.NewFakeClock(t0)
			ctx := context.Background()
			it, _ := cat.Get("m5.large")
			n := st.Node(st.NodeOptions{Name: "ip-r", InstanceType: it, Zone: "us-east-1b", CapacityType: apis.CapacityTypeReserved, NodePool: "default"}).Node
			n.Spec.ProviderID = "aws:///us-east-1b/i-r"
			r, fl, _, _ := testReconciler(t, clock, func(time.Time) (*View, error) { return &View{Nodes: []*corev1.Node{n}}, nil })
			nodes := &relabellingNodes{fail: tc.fail, marked: map[string][]map[string]*string{}}
			r.Nodes = nodes
			class := r.NodeClasses[0].Name
			fl.reservations = map[string][]fleet.Reservation{class: {{ID: "cr-1", InstanceType: "m5.large", Zone: "us-east-1b",
				Type: apis.CapacityReservationTypeDefault, Ended: ended}}}
			rec := record("default-res00", state.Initialized, "i-r")
			rec.NodeClass, rec.Claim.NodeClass = class, class
			rec.InstanceType, rec.Zone, rec.CapacityType, rec.NodeName, rec.PricePerHour = "m5.large", "us-east-1b", apis.CapacityTypeReserved, n.Name, 1e-8
			rec.Claim.CapacityReservationID = "cr-1"
			if err := r.Store.PutNodeClaim(ctx, rec); err != nil {
				t.Fatal(err)
			}
			if _, err := r.Round(ctx, testLease(clock)); err != nil {
				t.Fatal(err)
			}
			got, err := r.Store.GetNodeClaim(ctx, rec.Name)
			if err != nil {
				t.Fatal(err)
			}
			relabelled := false
			for _, l := range nodes.marked[n.Name] {
				v, removed := l[apis.LabelCapacityReservationID]
				relabelled = relabelled || (l[apis.LabelCapacityType] != nil && *l[apis.LabelCapacityType] == apis.CapacityTypeOnDemand &&
					removed && v == nil)
			}
			want := apis.CapacityTypeReserved
			if ended && !tc.fail {
				want = apis.CapacityTypeOnDemand
			}
			ended = ended && !tc.fail
			if got.CapacityType != want || relabelled != ended || (ended && got.PricePerHour != it.OnDemandPrice) {
				t.Errorf("record %s at $%v/h, node relabelled on-demand %v; want %s, relabelled %v", got.CapacityType, got.PricePerHour, relabelled, want, ended)
			}
			if got.Disruption != nil {
				t.Errorf("the node is being disrupted: %+v", got.Disruption)
			}
		})
	}
}

// TestReservationsCountLaunchesSinceTheLookup: a reservation's room is
// what EC2 reported less the records launched into it since (the
// resolution is kept for minutes); a record from before the lookup is in
// EC2's count already; ended reservations and blocks about to end take
// none.
func TestReservationsCountLaunchesSinceTheLookup(t *testing.T) {
	lookup := t0.Add(-time.Minute)
	rec := func(id string, at time.Time) *state.NodeClaim {
		r := record("default-"+id, state.Launched, "i-"+id)
		r.CreatedAt, r.Claim.CapacityReservationID = at, "cr-1"
		return r
	}
	resolved := []fleet.Resolution{{Name: "gpu", Class: &fleet.NodeClass{Name: "gpu", ResolvedAt: lookup, Reservations: []fleet.Reservation{
		{ID: "cr-1", InstanceType: "p5.48xlarge", Zone: "us-east-1b", Type: apis.CapacityReservationTypeDefault, Available: 3},
		{ID: "cr-ended", InstanceType: "p5.48xlarge", Zone: "us-east-1b", Ended: true, Available: 1},
		{ID: "cr-ending", InstanceType: "p5.48xlarge", Zone: "us-east-1b", Type: apis.CapacityReservationTypeCapacityBlock, End: t0.Add(10 * time.Minute), Available: 1},
	}}}}
	got := Reservations(resolved, []*state.NodeClaim{rec("a", t0), rec("b", lookup.Add(-time.Second))}, t0)
	if len(got) != 1 || got[0].ID != "cr-1" || got[0].NodeClass != "gpu" || got[0].Available != 2 {
		t.Errorf("reservations %+v, want cr-1 of class gpu with 2 left", got)
	}
}
