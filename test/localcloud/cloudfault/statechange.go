package cloudfault

import (
	"context"
	"time"
)

// StateChange terminates the instance now, outside Nodewright; the only
// word of it is the "EC2 Instance State-change Notification"s (the notice
// is unused).
const StateChange = "state-change"

type stateChange struct{}

func (stateChange) Name() string { return StateChange }

func (stateChange) Inject(ctx context.Context, c Cloud, id string, _ time.Duration) error {
	return c.Terminate(ctx, id)
}
