package orchestration

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/provision"
	"github.com/nodewright/nodewright/shared/state"
)

// Karpenter's event reasons for an action's steps, on the objects
// Karpenter records them on, so that `kubectl get events --field-selector
// reason=DisruptionTerminating` answers as it does under Karpenter.
const (
	// EventDisruptionLaunching is on each replacement NodeClaim once
	// launched.
	EventDisruptionLaunching EventReason = "DisruptionLaunching"
	// EventDisruptionWaitingReadiness is on each replacement NodeClaim the
	// action waits on before it drains the candidates.
	EventDisruptionWaitingReadiness EventReason = "DisruptionWaitingReadiness"
	// EventDisruptionTerminating is on each candidate Node and its
	// NodeClaim once the drain begins.
	EventDisruptionTerminating EventReason = "DisruptionTerminating"
)

// NodeClaimRefs names a record's NodeClaim object for events, with its UID
// when the object exists (*provision.Reconciler).
type NodeClaimRefs interface {
	NodeClaimEventRef(ctx context.Context, rec *state.NodeClaim) provision.Ref
}

// claimRef is the event reference of rec's NodeClaim (by name alone when
// the executor has no NodeClaimRefs).
func (e *Executor) claimRef(ctx context.Context, rec *state.NodeClaim) provision.Ref {
	if e.Claims == nil {
		return provision.NodeClaimRef(rec.Name)
	}
	return e.Claims.NodeClaimEventRef(ctx, rec)
}

// launchingEvents records, on each replacement NodeClaim, that it was
// launched for the action and that the action waits for it to initialize
// (Karpenter records both as it launches).
func (e *Executor) launchingEvents(ctx context.Context, a *state.Action, launched []*state.NodeClaim) {
	replaces := strings.Join(a.NodeClaims, ", ")
	for _, l := range launched {
		e.Events.Event(ctx, e.claimRef(ctx, l), corev1.EventTypeNormal, string(EventDisruptionLaunching),
			fmt.Sprintf("Launching NodeClaim for disruption reason %s (%s): it replaces %s", a.Reason, a.Method, replaces))
	}
	e.waitingEvents(ctx, a, launched)
}

// waitingEvents records, on each replacement NodeClaim not yet
// initialized, that the action waits for it; as Karpenter does, each time
// it waits. The message stays the same, so the recorder counts the repeats
// on one Event.
func (e *Executor) waitingEvents(ctx context.Context, a *state.Action, waiting []*state.NodeClaim) {
	replaces := strings.Join(a.NodeClaims, ", ")
	for _, w := range waiting {
		e.Events.Event(ctx, e.claimRef(ctx, w), corev1.EventTypeNormal, string(EventDisruptionWaitingReadiness),
			fmt.Sprintf("Disruption of %s waits for this NodeClaim to initialize", replaces))
	}
}

// terminatingEvents records, on each candidate's Node and NodeClaim, that
// the action now drains and terminates it.
func (e *Executor) terminatingEvents(ctx context.Context, a *state.Action, cands []*state.NodeClaim) {
	for _, r := range cands {
		if r.NodeName != "" {
			e.event(ctx, r.NodeName, corev1.EventTypeNormal, EventDisruptionTerminating,
				fmt.Sprintf("Disrupting node for reason %s (%s): draining, then terminating", a.Reason, a.Method))
		}
		e.Events.Event(ctx, e.claimRef(ctx, r), corev1.EventTypeNormal, string(EventDisruptionTerminating),
			fmt.Sprintf("Disrupting NodeClaim for reason %s (%s): draining, then terminating", a.Reason, a.Method))
	}
}
