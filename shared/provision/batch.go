package provision

import (
	"context"
	"time"

	"github.com/nodewright/nodewright/shared/snapshot"
)

// Batching defaults, as Karpenter batches pending pods.
const (
	DefaultBatchIdle = time.Second
	DefaultBatchMax  = 10 * time.Second
	batchPoll        = 100 * time.Millisecond
)

// Settle waits for the pending set to settle before a solve: until no new
// unschedulable pod has appeared for idle, or max has passed since it began
// waiting, or nothing is pending. A pod that has been around for longer
// than idle when Settle starts does not make it wait (its creation time
// stands for when it appeared), so a sweep over old pending pods solves at
// once, while a burst of new pods is solved together. It returns how long
// it waited.
func (r *Reconciler) Settle(ctx context.Context, idle, max time.Duration) (time.Duration, error) {
	if err := r.init(); err != nil {
		return 0, err
	}
	if idle <= 0 {
		idle = DefaultBatchIdle
	}
	if max <= 0 {
		max = DefaultBatchMax
	}
	start := r.Now()
	seen := map[string]bool{}
	var newest time.Time
	for {
		v, err := r.Source.View(ctx)
		if err != nil {
			return r.Now().Sub(start), err
		}
		now := r.Now()
		pending := 0
		for _, p := range v.Pods {
			if !snapshot.Provisionable(p) {
				continue
			}
			pending++
			if seen[string(p.UID)] {
				continue
			}
			seen[string(p.UID)] = true
			at := now
			if c := p.CreationTimestamp.Time; len(seen) > 0 && c.Before(now) {
				// Second precision: a pod created in this second counts as now.
				if c.Add(time.Second).Before(now) {
					at = c
				}
			}
			if at.After(newest) {
				newest = at
			}
		}
		waited := now.Sub(start)
		if pending == 0 || now.Sub(newest) >= idle || waited >= max {
			return waited, nil
		}
		wait := min(batchPoll, idle-now.Sub(newest), max-waited)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return r.Now().Sub(start), ctx.Err()
		case <-t.C:
		}
	}
}
