package orchestration

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/disruption"
	"github.com/nodewright/nodewright/shared/fleet"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/shared/termination"
)

// repairCommand is a repair of ip-a (Ready False past its toleration).
func repairCommand() disruption.Command {
	return disruption.Command{Method: disruption.MethodRepair, Reason: disruption.ReasonUnhealthy, Immediate: true, Condition: "Ready",
		Candidates: []string{"nc-a"}, Nodes: []string{"ip-a"}, PriceBefore: 0.192, Explanation: "test"}
}

// TestRepairDrainsAtOnce: a repair's drain has its deadline when draining
// begins, whatever the pool's terminationGracePeriod (Karpenter sets an
// unhealthy NodeClaim's termination timestamp to now): the pods are
// deleted, PDBs and do-not-disrupt notwithstanding, and the node goes in
// one pass. Its intent's cause is repair.
func TestRepairDrainsAtOnce(t *testing.T) {
	for _, grace := range []*metav1.Duration{nil, {Duration: time.Hour}} {
		r := newRig(t)
		r.src.pools[0].Spec.Template.Spec.TerminationGracePeriod = grace
		r.drainer.step = func(_ string, opts termination.DrainOptions, _ int) termination.DrainResult {
			if !opts.Deadline.IsZero() && !r.clock.Now().Before(opts.Deadline) {
				return termination.DrainResult{Done: true, Deleted: []string{"default/db-0"}}
			}
			return termination.DrainResult{Blocked: []string{"default/db-0"}, Remaining: []string{"default/db-0"}}
		}
		r.rebuild()
		a := r.start(repairCommand())
		if c := r.store.rec("nc-a").Disruption.Normalize().Cause; c != state.CauseRepair {
			t.Errorf("grace %v: intent cause %q, want %q", grace, c, state.CauseRepair)
		}
		r.clock.Step(validationWait)
		drainStart := r.clock.Now()
		r.advance(a)
		if len(r.drainer.calls) == 0 || !r.drainer.calls[0].opts.Deadline.Equal(drainStart) {
			t.Fatalf("grace %v: drain calls %+v, want the first with deadline %v", grace, r.drainer.calls, drainStart)
		}
		if a.Step != state.StepDone || !slices.Equal(a.Stranded, []string{"default/db-0"}) {
			t.Errorf("grace %v: step %s, forced %v; want done in one pass, default/db-0 deleted", grace, a.Step, a.Stranded)
		}
	}
}

// tickStore is the run store with a lease that is always free.
type tickStore struct{ runStore }

func (tickStore) Acquire(context.Context, string, string, time.Duration, ...string) (*state.Lease, error) {
	return &state.Lease{}, nil
}
func (tickStore) Release(context.Context, *state.Lease) (bool, error) { return false, nil }

// TestTickSaysWhyRepairIsPaused: a NodePool whose repair the safety stop
// pauses gets a Warning event, NodeRepairBlocked, saying why; and the
// tick's inputs carry the instances' failing EC2 status checks.
func TestTickSaysWhyRepairIsPaused(t *testing.T) {
	r := newRig(t)
	r.e.NodeClasses = []*apis.EC2NodeClass{st.NodeClass("default")}
	r.src.pools = []*apis.NodePool{st.NodePool(st.NodePoolOptions{Name: "default"})}
	why := "node repair paused for NodePool default: 3 of its 10 nodes are unhealthy, more than 20% (2 allowed)"
	since := t0.Add(-time.Hour)
	var polled []string
	var seen disruption.Inputs
	run := &Run{Store: tickStore{runStore{s: r.store}}, Exec: r.e, Classes: fakeClasses{},
		StatusChecks: func(_ context.Context, ids []string) (map[string]fleet.Impairment, error) {
			polled = ids
			return map[string]fleet.Impairment{"i-a": {Since: since, Detail: "system reachability: failed"}}, nil
		},
		Decide: func(in disruption.Inputs) ([]disruption.Command, disruption.Report) {
			seen = in
			return nil, disruption.Report{RepairPaused: map[string]string{"default": why}}
		}}
	if _, err := run.Tick(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(r.events.reasons, "default:"+string(EventNodeRepairBlocked)) {
		t.Errorf("events %v, want NodeRepairBlocked on NodePool default", r.events.reasons)
	}
	if !slices.Equal(polled, []string{"i-a"}) {
		t.Errorf("status checks polled for %v, want the initialized record's i-a", polled)
	}
	if c, ok := seen.StatusChecks["i-a"]; !ok || !c.Impaired || !c.Since.Equal(since) {
		t.Errorf("decision's status checks %+v, want i-a impaired since %v", seen.StatusChecks, since)
	}
}

// TestAbandonedRepairKeepsARegisteredNodeRegistered: a repair of a node
// that registered and never initialized, abandoned (it became Ready),
// gives the record back as registered, for the provision sweep to
// initialize; an initialized one goes back to initialized.
func TestAbandonedRepairKeepsARegisteredNodeRegistered(t *testing.T) {
	for _, tc := range []struct {
		initialized bool
		want        state.Phase
	}{{false, state.Registered}, {true, state.Initialized}} {
		r := newRig(t)
		rec := r.store.rec("nc-a")
		rec.Phase, rec.RegisteredAt = state.Registered, t0.Add(-time.Hour)
		if tc.initialized {
			rec.Phase, rec.InitializedAt = state.Initialized, t0.Add(-50*time.Minute)
		}
		r.store.put(rec)
		r.validate = errors.New("node ip-a: no longer to be repaired: healthy again")
		a := r.start(repairCommand())
		r.clock.Step(validationWait)
		r.advance(a)
		if a.Step != state.StepAbandoned {
			t.Fatalf("step %s, want abandoned", a.Step)
		}
		if got := r.store.rec("nc-a"); got.Phase != tc.want || got.Disruption != nil {
			t.Errorf("initialized %v: record %s, disruption %+v; want %s, none", tc.initialized, got.Phase, got.Disruption, tc.want)
		}
	}
}
