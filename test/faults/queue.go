package faults

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// queueVisibility is the interruption queue's own visibility timeout
// (infra: the function's timeout and a minute): a message received by an
// invocation that dies without having changed it comes back after this.
const queueVisibility = invocationTimeout + time.Minute

// maxReceives is the queue's receive limit: a message received this many
// times goes to the DLQ (infra/queueattrs).
const maxReceives = 3

// SQS is the interruption queue as the handler sees it: the visibility of
// the messages it works on (its heartbeat), by receipt handle.
type SQS struct {
	w       *World
	visible map[string]time.Time
}

var sqsThrottled = fault{name: "RequestThrottled", err: &types.RequestThrottled{Message: aws.String("Rate exceeded")}}

// RetryIn is ChangeMessageVisibility: the message is visible again after
// after.
func (q *SQS) RetryIn(ctx context.Context, receiptHandle string, after time.Duration) error {
	return q.w.call(ctx, "SQS", "RetryIn", []fault{sqsThrottled}, func() error {
		q.visible[receiptHandle] = q.w.clock.Now().Add(after)
		return nil
	})
}

// queued is a message waiting in the queue for its next receive.
type queued struct {
	msg      events.SQSMessage
	receives int
	at       time.Time // when it is visible
}

// received is msg as its n-th receive hands it out: a receipt handle of
// that receive's own.
func received(msg events.SQSMessage, n int) events.SQSMessage {
	msg.ReceiptHandle = fmt.Sprintf("%s#%d", msg.MessageId, n)
	return msg
}

// requeue puts back the message of an interruption invocation that failed
// or died, visible when the queue would hand it out again: when the
// handler last set (its heartbeat, or the retry visibility on a failure),
// else the queue's visibility timeout after the receive (Sim.finished).
func (f *flows) requeue(inv *invocation) {
	msg, ok := f.msgOf[inv]
	if !ok || !inv.dead && inv.err == nil {
		return
	}
	n := max(f.receives[inv], 1)
	at, set := f.w.sqs.visible[received(msg, n).ReceiptHandle]
	if !set {
		at = inv.start.Add(queueVisibility)
	}
	if n < maxReceives {
		f.queue = append(f.queue, queued{msg: msg, receives: n, at: at})
	}
}

// arrivals hands every visible message to an invocation of its own, which
// starts at once (SQS hands messages to invocations that run side by side:
// one message's long drain never holds another back), and says when the
// next waiting message becomes visible (Sim.arrive). Redeliveries run
// without faults.
func (f *flows) arrivals() ([]*invocation, time.Time) {
	now := f.w.clock.Now()
	var due []*invocation
	var next time.Time
	rest := f.queue[:0:0]
	for _, q := range f.queue {
		if q.at.After(now) {
			rest = append(rest, q)
			if next.IsZero() || q.at.Before(next) {
				next = q.at
			}
			continue
		}
		inv := f.w.sim.newInvocation("interruption", false, invocationTimeout, f.interruption(received(q.msg, q.receives+1)))
		f.receives[inv] = q.receives + 1
		due = append(due, inv)
	}
	f.queue = rest
	return due, next
}

// deliverDue runs the messages visible now, and those that become visible
// while they run.
func (f *flows) deliverDue() {
	invs, _ := f.arrivals()
	f.w.sim.run(invs...)
}

// nextVisible is when the first message waiting in the queue is visible
// (zero: none waits).
func (f *flows) nextVisible() time.Time {
	var first time.Time
	for _, q := range f.queue {
		if first.IsZero() || q.at.Before(first) {
			first = q.at
		}
	}
	return first
}
