package orchestration

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/disruption"
	"github.com/nodewright/nodewright/shared/metrics"
	"github.com/nodewright/nodewright/shared/provision"
	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/shared/termination"
)

// TestReplacementStepsInOrder: a replacement goes planned -> replacing ->
// replacement-ready -> draining -> terminating -> done, each step written
// before the next begins; it waits through the validation wait and while
// the replacement boots, evicts nothing before the replacement is ready,
// and launches once however often it is advanced.
func TestReplacementStepsInOrder(t *testing.T) {
	r := newRig(t)
	var stepsAtFirstDrain []string
	r.drainer.step = func(_ string, _ termination.DrainOptions, n int) termination.DrainResult {
		if n == 1 {
			stepsAtFirstDrain = slices.Clone(r.store.steps)
			return termination.DrainResult{Blocked: []string{"default/web-1"}, Remaining: []string{"default/web-1"}}
		}
		return termination.DrainResult{Done: true, Evicted: []string{"default/web-0", "default/web-1"}}
	}
	r.rebuild()
	a := r.start(command(true))
	if !r.nodes.tainted["ip-a"] || !slices.Contains(r.events.reasons, "ip-a:DisruptionPlanned") {
		t.Errorf("planned: tainted %v, events %v; want ip-a tainted and a DisruptionPlanned event", r.nodes.tainted, r.events.reasons)
	}
	if rec := r.store.rec("nc-a"); rec.Phase != state.Disrupting || rec.Disruption == nil || rec.Disruption.Reschedule {
		t.Errorf("planned: candidate %+v; want disrupting, its pods not moving yet", rec)
	}

	r.advance(a) // inside the validation wait: nothing
	if got := r.stored(a.ID).Step; got != state.StepPlanned || r.checks != 0 || len(r.cap.calls) != 0 {
		t.Fatalf("inside the validation wait: step %s, %d validations, calls %v", got, r.checks, r.cap.calls)
	}

	r.clock.Step(validationWait)
	r.advance(a) // validated, replacement launched, not ready yet
	got := r.stored(a.ID)
	if got.Step != state.StepReplacing || len(got.Replacements) != 1 || r.checks != 1 {
		t.Fatalf("after the wait: step %s, replacements %v, %d validations; want replacing with one replacement", got.Step, got.Replacements, r.checks)
	}
	repl := got.Replacements[0]
	if rec := r.store.rec(repl); rec == nil || !strings.Contains(rec.Reason, a.ID) {
		t.Errorf("replacement record %+v: want its reason to name the action", rec)
	}
	if rec := r.store.rec("nc-a"); !rec.Disruption.Reschedule {
		t.Error("the candidate's pods do not move onto the replacement in solves")
	}
	r.advance(a) // still booting
	if n := count(r.cap.calls, "launch"); n != 1 || len(r.drainer.calls) != 0 {
		t.Fatalf("while the replacement boots: %d launches, %d drain calls; want 1 and 0", n, len(r.drainer.calls))
	}

	r.store.setPhase(repl, state.Initialized)
	r.advance(a) // ready; the drain begins and is blocked
	if got := r.stored(a.ID).Step; got != state.StepDraining {
		t.Fatalf("after the replacement is ready: step %s, want draining", got)
	}
	if !slices.Contains(stepsAtFirstDrain, state.StepReplacementReady) {
		t.Errorf("the first eviction came before replacement-ready was written (steps then %v)", stepsAtFirstDrain)
	}
	r.advance(a) // drained, terminated
	want := []string{state.StepPlanned, state.StepReplacing, state.StepReplacementReady, state.StepDraining, state.StepTerminate, state.StepDone}
	if got := r.steps(); !slices.Equal(got, want) {
		t.Errorf("steps written %v, want %v", got, want)
	}
	if a.Step != state.StepDone || a.Evicted != 2 || len(a.Stranded) != 0 {
		t.Errorf("action %s, %d evicted, %v forced; want done, 2, none", a.Step, a.Evicted, a.Stranded)
	}
	if r.store.rec("nc-a") != nil || r.src.has("ip-a") || r.store.rec(repl) == nil {
		t.Error("want the candidate's record and Node gone, the replacement kept")
	}
	if r.metrics.sum(metrics.ConsolidationActions) != 1 || r.metrics.sum(metrics.ConsolidationNodesRemoved) != 1 ||
		math.Abs(r.metrics.sum(metrics.ConsolidationSavings)-0.124) > 1e-9 || r.metrics.sum(metrics.PodsEvicted) != 2 {
		t.Errorf("metrics %+v", r.metrics.points)
	}
}

// TestDeletionStepsInOrder: a deletion has no replacement steps: planned
// -> draining -> terminating -> done.
func TestDeletionStepsInOrder(t *testing.T) {
	r := newRig(t)
	a := r.start(command(false))
	r.clock.Step(validationWait)
	r.advance(a)
	want := []string{state.StepPlanned, state.StepDraining, state.StepTerminate, state.StepDone}
	if got := r.steps(); !slices.Equal(got, want) || a.Step != state.StepDone {
		t.Errorf("steps written %v (now %s), want %v", got, a.Step, want)
	}
	if n := count(r.cap.calls, "launch"); n != 0 || len(r.drainer.calls) != 1 || len(r.store.deleted) != 1 {
		t.Errorf("%d launches, %d drain calls, retired %v; want 0, 1, [nc-a]", n, len(r.drainer.calls), r.store.deleted)
	}
}

// TestResumesWhereTheLastInvocationStopped: an action left at each step
// by an earlier invocation is carried on by a new executor from exactly
// there: nothing done before that step is done again.
func TestResumesWhereTheLastInvocationStopped(t *testing.T) {
	type want struct {
		validations, launches, drains int
		replacement                   string // the replacement the action ends with ("": a new one)
	}
	for _, tc := range []struct {
		name string
		// leave puts the action (planned at t0, validated at t0+15s) where
		// the earlier invocation stopped.
		leave func(r *rig, a *state.Action)
		want  want
	}{
		{"planned, validation due", func(r *rig, a *state.Action) {}, want{validations: 1, launches: 1, drains: 1}},
		{"replacing, nothing launched yet", func(r *rig, a *state.Action) {
			r.setStep(a, state.StepReplacing)
		}, want{launches: 1, drains: 1}},
		{"replacing, launched but not written into the action", func(r *rig, a *state.Action) {
			r.store.put(&state.NodeClaim{Name: "repl-old", NodePool: "default", Phase: state.Initialized, Reason: replacementReason(a), CreatedAt: t0})
			r.setStep(a, state.StepReplacing)
		}, want{drains: 1, replacement: "repl-old"}},
		{"replacing, replacement booting", func(r *rig, a *state.Action) {
			r.store.put(&state.NodeClaim{Name: "repl-old", NodePool: "default", Phase: state.Initialized, Reason: replacementReason(a), CreatedAt: t0})
			a.Replacements = []string{"repl-old"}
			r.setStep(a, state.StepReplacing)
			r.reschedule("nc-a", time.Time{})
		}, want{drains: 1, replacement: "repl-old"}},
		{"replacement ready", func(r *rig, a *state.Action) {
			r.store.put(&state.NodeClaim{Name: "repl-old", NodePool: "default", Phase: state.Initialized, Reason: replacementReason(a), CreatedAt: t0})
			a.Replacements = []string{"repl-old"}
			r.setStep(a, state.StepReplacementReady)
			r.reschedule("nc-a", time.Time{})
		}, want{drains: 1, replacement: "repl-old"}},
		{"draining", func(r *rig, a *state.Action) {
			r.store.put(&state.NodeClaim{Name: "repl-old", NodePool: "default", Phase: state.Initialized, Reason: replacementReason(a), CreatedAt: t0})
			a.Replacements = []string{"repl-old"}
			r.setStep(a, state.StepDraining)
			r.reschedule("nc-a", time.Time{})
		}, want{drains: 1, replacement: "repl-old"}},
		{"terminating", func(r *rig, a *state.Action) {
			r.store.put(&state.NodeClaim{Name: "repl-old", NodePool: "default", Phase: state.Initialized, Reason: replacementReason(a), CreatedAt: t0})
			a.Replacements = []string{"repl-old"}
			r.setStep(a, state.StepTerminate)
			r.reschedule("nc-a", time.Time{})
			r.store.setPhase("nc-a", state.Terminating)
		}, want{replacement: "repl-old"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			a := r.start(command(true))
			r.clock.Step(validationWait)
			tc.leave(r, r.stored(a.ID))
			r.rebuild() // a new invocation
			a = r.stored(a.ID)
			r.advance(a) // launches (or not) and waits for the replacement
			for _, name := range r.stored(a.ID).Replacements {
				r.store.setPhase(name, state.Initialized)
			}
			r.advance(a)
			if a.Step != state.StepDone {
				t.Fatalf("step %s (cause %q), want done", a.Step, a.Cause)
			}
			got := want{validations: r.checks, launches: count(r.cap.calls, "launch"), drains: len(r.drainer.calls)}
			if len(a.Replacements) == 1 && tc.want.replacement != "" {
				got.replacement = a.Replacements[0]
			}
			if got != tc.want || len(a.Replacements) != 1 {
				t.Errorf("the new invocation did %+v with replacements %v; want %+v", got, a.Replacements, tc.want)
			}
			if !slices.Equal(r.store.deleted, []string{"nc-a"}) {
				t.Errorf("retired %v, want [nc-a]", r.store.deleted)
			}
		})
	}
}

// TestAbandons: a validation that fails, a partial replacement, a
// replacement that never becomes ready or is gone: the action is
// abandoned with its cause, the candidate untainted and no longer
// disrupting, nothing drained, and the metric counts the cause.
func TestAbandons(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(r *rig, cmd *disruption.Command)
		after func(r *rig, a *state.Action) // between the first and second advance
		cause string
		class string
	}{
		{"validation fails", func(r *rig, _ *disruption.Command) {
			r.validate = &disruption.Invalid{Cause: disruption.CauseDoNotDisrupt, Err: errors.New("node ip-a: a pod has karpenter.sh/do-not-disrupt")}
		}, nil, "do-not-disrupt", "DoNotDisrupt"},
		{"validation fails: pods no longer fit", func(r *rig, _ *disruption.Command) {
			r.validate = fmt.Errorf("validate: %w", &disruption.Invalid{Cause: disruption.CauseNoLongerFits, Err: errors.New("pods no longer fit: the replacement is gone")})
		}, nil, "no longer fit", "NoLongerFits"},
		{"validation fails without a cause: its words do not classify it", func(r *rig, _ *disruption.Command) {
			r.validate = errors.New("replacement no longer cheaper; a pod has karpenter.sh/do-not-disrupt")
		}, nil, "no longer cheaper", "Changed"},
		{"partial replacement", func(r *rig, cmd *disruption.Command) {
			cmd.Replacements = append(cmd.Replacements, cmd.Replacements[0])
			r.cap.launchN = 1
		}, nil, "InsufficientInstanceCapacity", "Replacement"},
		{"replacement not ready in time", nil, func(r *rig, a *state.Action) {
			r.clock.Step(11 * time.Minute)
		}, "did not become ready in time", "Replacement"},
		{"replacement gone", nil, func(r *rig, a *state.Action) {
			r.store.mu.Lock()
			delete(r.store.recs, a.Replacements[0])
			r.store.mu.Unlock()
		}, "is gone", "Replacement"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			cmd := command(true)
			if tc.setup != nil {
				tc.setup(r, &cmd)
			}
			a := r.start(cmd)
			r.clock.Step(validationWait)
			r.advance(a)
			if tc.after != nil {
				tc.after(r, a)
				r.advance(a)
			}
			if a.Step != state.StepAbandoned || !strings.Contains(a.Cause, tc.cause) {
				t.Fatalf("step %s, cause %q; want abandoned because %q", a.Step, a.Cause, tc.cause)
			}
			if r.stored(a.ID).Step != state.StepAbandoned {
				t.Error("the abandoned step is not written")
			}
			rec := r.store.rec("nc-a")
			if rec == nil || rec.Disruption != nil || rec.Phase != state.Initialized || r.nodes.tainted["ip-a"] {
				t.Errorf("candidate %+v, tainted %v: want it back, untainted", rec, r.nodes.tainted["ip-a"])
			}
			if len(r.drainer.calls) != 0 || len(r.store.deleted) > 0 && r.store.deleted[0] == "nc-a" {
				t.Errorf("%d drain calls, retired %v: want the candidate untouched", len(r.drainer.calls), r.store.deleted)
			}
			abandoned := false
			for _, p := range r.metrics.points {
				if p.name == metrics.ConsolidationAbandoned && p.dims[metrics.DimReason] == tc.class {
					abandoned = true
				}
			}
			if !abandoned {
				t.Errorf("metrics %+v: want %s with reason %s", r.metrics.points, metrics.ConsolidationAbandoned, tc.class)
			}
			if tc.name == "partial replacement" {
				if len(r.store.deleted) != 1 || !strings.HasPrefix(r.store.deleted[0], "repl-") {
					t.Errorf("retired %v: want the one replacement launched taken back", r.store.deleted)
				}
			}
		})
	}
}

// TestAbandonLeavesANodeAnInterruptionTookOver (defect 7): a spot warning
// arrives for a candidate during the validation wait and takes its
// intent over; the validation then fails. Consolidation's abandon gives
// back only what it still owns: the node stays tainted and its record keeps
// the interruption's intent; and consolidation never drains or retires a
// node whose intent another action owns.
func TestAbandonLeavesANodeAnInterruptionTookOver(t *testing.T) {
	for _, validate := range []error{errors.New("node ip-a: no longer cheaper"), nil} {
		name := "abandoned"
		if validate == nil {
			name = "carried on"
		}
		t.Run(name, func(t *testing.T) {
			r := newRig(t)
			r.addCandidate("b")
			cmd := command(false)
			cmd.Candidates, cmd.Nodes = []string{"nc-a", "nc-b"}, []string{"ip-a", "ip-b"}
			a := r.start(cmd)
			rec := r.store.rec("nc-a")
			spot := state.IntentFor(state.CauseInterruption, "interruption-i-a", "SpotInterruption", t0.Add(time.Second), t0.Add(2*time.Minute))
			merged, _ := state.Merge(rec.Disruption, spot)
			rec.Disruption = &merged
			r.store.put(rec)
			r.validate = validate
			r.clock.Step(validationWait)
			r.advance(a)
			got := r.store.rec("nc-a")
			if got == nil || got.Disruption == nil || got.Disruption.Action != "interruption-i-a" || !r.nodes.tainted["ip-a"] {
				var d any
				if got != nil {
					d = got.Disruption
				}
				t.Fatalf("record's intent %+v, tainted %v: want the interruption's intent kept and the node still tainted", d, r.nodes.tainted["ip-a"])
			}
			for _, c := range r.drainer.calls {
				if c.node == "ip-a" {
					t.Errorf("consolidation drained ip-a, whose intent the interruption owns")
				}
			}
			if validate != nil && (r.nodes.tainted["ip-b"] || r.store.rec("nc-b").Disruption != nil) {
				t.Errorf("ip-b tainted %v, record %+v: want consolidation's own candidate given back", r.nodes.tainted["ip-b"], r.store.rec("nc-b"))
			}
			if validate == nil && (a.Step != state.StepDone || r.store.rec("nc-b") != nil) {
				t.Errorf("step %s, nc-b %+v: want consolidation done with its own candidate", a.Step, r.store.rec("nc-b"))
			}
		})
	}
}

// TestTerminationGracePeriodCountsFromTheDrain: the NodePool's
// terminationGracePeriod starts when draining begins, not when the action
// was planned (the validation wait and the replacement's boot do not
// count against it); a drain blocked by a PDB is forced once it passes,
// and the pods deleted are recorded. A later invocation keeps the
// deadline an earlier one set.
func TestTerminationGracePeriodCountsFromTheDrain(t *testing.T) {
	r := newRig(t)
	grace := 5 * time.Minute
	r.src.pools[0].Spec.Template.Spec.TerminationGracePeriod = &metav1.Duration{Duration: grace}
	r.drainer.step = func(_ string, opts termination.DrainOptions, _ int) termination.DrainResult {
		if !opts.Deadline.IsZero() && !r.clock.Now().Before(opts.Deadline) {
			return termination.DrainResult{Done: true, Deleted: []string{"default/web-0"}}
		}
		return termination.DrainResult{Blocked: []string{"default/web-0"}, Remaining: []string{"default/web-0"}}
	}
	r.rebuild()
	a := r.start(command(true))
	r.clock.Step(validationWait)
	r.advance(a)
	r.clock.Step(8 * time.Minute) // a slow boot
	r.store.setPhase(a.Replacements[0], state.Initialized)
	drainStart := r.clock.Now()
	r.advance(a)
	if a.Step != state.StepDraining || len(r.drainer.calls) != 1 {
		t.Fatalf("step %s, %d drain calls; want draining, blocked", a.Step, len(r.drainer.calls))
	}
	wantDeadline := drainStart.Add(grace)
	if dl := r.drainer.calls[0].opts.Deadline; !dl.Equal(wantDeadline) {
		t.Errorf("drain deadline %v, want %v (draining began at %v; planned at %v)", dl, wantDeadline, drainStart, t0)
	}
	if rec := r.store.rec("nc-a"); !rec.Disruption.Deadline.Equal(wantDeadline) || !r.stored(a.ID).Deadline.Equal(wantDeadline) {
		t.Errorf("recorded deadline %v (action %v), want %v", rec.Disruption.Deadline, r.stored(a.ID).Deadline, wantDeadline)
	}

	r.clock.Step(grace - time.Minute)
	r.rebuild() // a later tick
	a = r.stored(a.ID)
	r.advance(a)
	if a.Step != state.StepDraining || len(a.Stranded) != 0 {
		t.Fatalf("a minute before the deadline: step %s, forced %v; want still draining, nothing forced", a.Step, a.Stranded)
	}
	if dl := r.drainer.calls[0].opts.Deadline; !dl.Equal(wantDeadline) {
		t.Errorf("the later tick drains to %v, want the deadline set when draining began, %v", dl, wantDeadline)
	}
	r.clock.Step(time.Minute)
	r.advance(a)
	if a.Step != state.StepDone || !slices.Equal(a.Stranded, []string{"default/web-0"}) {
		t.Errorf("past the deadline: step %s, forced %v; want done with default/web-0 forced", a.Step, a.Stranded)
	}
}

// TestNoGraceNoDeadline: without terminationGracePeriod a drain has no
// deadline: PDBs are honoured for as long as it takes.
func TestNoGraceNoDeadline(t *testing.T) {
	r := newRig(t)
	a := r.start(command(false))
	r.clock.Step(validationWait)
	r.advance(a)
	if len(r.drainer.calls) != 1 || !r.drainer.calls[0].opts.Deadline.IsZero() || r.drainer.calls[0].opts.Force {
		t.Errorf("drain calls %+v: want one, with no deadline and not forced", r.drainer.calls)
	}
}

// setStep writes the action at step (an earlier invocation's last write).
func (r *rig) setStep(a *state.Action, step string) {
	r.t.Helper()
	a.Step = step
	if err := r.store.PutAction(context.Background(), a); err != nil {
		r.t.Fatal(err)
	}
}

// reschedule marks the candidate's pods moving, with a drain deadline.
func (r *rig) reschedule(name string, deadline time.Time) {
	r.t.Helper()
	rec := r.store.rec(name)
	rec.Disruption.Reschedule, rec.Disruption.Deadline = true, deadline
	if err := r.store.PutNodeClaim(context.Background(), rec); err != nil {
		r.t.Fatal(err)
	}
}

func count(calls []string, what string) int {
	n := 0
	for _, c := range calls {
		if c == what {
			n++
		}
	}
	return n
}

// The live implementations satisfy the executor's interfaces.
var (
	_ Store      = (*state.Store)(nil)
	_ Capacity   = (*provision.Reconciler)(nil)
	_ Terminator = (*termination.Terminator)(nil)
	_ Tainter    = (provision.Nodes)(nil)
)
