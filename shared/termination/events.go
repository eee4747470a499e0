package termination

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/state"
)

// EventReason is the reason of an event the terminator records: Karpenter's
// reasons on the objects Karpenter records them on, so that `kubectl get
// events --field-selector reason=Evicted` answers as it does under
// Karpenter.
type EventReason string

const (
	// EventEvicted is on each pod the Eviction API accepted.
	EventEvicted EventReason = "Evicted"
	// EventDisrupted is on each pod deleted at its node's termination
	// deadline, its PodDisruptionBudget and do-not-disrupt notwithstanding.
	EventDisrupted EventReason = "Disrupted"
	// EventFailedDraining is on a Node whose pods a budget (or a failed
	// call) kept from being evicted in a pass.
	EventFailedDraining EventReason = "FailedDraining"
	// EventTerminationGracePeriodExpiring is on a Node being drained
	// towards a deadline: the pods left then are deleted.
	EventTerminationGracePeriodExpiring EventReason = "TerminationGracePeriodExpiring"
	// EventFailedTermination is on a Node whose instance EC2 would not
	// terminate (Karpenter v1.14.1 declares the reason and records it
	// nowhere; Nodewright records it where termination fails).
	EventFailedTermination EventReason = "FailedTermination"
	// EventTerminated is Nodewright's own: the node was drained and its
	// instance terminated.
	EventTerminated EventReason = "Terminated"
)

// PodRef names a pod for its events.
type PodRef struct {
	Namespace, Name, UID string
}

// podRef is the reference of a pod given as namespace/name, with its UID
// when the drain knew it.
func podRef(nsName string, uids map[string]string) PodRef {
	ns, name, _ := strings.Cut(nsName, "/")
	return PodRef{Namespace: ns, Name: name, UID: uids[nsName]}
}

// nodeEventDedupe is how long the same drain event on the same object is
// not recorded again by a container: Karpenter's default dedupe timeout.
const nodeEventDedupe = 2 * time.Minute

// Recent dedupes the drain's Node and NodeClaim events within a
// container: a drain pass every second (an interruption's) would
// otherwise spend the object's event budget on repeats, and the events
// after them (Terminated) would be dropped. The zero value is ready; it is
// shared by the Terminators a container makes.
type Recent struct {
	mu   sync.Mutex
	last map[string]time.Time
}

// fresh is Fresh within nodeEventDedupe.
func (r *Recent) fresh(key string, now time.Time) bool {
	return r.Fresh(key, now, nodeEventDedupe)
}

// Fresh says whether key is due (not recorded within the window) and marks
// it recorded at now, forgetting keys older than the window; a nil Recent
// dedupes nothing.
func (r *Recent) Fresh(key string, now time.Time, within time.Duration) bool {
	if r == nil {
		return true
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.last == nil {
		r.last = map[string]time.Time{}
	}
	if at, ok := r.last[key]; ok && now.Sub(at) < within {
		return false
	}
	for k, at := range r.last {
		if now.Sub(at) >= within {
			delete(r.last, k)
		}
	}
	r.last[key] = now
	return true
}

// maxNamed is how many blocked pods a FailedDraining event names.
const maxNamed = 5

// drainEvents records what a drain pass did: Evicted and Disrupted on each
// pod it evicted or deleted, FailedDraining on the Node when a pod could
// not be evicted, and TerminationGracePeriodExpiring on the Node and its
// NodeClaim (rec, when there is one) while the drain runs towards a
// deadline. One event per pod is what Karpenter
// records too; the recorder aggregates repeats and rate-limits each
// object.
func (t *Terminator) drainEvents(ctx context.Context, n *corev1.Node, rec *state.NodeClaim, why string, deadline time.Time, res DrainResult) {
	if t.Events == nil {
		return
	}
	for _, p := range res.Evicted {
		t.Events.PodEvent(ctx, podRef(p, res.UIDs), corev1.EventTypeNormal, string(EventEvicted),
			fmt.Sprintf("Evicted from node %s, which is being disrupted: %s", n.Name, why))
	}
	for _, p := range res.Deleted {
		t.Events.PodEvent(ctx, podRef(p, res.UIDs), corev1.EventTypeNormal, string(EventDisrupted),
			fmt.Sprintf("Deleted to meet the termination deadline %s of node %s (%s): its PodDisruptionBudget and the karpenter.sh/do-not-disrupt annotation no longer hold it",
				deadline.UTC().Format(time.RFC3339), n.Name, why))
	}
	var refused []string
	for _, p := range res.Blocked {
		if w, ok := res.Why[p]; ok {
			refused = append(refused, p+" ("+w+")")
		}
	}
	if len(refused) > 0 {
		more := ""
		if len(refused) > maxNamed {
			more = fmt.Sprintf(" and %d more", len(refused)-maxNamed)
			refused = refused[:maxNamed]
		}
		msg := fmt.Sprintf("Failed to drain node: cannot evict %s%s", strings.Join(refused, ", "), more)
		if t.Recent.fresh(n.Name+"\x00"+string(EventFailedDraining)+"\x00"+msg, t.now()) {
			t.Events.NodeEvent(ctx, n, corev1.EventTypeWarning, string(EventFailedDraining), msg)
		}
	}
	if !res.Done && !deadline.IsZero() {
		msg := "Pods left on the node will be deleted by " + deadline.UTC().Format(time.RFC3339)
		if !t.Recent.fresh(n.Name+"\x00"+string(EventTerminationGracePeriodExpiring)+"\x00"+msg, t.now()) {
			return
		}
		t.Events.NodeEvent(ctx, n, corev1.EventTypeWarning, string(EventTerminationGracePeriodExpiring), msg)
		if rec != nil {
			t.Events.NodeClaimEvent(ctx, rec.Name, corev1.EventTypeWarning, string(EventTerminationGracePeriodExpiring), msg)
		}
	}
}
