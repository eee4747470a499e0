package handlers

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/nodewright/nodewright/shared/interruption"
)

// Interruption handles batches from the interruption queue.
type Interruption struct {
	Env Env
	Log *slog.Logger
	// Setup builds the handler's dependencies on the first invocation
	// (kept warm; setup.Interruption).
	Setup func(ctx context.Context) (*interruption.Deps, error)
	Now   func() time.Time
	// AfterMessage, when set, sees what each message did (tests).
	AfterMessage func(events.SQSMessage, []interruption.Outcome, error)
	// Queue, when set, brings each failed message back after
	// RetryVisibility (nil: after the queue's visibility timeout).
	Queue Redelivery
	// RetryVisibility is how soon a failed message comes back (0:
	// names.InterruptionRetryVisibility).
	RetryVisibility time.Duration

	mu   sync.Mutex
	deps *interruption.Deps
}

// Handle handles every message of the batch on its own: a message that
// cannot be decoded or whose handling fails (or panics) is reported as a
// batch item failure, so SQS retries it alone (within RetryVisibility) and,
// after the queue's receive limit, moves it to the DLQ; the rest of the
// batch succeeds.
func (h *Interruption) Handle(ctx context.Context, ev events.SQSEvent) (resp events.SQSEventResponse, err error) {
	defer recovered(h.Log, &err)
	h.mu.Lock()
	if h.deps == nil && h.Setup != nil {
		d, serr := h.Setup(ctx)
		if serr != nil {
			h.mu.Unlock()
			h.Log.Error("interruption set-up failed", "error", serr)
			return resp, serr
		}
		h.deps = d
	}
	d := h.deps
	h.mu.Unlock()
	now := h.Now
	if now == nil {
		now = time.Now
	}
	log := h.Log.With("requestId", requestID(ctx))
	ih := interruption.New(d, now, log, requestID(ctx))
	ih.After = h.AfterMessage
	resp = ih.HandleBatch(ctx, ev)
	h.retrySoon(ctx, log, ev, resp)
	return resp, nil
}
