package trigger

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/nodewright/nodewright/shared/logging"
)

// Event sources and detail types of the events routed to the interruption
// queue. The stack's EventBridge rules match exactly these.
const (
	EC2Source    = "aws.ec2"
	HealthSource = "aws.health"

	DetailTypeSpotInterruption                = "EC2 Spot Instance Interruption Warning"
	DetailTypeRebalanceRecommendation         = "EC2 Instance Rebalance Recommendation"
	DetailTypeStateChange                     = "EC2 Instance State-change Notification"
	DetailTypeHealth                          = "AWS Health Event"
	DetailTypeCapacityReservationInterruption = "EC2 Capacity Reservation Instance Interruption Warning"

	// HealthServiceEC2 and HealthCategoryScheduledChange narrow AWS Health
	// events to EC2's scheduled changes (retirements, maintenance).
	HealthServiceEC2              = "EC2"
	HealthCategoryScheduledChange = "scheduledChange"
)

// RecheckDetailTypes are the urgent detail types (EC2Source): the events
// whose deadline is minutes away or now. Besides the interruption queue,
// their rules deliver them to the recheck queue, which hands them out
// names.InterruptionRecheckDelay later, so that an event whose first
// delivery went to an invocation that died before its first call is
// handled in time. The stack's rules and the local EventBridge read this
// list. A new slice at every call: callers may sort or append.
func RecheckDetailTypes() []string {
	return []string{DetailTypeSpotInterruption, DetailTypeStateChange, DetailTypeCapacityReservationInterruption}
}

// Kind is the kind of an interruption event; it is also the value of the
// Interruptions metric's Kind dimension.
type Kind string

// Interruption kinds.
const (
	KindSpotInterruption                Kind = "SpotInterruption"
	KindRebalanceRecommendation         Kind = "RebalanceRecommendation"
	KindStateChange                     Kind = "StateChange"
	KindScheduledChange                 Kind = "ScheduledChange"
	KindCapacityReservationInterruption Kind = "CapacityReservationInterruption"
	// KindUnknown is an event of another source or detail type (a rule the
	// stack does not make sent it): acknowledged and counted, never acted on.
	KindUnknown Kind = "Unknown"
)

// SpotNotice is how long EC2 gives a spot instance (and an instance in an
// interrupted capacity reservation) between the warning and its end.
const SpotNotice = 2 * time.Minute

// Interruption is a decoded interruption event.
type Interruption struct {
	Kind Kind
	// EventID is EventBridge's event ID; duplicates share it.
	EventID string
	Time    time.Time
	// InstanceIDs are the affected instances (one, except for AWS Health
	// events, which may list several).
	InstanceIDs []string
	// State is the new instance state of a state-change notification
	// (pending, running, stopping, stopped, shutting-down, terminated).
	State string
	// Deadline is when the instance goes: the event's time plus the
	// two-minute notice for spot and capacity-reservation interruptions,
	// the scheduled change's start time for AWS Health events; zero when
	// the event gives none.
	Deadline time.Time
}

var instanceIDPattern = regexp.MustCompile(`^i-[0-9a-f]{8,17}$`)

// EC2 instance states, as a state-change notification's detail.state names
// them (EC2's InstanceStateName values).
const (
	StatePending      = "pending"
	StateRunning      = "running"
	StateShuttingDown = "shutting-down"
	StateTerminated   = "terminated"
	StateStopping     = "stopping"
	StateStopped      = "stopped"
)

// InstanceStates are every state EC2 reports; a state-change notification
// naming anything else is refused.
func InstanceStates() []string {
	return []string{StatePending, StateRunning, StateShuttingDown, StateTerminated, StateStopping, StateStopped}
}

func validState(s string) bool {
	for _, v := range InstanceStates() {
		if s == v {
			return true
		}
	}
	return false
}

// DecodeInterruption decodes one interruption queue message body: an
// EventBridge event of one of the five detail types above.
func DecodeInterruption(body []byte) (Interruption, error) {
	var ev events.CloudWatchEvent
	if err := json.Unmarshal(body, &ev); err != nil {
		return Interruption{}, fmt.Errorf("decode interruption event: %w", err)
	}
	if len(ev.Detail) == 0 {
		return Interruption{}, fmt.Errorf("decode interruption event %s: no detail", logging.Quote(ev.ID))
	}
	out := Interruption{EventID: ev.ID, Time: ev.Time}
	var err error
	switch {
	case ev.Source == EC2Source && ev.DetailType == DetailTypeSpotInterruption:
		out.Kind = KindSpotInterruption
		out.InstanceIDs, _, err = instanceDetail(ev.Detail)
		out.Deadline = ev.Time.Add(SpotNotice)
	case ev.Source == EC2Source && ev.DetailType == DetailTypeRebalanceRecommendation:
		out.Kind = KindRebalanceRecommendation
		out.InstanceIDs, _, err = instanceDetail(ev.Detail)
	case ev.Source == EC2Source && ev.DetailType == DetailTypeCapacityReservationInterruption:
		out.Kind = KindCapacityReservationInterruption
		out.InstanceIDs, _, err = instanceDetail(ev.Detail)
		out.Deadline = ev.Time.Add(SpotNotice)
	case ev.Source == EC2Source && ev.DetailType == DetailTypeStateChange:
		out.Kind = KindStateChange
		out.InstanceIDs, out.State, err = instanceDetail(ev.Detail)
		if err == nil && out.State == "" {
			err = errors.New("no state")
		} else if err == nil && !validState(out.State) {
			err = fmt.Errorf("state %s is not an EC2 instance state", logging.Quote(out.State))
		}
	case ev.Source == HealthSource && ev.DetailType == DetailTypeHealth:
		out.Kind = KindScheduledChange
		out.InstanceIDs, out.Deadline, err = healthDetail(ev.Detail)
		if errors.Is(err, errOtherHealthEvent) {
			// Another service's event, or EC2's of another category: not an
			// interruption, and not malformed either.
			return Interruption{Kind: KindUnknown, EventID: ev.ID, Time: ev.Time}, nil
		}
	default:
		out.Kind = KindUnknown
		return out, nil
	}
	if err != nil {
		return Interruption{}, fmt.Errorf("decode interruption event %s (%s): %w", logging.Quote(ev.ID), ev.DetailType, err)
	}
	return out, nil
}

func instanceDetail(raw json.RawMessage) ([]string, string, error) {
	var d struct {
		InstanceID string `json:"instance-id"`
		State      string `json:"state"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, "", err
	}
	if !instanceIDPattern.MatchString(d.InstanceID) {
		return nil, "", fmt.Errorf("invalid instance-id %s", logging.Quote(d.InstanceID))
	}
	return []string{d.InstanceID}, d.State, nil
}

// errOtherHealthEvent: an AWS Health event that is not an EC2 scheduled
// change (it decodes as KindUnknown: acknowledged and counted).
var errOtherHealthEvent = errors.New("not an EC2 scheduled change")

func healthDetail(raw json.RawMessage) ([]string, time.Time, error) {
	var d struct {
		Service           string `json:"service"`
		EventTypeCategory string `json:"eventTypeCategory"`
		StartTime         string `json:"startTime"`
		AffectedEntities  []struct {
			EntityValue string `json:"entityValue"`
		} `json:"affectedEntities"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, time.Time{}, err
	}
	if d.Service != HealthServiceEC2 || d.EventTypeCategory != HealthCategoryScheduledChange {
		return nil, time.Time{}, fmt.Errorf("health event for service %s, category %s: %w", logging.Quote(d.Service), logging.Quote(d.EventTypeCategory), errOtherHealthEvent)
	}
	// Entities other than instances (dedicated hosts, for example) are not
	// Nodewright's to handle; an event with none of ours decodes to nothing.
	var ids []string
	for _, e := range d.AffectedEntities {
		if instanceIDPattern.MatchString(e.EntityValue) {
			ids = append(ids, e.EntityValue)
		}
	}
	// AWS Health writes times as RFC 1123 ("Sun, 15 Jun 2025 12:00:00
	// GMT"); an unreadable start time leaves no deadline, never an error.
	var start time.Time
	for _, layout := range []string{time.RFC1123, time.RFC1123Z, time.RFC3339} {
		if t, err := time.Parse(layout, d.StartTime); err == nil {
			start = t.UTC()
			break
		}
	}
	return ids, start, nil
}
