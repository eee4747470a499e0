package orchestration

import (
	"slices"
	"strings"
	"testing"

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
