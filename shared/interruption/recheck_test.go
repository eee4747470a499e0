package interruption

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/shared/termination"
)

func TestRecheckDecision(t *testing.T) {
	for _, tc := range []struct {
		name   string
		action *state.Action
		held   bool
		want   RecheckReason
	}{
		{"nobody handled the event", nil, false, RecheckActs},
		{"the action is open", &state.Action{Step: state.StepDraining}, false, RecheckHandled},
		{"the action is done", &state.Action{Step: state.StepDone}, false, RecheckHandled},
		{"the lease is held", nil, true, RecheckHeld},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := recheckDecision(tc.action, tc.held); got != tc.want {
				t.Errorf("recheckDecision = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestRecheckDelivery: the recheck queue's delayed copy of a spot warning
// acknowledges at once, without acting or waiting, when the first
// delivery is on it (the node's action recorded, or its lease held), with
// the warning's deadline recorded on the node's intent for a drain under
// way; it handles the event as a first delivery when nobody did (the first
// delivery's invocation died before its first call).
func TestRecheckDelivery(t *testing.T) {
	deadline := warned.Add(2*time.Minute - deadlineMargin)
	for _, tc := range []struct {
		name string
		// action, when set, is the node's action before the recheck; held,
		// whether another (live) invocation holds the node's lease.
		action   *state.Action
		held     bool
		wantNote string
		wantAct  bool
		// wantIntent: the node's intent carries the warning's deadline.
		wantIntent bool
	}{
		{name: "handled: the drain is under way", action: &state.Action{Kind: state.KindInterruption, Step: state.StepDraining, NodeClaims: []string{"nc-a"}},
			wantNote: string(RecheckHandled), wantIntent: true},
		{name: "handled: done", action: &state.Action{Kind: state.KindInterruption, Step: state.StepDone, NodeClaims: []string{"nc-a"}},
			wantNote: string(RecheckHandled)},
		{name: "nobody handled it", wantAct: true, wantIntent: true},
		{name: "the lease is held", held: true, wantNote: string(RecheckHeld), wantIntent: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r *rig
			r = newRig(t, func(opts termination.DrainOptions, n int) termination.DrainResult { return r.blockedByPDB(opts, n) })
			if tc.action != nil {
				a := *tc.action
				a.ID = ActionPrefix + instanceA
				r.store.actions[a.ID] = &a
			}
			if tc.held {
				r.store.leases[state.LeaseNode("nc-a")] = fakeLease{holder: "first-delivery", until: warned.Add(time.Hour)}
			}
			var waits []time.Duration
			h := r.pausing(time.Second, &waits)
			h.Recheck = true
			var outs []Outcome
			h.After = func(_ events.SQSMessage, o []Outcome, _ error) { outs = o }
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if resp := h.HandleBatch(ctx, events.SQSEvent{Records: []events.SQSMessage{spotWarning("evt-1")}}); len(resp.BatchItemFailures) != 0 {
				t.Fatalf("failures %+v", resp.BatchItemFailures)
			}
			if len(outs) != 1 {
				t.Fatalf("outcomes %+v: want one", outs)
			}
			if outs[0].Acted != tc.wantAct || outs[0].Note != tc.wantNote {
				t.Errorf("outcome %+v: want acted %v, note %q", outs[0], tc.wantAct, tc.wantNote)
			}
			passes := r.drainer.passes()
			if tc.wantAct {
				a := r.store.action(ActionPrefix + instanceA)
				if a == nil || a.Step != state.StepDone || r.cap.replaces != 1 || len(passes) == 0 {
					t.Errorf("action %+v, %d replacements, %d drain passes: want the recheck to replace and drain the node", a, r.cap.replaces, len(passes))
				}
				return
			}
			if len(passes) != 0 || r.cap.replaces != 0 || len(waits) != 0 {
				t.Errorf("%d drain passes, %d replacements, waits %v: a recheck the first delivery is on does nothing, at once",
					len(passes), r.cap.replaces, waits)
			}
			rec := r.store.recs["nc-a"]
			got := rec.Disruption != nil && rec.Disruption.Deadline.Equal(deadline)
			if got != tc.wantIntent {
				t.Errorf("record's intent %+v: want the warning's deadline %v recorded: %v", rec.Disruption, deadline, tc.wantIntent)
			}
		})
	}
}
