package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// Queues are an interruption queue and its dead-letter queue: the ones a
// Harness's Send, DrainQueue and DLQ use.
type Queues struct {
	URL, ARN       string
	DLQURL, DLQARN string
}

// queues are the harness's interruption queues: its own (Options.Queues)
// or the local cloud's seeded ones.
func (h *Harness) queues() Queues {
	if h.opts.Queues != nil {
		return *h.opts.Queues
	}
	s := h.LC.Seeded
	return Queues{URL: s.QueueURL, ARN: s.QueueARN, DLQURL: s.DLQURL, DLQARN: s.DLQARN}
}

// Queues are the interruption queues the harness sends to and drains.
func (h *Harness) Queues() Queues { return h.queues() }

// OwnQueues creates an interruption queue and its DLQ for one test, with
// the seeded queue's attributes (the stack's: visibility, retention, the
// receive limit of its redrive policy, which points at the new DLQ), so
// that tests running in parallel on one local cloud each receive only
// their own messages. They are deleted when the test ends. name is short
// and unique in the package (SQS names are at most 80 characters).
func (s *Suite) OwnQueues(t testing.TB, name string) *Queues {
	t.Helper()
	c := Ctx(t)
	client := sqs.NewFromConfig(s.LC.AWSConfig())
	attrsOf := func(url string) (map[string]string, error) {
		out, err := client.GetQueueAttributes(c, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
			AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameAll}})
		if err != nil {
			return nil, err
		}
		a := maps.Clone(out.Attributes)
		for _, k := range []string{"QueueArn", "ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible",
			"ApproximateNumberOfMessagesDelayed", "CreatedTimestamp", "LastModifiedTimestamp", "SqsManagedSseEnabled", "RedriveAllowPolicy"} {
			delete(a, k)
		}
		return a, nil
	}
	create := func(name string, attrs map[string]string) (string, string, error) {
		q, err := client.CreateQueue(c, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
		if err != nil {
			return "", "", fmt.Errorf("queue %s: %w", name, err)
		}
		url := aws.ToString(q.QueueUrl)
		t.Cleanup(func() {
			_, _ = client.DeleteQueue(context.WithoutCancel(c), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
		})
		a, err := client.GetQueueAttributes(c, &sqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl,
			AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
		if err != nil {
			return "", "", fmt.Errorf("queue %s: %w", name, err)
		}
		return url, a.Attributes[string(sqstypes.QueueAttributeNameQueueArn)], nil
	}
	base := s.LC.Names.InterruptionQueue + "-own-" + name // apart from the seeded -dlq and -recheck
	var q Queues
	err := func() error {
		dlqAttrs, err := attrsOf(s.LC.Seeded.DLQURL)
		if err != nil {
			return fmt.Errorf("the seeded DLQ: %w", err)
		}
		if q.DLQURL, q.DLQARN, err = create(base+"-dlq", dlqAttrs); err != nil {
			return err
		}
		attrs, err := attrsOf(s.LC.Seeded.QueueURL)
		if err != nil {
			return fmt.Errorf("the seeded queue: %w", err)
		}
		var redrive map[string]any
		if err := json.Unmarshal([]byte(attrs["RedrivePolicy"]), &redrive); err != nil {
			return fmt.Errorf("the seeded queue's redrive policy %q: %w", attrs["RedrivePolicy"], err)
		}
		redrive["deadLetterTargetArn"] = q.DLQARN
		b, _ := json.Marshal(redrive)
		attrs["RedrivePolicy"] = string(b)
		q.URL, q.ARN, err = create(base, attrs)
		return err
	}()
	if err != nil {
		t.Fatal(err)
	}
	return &q
}
