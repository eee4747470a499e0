package provision

import (
	"time"

	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/scheduling"
)

// Reservations are the capacity reservations the resolved EC2NodeClasses
// select, as a solve takes them: each with its class and the room EC2
// last reported. A Capacity Block about to end takes no launch.
func Reservations(resolved []fleet.Resolution, now time.Time) []scheduling.Reservation {
	var out []scheduling.Reservation
	for _, r := range resolved {
		if r.Err != nil || r.Class == nil {
			continue
		}
		for _, res := range r.Class.Reservations {
			if res.Ended || res.EndingAt(now) {
				continue
			}
			out = append(out, scheduling.Reservation{
				ID: res.ID, NodeClass: r.Name, InstanceType: res.InstanceType, Zone: res.Zone, Type: res.Type, Available: res.Available,
			})
		}
	}
	return out
}
