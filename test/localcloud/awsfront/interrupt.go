package awsfront

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	lambdaevents "github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/nodewright/nodewright/events"
)

// Kind is a kind of interruption.
type Kind string

// Interruption kinds, each delivered as the EventBridge event AWS sends.
const (
	// SpotInterruption: "EC2 Spot Instance Interruption Warning", then the
	// instance is terminated after the notice.
	SpotInterruption Kind = "spot-interruption"
	// Rebalance: "EC2 Instance Rebalance Recommendation"; nothing follows.
	Rebalance Kind = "rebalance-recommendation"
	// ScheduledChange: "AWS Health Event" (scheduledChange,
	// AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED), then the instance is stopped
	// at the event's start time (now + notice).
	ScheduledChange Kind = "scheduled-change"
	// CapacityReservationInterruption: "EC2 Capacity Reservation Instance
	// Interruption Warning", then the instance is terminated.
	CapacityReservationInterruption Kind = "capacity-reservation-interruption"
)

// Interrupt sends the event of kind for instanceID to the interruption
// queue now and, for kinds that end the instance, terminates (or stops) it
// after notice, sending the state-change notifications as it goes.
func (f *Front) Interrupt(ctx context.Context, instanceID string, kind Kind, notice time.Duration) error {
	zone, err := f.instanceZone(ctx, instanceID)
	if err != nil {
		return fmt.Errorf("interrupt %s: %w", instanceID, err)
	}
	now := f.cfg.Now().UTC().Truncate(time.Second)
	var (
		body   []byte
		action func(context.Context) error
	)
	switch kind {
	case SpotInterruption:
		body, err = f.eventJSON(events.SpotInterruptionWarning, instanceID, zone, map[string]any{"instance-action": "terminate"})
		action = func(ctx context.Context) error { return f.terminate(ctx, instanceID) }
	case Rebalance:
		body, err = f.eventJSON(events.RebalanceRecommendation, instanceID, zone, nil)
	case ScheduledChange:
		start := now.Add(notice)
		body, err = f.eventJSON(events.HealthScheduledChange, instanceID, zone, healthDetail(f.cfg.Region, instanceID, now, start))
		action = func(ctx context.Context) error { return f.stop(ctx, instanceID) }
	case CapacityReservationInterruption:
		body, err = f.eventJSON(events.CapacityReservationInterrupted, instanceID, zone, map[string]any{
			"instance-action":           "terminate",
			"instance-termination-time": now.Add(notice).Format(time.RFC3339),
			"azId":                      zoneID(zone),
		})
		action = func(ctx context.Context) error { return f.terminate(ctx, instanceID) }
	default:
		return fmt.Errorf("interrupt %s: unknown kind %q", instanceID, kind)
	}
	if err != nil {
		return fmt.Errorf("interrupt %s: %w", instanceID, err)
	}
	if err := f.send(ctx, body); err != nil {
		return fmt.Errorf("interrupt %s: %w", instanceID, err)
	}
	f.log.Info("interruption sent", "instance", instanceID, "kind", kind, "notice", notice)
	if action != nil {
		f.after(notice, string(kind)+" "+instanceID, action)
	}
	return nil
}

// after runs fn after d unless the front is closed first.
func (f *Front) after(d time.Duration, what string, fn func(context.Context) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return
	}
	f.wg.Add(1)
	var t *time.Timer
	t = time.AfterFunc(d, func() {
		defer f.wg.Done()
		f.mu.Lock()
		delete(f.timers, t)
		f.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := fn(ctx); err != nil {
			f.log.Error("interruption action failed", "action", what, "err", err)
		}
	})
	f.timers[t] = what
}

func (f *Front) terminate(ctx context.Context, id string) error {
	if _, err := f.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}}); err != nil {
		return fmt.Errorf("terminate %s: %w", id, err)
	}
	return f.sendStateChanges(ctx, []string{id}, "shutting-down", "terminated")
}

func (f *Front) stop(ctx context.Context, id string) error {
	if _, err := f.ec2.StopInstances(ctx, &ec2.StopInstancesInput{InstanceIds: []string{id}}); err != nil {
		return fmt.Errorf("stop %s: %w", id, err)
	}
	return f.sendStateChanges(ctx, []string{id}, "stopping", "stopped")
}

// changeState forwards TerminateInstances/StopInstances and then sends the
// state-change notifications EventBridge would deliver.
func (f *Front) changeState(w http.ResponseWriter, r *http.Request, req request) {
	status, body, err := f.motoCall(r.Context(), r, req.form)
	if err != nil {
		writeEC2Error(w, http.StatusInternalServerError, "InternalError", err.Error())
		return
	}
	if status == http.StatusOK {
		ids := listParam(req.form, "InstanceId")
		states := []string{"shutting-down", "terminated"}
		if req.action == "StopInstances" {
			states = []string{"stopping", "stopped"}
		}
		if err := f.sendStateChanges(r.Context(), ids, states...); err != nil {
			f.log.Error("state-change notification", "err", err)
		}
	}
	writeRaw(w, status, body)
}

func (f *Front) sendStateChanges(ctx context.Context, ids []string, states ...string) error {
	if f.cfg.QueueURL == "" {
		return nil
	}
	for _, id := range ids {
		for _, st := range states {
			body, err := f.eventJSON(events.InstanceStateChange, id, "", map[string]any{"state": st})
			if err != nil {
				return err
			}
			if err := f.send(ctx, body); err != nil {
				return err
			}
		}
	}
	return nil
}

// eventJSON fills the sample event file with a new id, the time, region,
// account, the instance's resource and detail fields.
func (f *Front) eventJSON(sample, instanceID, zone string, detail map[string]any) ([]byte, error) {
	raw, err := events.Sample(sample)
	if err != nil {
		return nil, err
	}
	var ev lambdaevents.CloudWatchEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		return nil, fmt.Errorf("sample %s: %w", sample, err)
	}
	var d map[string]any
	if err := json.Unmarshal(ev.Detail, &d); err != nil {
		return nil, fmt.Errorf("sample %s detail: %w", sample, err)
	}
	if _, ok := d["instance-id"]; ok {
		d["instance-id"] = instanceID
	}
	for k, v := range detail {
		d[k] = v
	}
	if ev.Detail, err = json.Marshal(d); err != nil {
		return nil, err
	}
	ev.ID = requestID()
	ev.Time = f.cfg.Now().UTC().Truncate(time.Second)
	ev.Region = f.cfg.Region
	ev.AccountID = f.cfg.Account
	ev.Resources = []string{f.resource(sample, instanceID, zone)}
	return json.Marshal(ev)
}

// resource is the event's resources entry as AWS writes it for each kind.
func (f *Front) resource(sample, id, zone string) string {
	switch sample {
	case events.HealthScheduledChange:
		return id
	case events.SpotInterruptionWarning, events.RebalanceRecommendation:
		if zone != "" {
			return "arn:aws:ec2:" + zone + ":instance/" + id
		}
	}
	return "arn:aws:ec2:" + f.cfg.Region + ":" + f.cfg.Account + ":instance/" + id
}

func healthDetail(region, id string, now, start time.Time) map[string]any {
	const code = "AWS_EC2_INSTANCE_RETIREMENT_SCHEDULED"
	const rfc1123GMT = "Mon, 02 Jan 2006 15:04:05 GMT"
	return map[string]any{
		"eventArn":        "arn:aws:health:" + region + "::event/EC2/" + code + "/" + code + "_" + strings.ReplaceAll(requestID(), "-", "")[:8],
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

func (f *Front) send(ctx context.Context, body []byte) error {
	if f.cfg.QueueURL == "" {
		return fmt.Errorf("no interruption queue configured")
	}
	_, err := f.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(f.cfg.QueueURL), MessageBody: aws.String(string(body))})
	if err != nil {
		return fmt.Errorf("send to interruption queue: %w", err)
	}
	return nil
}

func (f *Front) instanceZone(ctx context.Context, id string) (string, error) {
	out, err := f.ec2.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		return "", fmt.Errorf("describe instance: %w", err)
	}
	for _, r := range out.Reservations {
		for _, in := range r.Instances {
			if in.Placement != nil && in.Placement.AvailabilityZone != nil {
				return *in.Placement.AvailabilityZone, nil
			}
		}
	}
	return "", fmt.Errorf("instance %s not found", id)
}
