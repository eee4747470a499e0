// Package redelivery says when SQS hands a message out again: it sets a
// received message's visibility timeout through ChangeMessageVisibility.
//
// It exists so that the interruption function retries a failed message
// within seconds, not after its queue's visibility timeout, which must
// exceed the function's timeout (Lambda refuses an SQS trigger otherwise)
// and so is minutes. It is a package of its own because what a function
// links is what its role must be granted (infra/sdkcalls): only the
// interruption function links it, and only its role may change the queue's
// messages; shared/handlers takes it through an interface without SQS.
package redelivery

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// SQSAPI is the part of the SQS API redelivery uses; *sqs.Client
// satisfies it.
type SQSAPI interface {
	ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, opts ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
}

// MaxVisibility is the longest visibility timeout SQS accepts (12 hours).
const MaxVisibility = 12 * time.Hour

// Queue is one SQS queue, by URL.
type Queue struct {
	API SQSAPI
	URL string
}

// RetryIn makes the message received with receiptHandle visible again
// after d (whole seconds, rounded up; at most MaxVisibility).
func (q Queue) RetryIn(ctx context.Context, receiptHandle string, d time.Duration) error {
	if d < 0 || d > MaxVisibility {
		return fmt.Errorf("visibility %v: want 0 to %v", d, MaxVisibility)
	}
	seconds := int32((d + time.Second - 1) / time.Second)
	_, err := q.API.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl:          aws.String(q.URL),
		ReceiptHandle:     aws.String(receiptHandle),
		VisibilityTimeout: seconds,
	})
	if err != nil {
		return fmt.Errorf("change message visibility to %ds: %w", seconds, err)
	}
	return nil
}
