package state

import (
	"testing"
	"time"
)

func TestMergeNeverDropsAnEarlierIntent(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	consolidate := IntentFor(CauseConsolidation, "consolidation-single-node-1-abcd", "Underutilized", t0, t0.Add(time.Hour))
	consolidate.Reschedule = true
	spot := IntentFor(CauseInterruption, "interruption-i-a", "SpotInterruption", t0.Add(time.Minute), t0.Add(3*time.Minute))
	rebalance := IntentFor(CauseInterruption, "interruption-i-a", "RebalanceRecommendation", t0, time.Time{})
	deleted := IntentFor(CauseDeletion, "deletion-ip-a", "Deleted", t0.Add(2*time.Minute), t0.Add(2*time.Minute+30*time.Second))
	for _, tc := range []struct {
		name        string
		cur         *Disruption
		later       Disruption
		wantOwner   string
		wantCause   Cause
		wantDL      time.Time
		wantSince   time.Time
		wantResched bool
		wantChanged bool
	}{
		{name: "none yet", later: spot, wantOwner: spot.Action, wantCause: CauseInterruption, wantDL: spot.Deadline, wantSince: spot.Since, wantChanged: true},
		{name: "spot warning on a consolidated node: owner and deadline change", cur: &consolidate, later: spot,
			wantOwner: spot.Action, wantCause: CauseInterruption, wantDL: spot.Deadline, wantSince: t0, wantResched: true, wantChanged: true},
		{name: "consolidation after an interruption keeps the interruption", cur: &spot, later: consolidate,
			wantOwner: spot.Action, wantCause: CauseInterruption, wantDL: spot.Deadline, wantSince: t0, wantResched: true, wantChanged: true},
		{name: "spot warning shortens a rebalance's deadline", cur: &rebalance, later: spot,
			wantOwner: rebalance.Action, wantCause: CauseInterruption, wantDL: spot.Deadline, wantSince: t0, wantChanged: true},
		{name: "a deletion keeps the interruption's owner but its own earlier deadline", cur: &spot, later: deleted,
			wantOwner: spot.Action, wantCause: CauseInterruption, wantDL: deleted.Deadline, wantSince: spot.Since, wantChanged: true},
		{name: "the same intent again changes nothing", cur: &spot, later: spot,
			wantOwner: spot.Action, wantCause: CauseInterruption, wantDL: spot.Deadline, wantSince: spot.Since},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, changed := Merge(tc.cur, tc.later)
			if got.Action != tc.wantOwner || got.Cause != tc.wantCause || !got.Deadline.Equal(tc.wantDL) || !got.Since.Equal(tc.wantSince) ||
				got.Reschedule != tc.wantResched || changed != tc.wantChanged {
				t.Errorf("Merge = %+v (changed %v); want owner %s, cause %s, deadline %s, since %s, reschedule %v, changed %v",
					got, changed, tc.wantOwner, tc.wantCause, tc.wantDL, tc.wantSince, tc.wantResched, tc.wantChanged)
			}
		})
	}
}

func TestNormalizeInfersTheCauseOfOldRecords(t *testing.T) {
	for action, want := range map[string]Cause{
		"interruption-i-0a":                      CauseInterruption,
		"deletion-ip-a":                          CauseDeletion,
		"consolidation-drift-1-abcd":             CauseDrift,
		"consolidation-expiration-1-abcd":        CauseExpiration,
		"consolidation-single-node-1-abcd":       CauseConsolidation,
		"orphan-i-0a":                            CauseOrphan,
		"consolidation-emptiness-1764230400-abc": CauseConsolidation,
	} {
		d := Disruption{Action: action}.Normalize()
		if d.Cause != want || d.Urgency != want.Urgency() {
			t.Errorf("%s: cause %s urgency %d, want %s %d", action, d.Cause, d.Urgency, want, want.Urgency())
		}
	}
	if (Disruption{Action: "interruption-i-0a"}).Forced() {
		t.Error("an interruption without a deadline is forced")
	}
	if !(Disruption{Action: "interruption-i-0a", Deadline: time.Unix(1, 0)}).Forced() {
		t.Error("an interruption with a deadline is not forced")
	}
}
