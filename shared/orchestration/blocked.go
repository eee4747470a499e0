package orchestration

import (
	"context"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/disruption"
	"github.com/nodewright/nodewright/shared/provision"
	"github.com/nodewright/nodewright/shared/state"
)

// Karpenter's event reasons for nodes a run could not disrupt, so that
// `kubectl get events --field-selector reason=Unconsolidatable` answers as
// it does under Karpenter.
const (
	// EventDisruptionBlocked is on a node a do-not-disrupt annotation or a
	// PodDisruptionBudget holds.
	EventDisruptionBlocked EventReason = "DisruptionBlocked"
	// EventUnconsolidatable is on a node consolidation considered and could
	// neither delete nor replace by cheaper capacity.
	EventUnconsolidatable EventReason = "Unconsolidatable"
)

// eventDedupe is how long the same event on the same node is not recorded
// again by a container (Karpenter's dedupe timeout for these events): a
// run every minute would otherwise write one per node per minute.
const eventDedupe = 15 * time.Minute

// notDisruptedEvents records, on each node the run's report says it could
// not disrupt and on its NodeClaim (as Karpenter records them on both),
// Karpenter's event: DisruptionBlocked or Unconsolidatable, with the
// reason, sorted by node, each at most once per eventDedupe.
func (r *Run) notDisruptedEvents(ctx context.Context, rep disruption.Report, records []*state.NodeClaim) {
	now := r.Exec.Now()
	claims := map[string]string{} // node -> NodeClaim
	for _, rec := range records {
		if rec.NodeName != "" {
			claims[rec.NodeName] = rec.Name
		}
	}
	r.nodeEvents(ctx, EventDisruptionBlocked, rep.Blocked, claims, now)
	r.nodeEvents(ctx, EventUnconsolidatable, rep.Unconsolidatable, claims, now)
}

// nodeEvents records reason on each node of nodes, and on its NodeClaim,
// with its message, sorted by node, unless recorded within eventDedupe.
// The NodeClaim is named by its record; the event recorder reads its UID
// (once per NodeClaim, cached) so that `kubectl describe nodeclaim` lists it.
func (r *Run) nodeEvents(ctx context.Context, reason EventReason, nodes, claims map[string]string, now time.Time) {
	for _, node := range slices.Sorted(maps.Keys(nodes)) {
		msg := nodes[node]
		if r.Exec.seen.Fresh(node+"\x00"+string(reason)+"\x00"+msg, now, eventDedupe) {
			r.Exec.event(ctx, node, corev1.EventTypeNormal, reason, msg)
			if nc := claims[node]; nc != "" {
				r.Exec.Events.Event(ctx, provision.NodeClaimRef(nc), corev1.EventTypeNormal, string(reason), msg)
			}
		}
	}
}
