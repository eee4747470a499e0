package orchestration

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/nodewright/nodewright/shared/disruption"
	"github.com/nodewright/nodewright/shared/state"
)

// TestLifecycleEventsOnKarpenterObjects: each step of an action records
// Karpenter's reason on the object Karpenter records it on: the
// replacement NodeClaim as it launches and is waited on, the candidate's
// Node and NodeClaim as the drain begins.
func TestLifecycleEventsOnKarpenterObjects(t *testing.T) {
	tests := []struct {
		name    string
		replace bool
		want    []string
		notWant []string
	}{
		{name: "replace", replace: true, want: []string{
			"NodeClaim/{repl}:DisruptionLaunching", "NodeClaim/{repl}:DisruptionWaitingReadiness",
			"Node/ip-a:DisruptionTerminating", "NodeClaim/nc-a:DisruptionTerminating",
		}},
		{name: "delete", want: []string{"Node/ip-a:DisruptionTerminating", "NodeClaim/nc-a:DisruptionTerminating"},
			notWant: []string{"DisruptionLaunching", "DisruptionWaitingReadiness"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			a := r.start(command(tc.replace))
			r.clock.Step(validationWait)
			r.advance(a)
			if tc.replace {
				repl := r.stored(a.ID).Replacements[0]
				for i, w := range tc.want {
					tc.want[i] = strings.ReplaceAll(w, "{repl}", repl)
				}
				r.store.setPhase(repl, state.Initialized)
				r.advance(a)
			}
			got := r.events.onKinds
			for _, w := range tc.want {
				if !slices.Contains(got, w) {
					t.Errorf("events %v: want %s", got, w)
				}
			}
			for _, g := range got {
				for _, n := range tc.notWant {
					if strings.HasSuffix(g, ":"+n) {
						t.Errorf("event %s: a deletion launches nothing", g)
					}
				}
			}
		})
	}
}

// TestLifecycleEventsSurviveAnInvocationEnding: the invocation that
// launches a replacement may end at any call after the launch, and the
// replacement's events are on it all the same: they are recorded before
// the action is written, and each later invocation that waits on the
// replacement records DisruptionWaitingReadiness again, as Karpenter does
// each time it waits.
func TestLifecycleEventsSurviveAnInvocationEnding(t *testing.T) {
	tests := []struct {
		name string
		// endAtWrite: the action's write with its replacement fails;
		// otherwise the invocation's events after that write are lost.
		endAtWrite bool
	}{
		{name: "ends at the action's write", endAtWrite: true},
		{name: "ends right after the action's write"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			a := r.start(command(true))
			r.clock.Step(validationWait)
			if tc.endAtWrite {
				r.store.failIf = func(a *state.Action) bool { return len(a.Replacements) > 0 }
			}
			_, err := r.e.Advance(context.Background(), &state.Lease{}, a, func(context.Context) (disruption.Inputs, error) {
				return disruption.Inputs{}, nil
			})
			if tc.endAtWrite {
				if err == nil {
					t.Fatal("the failed write went unreported")
				}
				var launched []string
				for _, rec := range r.store.recs {
					if strings.Contains(rec.Reason, a.ID) {
						launched = append(launched, rec.Name)
					}
				}
				if len(launched) != 1 {
					t.Fatalf("launched %v, want one replacement", launched)
				}
				for _, w := range []string{"DisruptionLaunching", "DisruptionWaitingReadiness"} {
					if want := "NodeClaim/" + launched[0] + ":" + w; !slices.Contains(r.events.onKinds, want) {
						t.Errorf("the invocation ended at the action's write: events %v, want %s", r.events.onKinds, want)
					}
				}
			} else if err != nil {
				t.Fatal(err)
			}
			r.store.failIf = nil
			r.rebuild() // a later invocation; the events above are not its own
			a = r.stored(a.ID)
			r.advance(a)
			repl := r.stored(a.ID).Replacements
			if len(repl) != 1 {
				t.Fatalf("replacements %v, want the one launched", repl)
			}
			if want := "NodeClaim/" + repl[0] + ":DisruptionWaitingReadiness"; !slices.Contains(r.events.onKinds, want) {
				t.Errorf("a later invocation waits on %s: events %v, want %s", repl[0], r.events.onKinds, want)
			}
		})
	}
}

// TestTerminatingEventsSurviveTheDrainsWrite: the candidates are marked
// before the action is written at draining, so an invocation that ends at
// that write has already recorded DisruptionTerminating on them.
func TestTerminatingEventsSurviveTheDrainsWrite(t *testing.T) {
	r := newRig(t)
	a := r.start(command(false))
	r.clock.Step(validationWait)
	r.store.failPut = state.StepDraining
	if _, err := r.e.Advance(context.Background(), &state.Lease{}, a, func(context.Context) (disruption.Inputs, error) {
		return disruption.Inputs{}, nil
	}); err == nil {
		t.Fatal("the failed write went unreported")
	}
	for _, want := range []string{"Node/ip-a:DisruptionTerminating", "NodeClaim/nc-a:DisruptionTerminating"} {
		if !slices.Contains(r.events.onKinds, want) {
			t.Errorf("the invocation ended at the draining write: events %v, want %s", r.events.onKinds, want)
		}
	}
}
