package interruption

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nodewright/nodewright/shared/state"
)

// leaseCheck is how often (real time) a keeper looks at the handler's
// clock to see whether the node's lease is due for renewal.
const leaseCheck = 100 * time.Millisecond

// keeper keeps a node's lease alive while an invocation works on the node,
// however long one step of the work takes (a drain pass whose evictions
// wait on the client-side rate limit may outlast the lease). It renews the
// lease a third of its TTL after the last renewal, on the handler's clock,
// from its own goroutine; the work's context ends with the lease lost
// (state.ErrLeaseLost) as soon as a renewal finds the lease no longer the
// holder's, or the lease runs out unrenewed. If the invocation dies, the
// goroutine dies with it and the lease lapses within its TTL, so another
// invocation takes the node over as before.
type keeper struct {
	store  Store
	lease  state.Lease // a copy: the work reads the caller's
	ttl    time.Duration
	now    func() time.Time
	log    *slog.Logger
	cancel context.CancelCauseFunc
	stop   chan struct{}
	done   sync.WaitGroup

	mu   sync.Mutex
	last time.Time // the last renewal (or the acquisition)
	err  error     // the lease was lost
}

// keep starts keeping lease alive; the work runs with the context it
// returns, and calls stop (which waits for the goroutine) when done.
func (h *Handler) keep(ctx context.Context, lease *state.Lease, log *slog.Logger) (context.Context, *keeper) {
	wctx, cancel := context.WithCancelCause(ctx)
	k := &keeper{store: h.Store, lease: *lease, ttl: h.leaseTTL(), now: h.Now, log: log, cancel: cancel,
		stop: make(chan struct{}), last: h.Now()}
	k.lease.Asks = nil
	k.done.Add(1)
	go k.run(wctx)
	return wctx, k
}

func (k *keeper) run(ctx context.Context) {
	defer k.done.Done()
	t := time.NewTicker(min(leaseCheck, k.ttl/3))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-k.stop:
			return
		case <-t.C:
		}
		k.mu.Lock()
		last := k.last
		k.mu.Unlock()
		now := k.now()
		if now.Sub(last) < k.ttl/3 {
			continue
		}
		err := k.store.Renew(ctx, &k.lease, k.ttl)
		if err == nil {
			k.mu.Lock()
			k.last = now
			k.mu.Unlock()
			continue
		}
		if ctx.Err() != nil {
			return
		}
		if !errors.Is(err, state.ErrLeaseLost) && now.Before(last.Add(k.ttl)) {
			// A failed write (throttled, say): the lease is still ours
			// until it runs out; try again at the next check.
			k.log.Warn("renew the node's lease: trying again", "lease", k.lease.Name, "error", err)
			continue
		}
		if !errors.Is(err, state.ErrLeaseLost) {
			err = fmt.Errorf("renew lease %s: it ran out unrenewed: %w (%w)", k.lease.Name, state.ErrLeaseLost, err)
		}
		k.mu.Lock()
		k.err = err
		k.mu.Unlock()
		k.cancel(err)
		return
	}
}

// lost is the error that ended the lease (nil while it is held).
func (k *keeper) lost() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.err
}

// end stops the goroutine and waits for it: after end, nothing renews the
// lease. err is the work's error; if the lease was lost meanwhile, the
// loss is the error (the work stopped because of it).
func (k *keeper) end(err error) error {
	close(k.stop)
	k.done.Wait()
	k.cancel(nil)
	if lost := k.lost(); lost != nil {
		if err == nil || !errors.Is(err, state.ErrLeaseLost) {
			return lost
		}
	}
	return err
}
