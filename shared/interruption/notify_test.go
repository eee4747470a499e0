package interruption

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nodewright/nodewright/shared/provision"
	"github.com/nodewright/nodewright/shared/termination"
	"github.com/nodewright/nodewright/shared/trigger"
)

// TestNoticeIsKarpentersReason: each message kind gets the reason
// Karpenter's AWS provider records for it; a state change it does not
// act on gets none.
func TestNoticeIsKarpentersReason(t *testing.T) {
	tests := []struct {
		in   trigger.Interruption
		want EventReason
		typ  string
	}{
		{trigger.Interruption{Kind: trigger.KindSpotInterruption}, EventSpotInterrupted, "Warning"},
		{trigger.Interruption{Kind: trigger.KindRebalanceRecommendation}, EventSpotRebalanceRecommendation, "Normal"},
		{trigger.Interruption{Kind: trigger.KindScheduledChange}, EventInstanceUnhealthy, "Warning"},
		{trigger.Interruption{Kind: trigger.KindCapacityReservationInterruption}, EventCapacityReservationInstanceInterrupted, "Warning"},
		{trigger.Interruption{Kind: trigger.KindStateChange, State: trigger.StateStopping}, EventInstanceStopping, "Warning"},
		{trigger.Interruption{Kind: trigger.KindStateChange, State: trigger.StateTerminated}, EventInstanceTerminating, "Warning"},
		{trigger.Interruption{Kind: trigger.KindStateChange, State: trigger.StateRunning}, "", ""},
		{trigger.Interruption{Kind: trigger.KindUnknown}, "", ""},
	}
	for _, tc := range tests {
		reason, typ, msg, ok := notice(tc.in)
		if reason != tc.want || typ != tc.typ || ok != (tc.want != "") || ok && msg == "" {
			t.Errorf("%s/%s: %q %q %q %v, want %q %q", tc.in.Kind, tc.in.State, reason, typ, msg, ok, tc.want, tc.typ)
		}
	}
}

// kindEvents records events as kind/name:reason.
type kindEvents struct {
	mu  sync.Mutex
	got []string
}

func (e *kindEvents) Event(_ context.Context, ref provision.Ref, _, reason, _ string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.got = append(e.got, ref.Kind+"/"+ref.Name+":"+reason)
}

// TestSpotWarningRecordsKarpentersEvents: a spot interruption warning for
// a node of ours records SpotInterrupted and TerminatingOnInterruption on
// its Node and its NodeClaim.
func TestSpotWarningRecordsKarpentersEvents(t *testing.T) {
	r := newRig(t, func(termination.DrainOptions, int) termination.DrainResult {
		return termination.DrainResult{Done: true}
	})
	if resp := r.deliver(time.Minute, spotWarning("evt-1")); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %+v", resp.BatchItemFailures)
	}
	for _, w := range []string{"Node/ip-a:SpotInterrupted", "NodeClaim/nc-a:SpotInterrupted",
		"Node/ip-a:TerminatingOnInterruption", "NodeClaim/nc-a:TerminatingOnInterruption"} {
		if !slices.Contains(r.events.got, w) {
			t.Errorf("events %v: want %s", r.events.got, w)
		}
	}
}
