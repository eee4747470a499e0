package orchestration

import (
	"time"

	"github.com/nodewright/nodewright/shared/fleet"
)

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
