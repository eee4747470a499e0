package orchestration

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/nodewright/nodewright/shared/disruption"
)

// TestTickRecordsWhyNodesAreNotDisrupted: a tick records Karpenter's
// DisruptionBlocked and Unconsolidatable events on the nodes its decision
// could not disrupt (and their NodeClaims), by node, and a warm container does not record the same
// event again within Karpenter's 15-minute dedupe.
func TestTickRecordsWhyNodesAreNotDisrupted(t *testing.T) {
	r := newRig(t)
	run := &Run{Store: tickStore{runStore{s: r.store}}, Exec: r.e, Classes: fakeClasses{},
		Decide: func(disruption.Inputs) ([]disruption.Command, disruption.Report) {
			return nil, disruption.Report{
				Blocked:          map[string]string{"ip-b": "PodDisruptionBudget default/web allows no disruption now (pod default/web-1)", "ip-a": "node is annotated karpenter.sh/do-not-disrupt"},
				Unconsolidatable: map[string]string{"ip-c": "no cheaper replacement"},
			}
		},
	}
	tick := func() []string {
		t.Helper()
		r.events.reasons = nil
		if _, err := run.Tick(context.Background()); err != nil {
			t.Fatal(err)
		}
		return r.events.reasons
	}
	// ip-a is nc-a's node: its NodeClaim gets the event too.
	want := []string{"ip-a:DisruptionBlocked", "nc-a:DisruptionBlocked", "ip-b:DisruptionBlocked", "ip-c:Unconsolidatable"}
	if got := tick(); !slices.Equal(got, want) {
		t.Fatalf("events %v, want %v", got, want)
	}
	r.clock.Step(10 * time.Minute)
	if got := tick(); len(got) != 0 {
		t.Errorf("events %v again within 15 minutes", got)
	}
	r.clock.Step(6 * time.Minute)
	if got := tick(); !slices.Equal(got, want) {
		t.Errorf("events %v after 16 minutes, want %v again", got, want)
	}
}

// TestTickReachesTheRestNextTick: the candidates a decision's work budget
// kept it from reaching are the next tick's first (Inputs.ReachFirst),
// though each tick runs on its own copy of the Run (as the handler makes
// one per invocation).
func TestTickReachesTheRestNextTick(t *testing.T) {
	r := newRig(t)
	var seen [][]string
	run := &Run{Store: tickStore{runStore{s: r.store}}, Exec: r.e, Classes: fakeClasses{}, Carry: &Carry{},
		Decide: func(in disruption.Inputs) ([]disruption.Command, disruption.Report) {
			seen = append(seen, in.ReachFirst)
			return nil, disruption.Report{BudgetSpent: "deadline", Unreached: []string{"ip-b", "ip-c"}}
		},
	}
	for range 2 {
		tick := *run
		if _, err := tick.Tick(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if len(seen) != 2 || len(seen[0]) != 0 || !slices.Equal(seen[1], []string{"ip-b", "ip-c"}) {
		t.Errorf("decisions given %q first, want none, then the candidates the first did not reach", seen)
	}
}
