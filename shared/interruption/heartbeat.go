package interruption

import (
	"context"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/nodewright/nodewright/shared/names"
)

// Visibility sets how long a received message stays out of the queue's
// sight (handlers' Redelivery over redelivery.Queue).
type Visibility interface {
	RetryIn(ctx context.Context, receiptHandle string, after time.Duration) error
}

// heartbeat keeps the message a handler works on out of sight for a
// heartbeat at a time, so that if the invocation dies the message comes
// back within one, and another invocation carries the node on (the queue's
// own visibility timeout is minutes, past a spot warning's deadline).
type heartbeat struct {
	q       Visibility
	receipt string
	every   time.Duration
	retry   time.Duration
	now     func() time.Time
	log     *slog.Logger
	last    time.Time // the last extension (zero: none yet)
}

// heartbeat is msg's heartbeat (a no-op without a queue or a receipt
// handle).
func (h *Handler) heartbeat(msg events.SQSMessage, log *slog.Logger) *heartbeat {
	every, retry := Settings(h.Heartbeat, h.RetryVisibility)
	return &heartbeat{q: h.Queue, receipt: msg.ReceiptHandle, every: every, retry: retry, now: h.Now, log: log}
}

// beat extends the message's visibility to a heartbeat from now, once a
// third of one has passed since the last extension.
func (b *heartbeat) beat(ctx context.Context) {
	if b.q == nil || b.receipt == "" {
		return
	}
	now := b.now()
	if !b.last.IsZero() && now.Sub(b.last) < b.every/3 {
		return
	}
	if err := b.q.RetryIn(ctx, b.receipt, b.every); err != nil {
		// A failed extension costs a duplicate delivery at worst: the
		// duplicate finds the node's lease held and waits on it.
		b.log.Warn("extend the message's visibility", "error", err)
		return
	}
	b.last = now
}

// settle ends the heartbeat. A failed message comes back after the retry
// visibility (whether or not a heartbeat ran: the queue's own visibility
// timeout is minutes), so SQS retries it soon and, after the queue's
// receive limit, moves it to the DLQ. A handled message whose visibility
// the heartbeat shortened stays out of sight until the invocation ends
// (Lambda deletes it then). A visibility that cannot be changed is logged:
// the message still comes back, later.
func (b *heartbeat) settle(ctx context.Context, failed bool) {
	if b.q == nil || b.receipt == "" || !failed && b.last.IsZero() {
		return
	}
	after := b.retry
	if !failed {
		after = settledVisibility
		if dl, ok := ctx.Deadline(); ok {
			after = time.Until(dl) + time.Minute
		}
	}
	if err := b.q.RetryIn(context.WithoutCancel(ctx), b.receipt, after); err != nil {
		if failed {
			b.log.Warn("could not shorten a failed message's visibility: it comes back after the queue's visibility timeout", "error", err)
		} else {
			b.log.Warn("could not keep a handled message out of sight: it may be delivered again", "error", err)
		}
		return
	}
	if failed {
		b.log.Debug("failed message retried soon", "retryInSeconds", int(after.Seconds()))
	}
}

// settledVisibility keeps a handled message out of sight when the
// invocation's end is unknown (the queue's own visibility timeout, infra).
const settledVisibility = 6 * time.Minute

// Settings are the visibility settings of Handler and of a batch before it
// has one: the heartbeat and the retry visibility, defaulted.
func Settings(heartbeat, retry time.Duration) (time.Duration, time.Duration) {
	if heartbeat <= 0 {
		heartbeat = names.InterruptionHeartbeat
	}
	if retry <= 0 {
		retry = names.InterruptionRetryVisibility
	}
	return heartbeat, retry
}

// HoldBatch sets the visibility of every message of a batch to d (nil q: a
// no-op): a cold container's set-up takes seconds before any message's
// heartbeat begins, during which the batch comes back within a heartbeat
// if the container dies, and after a failed set-up it comes back after the
// retry visibility rather than the queue's visibility timeout.
func HoldBatch(ctx context.Context, q Visibility, msgs []events.SQSMessage, d time.Duration, log *slog.Logger) {
	if q == nil {
		return
	}
	for _, m := range msgs {
		if m.ReceiptHandle == "" {
			continue
		}
		if err := q.RetryIn(context.WithoutCancel(ctx), m.ReceiptHandle, d); err != nil {
			log.Warn("set the visibility of a message of the batch", "messageId", m.MessageId, "seconds", int(d.Seconds()), "error", err)
		}
	}
}
