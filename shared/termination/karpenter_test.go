package termination

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/metrics"
	"github.com/nodewright/nodewright/shared/state"
)

func TestKarpenterDisruptionReason(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		intent state.Disruption
		want   string
		ok     bool
	}{
		{"underutilized", state.IntentFor(state.CauseConsolidation, "consolidation-x", "Underutilized", t0, time.Time{}), "underutilized", true},
		{"empty", state.IntentFor(state.CauseConsolidation, "consolidation-x", "Empty", t0, time.Time{}), "empty", true},
		{"drift", state.IntentFor(state.CauseDrift, "consolidation-x", "Drifted", t0, time.Time{}), "drifted", true},
		{"expiry", state.IntentFor(state.CauseExpiration, "consolidation-x", "Expired", t0, time.Time{}), "expired", true},
		{"spot", state.IntentFor(state.CauseInterruption, "interruption-x", "SpotInterruption", t0, t0), "spot_interrupted", true},
		{"stopped", state.IntentFor(state.CauseInterruption, "interruption-x", "StateChange:stopping", t0, t0), "instance_stopped", true},
		{"orphan", state.IntentFor(state.CauseOrphan, "orphan-x", "", t0, time.Time{}), "garbage_collected", true},
		{"deleted by someone", state.IntentFor(state.CauseDeletion, "deletion-x", "", t0, time.Time{}), "", false},
	} {
		got, ok := KarpenterDisruptionReason(tc.intent)
		if got != tc.want || ok != tc.ok {
			t.Errorf("%s: %q, %v; want %q, %v", tc.name, got, ok, tc.want, tc.ok)
		}
	}
}

// A retired node counts as a Node terminated, a NodeClaim terminated and
// a disruption, with the record's pool, zone and capacity type; a
// record-less Node with its labels', and no NodeClaim.
func TestKarpenterRetired(t *testing.T) {
	var m metrics.Recorder
	tr := &Terminator{Metrics: &m}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{
		apis.LabelNodePool: "labeled", corev1.LabelTopologyZone: "us-east-1b", apis.LabelCapacityType: "on-demand"}}}
	rec := &state.NodeClaim{Name: "a", NodePool: "default", Zone: "us-east-1a", CapacityType: "spot",
		Disruption: &state.Disruption{Action: "consolidation-1", Reason: "Empty", Cause: state.CauseConsolidation}}
	tr.karpenterRetired(Request{Node: node}, rec)
	tr.karpenterRetired(Request{Node: node, Intent: state.Disruption{Action: "orphan-1", Cause: state.CauseOrphan}}, nil)
	tr.karpenterTerminateFailed()
	nodes := m.Points(metrics.KarpenterNodesTerminated)
	if len(nodes) != 2 || nodes[0].Dims[metrics.LabelZone] != "us-east-1a" || nodes[1].Dims[metrics.LabelNodePool] != "labeled" {
		t.Errorf("nodes terminated %+v", nodes)
	}
	if p := m.Points(metrics.KarpenterNodeClaimsTerminated); len(p) != 1 || p[0].Dims[metrics.LabelCapacityType] != "spot" {
		t.Errorf("nodeclaims terminated %+v", p)
	}
	d := m.Points(metrics.KarpenterNodeClaimsDisrupted)
	if len(d) != 2 || d[0].Dims[metrics.LabelReason] != "empty" || d[1].Dims[metrics.LabelReason] != "garbage_collected" || d[1].Dims[metrics.LabelCapacityType] != "on-demand" {
		t.Errorf("disrupted %+v", d)
	}
	if p := m.Points(metrics.KarpenterCloudProviderErrors); len(p) != 1 || p[0].Dims[metrics.LabelMethod] != "Delete" {
		t.Errorf("errors %+v", p)
	}
}
