package interruption

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/provision"
	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/shared/trigger"
)

// Karpenter's (its AWS provider's) event reasons for interruption
// messages, on the Node and its NodeClaim, so that `kubectl get events
// --field-selector reason=SpotInterrupted` answers as it does under
// Karpenter.
const (
	EventSpotInterrupted                        EventReason = "SpotInterrupted"
	EventSpotRebalanceRecommendation            EventReason = "SpotRebalanceRecommendation"
	EventInstanceUnhealthy                      EventReason = "InstanceUnhealthy"
	EventCapacityReservationInstanceInterrupted EventReason = "CapacityReservationInstanceInterrupted"
	EventInstanceStopping                       EventReason = "InstanceStopping"
	EventInstanceTerminating                    EventReason = "InstanceTerminating"
	// EventTerminatingOnInterruption: the message makes Nodewright drain
	// and replace the node.
	EventTerminatingOnInterruption EventReason = "TerminatingOnInterruption"
)

// notice is Karpenter's event for a message about an instance: its
// reason, type and message (ok false for a message Karpenter records
// nothing for).
func notice(in trigger.Interruption) (reason EventReason, eventType, message string, ok bool) {
	switch in.Kind {
	case trigger.KindSpotInterruption:
		return EventSpotInterrupted, corev1.EventTypeWarning, "EC2 sent a spot interruption warning for the instance", true
	case trigger.KindRebalanceRecommendation:
		return EventSpotRebalanceRecommendation, corev1.EventTypeNormal, "EC2 sent a rebalance recommendation for the spot instance", true
	case trigger.KindScheduledChange:
		return EventInstanceUnhealthy, corev1.EventTypeWarning, "AWS Health scheduled a change that affects the instance", true
	case trigger.KindCapacityReservationInterruption:
		return EventCapacityReservationInstanceInterrupted, corev1.EventTypeWarning, "EC2 is reclaiming the instance's capacity reservation", true
	case trigger.KindStateChange:
		switch in.State {
		case trigger.StateStopping, trigger.StateStopped:
			return EventInstanceStopping, corev1.EventTypeWarning, "The instance is stopping (" + in.State + ")", true
		case trigger.StateShuttingDown, trigger.StateTerminated:
			return EventInstanceTerminating, corev1.EventTypeWarning, "The instance is terminating (" + in.State + ")", true
		}
	}
	return "", "", "", false
}

// notify records Karpenter's event for the message on the instance's Node
// (when it has one) and its NodeClaim.
func (h *Handler) notify(ctx context.Context, in trigger.Interruption, rec *state.NodeClaim, node *corev1.Node) {
	reason, typ, msg, ok := notice(in)
	if !ok {
		return
	}
	h.onBoth(ctx, rec, node, typ, reason, msg)
}

// onBoth records one event on the Node (when there is one) and on the
// record's NodeClaim (named by its record: an interruption reads no
// NodeClaim object).
func (h *Handler) onBoth(ctx context.Context, rec *state.NodeClaim, node *corev1.Node, eventType string, reason EventReason, msg string) {
	if node != nil {
		h.Events.Event(ctx, provision.Ref{Kind: "Node", Name: node.Name, UID: string(node.UID)}, eventType, string(reason), msg)
	}
	h.Events.Event(ctx, provision.NodeClaimRef(rec.Name), eventType, string(reason), msg)
}
