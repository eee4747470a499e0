package termination

import (
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/metrics"
	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/shared/trigger"
)

// karpenterRetired publishes the twins of Karpenter's counters for a node
// retired: its Node deleted, its NodeClaim terminated and, unless someone
// deleted the Node, its disruption.
func (t *Terminator) karpenterRetired(req Request, rec *state.NodeClaim) {
	pool, zone, ct := "", "", ""
	if req.Node != nil {
		pool, zone, ct = req.Node.Labels[apis.LabelNodePool], req.Node.Labels[corev1.LabelTopologyZone], req.Node.Labels[apis.LabelCapacityType]
	}
	intent := req.Intent
	if rec != nil {
		pool, zone, ct = rec.NodePool, rec.Zone, rec.CapacityType
		if rec.Disruption != nil {
			intent = *rec.Disruption
		}
	}
	pool, zone, ct = orUnknown(pool), orUnknown(zone), orUnknown(ct)
	if req.Node != nil {
		t.emit(metrics.KarpenterNodesTerminated, 1, metrics.Dims{metrics.LabelNodePool: pool, metrics.LabelZone: zone})
	}
	if rec != nil {
		t.emit(metrics.KarpenterNodeClaimsTerminated, 1, metrics.Dims{metrics.LabelNodePool: pool, metrics.LabelCapacityType: ct, metrics.LabelZone: zone})
	}
	if reason, ok := KarpenterDisruptionReason(intent); ok {
		t.emit(metrics.KarpenterNodeClaimsDisrupted, 1, metrics.Dims{metrics.LabelReason: reason, metrics.LabelNodePool: pool, metrics.LabelCapacityType: ct})
	}
}

// karpenterTerminateFailed counts a failed TerminateInstances as Karpenter
// counts a failed cloud provider Delete.
func (t *Terminator) karpenterTerminateFailed() {
	t.emit(metrics.KarpenterCloudProviderErrors, 1, metrics.Dims{
		metrics.LabelController: metrics.ControllerNodeClaimLifecycle, metrics.LabelMethod: "Delete",
		metrics.LabelProvider: metrics.ProviderAWS, metrics.LabelError: metrics.ErrorUnknown,
	})
}

// KarpenterDisruptionReason is the reason label Karpenter gives a NodeClaim
// disrupted with this intent: the disruption reason in lower case
// (underutilized, empty, drifted, expired), the interruption message's
// type, garbage_collected for an instance no record claimed. A Node someone
// deleted is no disruption to Karpenter: false.
func KarpenterDisruptionReason(d state.Disruption) (string, bool) {
	d = d.Normalize()
	switch d.Cause {
	case state.CauseDeletion, state.CauseScaleDown:
		// A static NodePool's scale-down deletes the NodeClaim, as Karpenter's does.
		return "", false
	case state.CauseOrphan:
		return "garbage_collected", true
	case state.CauseInterruption:
		kind, st, _ := strings.Cut(d.Reason, ":")
		return trigger.KarpenterMessageType(trigger.Kind(kind), st), true
	case state.CauseExpiration:
		return "expired", true
	case state.CauseDrift:
		return "drifted", true
	}
	if d.Reason == "" {
		return "unknown", true
	}
	return strings.ToLower(d.Reason), true
}

// orUnknown is a label value: CloudWatch refuses an empty one.
func orUnknown(v string) string {
	if v == "" {
		return "unknown"
	}
	return v
}
