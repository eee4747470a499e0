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
	// Queue, when set, keeps each message out of sight while it is worked
	// on (names.InterruptionHeartbeat at a time, so a message whose
	// invocation dies comes back within one) and brings each failed
	// message back after RetryVisibility (nil: after the queue's
	// visibility timeout).
	Queue interruption.Visibility
	// RecheckQueue and RecheckARN are the recheck queue's (names.
	// InterruptionRecheckDelay): a batch whose messages come from
	// RecheckARN uses RecheckQueue for its visibility calls and is handled
	// as a recheck (interruption.Handler.Recheck). Empty RecheckARN: every
	// batch is a first delivery.
	RecheckQueue interruption.Visibility
	RecheckARN   string
	// RetryVisibility is how soon a failed message comes back (0:
	// names.InterruptionRetryVisibility).
	RetryVisibility time.Duration
	// Heartbeat is how long a message being worked on stays out of sight
	// at a time (0: names.InterruptionHeartbeat).
	Heartbeat time.Duration

	mu   sync.Mutex
	deps *interruption.Deps
}

// Handle handles every message of the batch on its own: a message that
// cannot be decoded or whose handling fails (or panics) is reported as a
// batch item failure, so SQS retries it alone (within RetryVisibility) and,
// after the queue's receive limit, moves it to the DLQ; the rest of the
// batch succeeds. A cold container holds the whole batch a heartbeat at a
// time while it sets up, and a failed set-up brings it back after
// RetryVisibility.
func (h *Interruption) Handle(ctx context.Context, ev events.SQSEvent) (resp events.SQSEventResponse, err error) {
	defer recovered(h.Log, &err)
	queue, recheck := h.source(ev)
	h.mu.Lock()
	if h.deps == nil && h.Setup != nil {
		heartbeat, retry := interruption.Settings(h.Heartbeat, h.RetryVisibility)
		interruption.HoldBatch(ctx, queue, ev.Records, heartbeat, h.Log)
		d, serr := h.Setup(ctx)
		if serr != nil {
			h.mu.Unlock()
			h.Log.Error("interruption set-up failed: the batch comes back after the retry visibility", "error", serr)
			interruption.HoldBatch(ctx, queue, ev.Records, retry, h.Log)
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
	ih.Queue, ih.Heartbeat, ih.RetryVisibility, ih.Recheck = queue, h.Heartbeat, h.RetryVisibility, recheck
	resp = ih.HandleBatch(ctx, ev)
	return resp, nil
}

// source is the queue a batch came from (an event source mapping's batch
// comes from one queue): the recheck queue's visibility and true if its
// messages' EventSourceARN is RecheckARN, else the main queue's.
func (h *Interruption) source(ev events.SQSEvent) (interruption.Visibility, bool) {
	if h.RecheckARN != "" && len(ev.Records) > 0 && ev.Records[0].EventSourceARN == h.RecheckARN {
		return h.RecheckQueue, true
	}
	return h.Queue, false
}
