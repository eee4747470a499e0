package state

import (
	"strings"
	"time"
)

// Cause is why a node is to go: the typed reason of its termination
// intent.
type Cause string

// Causes of a termination intent.
const (
	CauseConsolidation Cause = "consolidation" // emptiness, multi-node, single-node
	CauseExpiration    Cause = "expiration"    // expireAfter passed
	CauseDrift         Cause = "drift"         // the NodePool or EC2NodeClass changed
	CauseDeletion      Cause = "deletion"      // the Node was deleted (kubectl delete node)
	CauseOrphan        Cause = "orphan"        // an instance of ours no record claimed
	CauseInterruption  Cause = "interruption"  // spot warning, rebalance, scheduled change, state change
	CauseRepair        Cause = "repair"        // unhealthy past its repair toleration
	CauseScaleDown     Cause = "scale-down"    // a static NodePool's replicas were lowered
)

// Urgency orders termination intents: a more urgent one takes a node's
// intent over, a less urgent one only adds to it (Merge).
type Urgency int

// Urgencies, least urgent first.
const (
	// UrgencyVoluntary: Nodewright chose to remove the node
	// (consolidation, expiry, drift, repair); its action may still abandon it.
	UrgencyVoluntary Urgency = iota
	// UrgencyRequired: someone else asked for the node to go (the Node was
	// deleted, its instance has no record, its static NodePool was scaled
	// down); it is never abandoned.
	UrgencyRequired
	// UrgencyInvoluntary: the instance is going whatever Nodewright does
	// (an interruption): once it has a deadline, do-not-disrupt no longer
	// holds its pods.
	UrgencyInvoluntary
)

// IntentFor is a new intent of cause, owned by action, with its urgency.
func IntentFor(cause Cause, action, reason string, since, deadline time.Time) Disruption {
	return Disruption{Action: action, Reason: reason, Cause: cause, Urgency: cause.Urgency(), Since: since, Deadline: deadline}
}

// Urgency is the urgency of an intent of cause c.
func (c Cause) Urgency() Urgency {
	switch c {
	case CauseInterruption:
		return UrgencyInvoluntary
	case CauseDeletion, CauseOrphan, CauseScaleDown:
		return UrgencyRequired
	}
	return UrgencyVoluntary
}

// Normalize fills Cause and Urgency in an intent recorded before they
// existed, from its owner's action ID (interruption-..., deletion-...,
// consolidation-...). Pure.
func (d Disruption) Normalize() Disruption {
	if d.Cause == "" {
		switch {
		case strings.HasPrefix(d.Action, KindInterruption+"-"):
			d.Cause = CauseInterruption
		case strings.HasPrefix(d.Action, KindDeletion+"-"):
			d.Cause = CauseDeletion
		case strings.HasPrefix(d.Action, string(CauseOrphan)+"-"):
			d.Cause = CauseOrphan
		case strings.HasPrefix(d.Action, KindConsolidation+"-"+KindExpiration+"-"):
			d.Cause = CauseExpiration
		case strings.HasPrefix(d.Action, KindConsolidation+"-"+KindDrift+"-"):
			d.Cause = CauseDrift
		case strings.HasPrefix(d.Action, KindConsolidation+"-"+KindRepair+"-"):
			d.Cause = CauseRepair
		default:
			d.Cause = CauseConsolidation
		}
	}
	if u := d.Cause.Urgency(); u > d.Urgency {
		d.Urgency = u
	}
	return d
}

// OwnedBy reports whether action owns the intent.
func (d *Disruption) OwnedBy(action string) bool { return d != nil && d.Action == action }

// Forced reports whether the drain may evict pods annotated
// karpenter.sh/do-not-disrupt: the instance is going (involuntary) and
// has a deadline.
func (d Disruption) Forced() bool {
	return d.Normalize().Urgency >= UrgencyInvoluntary && !d.Deadline.IsZero()
}

// Merge folds a later intent into the one a record carries (cur, nil:
// none) and reports whether the result differs from cur. A later intent
// never drops an earlier one: the earlier deadline wins, the earlier
// start wins, the pods stay moving once they move, the more urgent cause
// and urgency win, and the owner changes only to a strictly more urgent
// one. Pure.
func Merge(cur *Disruption, later Disruption) (Disruption, bool) {
	later = later.Normalize()
	if cur == nil {
		return later, true
	}
	was := cur.Normalize()
	out := was
	if later.Urgency > out.Urgency {
		out.Action, out.Reason, out.Cause, out.Urgency = later.Action, later.Reason, later.Cause, later.Urgency
	}
	out.Deadline = Earliest(out.Deadline, later.Deadline)
	out.Since = Earliest(out.Since, later.Since)
	out.Reschedule = out.Reschedule || later.Reschedule
	return out, !sameIntent(*cur, out)
}

// Earliest is the earlier of two times, zero standing for none (no
// deadline).
func Earliest(a, b time.Time) time.Time {
	switch {
	case a.IsZero():
		return b
	case b.IsZero() || a.Before(b):
		return a
	}
	return b
}

func sameIntent(a, b Disruption) bool {
	return a.Action == b.Action && a.Reason == b.Reason && a.Cause == b.Cause && a.Urgency == b.Urgency &&
		a.Reschedule == b.Reschedule && a.Since.Equal(b.Since) && a.Deadline.Equal(b.Deadline)
}
