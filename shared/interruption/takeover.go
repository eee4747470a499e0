package interruption

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/nodewright/nodewright/shared/state"
)

// urgentWithin: an intent whose deadline comes within this is carried on
// by the invocation that finds the node's lease held, once the holder is
// gone, rather than left to the sweep: the sweep comes a minute apart, and
// only after the lease lapses, which may be past a spot warning's
// deadline. A scheduled change, days away, is left to the holder and the
// sweep.
const urgentWithin = 10 * time.Minute

// invocationReserve is the time an invocation keeps in hand: it does not
// start a wait or a drain pass that would end closer than this to its
// timeout.
const invocationReserve = 10 * time.Second

// urgent reports whether an intent's deadline needs this invocation to
// take the node over if its holder dies.
func urgent(deadline, now time.Time) bool {
	return !deadline.IsZero() && deadline.Before(now.Add(urgentWithin))
}

// awaitLease waits while another invocation holds the node's lease: until
// the holder releases it or lets it lapse (it died), then takes it. It
// returns nil and no error when there is nothing left to take over: the
// node is retired, or the holder, alive, holds the lease past this
// invocation's time (it reads the intent this one recorded between its
// passes). The message's heartbeat goes on while it waits.
func (h *Handler) awaitLease(ctx context.Context, nodeClaim string, held *state.HeldError, hb *heartbeat, log *slog.Logger) (*state.Lease, error) {
	for {
		wait := max(held.Until.Sub(h.Now()), 0) + minWait
		if dl, ok := ctx.Deadline(); ok && time.Until(dl)-wait < invocationReserve {
			log.Info("the node's holder holds it past this invocation's time: it carries the recorded intent on",
				"nodeClaim", nodeClaim, "holder", held.Holder, "until", held.Until)
			return nil, nil
		}
		for wait > 0 {
			step := min(wait, hb.every/3)
			hb.beat(ctx)
			if err := h.sleep(ctx, step); err != nil {
				return nil, err
			}
			wait -= step
		}
		if _, err := h.Store.GetNodeClaim(ctx, nodeClaim); errors.Is(err, state.ErrNotFound) {
			return nil, nil // retired by the holder
		} else if err != nil {
			return nil, err
		}
		lease, err := h.Store.Acquire(ctx, state.LeaseNode(nodeClaim), h.Holder, h.leaseTTL())
		if err == nil {
			log.Info("took the node over", "nodeClaim", nodeClaim, "from", held.Holder)
			return lease, nil
		}
		if held = heldBy(err, h.Now()); held == nil {
			return nil, err
		}
	}
}

// minWait is the shortest wait for a lease (one just lapsed or released is
// tried again after it, never in a busy loop).
const minWait = 100 * time.Millisecond

// heldBy is the holder err reports (an ErrHeld without details: held as of
// now), or nil if err is not ErrHeld.
func heldBy(err error, now time.Time) *state.HeldError {
	var held *state.HeldError
	if errors.As(err, &held) {
		return held
	}
	if errors.Is(err, state.ErrHeld) {
		return &state.HeldError{Until: now}
	}
	return nil
}
