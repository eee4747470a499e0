package handlers

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/nodewright/nodewright/shared/interruption"
	"github.com/nodewright/nodewright/shared/names"
)

// fakeQueue records RetryIn calls and fails those whose receipt handle is
// in fail.
type fakeQueue struct {
	mu    sync.Mutex // the handler retries a batch's messages at once
	calls []string   // "receipt after"
	fail  map[string]bool
}

func (f *fakeQueue) RetryIn(_ context.Context, rh string, after time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, fmt.Sprintf("%s %v", rh, after))
	if f.fail[rh] {
		return errors.New("AccessDenied: not allowed")
	}
	return nil
}

// A batch of two good and two bad messages: only the failed ones get the
// retry visibility, so SQS hands them out again within it; a failed change
// is logged and the batch's response stays the same.
func TestInterruptionRetriesFailedMessagesSoon(t *testing.T) {
	ev := events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "m1", ReceiptHandle: "rh1", Body: `{"id":"e1","source":"aws.ec2","detail-type":"EC2 AMI State Change","detail":{}}`},
		{MessageId: "m2", ReceiptHandle: "rh2", Body: "not json"},
		{MessageId: "m3", ReceiptHandle: "rh3", Body: `{"id":"e3","source":"aws.s3","detail-type":"Object Created","detail":{}}`},
		{MessageId: "m4", ReceiptHandle: "rh4", Body: `{"source":"aws.ec2","detail-type":"EC2 Spot Instance Interruption Warning","detail":{"instance-id":"bogus"}}`},
	}}
	wantFailures := []events.SQSBatchItemFailure{{ItemIdentifier: "m2"}, {ItemIdentifier: "m4"}}
	def := names.InterruptionRetryVisibility
	for _, tc := range []struct {
		name      string
		retry     time.Duration
		fail      map[string]bool
		wantCalls []string
		wantLog   []string
	}{
		{"failed ones retried soon", 0, nil, []string{fmt.Sprint("rh2 ", def), fmt.Sprint("rh4 ", def)},
			[]string{`"msg":"failed message retried soon"`, `"messageId":"m2","retryInSeconds":30`, `"messageId":"m4","retryInSeconds":30`}},
		{"a visibility of the caller's", time.Second, nil, []string{"rh2 1s", "rh4 1s"}, []string{`"messageId":"m4","retryInSeconds":1`}},
		{"an SQS error is only logged", 0, map[string]bool{"rh2": true}, []string{fmt.Sprint("rh2 ", def), fmt.Sprint("rh4 ", def)},
			[]string{`"msg":"could not shorten a failed message's visibility: it comes back after the queue's visibility timeout"`,
				`"messageId":"m2","error":"AccessDenied: not allowed"`, `"messageId":"m4","retryInSeconds":30`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			buf, env := logger()
			q := &fakeQueue{fail: tc.fail}
			h := Interruption{Env: env, Log: NewLogger(buf, "interruption", "debug"), Queue: q, RetryVisibility: tc.retry}
			resp, err := h.Handle(context.Background(), ev)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(resp.BatchItemFailures, wantFailures) {
				t.Fatalf("failures %+v, want %+v", resp.BatchItemFailures, wantFailures)
			}
			sort.Strings(q.calls)
			if !reflect.DeepEqual(q.calls, tc.wantCalls) {
				t.Errorf("RetryIn calls %q, want %q (the failed messages only)", q.calls, tc.wantCalls)
			}
			for _, want := range tc.wantLog {
				if !strings.Contains(buf.String(), want) {
					t.Errorf("log lacks %s:\n%s", want, buf.String())
				}
			}
		})
	}
}

// A batch that fails nothing changes nothing; without a queue (tests that
// drive the handler with a visibility of their own) neither does one that
// fails.
func TestInterruptionRetryOnlyWhenFailedAndQueued(t *testing.T) {
	buf, env := logger()
	q := &fakeQueue{}
	h := Interruption{Env: env, Log: NewLogger(buf, "interruption", "debug"), Queue: q}
	ok := events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m1", ReceiptHandle: "rh1", Body: `{"id":"e1","source":"aws.s3","detail-type":"Object Created","detail":{}}`}}}
	if resp, err := h.Handle(context.Background(), ok); err != nil || len(resp.BatchItemFailures) != 0 || len(q.calls) != 0 {
		t.Fatalf("%+v %v; calls %q", resp, err, q.calls)
	}
	h = Interruption{Env: env, Log: NewLogger(buf, "interruption", "debug")}
	bad := events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m2", ReceiptHandle: "rh2", Body: "not json"}}}
	if resp, err := h.Handle(context.Background(), bad); err != nil || len(resp.BatchItemFailures) != 1 {
		t.Fatalf("%+v %v", resp, err)
	}
	if strings.Contains(buf.String(), "retried soon") || strings.Contains(buf.String(), "visibility") {
		t.Errorf("log %s", buf.String())
	}
}

// A cold container holds its batch a heartbeat at a time before it sets up
// (seconds, before any message's own heartbeat): if it dies there the
// batch comes back within one. If the set-up fails, every message comes
// back after the retry visibility, not the queue's visibility timeout.
func TestInterruptionColdStartHoldsTheBatch(t *testing.T) {
	ev := events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m1", ReceiptHandle: "rh1", Body: "{}"}, {MessageId: "m2", ReceiptHandle: "rh2", Body: "{}"}}}
	for _, tc := range []struct {
		name      string
		setupErr  error
		wantCalls []string
	}{
		{"set-up fails", errors.New("assume role: throttled"), []string{"rh1 10s", "rh2 10s", "rh1 30s", "rh2 30s"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			buf, env := logger()
			q := &fakeQueue{}
			var calls []string
			h := Interruption{Env: env, Log: NewLogger(buf, "interruption", "debug"), Queue: q,
				Setup: func(context.Context) (*interruption.Deps, error) {
					calls = append([]string(nil), q.calls...) // what was set before the set-up ran
					return nil, tc.setupErr
				}}
			if _, err := h.Handle(context.Background(), ev); !errors.Is(err, tc.setupErr) {
				t.Fatalf("Handle: %v, want the set-up's error", err)
			}
			if want := tc.wantCalls[:2]; !reflect.DeepEqual(calls, want) {
				t.Errorf("visibility before the set-up %q, want %q", calls, want)
			}
			if !reflect.DeepEqual(q.calls, tc.wantCalls) {
				t.Errorf("visibility changes %q, want %q", q.calls, tc.wantCalls)
			}
		})
	}
}

// A batch from the recheck queue (its messages' EventSourceARN) is held on
// the recheck queue, not the main one; any other batch on the main queue.
func TestInterruptionBatchOfTheRecheckQueue(t *testing.T) {
	const mainARN, recheckARN = "arn:aws:sqs:us-east-1:123456789012:interruption", "arn:aws:sqs:us-east-1:123456789012:recheck"
	for _, tc := range []struct {
		name        string
		arn         string
		wantMain    int
		wantRecheck int
	}{
		{"main queue", mainARN, 1, 0},
		{"recheck queue", recheckARN, 0, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			buf, env := logger()
			main, recheck := &fakeQueue{}, &fakeQueue{}
			h := Interruption{Env: env, Log: NewLogger(buf, "interruption", "debug"), Queue: main, RecheckQueue: recheck, RecheckARN: recheckARN,
				Setup: func(context.Context) (*interruption.Deps, error) { return nil, errors.New("no cluster") }}
			ev := events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m1", ReceiptHandle: "rh1", Body: "{}", EventSourceARN: tc.arn}}}
			_, _ = h.Handle(context.Background(), ev)
			// A failed set-up holds the batch twice: a heartbeat, then the retry.
			if len(main.calls) != 2*tc.wantMain || len(recheck.calls) != 2*tc.wantRecheck {
				t.Errorf("main queue %q, recheck queue %q: want the batch held on the %s", main.calls, recheck.calls, tc.name)
			}
		})
	}
}
