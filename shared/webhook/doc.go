// Package webhook is the pending-pod webhook behind a Lambda Function URL: it
// authenticates the API server's call by a shared token, answers the
// AdmissionReview (always allowed: it must never block a pod), and when
// kube-scheduler has just marked a pod Unschedulable it asks the provision
// function, asynchronously, to look.
//
// Why a token in the URL path: a Function URL with IAM auth wants SigV4,
// which kube-apiserver cannot sign, and a ValidatingWebhookConfiguration's
// clientConfig.url may carry neither custom headers nor a query string. So the
// URL's path is the token (https://<id>.lambda-url.<region>.on.aws/<token>),
// compared in constant time with the secret's current value and, for the
// overlap after a rotation, its previous one. Whoever can read the
// registration (or the audit and API server logs that may record it; see the
// README) can send reviews; what that buys is bounded: hints are coalesced to
// one per cluster per window through a conditional write to the state table,
// in a partition of its own that is all the webhook's role may write (no
// NodeClaim record, lease or action is within its reach), and the provision
// flow treats a hint as a hint and re-reads pending pods
// from the API server.
//
// The tokens are cached for a few minutes, so a retired token stops working
// on a warm instance soon after a rotation; a secret that cannot be read is
// remembered as a failure and retried with backoff. Request values reach the
// logs bounded (logging.Quote, logging.Err); the token never does.
package webhook
