package interruption

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// messageAttempts is how many times a message whose handling fails with a
// transient error is handled within its invocation (1 s, 2 s, 3 s apart)
// before it goes back to the queue: a spot warning gives two minutes, and
// a message back on the queue waits at least the retry visibility.
const messageAttempts = 4

// transient reports whether err is worth handling the message again at
// once: an AWS error the SDK's standard retryer retries (throttling, 5xx,
// a dropped connection: the SDK's own attempts ran out), or the API
// server's too many requests, timeouts, unavailability or expired list.
// Handling a message again is safe: every step is idempotent, as for a
// redelivery.
func transient(err error) bool {
	if err == nil {
		return false
	}
	if retry.IsErrorRetryables(retry.DefaultRetryables).IsErrorRetryable(err) == aws.TrueTernary {
		return true
	}
	return apierrors.IsTooManyRequests(err) || apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) ||
		apierrors.IsServiceUnavailable(err) || apierrors.IsInternalError(err) || apierrors.IsResourceExpired(err) || apierrors.IsGone(err)
}
