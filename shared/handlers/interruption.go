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

	mu   sync.Mutex
	deps *interruption.Deps
}

// Handle handles every message of the batch on its own: a message that
// cannot be decoded or whose handling fails (or panics) is reported as a
// batch item failure, so SQS retries it alone and, after the queue's
// receive limit, moves it to the DLQ; the rest of the batch succeeds.
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
	ih := interruption.New(d, now, h.Log.With("requestId", requestID(ctx)), requestID(ctx))
	ih.After = h.AfterMessage
	return ih.HandleBatch(ctx, ev), nil
}
