package launch

import (
	"context"
	"errors"
	"testing"

	testingclock "k8s.io/utils/clock/testing"

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
