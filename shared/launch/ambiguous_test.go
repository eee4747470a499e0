package launch

import (
	"context"
	"errors"
	"slices"
	"testing"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/state"
)

// deletes counts the records a launch removes.
type deletes struct {
	nopStore
	removed []string
}

func (d *deletes) DeleteNodeClaim(_ context.Context, nc *state.NodeClaim) error {
	d.removed = append(d.removed, nc.Name)
	return nil
}

// A CreateFleet that failed in a way that does not say whether EC2
// carried it out (a server error, a dead connection) may have launched
// the group's instances: its records stay, launching, for the re-drive
// (same ClientToken: EC2 answers the instances it launched). Only a
// failure that launched nothing removes them. Found by the fault suite
// (test/faults, chaos seed 110, invariant 7: the records of an ambiguous
// CreateFleet were removed, the limited pool stopped counting its
// instances and launched again, over its limit).
func TestAFailureThatMayHaveLaunchedKeepsTheRecords(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		kept bool
	}{
		{"server error", apiError("InternalError"), true},
		{"unavailable", apiError("ServiceUnavailable"), true},
		{"no answer", context.DeadlineExceeded, true},
		{"connection lost", errors.New("read tcp: connection reset by peer"), true},
		{"refused request", apiError("InvalidParameterValue"), false},
		{"still throttled", apiError("RequestLimitExceeded"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, _ := testLauncher(testingclock.NewFakeClock(t0))
			store := &deletes{}
			l.Store = store
			_ = l.check()
			g := &group{token: "default-abcde", err: tc.err, recs: []*state.NodeClaim{{Name: "default-abcde", Group: "default-abcde", Phase: state.Launching}}}
			res := &Result{}
			launched, _ := l.settle(context.Background(), g, res)
			if len(launched) != 0 {
				t.Errorf("launched %d records, want none", len(launched))
			}
			if kept := len(store.removed) == 0; kept != tc.kept {
				t.Errorf("%v: records removed %v, want kept=%v", tc.err, store.removed, tc.kept)
			}
		})
	}
}

// failingPuts refuses every record write.
type failingPuts struct{ nopStore }

func (failingPuts) PutNodeClaim(context.Context, *state.NodeClaim) error {
	return errors.New("InternalServerError (test)")
}

// An instance EC2 launched is the launch's even when its record could not
// be written (the write may have taken effect; the re-drive adopts it
// otherwise): it counts, for the solves after it, against its pool's
// limits and for its pods. Found by the fault suite (test/faults, chaos
// seed 635, invariant 7: the record write failed after it took effect,
// the round solved again without the instance and a limited pool went
// over its limit).
func TestAnInstanceWhoseRecordFailedStillCounts(t *testing.T) {
	l, _ := testLauncher(testingclock.NewFakeClock(t0))
	l.Store = failingPuts{}
	_ = l.check()
	rec := &state.NodeClaim{Name: "batch-abcde", Group: "batch-abcde", NodePool: "batch", Phase: state.Launching}
	g := &group{token: rec.Name, recs: []*state.NodeClaim{rec}, insts: []*fleet.Instance{{InstanceID: "i-1", InstanceType: "c6a.large", Zone: "us-east-1a", CapacityType: "on-demand"}}}
	res := &Result{}
	launched, _ := l.settle(context.Background(), g, res)
	if len(launched) != 1 || launched[0].InstanceID != "i-1" {
		t.Errorf("launched %v, want the record of i-1 (its instance runs)", launched)
	}
	if len(res.Launches) != 1 || res.Launches[0].Error == "" {
		t.Errorf("launches %+v, want one with the record's error", res.Launches)
	}
}

// A launched instance's record keeps its subnet and security groups, which
// subnet and security group drift compare with its class's selection.
func TestTheRecordKeepsTheInstancesPlacement(t *testing.T) {
	l, _ := testLauncher(testingclock.NewFakeClock(t0))
	_ = l.check()
	rec := &state.NodeClaim{Name: "batch-abcde", Group: "batch-abcde", NodePool: "batch", Phase: state.Launching}
	in := &fleet.Instance{InstanceID: "i-1", InstanceType: "c6a.large", Zone: "us-east-1a", CapacityType: "on-demand",
		SubnetID: "subnet-a1", SecurityGroups: []string{"sg-1", "sg-2"}}
	g := &group{token: rec.Name, recs: []*state.NodeClaim{rec}, insts: []*fleet.Instance{in}}
	launched, _ := l.settle(context.Background(), g, &Result{})
	if len(launched) != 1 || launched[0].SubnetID != "subnet-a1" || !slices.Equal(launched[0].SecurityGroups, []string{"sg-1", "sg-2"}) {
		t.Errorf("launched %+v, want the record with subnet-a1 and sg-1, sg-2", launched)
	}
}
