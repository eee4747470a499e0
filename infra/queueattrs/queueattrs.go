// Package queueattrs holds the interruption queue's, its recheck queue's
// and their dead-letter queue's SQS attributes as the stack synthesizes them, in a golden file
// (interruption.json) embedded here.
//
// It exists so that the local cloud runs the queue the stack deploys: a test
// of the stack (infra/stack, TestQueueAttributesGolden) extracts the
// attributes from the synthesized template and fails when they differ from
// the file (`go test ./infra/stack -run TestQueueAttributesGolden -update`
// rewrites it), and test/localcloud creates its queues from the file rather
// than from a copy kept by hand. The package imports nothing of the CDK, so
// the local cloud links only this file.
package queueattrs

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
)

// File is the golden file's name in this package's directory.
const File = "interruption.json"

//go:embed interruption.json
var golden []byte

// Attributes are the three queues' attributes in SQS's own form (attribute
// name to value, as CreateQueue and GetQueueAttributes take them), without
// the redrive policy's target, which only exists once the DLQ does.
type Attributes struct {
	// Queue is the interruption queue's attributes but RedrivePolicy.
	Queue map[string]string `json:"queue"`
	// Recheck is the recheck queue's attributes but RedrivePolicy (the
	// same DLQ and MaxReceiveCount): the main queue's, with DelaySeconds.
	Recheck map[string]string `json:"recheck"`
	// MaxReceiveCount is the redrive policy's: receives before the DLQ.
	MaxReceiveCount int `json:"maxReceiveCount"`
	// DLQ is the dead-letter queue's attributes.
	DLQ map[string]string `json:"dlq"`
}

// Golden returns the attributes in the embedded golden file.
func Golden() (Attributes, error) { return Parse(golden) }

// Parse reads attributes from the golden file's JSON.
func Parse(b []byte) (Attributes, error) {
	var a Attributes
	if err := json.Unmarshal(b, &a); err != nil {
		return Attributes{}, fmt.Errorf("queue attributes: %w", err)
	}
	if len(a.Queue) == 0 || len(a.Recheck) == 0 || len(a.DLQ) == 0 || a.MaxReceiveCount <= 0 {
		return Attributes{}, fmt.Errorf("queue attributes: queue, recheck, dlq and maxReceiveCount must all be set")
	}
	return a, nil
}

// Marshal renders attributes as the golden file holds them (indented,
// keys sorted, a final newline).
func (a Attributes) Marshal() ([]byte, error) {
	b, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(b, '\n'), nil
}

// Seconds returns a queue attribute given in seconds (VisibilityTimeout,
// MessageRetentionPeriod) as a duration.
func Seconds(attrs map[string]string, name string) (time.Duration, error) {
	v, ok := attrs[name]
	if !ok {
		return 0, fmt.Errorf("queue attribute %s is not set", name)
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("queue attribute %s: %w", name, err)
	}
	return time.Duration(n) * time.Second, nil
}
