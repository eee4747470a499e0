package interruption

import "github.com/nodewright/nodewright/shared/state"

// A recheck delivery is the second, delayed delivery of an urgent event,
// from the recheck queue (names.InterruptionRecheckDelay after the first;
// trigger.RecheckDetailTypes). It exists for the one death the heartbeat
// cannot cover: an invocation that dies before its first call leaves its
// batch to the main queue's visibility timeout, minutes past a spot
// warning's deadline. A recheck that finds the first delivery at work
// (its action recorded, or the node's lease held) only records the event's
// deadline on the node's intent and acknowledges: the first delivery's
// heartbeat brings its message back within seconds if it dies, and a
// second invocation waiting on the lease would only hold a Lambda. A
// recheck that finds nothing handles the event as a first delivery.

// RecheckReason is why a recheck delivery was acknowledged without acting
// ("": it acts, as a first delivery).
type RecheckReason string

// Recheck reasons.
const (
	// RecheckActs: nobody handled the event: the recheck handles it.
	RecheckActs RecheckReason = ""
	// RecheckHandled: the node's interruption action exists (a first
	// delivery, or an earlier event for the instance, is on it or done).
	RecheckHandled RecheckReason = "recheck: the node's interruption is already recorded; acknowledged"
	// RecheckHeld: another invocation holds the node's lease.
	RecheckHeld RecheckReason = "recheck: another invocation holds the node; its deadline is recorded for it; acknowledged"
)

// recheckDecision is what a recheck delivery does about a node: act (as a
// first delivery) unless its interruption action exists or another
// invocation holds its lease.
func recheckDecision(action *state.Action, leaseHeld bool) RecheckReason {
	switch {
	case action != nil:
		return RecheckHandled
	case leaseHeld:
		return RecheckHeld
	default:
		return RecheckActs
	}
}
