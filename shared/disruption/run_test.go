package disruption

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/consolidation"
	"github.com/nodewright/nodewright/shared/provision"
	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/shared/termination"
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

// runStore is the tick's store over the executor's fake: records and
// lease renewals (the rest is not used by the code under test).
type runStore struct {
	RunStore
	s *fakeStore
}

func (s runStore) Renew(context.Context, *state.Lease, time.Duration) error { return nil }

func (s runStore) PutNodeClaim(ctx context.Context, nc *state.NodeClaim) error {
	return s.s.PutNodeClaim(ctx, nc)
}

// TestCarryWaitsOnTheInjectedClock: a tick carrying an action pauses on
// Run.Wait and measures its MaxWait on the executor's clock, so a fake
// clock drives it: through the validation wait to the end, and out of a
// drain a PDB blocks once MaxWait has passed on that clock.
func TestCarryWaitsOnTheInjectedClock(t *testing.T) {
	fresh := func(context.Context) (consolidation.Inputs, error) { return consolidation.Inputs{}, nil }
	for _, tc := range []struct {
		name     string
		blocked  bool
		step     string
		waited   time.Duration // on the fake clock
		maxPause time.Duration
	}{
		{"validated and carried out", false, state.StepDone, validationWait, 5 * time.Second},
		{"drain blocked past MaxWait", true, state.StepDraining, 31 * time.Second, 5 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			if tc.blocked {
				r.drainer.step = func(string, termination.DrainOptions, int) termination.DrainResult {
					return termination.DrainResult{Blocked: []string{"default/web-0"}, Remaining: []string{"default/web-0"}}
				}
				r.rebuild()
			}
			a := r.start(command(false))
			var waits []time.Duration
			run := &Run{Store: runStore{s: r.store}, Exec: r.e, MaxWait: 30 * time.Second, Wait: func(_ context.Context, d time.Duration) error {
				waits = append(waits, d)
				r.clock.Step(d)
				return nil
			}}
			if err := run.carry(context.Background(), &state.Lease{}, a, fresh, time.Minute); err != nil {
				t.Fatal(err)
			}
			if a.Step != tc.step || r.clock.Since(t0) != tc.waited || len(waits) == 0 || slices.Max(waits) > tc.maxPause {
				t.Errorf("step %s after %s on the fake clock in pauses %v; want %s after %s, pauses of at most %s",
					a.Step, r.clock.Since(t0), waits, tc.step, tc.waited, tc.maxPause)
			}
		})
	}
}

// TestFingerprintStampsTheInputsTime: a node whose pods changed is
// stamped with the time its inputs were read (the decision's Now), not
// the later time the stamp is written, so a pool with consolidateAfter 0s
// finds it a candidate on the same tick.
func TestFingerprintStampsTheInputsTime(t *testing.T) {
	r := newRig(t)
	rec := r.store.rec("nc-a")
	rec.PodsHash, rec.InitializedAt = "0123456789abcdef", t0.Add(-time.Hour)
	r.store.put(rec)
	yes := true
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-0", UID: "u-web-0",
		OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web", Controller: &yes}}}}
	pod.Spec.NodeName = "ip-a"
	recs, _ := r.store.NodeClaims(context.Background())
	in := consolidation.Inputs{Now: t0, Nodes: r.src.nodes, Pods: []*corev1.Pod{pod}, Records: recs}
	r.clock.Step(3 * time.Second) // reading the rest of the inputs took time
	run := &Run{Store: runStore{s: r.store}, Exec: r.e}
	if err := run.fingerprint(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	if got := r.store.rec("nc-a"); got.PodsHash == rec.PodsHash || !got.PodsChangedAt.Equal(t0) {
		t.Errorf("pods hash %q changed at %s; want a new hash stamped at the inputs' time %s", got.PodsHash, got.PodsChangedAt, t0)
	}
}
