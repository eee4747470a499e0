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
		want   RecheckReason
	}{
		{"nobody handled the event", nil, RecheckActs},
		{"the first delivery recorded it", &state.Action{Step: state.StepDraining, Messages: []string{"evt-1"}}, RecheckHandled},
		{"done", &state.Action{Step: state.StepDone, Messages: []string{"evt-r", "evt-1"}}, RecheckHandled},
		{"an earlier event's action", &state.Action{Step: state.StepDraining, Messages: []string{"evt-r"}}, RecheckActs},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := recheckDecision(tc.action, "evt-1"); got != tc.want {
				t.Errorf("recheckDecision = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestRecheckDelivery: the recheck queue's delayed copy of a spot warning
// acknowledges at once, without acting or waiting, when the node's action
// records the warning (the first delivery got past its first call); it is
// handled as a first delivery otherwise: when nobody handled it (the first
// delivery's invocation died before its first call), when an earlier
// event's drain holds the action (a rebalance's, left to the sweep: it is
// carried to the warning's deadline), and when a live invocation holds the
// node past the recheck's time (the deadline is recorded for it).
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
		{name: "the first delivery is on it", action: &state.Action{Kind: state.KindInterruption, Step: state.StepDraining, NodeClaims: []string{"nc-a"}, Messages: []string{"evt-1"}},
			wantNote: string(RecheckHandled)},
		{name: "the first delivery is done", action: &state.Action{Kind: state.KindInterruption, Step: state.StepDone, NodeClaims: []string{"nc-a"}, Messages: []string{"evt-1"}},
			wantNote: string(RecheckHandled)},
		{name: "nobody handled it", wantAct: true, wantIntent: true},
		{name: "a rebalance's drain left to the sweep", action: &state.Action{Kind: state.KindInterruption, Step: state.StepDraining, NodeClaims: []string{"nc-a"}, Messages: []string{"evt-r"}},
			wantAct: true, wantIntent: true},
		{name: "a live holder past the recheck's time", held: true, wantNote: "another invocation handled this node: its deadline was recorded for it", wantIntent: true},
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
			if tc.wantAct != (len(r.drainer.passes()) > 0) || (!tc.wantAct && outs[0].Note != tc.wantNote) {
				t.Errorf("outcome %+v, %d drain passes: want acted %v, note %q", outs[0], len(r.drainer.passes()), tc.wantAct, tc.wantNote)
			}
			if tc.wantAct {
				if a := r.store.action(ActionPrefix + instanceA); a == nil || a.Step != state.StepDone {
					t.Errorf("action %+v: want the recheck to drain the node to the deadline", a)
				}
				return
			}
			if r.cap.replaces != 0 || len(waits) != 0 {
				t.Errorf("%d replacements, waits %v: want nothing done, at once", r.cap.replaces, waits)
			}
			rec := r.store.recs["nc-a"]
			got := rec.Disruption != nil && rec.Disruption.Deadline.Equal(deadline)
			if got != tc.wantIntent {
				t.Errorf("record's intent %+v: want the warning's deadline %v recorded: %v", rec.Disruption, deadline, tc.wantIntent)
			}
		})
	}
}
