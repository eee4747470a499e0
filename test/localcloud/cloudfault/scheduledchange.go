package cloudfault

import (
	"context"
	"crypto/rand"
	"strings"
	"time"

	"github.com/nodewright/nodewright/events"
)

// ScheduledChange is an "AWS Health Event" (scheduledChange,
// AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED) starting after the notice, when
// the instance is stopped.
const ScheduledChange = "scheduled-change"

type scheduledChange struct{}

func (scheduledChange) Name() string { return ScheduledChange }

func (scheduledChange) Inject(ctx context.Context, c Cloud, id string, notice time.Duration) error {
	now := c.Now().UTC().Truncate(time.Second)
	if err := c.SendEvent(ctx, events.HealthScheduledChange, id, healthDetail(c.Region(), id, now, now.Add(notice))); err != nil {
		return err
	}
	c.After(notice, ScheduledChange+" "+id, func(ctx context.Context) error { return c.Stop(ctx, id) })
	return nil
}

// healthDetail is the Health event's detail as AWS writes it for a
// retirement, with an event ARN of its own.
func healthDetail(region, id string, now, start time.Time) map[string]any {
	const code = "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED"
	const rfc1123GMT = "Mon, 02 Jan 2006 15:04:05 GMT"
	return map[string]any{
		"eventArn":        "arn:aws:health:" + region + "::event/EC2/" + code + "/" + code + "_" + strings.ToUpper(rand.Text()[:8]),
		"eventTypeCode":   code,
		"startTime":       start.Format(rfc1123GMT),
		"endTime":         start.Add(2 * time.Hour).Format(rfc1123GMT),
		"lastUpdatedTime": now.Format(rfc1123GMT),
		"eventRegion":     region,
		"affectedEntities": []map[string]string{
			{"entityValue": id},
		},
	}
}
