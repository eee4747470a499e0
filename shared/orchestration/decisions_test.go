package orchestration

import (
	"strings"
	"testing"

	"github.com/nodewright/nodewright/shared/state"
)

func TestActionDecisionCarriesThePrices(t *testing.T) {
	base := state.Action{ID: "consolidation-single-node-1-ab", Kind: state.KindConsolidation, Method: "single-node", Reason: "Underutilized",
		NodeClaims: []string{"default-a"}, Nodes: []string{"ip-1"}, PriceBefore: 0.192, PriceAfter: 0.0416}
	for _, tc := range []struct {
		step, cause, explanation string
		want                     []string
	}{
		{step: state.StepPlanned, explanation: "replace m5.xlarge with t3.medium", want: []string{"consolidation single-node planned: Underutilized ip-1, $0.1920/h -> $0.0416/h", "; replace m5.xlarge"}},
		{step: state.StepDone, want: []string{"single-node done", "$0.1920/h -> $0.0416/h", "replacements default-r"}},
		{step: state.StepAbandoned, cause: "a pod of default-a has karpenter.sh/do-not-disrupt", want: []string{"abandoned (a pod of default-a has karpenter.sh/do-not-disrupt)"}},
	} {
		a := base
		a.Step, a.Cause = tc.step, tc.cause
		if tc.step == state.StepDone {
			a.Replacements = []string{"default-r"}
		}
		d := ActionDecision(&a, tc.explanation)
		for _, w := range tc.want {
			if !strings.Contains(d.Summary, w) {
				t.Errorf("%s: summary %q lacks %q", tc.step, d.Summary, w)
			}
		}
		if d.Function != "consolidation" || d.Kind != "consolidation-"+tc.step || d.Action == nil ||
			d.Action.PriceBefore != 0.192 || d.Action.PriceAfter != 0.0416 || d.Action.Step != tc.step || d.Action.NodeClaims[0] != "default-a" || d.Action.Cause != tc.cause {
			t.Errorf("%s: decision %+v action %+v", tc.step, d, d.Action)
		}
	}
}
