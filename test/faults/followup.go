package faults

import (
	"maps"
	"math/rand/v2"
	"slices"
	"time"
)

// followUp runs what comes after a schedule until nothing changes:
// redelivered messages, provision rounds with their sweep, the clock moved
// past every timeout.
func (f *flows) followUp(rng *rand.Rand) {
	w := f.w
	if rng.IntN(2) == 0 {
		// An AMI release: the alias resolves to new images from now on.
		w.ssm.generation++
	}
	var idle time.Duration
	// Until nothing changed for 45 minutes (past every timeout: registration
	// 15 minutes, orphans 5, re-drives 30 s), or 90 minutes at most (a
	// flow that acts at every tick, as drift that cannot replace a node in
	// a pool at its limit does, never settles).
	end := w.clock.Now().Add(90 * time.Minute)
	for idle < 45*time.Minute && w.clock.Now().Before(end) {
		w.changed = false
		f.deliverDue()
		_ = f.clean("provision", f.provision(true))
		_ = f.clean("consolidation", f.consolidation())
		w.tick()
		step := 30 * time.Second
		if w.changed {
			idle = 0
		} else {
			// The sweep runs every minute: while a warned instance still
			// runs (its deadline is due), the next one comes a minute on;
			// otherwise the follow-up skips ahead.
			step = 5 * time.Minute
			if f.warnedLive() {
				step = time.Minute
			}
			idle += step
		}
		if next := f.nextVisible(); !next.IsZero() && next.Before(w.clock.Now().Add(step)) {
			// A message comes back before then.
			step = max(next.Sub(w.clock.Now()), 0)
		}
		w.clock.Step(step)
		w.tick()
	}
}

// warnedLive reports whether an instance EC2 warned still runs.
func (f *flows) warnedLive() bool {
	for _, id := range slices.Sorted(maps.Keys(f.w.warned)) {
		if in := f.w.ec2.instances[id]; in != nil && in.live() {
			return true
		}
	}
	return false
}
