package provision

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/pause"
	"github.com/nodewright/nodewright/shared/podstate"
	"github.com/nodewright/nodewright/shared/trigger"
)

// Batching defaults, as Karpenter batches pending pods.
const (
	DefaultBatchIdle = time.Second
	DefaultBatchMax  = 10 * time.Second
	batchPoll        = 100 * time.Millisecond
)

// Settle waits for the pending set to settle before a solve: until no new
// pending pod has appeared for idle, or max has passed since it began
// waiting, or nothing is pending. It returns what it did (how long it
// waited, how often it looked and how long the looks took). Looks read
// only the pods when the source can (PodSource).
//
// A pending pod is one kube-scheduler marked Unschedulable, or one it has
// not evaluated yet (no node, no PodScheduled condition: a pod just
// created, which the webhook's hint arrives with). Each pod counts once, as
// an arrival:
//   - pods present at the first look arrived when they became
//     unschedulable (the PodScheduled=False condition's lastTransitionTime)
//     or, not evaluated yet, when they were created; both are stamped to
//     the second, so the arrival is taken as the end of that second (never
//     later than now): a sweep over old pending pods solves at once, a pod
//     marked a moment ago still opens the window;
//   - pods that appear at a later look arrived then, whatever their
//     timestamps say (as Karpenter's batcher, where each new pod resets the
//     idle timer): on a busy machine kube-scheduler marks pods late, and
//     they still belong to the burst being batched.
func (r *Reconciler) Settle(ctx context.Context, idle, max time.Duration) (Batched, error) {
	var out Batched
	if err := r.init(); err != nil {
		return out, err
	}
	if idle <= 0 {
		idle = DefaultBatchIdle
	}
	if max <= 0 {
		max = DefaultBatchMax
	}
	start := r.Now()
	b := newBatch(idle, max, start)
	for {
		before := r.Now()
		pods, err := r.lookAtPods(ctx)
		now := r.Now()
		out.Looks++
		out.Looking += now.Sub(before)
		out.Waited = now.Sub(start)
		if err != nil {
			return out, err
		}
		// The look shows the cluster as of some moment between before and
		// now: it is taken as of before. A pod it shows for the first
		// time counts as arriving then (at worst a look's duration early),
		// and no arrival since before-idle means the burst is over. So a
		// slow look delays neither the arrivals nor the window's end by
		// its own duration; looks start batchPoll apart (or back to back
		// when a look takes longer).
		wait, done := b.observe(pods, before)
		out.Pending = b.pending
		if done {
			return out, nil
		}
		took := now.Sub(before)
		if pause := min(batchPoll, wait) - took; pause > 0 {
			if err := r.sleep(ctx, pause); err != nil {
				out.Waited = r.Now().Sub(start)
				return out, err
			}
		} else if err := ctx.Err(); err != nil {
			return out, err
		}
	}
}

// Expect tells the cluster source, when it can use them (Expecter), which
// pods the trigger names: the reads that follow need not wait for the API
// server's bookmark once those pods' changes are in. Expect(nil) (a sweep,
// a round after the first) makes them read to the barrier again.
func (r *Reconciler) Expect(pods []trigger.PodRef) {
	if e, ok := r.Source.(Expecter); ok {
		e.Expect(pods)
	}
}

// lookAtPods reads the cluster's pods: only the pods when the source can
// (a cheaper read), else a whole view.
func (r *Reconciler) lookAtPods(ctx context.Context) ([]*corev1.Pod, error) {
	if ps, ok := r.Source.(PodSource); ok {
		return ps.Pods(ctx)
	}
	v, err := r.Source.View(ctx)
	if err != nil {
		return nil, err
	}
	return v.Pods, nil
}

// Batched is what one Settle did.
type Batched struct {
	// Waited is the time from Settle's start to its decision.
	Waited time.Duration `json:"waited"`
	// Looks counts the reads of the cluster; Looking is the time they took
	// (part of Waited).
	Looks   int           `json:"looks"`
	Looking time.Duration `json:"looking"`
	// Pending counts the pending pods of the last look.
	Pending int `json:"pending"`
}

// batch is Settle's decision: which pods arrived when, and whether the
// window is over. It takes plain values and keeps no clock of its own.
type batch struct {
	idle, max time.Duration
	start     time.Time
	seen      map[string]bool
	looks     int
	pending   int       // pending pods at the last look
	newest    time.Time // the latest arrival
}

func newBatch(idle, max time.Duration, start time.Time) *batch {
	return &batch{idle: idle, max: max, start: start, seen: map[string]bool{}}
}

// observe takes one look at the cluster's pods at now. It returns done
// when the window is over (nothing pending, idle since the latest arrival,
// or max since the start), else how long until it would be.
func (b *batch) observe(pods []*corev1.Pod, now time.Time) (wait time.Duration, done bool) {
	first := b.looks == 0
	b.looks++
	pending := 0
	for _, p := range pods {
		since, ok := pendingSince(p)
		if !ok {
			continue
		}
		pending++
		key := string(p.UID)
		if key == "" {
			key = p.Namespace + "/" + p.Name
		}
		if b.seen[key] {
			continue
		}
		b.seen[key] = true
		at := now
		if first {
			// Stamped to the second: it arrived before since+1s.
			if end := since.Add(time.Second); end.Before(now) {
				at = end
			}
		}
		if at.After(b.newest) {
			b.newest = at
		}
	}
	b.pending = pending
	waited := now.Sub(b.start)
	if pending == 0 || now.Sub(b.newest) >= b.idle || waited >= b.max {
		return 0, true
	}
	return min(b.idle-now.Sub(b.newest), b.max-waited), false
}

// pendingSince says whether p waits for capacity, and since when: a pod
// kube-scheduler marked Unschedulable (since the condition's transition,
// else its creation), or one it has not evaluated yet (since its creation).
// Bound, nominated, terminating and finished pods, and DaemonSet and mirror
// pods, are not pending.
func pendingSince(p *corev1.Pod) (time.Time, bool) {
	if podstate.Provisionable(p) {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && !c.LastTransitionTime.IsZero() {
				return c.LastTransitionTime.Time, true
			}
		}
		return p.CreationTimestamp.Time, true
	}
	if p.Spec.NodeName != "" || p.Status.NominatedNodeName != "" || !podstate.Active(p) {
		return time.Time{}, false
	}
	if podstate.OwnedBy(p, "DaemonSet", "Node") {
		return time.Time{}, false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return time.Time{}, false // evaluated: scheduled, gated, or waiting for something else
		}
	}
	return p.CreationTimestamp.Time, true
}

// Backlog counts the pods kube-scheduler has not evaluated yet (pending by
// pendingSince with no PodScheduled condition) that were created before
// before: a pod is evaluated within moments of its creation, so these are
// a burst it is still working through, whose Unschedulable marks are still
// to come. Pods of another scheduler count too, and stay.
func Backlog(pods []*corev1.Pod, before time.Time) int {
	n := 0
	for _, p := range pods {
		if since, ok := pendingSince(p); ok && !podstate.Provisionable(p) && since.Before(before) {
			n++
		}
	}
	return n
}

// sleep waits d on the reconciler's timer (r.wait in tests).
func (r *Reconciler) sleep(ctx context.Context, d time.Duration) error {
	return pause.For(ctx, d, r.wait)
}
