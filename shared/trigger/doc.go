// Package trigger decodes what invokes the functions: EventBridge schedules,
// CloudWatch Logs subscription batches of the EKS audit log, the pending-pod
// webhook's hint, and the EC2/AWS Health events that reach the interruption
// queue. It returns plain values and validates what later code will trust
// (instance IDs, kinds), so a malformed payload fails with a clear error
// instead of flowing further.
//
// It also names the EventBridge detail types the stack's rules match, so the
// rules and the decoder cannot disagree.
package trigger
