package cloudfault

import (
	"context"
	"time"

	"github.com/nodewright/nodewright/events"
)

// Spot is a spot interruption: the "EC2 Spot Instance Interruption
// Warning" now, then the instance is terminated after the notice.
const Spot = "spot"

type spot struct{}

func (spot) Name() string { return Spot }

func (spot) Inject(ctx context.Context, c Cloud, id string, notice time.Duration) error {
	if err := c.SendEvent(ctx, events.SpotInterruptionWarning, id, map[string]any{"instance-action": "terminate"}); err != nil {
		return err
	}
	c.After(notice, Spot+" "+id, func(ctx context.Context) error { return c.Terminate(ctx, id) })
	return nil
}
