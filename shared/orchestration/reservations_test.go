package orchestration

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/fleet"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
)

// TestInputsCarryTheEndingBlocks: the tick's inputs name the Capacity
// Blocks the classes select that are within their reclaim lead of their
// end (their nodes expire), not the blocks and reservations still running
// or ended, nor those of a class that did not resolve; and every
// reservation each resolved class selects (capacity reservation drift).
func TestInputsCarryTheEndingBlocks(t *testing.T) {
	r := newRig(t)
	r.e.NodeClasses = []*apis.EC2NodeClass{st.NodeClass("default"), st.NodeClass("broken")}
	r.src.pools = []*apis.NodePool{st.NodePool(st.NodePoolOptions{Name: "default"})}
	end := r.e.Now().Add(30 * time.Minute)
	classes := fakeClasses{
		"default": {Class: &fleet.NodeClass{Subnets: []fleet.Subnet{{ID: "subnet-a", Zone: "us-east-1a"}}, SecurityGroups: []string{"sg-1"},
			AMIs: []fleet.AMI{{ID: "ami-1"}}, Reservations: []fleet.Reservation{
				{ID: "cr-ending", Type: apis.CapacityReservationTypeCapacityBlock, End: end},
				{ID: "cr-running", Type: apis.CapacityReservationTypeCapacityBlock, End: end.Add(2 * time.Hour)},
				{ID: "cr-odcr", Type: apis.CapacityReservationTypeDefault},
				{ID: "cr-ended", Type: apis.CapacityReservationTypeCapacityBlock, End: end.Add(-time.Hour), Ended: true},
			}}},
		"broken": {Err: errors.New("throttled")},
	}
	run := &Run{Store: runStore{s: r.store}, Exec: r.e, Classes: classes}
	in, err := run.Inputs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]time.Time{"cr-ending": end}; !reflect.DeepEqual(in.EndingBlocks, want) {
		t.Errorf("ending blocks %v, want %v", in.EndingBlocks, want)
	}
	want := map[string]map[string]bool{"default": {"cr-ending": true, "cr-running": true, "cr-odcr": true, "cr-ended": true}}
	if !reflect.DeepEqual(in.CurrentReservations, want) {
		t.Errorf("current reservations %v, want %v", in.CurrentReservations, want)
	}
}
