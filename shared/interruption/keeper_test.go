package interruption

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/shared/termination"
)

// leaseLeft is how long the node's lease has left on the rig's clock, and
// whether holder holds it.
func (r *rig) leaseLeft(holder string) (time.Duration, bool) {
	r.store.mu.Lock()
	defer r.store.mu.Unlock()
	l, ok := r.store.leases[state.LeaseNode("nc-a")]
	return l.until.Sub(r.clock.Now()), ok && l.holder == holder
}

// renewedWithin waits (real time, bounded) until holder's lease has more
// than left to run on the rig's clock: the keeper looks at the clock every
// leaseCheck.
func (r *rig) renewedWithin(holder string, left time.Duration) bool {
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		if l, ok := r.leaseLeft(holder); ok && l > left {
			return true
		}
		time.Sleep(time.Millisecond)
	}
	return false
}

// TestDrainPassLongerThanTheLease (issue 22, bench-scale): a drain pass
// whose evictions wait on the client-side rate limit takes 30 s, three
// times the lease's TTL. The invocation is alive and working: its lease
// must not lapse during the pass (another invocation could take the node
// over), and the renewal after the pass must not find it lost (every
// warning failed with "renew lease node#…: lease lost" at 100 warnings).
func TestDrainPassLongerThanTheLease(t *testing.T) {
	var r *rig
	const holder = "req-long"
	var lapsed time.Time
	r = newRig(t, func(_ termination.DrainOptions, n int) termination.DrainResult {
		if n > 1 {
			return termination.DrainResult{Done: true, Evicted: []string{"default/web-2"}}
		}
		for range 30 { // one eviction a second, the others waiting on the rate limit
			r.clock.Step(time.Second)
			if lapsed.IsZero() && !r.renewedWithin(holder, DefaultLeaseTTL/2) {
				lapsed = r.clock.Now()
			}
		}
		return termination.DrainResult{Evicted: []string{"default/web-0", "default/web-1"}, Remaining: []string{"default/web-2"}}
	})
	r.leaseTTL = DefaultLeaseTTL
	h := r.handler(holder)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var herr error
	h.After = func(_ events.SQSMessage, _ []Outcome, err error) { herr = err }
	resp := h.HandleBatch(ctx, events.SQSEvent{Records: []events.SQSMessage{spotWarning("evt-1")}})
	if len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %+v: %v", resp.BatchItemFailures, herr)
	}
	if !lapsed.IsZero() {
		t.Errorf("the node's lease ran down to half its TTL at %s, %s into the pass, its holder alive and draining", lapsed, lapsed.Sub(warned))
	}
	if a := r.store.action(ActionPrefix + instanceA); a == nil || a.Step != state.StepDone || a.Evicted != 3 {
		t.Errorf("action %+v: want done, 3 evicted", a)
	}
	// About one renewal a third of the TTL: ~9 in 30 s, not one a pass.
	if n := r.store.renewals; n < 6 || n > 12 {
		t.Errorf("%d renewals in a 30 s drain: want about one every %s", n, DefaultLeaseTTL/3)
	}
}

// TestLeaseLostDuringAPassStopsTheWork: the fence. Mid-pass, another
// invocation holds the node's lease (this one's ran out as seen by the
// table): the keeper's renewal finds it lost, the work's context ends, and
// the message fails with the lease lost rather than draining on.
func TestLeaseLostDuringAPassStopsTheWork(t *testing.T) {
	var r *rig
	const holder = "req-fenced"
	var stopped bool
	r = newRig(t, func(_ termination.DrainOptions, n int) termination.DrainResult {
		r.store.mu.Lock()
		r.store.leases[state.LeaseNode("nc-a")] = fakeLease{holder: "req-other", until: r.clock.Now().Add(time.Hour)}
		r.store.mu.Unlock()
		r.clock.Step(DefaultLeaseTTL / 2)
		return termination.DrainResult{Remaining: []string{"default/web-0"}, Blocked: []string{"default/web-0"}}
	})
	r.leaseTTL = DefaultLeaseTTL
	h := r.handler(holder)
	h.Wait = func(ctx context.Context, d time.Duration) error {
		select {
		case <-ctx.Done():
			stopped = true
			return ctx.Err()
		case <-time.After(3 * time.Second):
			return nil
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var herr error
	h.After = func(_ events.SQSMessage, _ []Outcome, err error) { herr = err }
	resp := h.HandleBatch(ctx, events.SQSEvent{Records: []events.SQSMessage{spotWarning("evt-1")}})
	if len(resp.BatchItemFailures) != 1 || !errors.Is(herr, state.ErrLeaseLost) || !strings.Contains(herr.Error(), "lease lost") {
		t.Fatalf("failures %+v, error %v: want the message failed with the lease lost", resp.BatchItemFailures, herr)
	}
	if !stopped {
		t.Error("the pause after the pass ran its course: want the lost lease to end the work's context")
	}
	if n := len(r.drainer.passes()); n != 1 {
		t.Errorf("%d drain passes: want the work stopped after the first", n)
	}
}
