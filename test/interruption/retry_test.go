package interruption_test

import (
	"fmt"
	"strconv"
	"testing"
	"time"

	awsevents "github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/nodewright/nodewright/infra/queueattrs"
	"github.com/nodewright/nodewright/shared/redelivery"
	"github.com/nodewright/nodewright/test/harness"
)

// TestFailedMessageRetriedSoonThenDeadLettered: on a queue with the
// attributes the stack synthesizes (infra/queueattrs: a visibility
// above the function's timeout, minutes), a message that always fails
// comes back within a minute of each failure, because the handler sets a
// short visibility on it with ChangeMessageVisibility (1 s here, to keep
// the test short; names.InterruptionRetryVisibility in the function), and
// rests in the DLQ after the queue's receive limit. The queue is received
// without a visibility of the test's own, as Lambda's event source does.
func TestFailedMessageRetriedSoonThenDeadLettered(t *testing.T) {
	t.Parallel()
	c := harness.Ctx(t)
	golden, err := queueattrs.Golden()
	if err != nil {
		t.Fatal(err)
	}
	visibility, err := queueattrs.Seconds(golden.Queue, "VisibilityTimeout")
	if err != nil {
		t.Fatal(err)
	}
	if visibility <= time.Minute {
		t.Fatalf("the stack's queue visibility is %v: this test shows the handler's retry only if the queue alone would wait longer than a minute", visibility)
	}
	cfg, err := harness.FunctionAWS(c, suite.LC, "interruption")
	if err != nil {
		t.Fatal(err)
	}
	client := sqs.NewFromConfig(cfg)
	// The test's own queue, made as the seeded one is (harness.OwnQueues):
	// both have the stack's attributes.
	h := newHarness(t, "retry")
	url := h.Queues().URL
	for _, q := range []struct{ name, url string }{{"seeded queue", suite.LC.Seeded.QueueURL}, {"the test's queue", url}} {
		attrs, err := client.GetQueueAttributes(c, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(q.url),
			AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll}})
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range golden.Queue {
			if attrs.Attributes[k] != v {
				t.Errorf("%s: %s = %q, the stack's %q", q.name, k, attrs.Attributes[k], v)
			}
		}
	}
	h.Interruption.Queue = redelivery.Queue{API: client, URL: url}
	h.Interruption.RetryVisibility = time.Second
	poison := fmt.Sprintf("not JSON: poison %d", time.Now().UnixNano())
	if err := h.Send(c, []byte(poison)); err != nil {
		t.Fatal(err)
	}
	// receive returns the poison message if it is visible (other messages
	// received here are not this test's: they come back after the queue's
	// visibility, to whoever drains the queue next).
	receive := func() (*sqstypes.Message, error) {
		out, err := client.ReceiveMessage(c, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		})
		if err != nil {
			return nil, err
		}
		for _, m := range out.Messages {
			if aws.ToString(m.Body) == poison {
				return &m, nil
			}
		}
		return nil, nil
	}
	failedAt := time.Now()
	var gaps []time.Duration
	for i := 1; i <= golden.MaxReceiveCount; i++ {
		var msg *sqstypes.Message
		if err := harness.Poll(c, time.Minute, fmt.Sprintf("delivery %d of the failing message within a minute", i), func() (bool, string, error) {
			m, err := receive()
			msg = m
			return m != nil, "", err
		}); err != nil {
			t.Fatalf("%v (deliveries so far came after %v)", err, gaps)
		}
		gaps = append(gaps, time.Since(failedAt).Round(time.Millisecond))
		if n, _ := strconv.Atoi(msg.Attributes[string(sqstypes.MessageSystemAttributeNameApproximateReceiveCount)]); n != i {
			t.Errorf("delivery %d: ApproximateReceiveCount %d", i, n)
		}
		ev := awsevents.SQSEvent{Records: []awsevents.SQSMessage{{
			MessageId: aws.ToString(msg.MessageId), ReceiptHandle: aws.ToString(msg.ReceiptHandle), Body: poison,
			Attributes: msg.Attributes, EventSource: "aws:sqs", EventSourceARN: h.Queues().ARN, AWSRegion: "us-east-1",
		}}}
		resp, err := h.Interruption.Handle(c, ev)
		if err != nil || len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != aws.ToString(msg.MessageId) {
			t.Fatalf("delivery %d: response %+v, %v; want the message failed", i, resp, err)
		}
		failedAt = time.Now()
	}
	// The next receive past the limit moves it to the DLQ (SQS does so on
	// receive); it is never handed out again.
	if err := harness.Poll(c, time.Minute, "the failing message in the DLQ", func() (bool, string, error) {
		m, err := receive()
		if err != nil {
			return false, "", err
		}
		if m != nil {
			return false, "", fmt.Errorf("delivered a %s time, past the receive limit %d", m.Attributes[string(sqstypes.MessageSystemAttributeNameApproximateReceiveCount)], golden.MaxReceiveCount)
		}
		dlq, err := h.DLQ(c)
		for _, b := range dlq {
			if b == poison {
				return true, "", err
			}
		}
		return false, fmt.Sprintf("DLQ holds %d messages", len(dlq)), err
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("deliveries after each failure: %v (queue visibility %v); dead-lettered after %d", gaps, visibility, golden.MaxReceiveCount)
}
