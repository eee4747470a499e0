package termination

import "time"

// SweepInterval is how often the provision sweep carries on the drains no
// invocation holds (infra's default SweepSchedule, rate(1 minute)).
const SweepInterval = time.Minute

// minPause is the shortest pause between drain passes (a DeleteBy already
// past never makes a caller call the API server in a busy loop).
const minPause = 100 * time.Millisecond

// NextPass is the pause before the next drain pass of a node: the caller's
// poll, cut short so that the pass comes by deleteBy (DrainResult.DeleteBy:
// a pod a budget holds is deleted then, with its whole grace before the
// deadline).
func NextPass(now time.Time, poll time.Duration, deleteBy time.Time) time.Duration {
	if deleteBy.IsZero() {
		return poll
	}
	switch d := deleteBy.Sub(now); {
	case d <= 0:
		return min(poll, minPause)
	case d < poll:
		return d
	}
	return poll
}

// MissesDeleteBy reports whether a drain left to the sweep now may miss
// deleteBy: the next sweep may run up to SweepInterval from now, and a pod
// deleted after its DeleteBy gets only the time left before the deadline.
func MissesDeleteBy(now, deleteBy time.Time) bool {
	return !deleteBy.IsZero() && deleteBy.Before(now.Add(SweepInterval))
}
