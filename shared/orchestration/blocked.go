package orchestration

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/disruption"
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

// dedupe remembers the events a warm container recorded, by node, reason
// and message.
type dedupe struct {
	mu   sync.Mutex
	last map[string]time.Time
}

// fresh says whether the event is due (not recorded within eventDedupe),
// and marks it recorded at now.
func (d *dedupe) fresh(key string, now time.Time) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.last == nil {
		d.last = map[string]time.Time{}
	}
	if at, ok := d.last[key]; ok && now.Sub(at) < eventDedupe {
		return false
	}
	for k, at := range d.last {
		if now.Sub(at) >= eventDedupe {
			delete(d.last, k)
		}
	}
	d.last[key] = now
	return true
}

// notDisruptedEvents records, on each node the run's report says it could
// not disrupt, Karpenter's event: DisruptionBlocked or Unconsolidatable,
// with the reason, sorted by node, each at most once per eventDedupe.
func (r *Run) notDisruptedEvents(ctx context.Context, rep disruption.Report) {
	now := r.Exec.Now()
	r.nodeEvents(ctx, EventDisruptionBlocked, rep.Blocked, now)
	r.nodeEvents(ctx, EventUnconsolidatable, rep.Unconsolidatable, now)
}

// nodeEvents records reason on each node of nodes with its message, sorted
// by node, unless recorded within eventDedupe.
func (r *Run) nodeEvents(ctx context.Context, reason EventReason, nodes map[string]string, now time.Time) {
	for _, node := range slices.Sorted(maps.Keys(nodes)) {
		msg := nodes[node]
		if r.Exec.seen.fresh(node+"\x00"+string(reason)+"\x00"+msg, now) {
			r.Exec.event(ctx, node, corev1.EventTypeNormal, reason, msg)
		}
	}
}
