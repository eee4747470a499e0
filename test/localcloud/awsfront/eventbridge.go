package awsfront

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"

	lambdaevents "github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/nodewright/nodewright/events"
	"github.com/nodewright/nodewright/shared/trigger"
)

// SendEvent sends the EventBridge event of sample (one of package
// events' samples) about instanceID to the interruption queue (an urgent
// one to the recheck queue too), as EventBridge delivers it: a new id, the time, region, account, the
// instance's resource, and detail's fields set over the sample's. It fails
// when the instance does not exist. The faults a scenario names
// (package cloudfault) are made of it, After, Terminate and Stop.
func (f *Front) SendEvent(ctx context.Context, sample, instanceID string, detail map[string]any) error {
	zone, err := f.InstanceZone(ctx, instanceID)
	if err != nil {
		return fmt.Errorf("event %s for %s: %w", sample, instanceID, err)
	}
	body, err := f.eventJSON(sample, instanceID, zone, detail)
	if err != nil {
		return fmt.Errorf("event %s for %s: %w", sample, instanceID, err)
	}
	if err := f.send(ctx, body); err != nil {
		return fmt.Errorf("event %s for %s: %w", sample, instanceID, err)
	}
	f.log.Info("event sent", "instance", instanceID, "sample", sample)
	return nil
}

// Now is the front's clock (the time its events carry).
func (f *Front) Now() time.Time { return f.cfg.Now() }

// Region is the front's region.
func (f *Front) Region() string { return f.cfg.Region }

// After runs fn after d unless the front is closed first; what names it in
// the log when it fails.
func (f *Front) After(d time.Duration, what string, fn func(context.Context) error) {
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
			f.log.Error("delayed action failed", "action", what, "err", err)
		}
	})
	f.timers[t] = what
}

// Terminate terminates the instance, bypassing faults, and sends the
// state-change notifications EventBridge would deliver.
func (f *Front) Terminate(ctx context.Context, id string) error {
	if _, err := f.ec2.TerminateInstances(ctx, &ec2.TerminateInstancesInput{InstanceIds: []string{id}}); err != nil {
		return fmt.Errorf("terminate %s: %w", id, err)
	}
	return f.sendStateChanges(ctx, []string{id}, "shutting-down", "terminated")
}

// Stop stops the instance, bypassing faults, and sends the state-change
// notifications EventBridge would deliver.
func (f *Front) Stop(ctx context.Context, id string) error {
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
		} else {
			f.releaseReservations(ids)
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

// send delivers an event as the stack's rules do: to the interruption
// queue, and an urgent one (trigger.RecheckDetailTypes) to the recheck
// queue too, which hands it out after its delay.
func (f *Front) send(ctx context.Context, body []byte) error {
	if f.cfg.QueueURL == "" {
		return fmt.Errorf("no interruption queue configured")
	}
	_, err := f.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(f.cfg.QueueURL), MessageBody: aws.String(string(body))})
	if err != nil {
		return fmt.Errorf("send to interruption queue: %w", err)
	}
	var ev struct {
		Source     string `json:"source"`
		DetailType string `json:"detail-type"`
	}
	if err := json.Unmarshal(body, &ev); err != nil {
		return fmt.Errorf("event: %w", err)
	}
	if f.cfg.RecheckQueueURL == "" || ev.Source != trigger.EC2Source || !slices.Contains(trigger.RecheckDetailTypes(), ev.DetailType) {
		return nil
	}
	_, err = f.sqs.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(f.cfg.RecheckQueueURL), MessageBody: aws.String(string(body))})
	if err != nil {
		return fmt.Errorf("send to recheck queue: %w", err)
	}
	return nil
}

// InstanceZone is the instance's availability zone.
func (f *Front) InstanceZone(ctx context.Context, id string) (string, error) {
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
