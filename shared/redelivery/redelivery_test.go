package redelivery

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

type fakeSQS struct {
	in  *sqs.ChangeMessageVisibilityInput
	err error
}

func (f *fakeSQS) ChangeMessageVisibility(_ context.Context, in *sqs.ChangeMessageVisibilityInput, _ ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error) {
	f.in = in
	return &sqs.ChangeMessageVisibilityOutput{}, f.err
}

func TestRetryIn(t *testing.T) {
	for _, tc := range []struct {
		name    string
		d       time.Duration
		err     error
		seconds int32  // the request's visibility (-1: no request)
		wantErr string // "" : none
	}{
		{"30 s", 30 * time.Second, nil, 30, ""},
		{"now", 0, nil, 0, ""},
		{"a part of a second rounds up", 1500 * time.Millisecond, nil, 2, ""},
		{"the SQS maximum", MaxVisibility, nil, 43200, ""},
		{"past the maximum", MaxVisibility + time.Second, nil, -1, "want 0 to 12h0m0s"},
		{"negative", -time.Second, nil, -1, "want 0 to"},
		{"SQS error wrapped", time.Second, errors.New("ReceiptHandleIsInvalid"), 1, "change message visibility to 1s: ReceiptHandleIsInvalid"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &fakeSQS{err: tc.err}
			err := Queue{API: f, URL: "https://sqs/q"}.RetryIn(context.Background(), "rh", tc.d)
			if (err == nil) != (tc.wantErr == "") || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Fatalf("error %v, want %q", err, tc.wantErr)
			}
			if tc.seconds < 0 {
				if f.in != nil {
					t.Fatalf("request sent: %+v", f.in)
				}
				return
			}
			if f.in == nil || aws.ToString(f.in.QueueUrl) != "https://sqs/q" || aws.ToString(f.in.ReceiptHandle) != "rh" || f.in.VisibilityTimeout != tc.seconds {
				t.Fatalf("request %+v, want visibility %d", f.in, tc.seconds)
			}
		})
	}
}
