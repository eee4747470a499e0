package interruption_test

import (
	"context"
	"strconv"
	"sync"
	"testing"
	"time"

	awsevents "github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/nodewright/nodewright/events"
	"github.com/nodewright/nodewright/shared/redelivery"
	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/test/harness"
)

// mortal is the function's queue client until its invocation dies: after
// die, nothing it would send reaches SQS (a Lambda killed mid-drain runs
// no deferred call).
type mortal struct {
	q    redelivery.Queue
	mu   sync.Mutex
	dead bool
	last time.Time // the last change that reached SQS
}

func (m *mortal) RetryIn(ctx context.Context, receipt string, after time.Duration) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.dead {
		return context.Canceled
	}
	err := m.q.RetryIn(ctx, receipt, after)
	if err == nil {
		m.last = time.Now()
	}
	return err
}

func (m *mortal) die() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.dead = true
	return m.last
}

// TestWarningOfADeadInvocationComesBackWithinAHeartbeat: the invocation
// draining a node under a spot warning dies mid-drain (a PDB allowing
// nothing holds its pods). On the queue the stack synthesizes (a
// visibility of minutes, past the warning's two), the message comes back
// within a heartbeat of the last one the dead invocation sent, and no one
// received it while that invocation lived; the next invocation waits out
// the dead one's node lease, takes the node over and drains it to the
// deadline, before the instance goes. The function's own role changes the
// message's visibility. It runs alone (not in parallel): a heartbeat of
// 3 s is kept on an idle cloud, and the next invocation, not another
// test's provision sweep, must take the node over.
func TestWarningOfADeadInvocationComesBackWithinAHeartbeat(t *testing.T) {
	c := harness.Ctx(t)
	oneNodePoolOf(t, "heartbeat", "m8g.xlarge")
	h := newHarness(t, "heartbeat")
	node := running(t, h, "heartbeat", "heartbeatapp", 3)
	if err := harness.PDB(c, suite.LC, "default", "heartbeatapp", 0); err != nil {
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
	url := h.Queues().URL
	const heartbeat = 3 * time.Second
	fn := &mortal{q: redelivery.Queue{API: client, URL: url}}
	h.Interruption.Queue, h.Interruption.Heartbeat = fn, heartbeat

	instance := harness.InstanceOf(node)
	warned := time.Now().Add(-70 * time.Second) // the deadline is 35 s away
	deadline := warned.Truncate(time.Second).Add(2*time.Minute - 15*time.Second)
	ev, _ := harness.Event(events.SpotInterruptionWarning, "evt-heartbeat", warned, "", instance)
	if err := h.Send(c, ev); err != nil {
		t.Fatal(err)
	}
	// receive takes the warning as Lambda's event source does (the queue's
	// own visibility), or nil if it is out of sight.
	receive := func(ctx context.Context) (*awsevents.SQSMessage, error) {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10,
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll}})
		if err != nil {
			return nil, err
		}
		for _, m := range out.Messages {
			if aws.ToString(m.Body) == string(ev) {
				return &awsevents.SQSMessage{MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body),
					Attributes: m.Attributes, EventSource: "aws:sqs", EventSourceARN: h.Queues().ARN, AWSRegion: "us-east-1"}, nil
			}
		}
		return nil, nil
	}
	invoke := func(ctx context.Context, id string, msg *awsevents.SQSMessage) (awsevents.SQSEventResponse, error) {
		ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: id})
		return h.Interruption.Handle(ctx, awsevents.SQSEvent{Records: []awsevents.SQSMessage{*msg}})
	}
	var first *awsevents.SQSMessage
	if err := harness.Poll(c, 30*time.Second, "the warning on the queue", func() (bool, string, error) {
		m, err := receive(c)
		first = m
		return m != nil, "", err
	}); err != nil {
		t.Fatal(err)
	}

	// The first invocation drains for three heartbeats and dies; meanwhile
	// the message stays out of sight.
	alive, kill := context.WithCancel(c)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_, _ = invoke(alive, "req-dies", first)
	}()
	until := time.Now().Add(3 * heartbeat)
	for time.Now().Before(until) {
		if m, err := receive(c); err != nil || m != nil {
			t.Fatalf("the warning was handed out again (%v) while its invocation lived: its heartbeat lapsed", err)
		}
	}
	lastBeat := fn.die()
	kill()
	<-done
	if lastBeat.IsZero() {
		t.Fatal("the dead invocation never extended the message's visibility")
	}

	var again *awsevents.SQSMessage
	if err := harness.Poll(c, heartbeat+20*time.Second, "the dead invocation's warning back on the queue", func() (bool, string, error) {
		m, err := receive(c)
		again = m
		return m != nil, "", err
	}); err != nil {
		t.Fatal(err)
	}
	back := time.Since(lastBeat)
	if back > heartbeat+5*time.Second {
		t.Errorf("the warning came back %v after the last heartbeat: want within the heartbeat (%v)", back, heartbeat)
	}
	if n, _ := strconv.Atoi(again.Attributes[string(sqstypes.MessageSystemAttributeNameApproximateReceiveCount)]); n != 2 {
		t.Errorf("receive count %d: want 2 (received by the dead invocation only, before)", n)
	}

	// The next invocation takes the node over once the dead one's lease
	// lapses, and drains it to the deadline.
	fn.mu.Lock()
	fn.dead = false
	fn.mu.Unlock()
	lambda, cancel := context.WithTimeout(c, 5*time.Minute)
	defer cancel()
	resp, err := invoke(lambda, "req-takes-over", again)
	if err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("the redelivered warning: %+v, %v", resp, err)
	}
	finished := time.Now()
	st, _ := harness.Store(suite.LC)
	a, err := st.GetAction(c, "interruption-"+instance)
	if err != nil || a.Step != state.StepDone || len(a.Stranded) != 3 || len(a.Replacements) != 1 {
		t.Fatalf("action %+v, %v: want done, one replacement, the 3 pods the PDB held deleted at the deadline", a, err)
	}
	if end := warned.Add(2 * time.Minute); !finished.Before(end) || finished.Before(deadline) {
		t.Errorf("drain finished at %s: want between the deadline %s and the instance's end %s", finished.Format(time.TimeOnly), deadline.Format(time.TimeOnly), end.Format(time.TimeOnly))
	}
	t.Logf("the dead invocation's warning came back %v after its last heartbeat (heartbeat %v; queue visibility 6m); taken over and drained by %s, %v before the instance's end",
		back.Round(100*time.Millisecond), heartbeat, finished.Format(time.TimeOnly), warned.Add(2*time.Minute).Sub(finished).Round(time.Second))
}
