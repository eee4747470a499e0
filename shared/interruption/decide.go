// Package interruption is the interruption function's logic: for each
// EventBridge event the queue delivers (spot interruption warnings,
// rebalance recommendations, instance state changes, AWS Health scheduled
// changes, capacity-reservation interruptions) it finds the NodeClaim of
// each instance named and, for Nodewright's own, marks the spot offering
// unavailable, taints and cordons the node, launches replacement capacity
// for its pods at once through the provision code path (under the node's
// own lease, so it never waits behind a provisioning round), drains the
// node honouring PodDisruptionBudgets until the instance's deadline, and
// terminates it through package termination. Every step is recorded in
// the state table, so a duplicate message does nothing new and a later
// invocation (or the provision sweep) carries on an unfinished drain. An
// event for a node another invocation holds records its deadline on the
// node's termination intent, which the holder's drain reads between
// passes, before the message is acknowledged.
package interruption

import (
	"fmt"
	"time"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/shared/trigger"
)

// AnnotationRebalance on a NodePool asks for proactive replacement of its
// nodes when EC2 recommends rebalancing (value "replace"). Without it a
// rebalance recommendation is recorded and reported as a Kubernetes event.
const AnnotationRebalance = "nodewright.io/rebalance"

// RebalanceReplace is AnnotationRebalance's value that replaces nodes.
const RebalanceReplace = "replace"

// ActionPrefix starts the disruption action ID of every interruption.
const ActionPrefix = "interruption-"

// Decision is what to do about one instance of an event.
type Decision struct {
	// Act: disrupt the node (replace, drain, terminate).
	Act bool
	// Reason is the disruption's reason (the event kind, and the state for
	// a state change).
	Reason string
	// Deadline is when the node goes whatever the drain achieved (zero:
	// drain honouring PDBs with no end).
	Deadline time.Time
	// MarkUnavailable: the instance's offering lost capacity (spot, or a
	// reservation taking its capacity back).
	MarkUnavailable bool
	// Note says why nothing is done, for the log.
	Note string
}

// actingStates are the instance states a state-change notification acts on.
var actingStates = map[string]bool{"stopping": true, "stopped": true, "shutting-down": true, "terminated": true}

// Decide says what an event means for one of Nodewright's NodeClaims; pool
// is the NodeClaim's NodePool (nil if it is no longer configured). now is
// when the message is handled. Pure.
func Decide(in trigger.Interruption, rec *state.NodeClaim, pool *apis.NodePool, now time.Time) Decision {
	switch in.Kind {
	case trigger.KindSpotInterruption:
		return Decision{Act: true, Reason: string(in.Kind), Deadline: in.Deadline, MarkUnavailable: rec.CapacityType == apis.CapacityTypeSpot}
	case trigger.KindCapacityReservationInterruption:
		// The reservation is taking its capacity back: no replacement or
		// other launch goes into it for a while (Karpenter marks it full).
		return Decision{Act: true, Reason: string(in.Kind), Deadline: in.Deadline, MarkUnavailable: rec.CapacityType == apis.CapacityTypeReserved}
	case trigger.KindScheduledChange:
		return Decision{Act: true, Reason: string(in.Kind), Deadline: in.Deadline}
	case trigger.KindStateChange:
		if !actingStates[in.State] {
			return Decision{Note: fmt.Sprintf("instance is %s: nothing to do", in.State)}
		}
		// The instance is going or gone: its pods cannot wait for a drain.
		return Decision{Act: true, Reason: string(in.Kind) + ":" + in.State, Deadline: now}
	case trigger.KindRebalanceRecommendation:
		if pool != nil && pool.Annotations[AnnotationRebalance] == RebalanceReplace {
			return Decision{Act: true, Reason: string(in.Kind)}
		}
		return Decision{Note: fmt.Sprintf("rebalance recommended: recorded (annotate the NodePool %s=%s to replace such nodes proactively)", AnnotationRebalance, RebalanceReplace)}
	}
	return Decision{Note: "unknown event kind"}
}

// EventReason is the reason of an event the interruption function records.
type EventReason string

// EventRebalanceRecommended is the event on a node EC2 recommends
// rebalancing, when its NodePool does not replace such nodes.
const EventRebalanceRecommended EventReason = "RebalanceRecommended"
