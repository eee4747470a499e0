package interruption

import (
	"slices"

	"github.com/nodewright/nodewright/shared/state"
)

// A recheck delivery is the second, delayed delivery of an urgent event,
// from the recheck queue (names.InterruptionRecheckDelay after the first;
// trigger.RecheckDetailTypes). It exists for the one death the heartbeat
// cannot cover: an invocation that dies before its first call leaves its
// batch to the main queue's visibility timeout, minutes past a spot
// warning's deadline. A recheck whose event the node's action already
// records acknowledges: the first delivery got past its first call, and its
// heartbeat brings its message back within seconds if it dies. Any other
// recheck is handled as a first delivery: it records the deadline, and
// takes the node's lease or waits for its holder, as a first delivery
// would (an earlier event's drain, a rebalance's or one left to the sweep,
// may hold the node without anyone to carry it to this deadline).

// RecheckReason is why a recheck delivery was acknowledged without acting
// ("": it is handled as a first delivery).
type RecheckReason string

// Recheck reasons.
const (
	// RecheckActs: the first delivery left no trace: the recheck handles
	// the event.
	RecheckActs RecheckReason = ""
	// RecheckHandled: the node's interruption action records the event.
	RecheckHandled RecheckReason = "recheck: the first delivery recorded this event; acknowledged"
)

// recheckDecision is what a recheck delivery of event does about a node
// whose interruption action is action (nil: none).
func recheckDecision(action *state.Action, event string) RecheckReason {
	if action != nil && slices.Contains(action.Messages, event) {
		return RecheckHandled
	}
	return RecheckActs
}
