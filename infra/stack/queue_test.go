package stack

import (
	"bytes"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/nodewright/nodewright/infra/queueattrs"
	"github.com/nodewright/nodewright/shared/names"
)

var update = flag.Bool("update", false, "rewrite infra/queueattrs/"+queueattrs.File+" from the synthesized template")

// sqsAttributeNames are the AWS::SQS::Queue properties that are SQS queue
// attributes of the same name (RedrivePolicy aside, which names the DLQ).
var sqsAttributeNames = map[string]bool{
	"VisibilityTimeout": true, "MessageRetentionPeriod": true, "SqsManagedSseEnabled": true,
	"KmsMasterKeyId": true, "KmsDataKeyReusePeriodSeconds": true, "DelaySeconds": true,
	"MaximumMessageSize": true, "ReceiveMessageWaitTimeSeconds": true,
}

// queueAttributes renders a queue resource's properties as SQS attributes
// (its redrive policy is kept apart; its tags are not attributes).
func queueAttributes(t *testing.T, props map[string]any) map[string]string {
	t.Helper()
	out := map[string]string{}
	for k, v := range props {
		if k == "RedrivePolicy" || k == "Tags" {
			continue
		}
		if !sqsAttributeNames[k] {
			t.Fatalf("queue property %s = %s: not an SQS attribute the golden file knows (add it to sqsAttributeNames)", k, js(v))
		}
		switch x := v.(type) {
		case string:
			out[k] = x
		case float64:
			out[k] = strconv.FormatFloat(x, 'f', -1, 64)
		case bool:
			out[k] = strconv.FormatBool(x)
		default:
			t.Fatalf("queue property %s = %s: not a plain value", k, js(v))
		}
	}
	return out
}

// synthesizedQueueAttributes are the queues' attributes in the template.
func synthesizedQueueAttributes(t *testing.T, s *synthesized) queueattrs.Attributes {
	t.Helper()
	q := s.one(t, "AWS::SQS::Queue", "InterruptionQueue")
	rp, _ := q["RedrivePolicy"].(map[string]any)
	n, _ := rp["maxReceiveCount"].(float64)
	r := s.one(t, "AWS::SQS::Queue", "RecheckQueue")
	if js(r["RedrivePolicy"]) != js(q["RedrivePolicy"]) {
		t.Fatalf("recheck queue's redrive policy %s, want the interruption queue's %s", js(r["RedrivePolicy"]), js(q["RedrivePolicy"]))
	}
	return queueattrs.Attributes{
		Queue:           queueAttributes(t, q),
		Recheck:         queueAttributes(t, r),
		MaxReceiveCount: int(n),
		DLQ:             queueAttributes(t, s.one(t, "AWS::SQS::Queue", "InterruptionDLQ")),
	}
}

// The golden file the local cloud seeds its queues from is the template's:
// run with -update to rewrite it after changing the queues.
func TestQueueAttributesGolden(t *testing.T) {
	got, err := synthesizedQueueAttributes(t, defaultStack(t)).Marshal()
	if err != nil {
		t.Fatal(err)
	}
	root, err := ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(root, "infra", "queueattrs", queueattrs.File)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s differs from the template (go test ./infra/stack -run TestQueueAttributesGolden -update rewrites it):\ntemplate:\n%s\nfile:\n%s", path, got, want)
	}
	if _, err := queueattrs.Golden(); err != nil {
		t.Fatalf("embedded golden file: %v", err)
	}
}

// The queue's timing, from the template: a failed message is retried
// within a minute (the handler's retry visibility); a crashed invocation's
// messages come back once the function's timeout has passed (Lambda
// refuses a trigger whose visibility is shorter); and a message that
// always fails reaches the DLQ before it expires, whether each receive
// fails (retry visibility) or crashes (queue visibility).
func TestInterruptionQueueTiming(t *testing.T) {
	a := synthesizedQueueAttributes(t, defaultStack(t))
	visibility, err := queueattrs.Seconds(a.Queue, "VisibilityTimeout")
	if err != nil {
		t.Fatal(err)
	}
	retention, err := queueattrs.Seconds(a.Queue, "MessageRetentionPeriod")
	if err != nil {
		t.Fatal(err)
	}
	dlqRetention, err := queueattrs.Seconds(a.DLQ, "MessageRetentionPeriod")
	if err != nil {
		t.Fatal(err)
	}
	retry := names.InterruptionRetryVisibility
	receives := time.Duration(a.MaxReceiveCount)
	if a.MaxReceiveCount != names.InterruptionMaxReceives {
		t.Errorf("maxReceiveCount %d, want names.InterruptionMaxReceives %d", a.MaxReceiveCount, names.InterruptionMaxReceives)
	}
	if retry <= 0 || retry > time.Minute {
		t.Errorf("retry visibility %v: a failed message must come back within a minute", retry)
	}
	if visibility < interruptionTimeout || visibility > 2*interruptionTimeout {
		t.Errorf("visibility %v: want at least the function's timeout %v (Lambda requires it) and not far above", visibility, interruptionTimeout)
	}
	if retention < (receives+1)*retry {
		t.Errorf("retention %v < (%d+1) x retry visibility %v: a poison message expires before the DLQ", retention, a.MaxReceiveCount, retry)
	}
	if retention < (receives+1)*visibility {
		t.Errorf("retention %v < (%d+1) x queue visibility %v: a message whose invocations crash expires before the DLQ", retention, a.MaxReceiveCount, visibility)
	}
	if dlqRetention < retention {
		t.Errorf("DLQ retention %v below the queue's %v: SQS keeps a dead letter's first enqueue time", dlqRetention, retention)
	}
	// The recheck queue is the main queue's twin, but for its delay.
	delay, err := queueattrs.Seconds(a.Recheck, "DelaySeconds")
	if err != nil || delay != names.InterruptionRecheckDelay {
		t.Errorf("recheck queue's delay %v (%v), want names.InterruptionRecheckDelay %v", delay, err, names.InterruptionRecheckDelay)
	}
	twin := map[string]string{}
	for k, v := range a.Recheck {
		if k != "DelaySeconds" {
			twin[k] = v
		}
	}
	if !maps.Equal(twin, a.Queue) {
		t.Errorf("recheck queue %v: want the interruption queue's attributes %v and a delay", a.Recheck, a.Queue)
	}
	if _, ok := a.Queue["DelaySeconds"]; ok {
		t.Errorf("interruption queue delays its messages: %v", a.Queue)
	}
	for name, attrs := range map[string]map[string]string{"queue": a.Queue, "recheck": a.Recheck, "dlq": a.DLQ} {
		if attrs["SqsManagedSseEnabled"] != "true" {
			t.Errorf("%s: SSE-SQS %q", name, attrs["SqsManagedSseEnabled"])
		}
	}
}
