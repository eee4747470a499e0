package termination

import (
	"context"
	"testing"
	"time"

	"github.com/nodewright/nodewright/shared/state"
)

// TestNextPass: the pause before the next drain pass is the caller's poll,
// cut short so that the pass comes by DeleteBy (a pod a budget holds is
// deleted then with its whole grace), never a busy loop.
func TestNextPass(t *testing.T) {
	for _, tc := range []struct {
		name     string
		poll     time.Duration
		deleteBy time.Time
		want     time.Duration
	}{
		{"no pod due", time.Second, time.Time{}, time.Second},
		{"due after the poll", time.Second, t0.Add(5 * time.Second), time.Second},
		{"due before the poll", 10 * time.Second, t0.Add(2500 * time.Millisecond), 2500 * time.Millisecond},
		{"due now", 10 * time.Second, t0, minPause},
		{"overdue", 10 * time.Second, t0.Add(-time.Second), minPause},
		{"overdue, a shorter poll", 10 * time.Millisecond, t0.Add(-time.Second), 10 * time.Millisecond},
	} {
		if got := NextPass(t0, tc.poll, tc.deleteBy); got != tc.want {
			t.Errorf("%s: pause %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestMissesDeleteBy: a drain left to the sweep misses a pod's DeleteBy
// when it falls before the sweep after next may run.
func TestMissesDeleteBy(t *testing.T) {
	for _, tc := range []struct {
		deleteBy time.Time
		want     bool
	}{
		{time.Time{}, false},
		{t0.Add(10 * time.Second), true},
		{t0.Add(SweepInterval - time.Second), true},
		{t0.Add(SweepInterval), false},
		{t0.Add(5 * time.Minute), false},
	} {
		if got := MissesDeleteBy(t0, tc.deleteBy); got != tc.want {
			t.Errorf("DeleteBy %s: misses %v, want %v", tc.deleteBy, got, tc.want)
		}
	}
}

// TestStepCarriesDeleteBy: a pass a budget blocks says by when the next
// must come (the drain's DeleteBy), through Step and Drain.
func TestStepCarriesDeleteBy(t *testing.T) {
	r := newRig()
	rec := r.record("nc-a", "i-a")
	by := t0.Add(80 * time.Second)
	r.drainer.step = func(string, DrainOptions, int) DrainResult {
		return DrainResult{Blocked: []string{"default/web-0"}, Remaining: []string{"default/web-0"}, DeleteBy: by}
	}
	intent := state.IntentFor(state.CauseConsolidation, "consolidation-single-node-1-abcd", "Underutilized", t0, t0.Add(2*time.Minute))
	res := must[Result](t)(r.t.Step(context.Background(), Request{Node: node("ip-a", "i-a"), Record: rec, Intent: intent}))
	if res.Drained || !res.Drain.DeleteBy.Equal(by) {
		t.Errorf("result %+v: want draining, DeleteBy %s", res, by)
	}
}
