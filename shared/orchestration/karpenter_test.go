package orchestration

import (
	"testing"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/disruption"
	"github.com/nodewright/nodewright/shared/metrics"
	"github.com/nodewright/nodewright/shared/state"
)

func TestKarpenterDecisionAndBudgets(t *testing.T) {
	var m metrics.Recorder
	e := &Executor{Metrics: &m}
	e.karpenterDecision(&state.Action{Method: string(disruption.MethodSingleNode), Reason: "Underutilized", Replacements: []string{"r"}})
	e.karpenterDecision(&state.Action{Method: string(disruption.MethodDrift), Reason: "Drifted"})
	e.karpenterBudgets(map[string]map[apis.DisruptionReason]int{"default": {apis.DisruptionReasonEmpty: 2, apis.DisruptionReasonDrifted: 0}})
	d := m.Points(metrics.KarpenterVoluntaryDisruptionDecisions)
	want := []metrics.Dims{
		{metrics.LabelDecision: "replace", metrics.LabelReason: "underutilized", metrics.LabelConsolidationType: "single"},
		{metrics.LabelDecision: "delete", metrics.LabelReason: "drifted", metrics.LabelConsolidationType: "none"},
	}
	if len(d) != len(want) {
		t.Fatalf("decisions %+v", d)
	}
	for i, w := range want {
		for k, v := range w {
			if d[i].Dims[k] != v {
				t.Errorf("decision %d: %s = %q, want %q", i, k, d[i].Dims[k], v)
			}
		}
	}
	b := m.Points(metrics.KarpenterNodePoolsAllowedDisruptions)
	if len(b) != 2 || b[0].Dims[metrics.LabelReason] != "Drifted" || b[0].Value != 0 || b[1].Value != 2 {
		t.Errorf("budgets %+v", b)
	}
	for m, want := range map[disruption.Method]string{disruption.MethodEmptiness: "empty", disruption.MethodMultiNode: "multi", disruption.MethodExpiration: "none"} {
		if got := ConsolidationType(m); got != want {
			t.Errorf("ConsolidationType(%s) = %s, want %s", m, got, want)
		}
	}
}
