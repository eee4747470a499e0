package cloudfault

import (
	"context"
	"time"

	"github.com/nodewright/nodewright/events"
)

// Rebalance is an "EC2 Instance Rebalance Recommendation"; nothing
// follows it (the notice is unused).
const Rebalance = "rebalance"

type rebalance struct{}

func (rebalance) Name() string { return Rebalance }

func (rebalance) Inject(ctx context.Context, c Cloud, id string, _ time.Duration) error {
	return c.SendEvent(ctx, events.RebalanceRecommendation, id, nil)
}
