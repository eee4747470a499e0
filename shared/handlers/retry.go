package handlers

import (
	"context"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/nodewright/nodewright/shared/names"
)

// Redelivery sets how soon the queue hands a received message out again
// (redelivery.Queue, on the interruption queue, in the function). It has no
// SQS types: the provision and consolidation functions link this package,
// and what a function links is what its role must be granted.
type Redelivery interface {
	RetryIn(ctx context.Context, receiptHandle string, after time.Duration) error
}

// retrySoon sets the retry visibility on each failed message of the batch,
// so that SQS hands it out again within it rather than after the queue's
// visibility timeout; after the queue's receive limit it moves to the DLQ.
// A message whose visibility cannot be changed still comes back, later: the
// error is logged and the batch's response is not changed.
func (h *Interruption) retrySoon(ctx context.Context, log *slog.Logger, ev events.SQSEvent, resp events.SQSEventResponse) {
	if h.Queue == nil || len(resp.BatchItemFailures) == 0 {
		return
	}
	after := h.RetryVisibility
	if after <= 0 {
		after = names.InterruptionRetryVisibility
	}
	receipts := make(map[string]string, len(ev.Records))
	for _, m := range ev.Records {
		receipts[m.MessageId] = m.ReceiptHandle
	}
	for _, f := range resp.BatchItemFailures {
		rh := receipts[f.ItemIdentifier]
		if rh == "" {
			log.Warn("failed message has no receipt handle: it comes back after the queue's visibility timeout", "messageId", f.ItemIdentifier)
			continue
		}
		if err := h.Queue.RetryIn(ctx, rh, after); err != nil {
			log.Warn("could not shorten a failed message's visibility: it comes back after the queue's visibility timeout", "messageId", f.ItemIdentifier, "error", err)
			continue
		}
		log.Debug("failed message retried soon", "messageId", f.ItemIdentifier, "retryInSeconds", int(after.Seconds()))
	}
}
