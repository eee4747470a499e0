package orchestration

import (
	"context"
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

// TestRepairCountsAsKarpenterUnhealthyDisrupted: starting a repair counts
// karpenter_nodeclaims_unhealthy_disrupted_total by the condition it
// repairs, the pool, the capacity type and the image; another method's
// action does not.
func TestRepairCountsAsKarpenterUnhealthyDisrupted(t *testing.T) {
	for _, tc := range []struct {
		name   string
		method disruption.Method
		want   int
	}{{"repair", disruption.MethodRepair, 1}, {"single-node", disruption.MethodSingleNode, 0}} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			var m metrics.Recorder
			r.e.Metrics = &m
			rec := r.store.rec("nc-a")
			rec.CapacityType, rec.ImageID = "spot", "ami-0abc"
			r.store.put(rec)
			cmd := command(false)
			cmd.Method, cmd.Condition = tc.method, "Ready"
			recs, _ := r.store.NodeClaims(context.Background())
			if _, err := r.e.Start(context.Background(), cmd, recs); err != nil {
				t.Fatal(err)
			}
			p := m.Points(metrics.KarpenterNodeClaimsUnhealthyDisrupted)
			if len(p) != tc.want {
				t.Fatalf("points %+v, want %d", p, tc.want)
			}
			if tc.want == 1 {
				want := metrics.Dims{metrics.LabelCondition: "Ready", metrics.LabelNodePool: "default", metrics.LabelCapacityType: "spot", metrics.LabelImageID: "ami-0abc"}
				for k, v := range want {
					if p[0].Dims[k] != v {
						t.Errorf("%s = %q, want %q", k, p[0].Dims[k], v)
					}
				}
			}
		})
	}
}

// TestStartRecordsDriftReason: a drift command's typed reason lands on the
// action and on its node's record (Karpenter's Drifted condition reason),
// which status and explain show.
func TestStartRecordsDriftReason(t *testing.T) {
	r := newRig(t)
	cmd := command(false)
	cmd.Method, cmd.Reason, cmd.Drift = disruption.MethodDrift, disruption.ReasonDrifted, disruption.DriftSubnet
	a := r.start(cmd)
	if got := r.stored(a.ID); got.Drift != string(disruption.DriftSubnet) || got.Reason != string(disruption.ReasonDrifted) {
		t.Errorf("action reason %q drift %q, want Drifted and SubnetDrift", got.Reason, got.Drift)
	}
	if rec := r.store.rec("nc-a"); rec.Disruption == nil || rec.Disruption.Drift != string(disruption.DriftSubnet) {
		t.Errorf("record disruption %+v, want SubnetDrift", rec.Disruption)
	}
}
