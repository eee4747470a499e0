package kube

import (
	"sync"
	"time"
)

// PodHint names a pod the trigger of an invocation reports changed: the
// pod the webhook saw marked Unschedulable, a pod an audit event names.
type PodHint struct {
	Namespace, Name string
	// ResourceVersion, when known, is the pod's resourceVersion as the
	// hinter saw it before the change it reports (an admission review's
	// object carries the stored version it modifies): the change commits
	// at a later revision. Empty when unknown.
	ResourceVersion string
}

// Expect tells the cache which pods the current invocation's trigger names,
// so that its Syncs need not wait for the API server's bookmark when those
// pods are the news. It lasts until the next Expect; Expect(nil) (a sweep,
// a trigger that names no pod) restores the barrier for every Sync.
//
// What "up to date" then means. A hint is satisfied once the cache holds a
// change of its pod newer than the hint: one at a revision past the hint's
// ResourceVersion, or, without one, past the revision the cache had reached
// when Expect was called (a change the cache had not seen when the trigger
// arrived; the first such change, which for a pod created a moment ago is
// its creation). A list after Expect satisfies every hint (it is read after
// the trigger). While a hint is unsatisfied, each resource's catch-up ends
// at its barrier as without hints; once every hint is satisfied, and at
// least HintGrace after the Sync began, a catch-up still short of its
// barrier ends with what its watch has delivered. A watch delivers a
// resource's changes in revision order, so each store then holds every
// change of its resource up to the revision it reached (a consistent
// prefix of the cluster's history): the pods up to a revision at or past
// every hinted change, every other resource up to at least the revision of
// the previous Sync plus what arrived within the grace (in practice the
// changes the API server had buffered when the watch opened). Changes
// committed after those revisions and before the Sync began may be missing
// (ResourceStats.Hinted says which resources ended so): the next Sync
// without hints (the sweep, within a minute) reads them to its barrier.
//
// A hint that cannot be satisfied (its change was already applied by an
// earlier Sync, the pod was deleted before Expect) only costs the barrier's
// wait. A hint without a namespace and name (an audit event of a pod
// created with generateName) is ignored.
func (c *Cache) Expect(hints []PodHint) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.hints = nil
	base, _ := parseRV(c.pods.rv) // 0 when cold: the first Sync lists
	h := &hintState{want: map[string]uint64{}, satisfied: make(chan struct{})}
	named := 0
	for _, p := range hints {
		if p.Namespace == "" || p.Name == "" {
			continue
		}
		named++
		after := base
		if rv, ok := parseRV(p.ResourceVersion); ok {
			after = rv
		}
		k := p.Namespace + "/" + p.Name
		if o := c.pods.objs[k]; o != nil {
			if rv, ok := parseRV(o.ResourceVersion); ok && rv > after {
				continue // already newer than the hint
			}
		}
		h.want[k] = max(h.want[k], after)
	}
	if named == 0 {
		return
	}
	if len(h.want) == 0 {
		close(h.satisfied)
	}
	c.hints = h
}

// hintState tracks an Expect's hints: pod key -> the revision a change
// must be past to satisfy it.
type hintState struct {
	mu        sync.Mutex
	want      map[string]uint64
	satisfied chan struct{} // closed once want is empty
}

// seen records a change of the pod key applied at revision rv.
func (h *hintState) seen(key string, rv uint64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	after, ok := h.want[key]
	if !ok || rv <= after {
		return
	}
	delete(h.want, key)
	if len(h.want) == 0 {
		close(h.satisfied)
	}
}

// listed records a list of the pods, which satisfies every hint.
func (h *hintState) listed() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.want) > 0 {
		clear(h.want)
		close(h.satisfied)
	}
}

// early returns a channel closed once every hint is satisfied and grace
// has passed since start (nil, never closed, without hints), and a stop
// that releases what it started.
func (h *hintState) early(start time.Time, grace time.Duration, now func() time.Time) (<-chan struct{}, func()) {
	if h == nil {
		return nil, func() {}
	}
	ch, done := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-h.satisfied:
		case <-done:
			return
		}
		if wait := grace - now().Sub(start); wait > 0 {
			t := time.NewTimer(wait)
			defer t.Stop()
			select {
			case <-t.C:
			case <-done:
				return
			}
		}
		close(ch)
	}()
	return ch, func() { close(done); wg.Wait() }
}
