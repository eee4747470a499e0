package disruption

import (
	"testing"
	"time"

	"github.com/nodewright/nodewright/shared/consolidation"
	"github.com/nodewright/nodewright/shared/provision"
)

// TestDecisionBudget: a decision gets the default bounds and a deadline
// that leaves the tick the time to carry its command out before the
// invocation ends (the consolidation function's 15-minute timeout).
func TestDecisionBudget(t *testing.T) {
	now := func() time.Time { return t0 }
	reserve := DefaultMaxWait + finishMargin
	for _, tc := range []struct {
		name    string
		set     consolidation.Budget
		left    time.Duration
		bounded bool
		want    time.Duration // deadline after t0
		solves  int
	}{
		{"no invocation deadline", consolidation.Budget{}, 0, false, DefaultDecideTime, DefaultDecideSolves},
		{"a full Lambda invocation", consolidation.Budget{}, 15 * time.Minute, true, DefaultDecideTime, DefaultDecideSolves},
		{"an invocation nearly over", consolidation.Budget{}, reserve + time.Minute, true, time.Minute, DefaultDecideSolves},
		{"past the reserve", consolidation.Budget{}, reserve - time.Second, true, 0, DefaultDecideSolves},
		{"configured", consolidation.Budget{MaxSolves: 7}, 15 * time.Minute, true, DefaultDecideTime, 7},
	} {
		b := budgetFor(tc.set, now, tc.left, tc.bounded, reserve)
		if !b.Deadline.Equal(t0.Add(tc.want)) || b.MaxSolves != tc.solves || b.MaxGroups != provision.DefaultSolveGroups || !b.Now().Equal(t0) {
			t.Errorf("%s: %+v, want deadline t0+%s, %d solves, %d groups", tc.name, b, tc.want, tc.solves, provision.DefaultSolveGroups)
		}
	}
}
