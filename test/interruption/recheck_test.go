package interruption_test

import (
	"context"
	"strings"
	"testing"
	"time"

	awsevents "github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/nodewright/nodewright/events"
	"github.com/nodewright/nodewright/shared/names"
	"github.com/nodewright/nodewright/shared/redelivery"
	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/shared/trigger"
	"github.com/nodewright/nodewright/test/harness"
)

// TestWarningWhoseFirstDeliveryDiedIsHandledByItsRecheck: the invocation
// that receives a spot warning dies before its first call (no visibility
// change, no delete: the queue keeps the message out of sight for its
// visibility timeout, minutes past the warning's two). The recheck queue,
// which the urgent rules deliver to too, hands the warning out again
// names.InterruptionRecheckDelay after it was sent (its queue-level
// delay, from the golden attributes); that delivery, handled as a recheck
// (its batch's event source ARN), finds no action and no lease, takes the
// node and drains it to the deadline, before the instance goes; the
// instance's state changes reach the recheck queue too.
func TestWarningWhoseFirstDeliveryDiedIsHandledByItsRecheck(t *testing.T) {
	t.Parallel()
	c := harness.Ctx(t)
	oneNodePoolOf(t, "recheck", "m7g.xlarge")
	h := newHarness(t, "recheck")
	node := running(t, h, "recheck", "recheckapp", 3)
	if err := harness.PDB(c, suite.LC, "default", "recheckapp", 0); err != nil {
		t.Fatal(err)
	}
	if _, _, err := drain(c, h, time.Second); err != nil { // what EventBridge delivered for our instances so far
		t.Fatal(err)
	}
	cfg, err := harness.FunctionAWS(c, suite.LC, "interruption")
	if err != nil {
		t.Fatal(err)
	}
	client := sqs.NewFromConfig(cfg)
	seeded, own := suite.LC.Seeded, h.Queues()
	// The function's wiring (functions/interruption), with a short
	// heartbeat; the test's own interruption queue, the seeded recheck
	// queue (no other test receives from it).
	h.Interruption.Queue = redelivery.Queue{API: client, URL: own.URL}
	h.Interruption.RecheckQueue = redelivery.Queue{API: client, URL: seeded.RecheckQueueURL}
	h.Interruption.RecheckARN, h.Interruption.Heartbeat = seeded.RecheckQueueARN, 3*time.Second

	instance := harness.InstanceOf(node)
	warned := time.Now().Add(-60 * time.Second) // the deadline is 45 s away, the recheck 20 s
	deadline := warned.Truncate(time.Second).Add(2*time.Minute - 15*time.Second)
	ev, _ := harness.Event(events.SpotInterruptionWarning, "evt-recheck", warned, "", instance)
	// EventBridge's two targets of the spot rule.
	sent := time.Now()
	if err := h.Send(c, ev); err != nil {
		t.Fatal(err)
	}
	if _, err := client.SendMessage(c, &sqs.SendMessageInput{QueueUrl: aws.String(seeded.RecheckQueueURL), MessageBody: aws.String(string(ev))}); err != nil {
		t.Fatal(err)
	}
	// receive takes the warning from a queue as Lambda's event source does
	// (the queue's own visibility), or nil if it is not visible.
	receive := func(ctx context.Context, url, arn string) (*awsevents.SQSMessage, error) {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}})
		if err != nil {
			return nil, err
		}
		for _, m := range out.Messages {
			if aws.ToString(m.Body) == string(ev) {
				return &awsevents.SQSMessage{MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body),
					Attributes: m.Attributes, EventSource: "aws:sqs", EventSourceARN: arn, AWSRegion: "us-east-1"}, nil
			}
		}
		return nil, nil
	}
	// The first delivery: received, then its invocation dies at once.
	if err := harness.Poll(c, 30*time.Second, "the warning on the interruption queue", func() (bool, string, error) {
		m, err := receive(c, own.URL, own.ARN)
		return m != nil, "", err
	}); err != nil {
		t.Fatal(err)
	}

	var recheck *awsevents.SQSMessage
	if err := harness.Poll(c, names.InterruptionRecheckDelay+20*time.Second, "the warning on the recheck queue", func() (bool, string, error) {
		m, err := receive(c, seeded.RecheckQueueURL, seeded.RecheckQueueARN)
		recheck = m
		return m != nil, "", err
	}); err != nil {
		t.Fatal(err)
	}
	came := time.Since(sent)
	if came < names.InterruptionRecheckDelay-time.Second {
		t.Errorf("the recheck copy came %v after the warning: want the recheck queue's delay (%v)", came, names.InterruptionRecheckDelay)
	}

	lambda, cancel := context.WithTimeout(lambdacontext.NewContext(c, &lambdacontext.LambdaContext{AwsRequestID: "req-recheck"}), 5*time.Minute)
	defer cancel()
	resp, err := h.Interruption.Handle(lambda, awsevents.SQSEvent{Records: []awsevents.SQSMessage{*recheck}})
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("the recheck delivery: %+v, %v", resp, err)
	}
	finished := time.Now()
	st, _ := harness.Store(suite.LC)
	a, err := st.GetAction(c, "interruption-"+instance)
	if err != nil || a.Step != state.StepDone || len(a.Stranded) != 3 || len(a.Replacements) != 1 {
		t.Fatalf("action %+v, %v: want done by the recheck, one replacement, the 3 pods the PDB held deleted at the deadline", a, err)
	}
	if end := warned.Add(2 * time.Minute); !finished.Before(end) || finished.Before(deadline) {
		t.Errorf("drain finished at %s: want between the deadline %s and the instance's end %s", finished.Format(time.TimeOnly), deadline.Format(time.TimeOnly), end.Format(time.TimeOnly))
	}
	// The first delivery is still out of sight (the queue's visibility).
	if m, err := receive(c, own.URL, own.ARN); err != nil || m != nil {
		t.Errorf("the first delivery came back (%v, %v): want it out of sight for the queue's visibility timeout", m != nil, err)
	}
	// The local EventBridge delivers the instance's state changes (the
	// handler terminated it through the AWS front) to the recheck queue
	// too, after its delay.
	if err := harness.Poll(c, names.InterruptionRecheckDelay+20*time.Second, "the instance's state change on the recheck queue", func() (bool, string, error) {
		out, err := client.ReceiveMessage(c, &sqs.ReceiveMessageInput{QueueUrl: aws.String(seeded.RecheckQueueURL), MaxNumberOfMessages: 10})
		if err != nil {
			return false, "", err
		}
		for _, m := range out.Messages {
			if b := aws.ToString(m.Body); strings.Contains(b, trigger.DetailTypeStateChange) && strings.Contains(b, instance) {
				return true, "", nil
			}
		}
		return false, "", nil
	}); err != nil {
		t.Fatal(err)
	}
	t.Logf("the recheck copy came %v after the warning; the node drained by %s, %v before the instance's end",
		came.Round(100*time.Millisecond), finished.Format(time.TimeOnly), warned.Add(2*time.Minute).Sub(finished).Round(time.Second))
}
