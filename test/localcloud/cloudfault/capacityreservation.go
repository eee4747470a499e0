package cloudfault

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nodewright/nodewright/events"
)

// CapacityReservation is an "EC2 Capacity Reservation Instance
// Interruption Warning": the instance's reservation is taken back, and the
// instance is terminated after the notice.
const CapacityReservation = "capacity-reservation"

type capacityReservation struct{}

func (capacityReservation) Name() string { return CapacityReservation }

func (capacityReservation) Inject(ctx context.Context, c Cloud, id string, notice time.Duration) error {
	zone, err := c.InstanceZone(ctx, id)
	if err != nil {
		return err
	}
	err = c.SendEvent(ctx, events.CapacityReservationInterrupted, id, map[string]any{
		"instance-action":           "terminate",
		"instance-termination-time": c.Now().UTC().Truncate(time.Second).Add(notice).Format(time.RFC3339),
		"azId":                      zoneID(zone),
	})
	if err != nil {
		return err
	}
	c.After(notice, CapacityReservation+" "+id, func(ctx context.Context) error { return c.Terminate(ctx, id) })
	return nil
}

// zoneID maps a zone name to an AZ id in the style of use1-az1.
func zoneID(zone string) string {
	if len(zone) < 2 {
		return ""
	}
	parts := strings.Split(zone[:len(zone)-1], "-") // us, east, 1
	if len(parts) != 3 || len(parts[1]) == 0 {
		return ""
	}
	return fmt.Sprintf("%s%c%s-az%d", parts[0], parts[1][0], parts[2], int(zone[len(zone)-1]-'a')+1)
}
