package termination

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/nodewright/nodewright/shared/state"
)

// failingFleet refuses every termination.
type failingFleet struct{}

func (failingFleet) Terminate(context.Context, []string) error {
	return errors.New("UnauthorizedOperation")
}

// TestTerminationEventsOnKarpenterObjects: each drain pass and each
// termination records Karpenter's reason on the object Karpenter records
// it on (pods for what happened to them, the Node for the drain and the
// termination).
func TestTerminationEventsOnKarpenterObjects(t *testing.T) {
	deadline := t0.Add(10 * time.Minute)
	tests := []struct {
		name     string
		pass     DrainResult
		deadline time.Time
		fail     bool
		want     []string
		notWant  []string
		uid      string // the UID the event on default/web-0 names
	}{
		{name: "evicted pods, each named with its UID", deadline: deadline,
			pass:    DrainResult{Done: true, Evicted: []string{"default/web-0", "default/web-1"}, UIDs: map[string]string{"default/web-0": "u-0"}},
			want:    []string{"Pod/default/web-0:Evicted", "Pod/default/web-1:Evicted", "Node/ip-a:Terminated"},
			notWant: []string{"Node/ip-a:TerminationGracePeriodExpiring", "Node/ip-a:FailedDraining"}, uid: "u-0"},
		{name: "a budget refuses: the node failed draining, its pods go at the deadline", deadline: deadline,
			pass: DrainResult{Blocked: []string{"default/web-0"}, Remaining: []string{"default/web-0"},
				Why: map[string]string{"default/web-0": "evicting it violates a PodDisruptionBudget"}},
			want:    []string{"Node/ip-a:FailedDraining", "Node/ip-a:TerminationGracePeriodExpiring", "NodeClaim/nc-a:TerminationGracePeriodExpiring"},
			notWant: []string{"Node/ip-a:Terminated"}},
		{name: "a do-not-disrupt pod waits: no failure, and no deadline to announce",
			pass:    DrainResult{Blocked: []string{"default/web-0"}, Remaining: []string{"default/web-0"}},
			notWant: []string{"Node/ip-a:FailedDraining", "Node/ip-a:TerminationGracePeriodExpiring"}},
		{name: "pods deleted at the deadline are disrupted", deadline: deadline,
			pass: DrainResult{Done: true, Deleted: []string{"default/web-0"}, UIDs: map[string]string{"default/web-0": "u-0"}},
			want: []string{"Pod/default/web-0:Disrupted"}, notWant: []string{"Pod/default/web-0:Evicted"}, uid: "u-0"},
		{name: "EC2 refuses the termination", fail: true, pass: DrainResult{Done: true},
			want: []string{"Node/ip-a:FailedTermination"}, notWant: []string{"Node/ip-a:Terminated"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig()
			ev := &fakeEvents{}
			r.t.Events = ev
			if tc.fail {
				r.t.Fleet = failingFleet{}
			}
			r.drainer.step = func(string, DrainOptions, int) DrainResult { return tc.pass }
			rec := r.record("nc-a", "i-a")
			intent := state.IntentFor(state.CauseConsolidation, "consolidation-1", "Underutilized", t0, tc.deadline)
			_, err := r.t.Step(context.Background(), Request{Node: node("ip-a", "i-a"), Record: rec, Intent: intent})
			if (err != nil) != tc.fail {
				t.Fatalf("step: %v", err)
			}
			for _, w := range tc.want {
				if !slices.Contains(ev.got, w) {
					t.Errorf("events %v: want %s", ev.got, w)
				}
			}
			for _, n := range tc.notWant {
				if slices.Contains(ev.got, n) {
					t.Errorf("events %v: want no %s", ev.got, n)
				}
			}
			if tc.uid != "" && ev.uids["default/web-0"] != tc.uid {
				t.Errorf("the event on default/web-0 names UID %q, want %q", ev.uids["default/web-0"], tc.uid)
			}
		})
	}
}

// TestDrainEventsDedupedAcrossPasses: a drain a budget blocks, passed
// every second, records FailedDraining and TerminationGracePeriodExpiring
// once per Karpenter's 2-minute dedupe, so that the Node's event budget is
// left for what follows (Terminated); a terminator without Recent records
// each pass.
func TestDrainEventsDedupedAcrossPasses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		recent *Recent
		want   int // FailedDraining events over 3 passes a second apart, then one 2 minutes later
	}{
		{name: "deduped", recent: &Recent{}, want: 2},
		{name: "no dedupe", want: 4},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig()
			ev := &fakeEvents{}
			r.t.Events, r.t.Recent = ev, tc.recent
			r.drainer.step = func(string, DrainOptions, int) DrainResult {
				return DrainResult{Blocked: []string{"default/web-0"}, Remaining: []string{"default/web-0"},
					Why: map[string]string{"default/web-0": "evicting it violates a PodDisruptionBudget"}}
			}
			rec := r.record("nc-a", "i-a")
			intent := state.IntentFor(state.CauseConsolidation, "consolidation-1", "Underutilized", t0, t0.Add(10*time.Minute))
			pass := func() {
				if _, err := r.t.Drain(context.Background(), Request{Node: node("ip-a", "i-a"), Record: rec, Intent: intent}); err != nil {
					t.Fatal(err)
				}
			}
			for range 3 {
				pass()
				r.clock.Step(time.Second)
			}
			r.clock.Step(2 * time.Minute)
			pass()
			count := func(w string) int {
				n := 0
				for _, g := range ev.got {
					if g == w {
						n++
					}
				}
				return n
			}
			if got := count("Node/ip-a:FailedDraining"); got != tc.want {
				t.Errorf("%d FailedDraining events, want %d (%v)", got, tc.want, ev.got)
			}
			if got := count("Node/ip-a:TerminationGracePeriodExpiring"); got != tc.want {
				t.Errorf("%d TerminationGracePeriodExpiring events, want %d", got, tc.want)
			}
		})
	}
}
