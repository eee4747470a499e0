package provision

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/termination"
)

// Terminator is the terminator over the reconciler's state table, fleet,
// Node writes, drainer, events and metrics: the sweep retires nodes
// through it, and so do the interruption and consolidation functions.
func (r *Reconciler) Terminator() *termination.Terminator {
	_ = r.init()
	t := &termination.Terminator{
		Store: r.Store, Fleet: r.Fleet, Drainer: r.Drainer, Events: NodeEvents{r.Events}, Metrics: r.Metrics,
		Leases: r.Store, Actions: r.Store, Now: r.Now, Log: r.Log, Recent: &r.drainEvents,
	}
	if r.Nodes != nil {
		t.Nodes = r.Nodes
	}
	return t
}

// NodeEvents records the events of Nodes and their pods through Events
// (termination.Events).
type NodeEvents struct{ Events Events }

// NodeEvent records one event about n.
func (e NodeEvents) NodeEvent(ctx context.Context, n *corev1.Node, eventType, reason, message string) {
	if e.Events != nil {
		e.Events.Event(ctx, Ref{Kind: "Node", Name: n.Name, UID: string(n.UID)}, eventType, reason, message)
	}
}

// PodEvent records one event about a pod.
func (e NodeEvents) PodEvent(ctx context.Context, p termination.PodRef, eventType, reason, message string) {
	if e.Events != nil {
		e.Events.Event(ctx, Ref{Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID}, eventType, reason, message)
	}
}

// NodeClaimEvent records one event about a record's NodeClaim, by name
// (the terminator reads no NodeClaim object).
func (e NodeEvents) NodeClaimEvent(ctx context.Context, name, eventType, reason, message string) {
	if e.Events != nil {
		e.Events.Event(ctx, NodeClaimRef(name), eventType, reason, message)
	}
}
