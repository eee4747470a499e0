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
// compared in constant time with the value in Secrets Manager. Anyone who can
// read ValidatingWebhookConfigurations can read the token; what it grants is
// at most one extra provision reconcile per call, because the provision flow
// treats the hint as a hint and re-reads pending pods from the API server.
// The token is never logged.
package webhook
