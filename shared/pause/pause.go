// Package pause is how a flow waits a while: until a duration has passed
// or its context ends, whichever comes first. A flow takes its wait as a
// field the caller may set (tests and the fault suite drive it from a fake
// clock) and calls For, which falls back to a real timer.
package pause

import (
	"context"
	"time"
)

// Func waits d, or until ctx ends (returning its error).
type Func func(ctx context.Context, d time.Duration) error

// For waits d through wait, or on a real timer when wait is nil; it
// returns ctx's error if ctx ends first.
func For(ctx context.Context, d time.Duration, wait Func) error {
	if wait != nil {
		return wait(ctx, d)
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
