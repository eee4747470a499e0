package orchestration

import (
	"time"

	"github.com/nodewright/nodewright/shared/fleet"
)

// selectedReservations are, per class that resolved, the reservations
// it selects now, ended ones included (capacity reservation drift).
func selectedReservations(resolved []fleet.Resolution) map[string]map[string]bool {
	out := map[string]map[string]bool{}
	for _, r := range resolved {
		if r.Err != nil || r.Class == nil {
			continue
		}
		set := map[string]bool{}
		for _, res := range r.Class.Reservations {
			set[res.ID] = true
		}
		out[r.Name] = set
	}
	return out
}

// endingBlocks are the Capacity Blocks the resolved classes select that
// are within their reclaim lead of their end, by reservation ID, with that
// end: their nodes expire (disruption.Inputs.EndingBlocks).
func endingBlocks(resolved []fleet.Resolution, now time.Time) map[string]time.Time {
	var out map[string]time.Time
	for _, r := range resolved {
		if r.Err != nil || r.Class == nil {
			continue
		}
		for _, res := range r.Class.Reservations {
			if res.EndingAt(now) {
				if out == nil {
					out = map[string]time.Time{}
				}
				out[res.ID] = res.End
			}
		}
	}
	return out
}
