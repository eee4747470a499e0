package disruption

import (
	"testing"

	"github.com/nodewright/nodewright/shared/apis"
)

// The report gives each pool's allowed disruptions per reason as the run
// began (karpenter_nodepools_allowed_disruptions), before its commands
// spend them.
func TestReportAllowedDisruptions(t *testing.T) {
	w := newWorld()
	w.pools[0].Spec.Disruption.Budgets = []apis.Budget{budget("3"), budget("1", apis.DisruptionReasonDrifted)}
	w.emptyNodes("e", 10)
	cmds, rep := w.decide(t)
	if len(cmds) == 0 {
		t.Fatal("no command: the budget's use is not exercised")
	}
	want := map[apis.DisruptionReason]int{apis.DisruptionReasonEmpty: 3, apis.DisruptionReasonUnderutilized: 3, apis.DisruptionReasonDrifted: 1}
	got := rep.Allowed["default"]
	if len(got) != len(want) {
		t.Fatalf("allowed %v, want %v", rep.Allowed, want)
	}
	for r, n := range want {
		if got[r] != n {
			t.Errorf("allowed %s = %d, want %d", r, got[r], n)
		}
	}
}
