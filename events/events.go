// Package events holds sample payloads of every event the functions take,
// in the shapes AWS delivers them. Tests and docs read them; the local cloud
// sends the EventBridge ones (ids and times filled in) to the interruption
// queue. Files that wrap another payload (the CloudWatch Logs delivery, the
// Function URL request, the SQS batch) are generated from their readable
// sources by ./gen: run `go generate ./events` after editing a source.
package events

//go:generate go run ./gen

import (
	"embed"
	"fmt"
	"io/fs"
	"sort"
)

// Sample file names.
const (
	SpotInterruptionWarning        = "ec2-spot-interruption-warning.json"
	RebalanceRecommendation        = "ec2-rebalance-recommendation.json"
	InstanceStateChange            = "ec2-instance-state-change.json"
	HealthScheduledChange          = "aws-health-scheduled-change.json"
	CapacityReservationInterrupted = "ec2-capacity-reservation-interruption-warning.json"
	ScheduledEvent                 = "scheduled-event.json"
	AuditLogDelivery               = "cloudwatch-logs-eks-audit.json"
	AuditLogDecoded                = "cloudwatch-logs-eks-audit.decoded.json"
	AdmissionReview                = "admission-review-pods-status.review.json"
	FunctionURLAdmissionReview     = "lambda-url-admission-review.json"
	SQSInterruptionBatch           = "sqs-interruption-batch.json"
)

// SampleWebhookToken is the webhook token in the path of the Function URL
// sample (FunctionURLAdmissionReview), the way the API server sends it: a
// made-up value of the shape the stack generates (64 letters and digits).
const SampleWebhookToken = "SampleToken0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQ"

//go:embed *.json
var files embed.FS

// Sample returns the bytes of one sample file.
func Sample(name string) ([]byte, error) {
	b, err := files.ReadFile(name)
	if err != nil {
		return nil, fmt.Errorf("event sample %s: %w", name, err)
	}
	return b, nil
}

// Names returns the names of all sample files, sorted.
func Names() []string {
	entries, err := fs.ReadDir(files, ".")
	if err != nil {
		return nil
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	return names
}
