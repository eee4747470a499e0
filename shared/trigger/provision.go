package trigger

import (
	"bytes"
	"compress/gzip"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/nodewright/nodewright/shared/logging"
	"github.com/nodewright/nodewright/shared/names"
)

// Source says what invoked the provision function.
type Source string

// Provision trigger sources.
const (
	// SourceSchedule is the EventBridge sweep (every minute by default).
	SourceSchedule Source = "schedule"
	// SourceAuditLog is a CloudWatch Logs subscription batch from the EKS
	// audit log.
	SourceAuditLog Source = "auditlog"
	// SourceWebhook is the pending-pod webhook's asynchronous invocation.
	SourceWebhook Source = "webhook"
)

// EventBridge's scheduled events.
const (
	ScheduleSource     = "aws.events"
	ScheduleDetailType = "Scheduled Event"
)

// maxAuditBatchBytes bounds a decompressed CloudWatch Logs batch. CloudWatch
// delivers at most about 1 MB of log events per invocation; anything far
// beyond that is not a real batch (or is a decompression bomb).
const maxAuditBatchBytes = 16 << 20

// PodRef names a pod a trigger hints at. Name may be empty: an audit event
// for a pod created with generateName does not always carry the final name.
type PodRef struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name,omitempty"`
	// ResourceVersion is the pod's resourceVersion as the hinter saw it
	// before the change it reports (the webhook's admission review carries
	// the stored version the status update modifies): the change commits at
	// a later revision. Empty when unknown (audit events).
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

// Provision is a decoded provision trigger. Everything in it is a hint: the
// provision flow re-reads pending pods from the API server whatever it says.
type Provision struct {
	Source Source
	// Time is when the trigger was produced (the schedule's time, the newest
	// audit event's time or the webhook's time); zero when unknown.
	Time time.Time
	// Cluster is the cluster a webhook hint names (empty for others).
	Cluster string
	// Pods are the pods hinted at, sorted and without duplicates.
	Pods []PodRef
	// Skipped counts audit log events that could not be read.
	Skipped int
	// Control is true for CloudWatch Logs' control message, which a new
	// subscription sends to check that its destination is reachable.
	Control bool
}

// WebhookHint is the payload the webhook sends to the provision function
// when a pod is marked Unschedulable.
type WebhookHint struct {
	// Source is always names.WebhookHintSource.
	Source    string `json:"source"`
	Cluster   string `json:"cluster"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid,omitempty"`
	// ResourceVersion is the pod's as the admission review showed it:
	// the version the status update modifies (PodRef.ResourceVersion).
	ResourceVersion string    `json:"resourceVersion,omitempty"`
	Time            time.Time `json:"time"`
}

// probe is the union of the fields that tell the trigger kinds apart.
type probe struct {
	AWSLogs    *struct{ Data string } `json:"awslogs"`
	Source     string                 `json:"source"`
	DetailType string                 `json:"detail-type"`
}

// DecodeProvision decodes any of the provision function's triggers.
func DecodeProvision(raw []byte) (Provision, error) {
	var p probe
	if err := json.Unmarshal(raw, &p); err != nil {
		return Provision{}, fmt.Errorf("decode provision trigger: %w", err)
	}
	switch {
	case p.AWSLogs != nil:
		return decodeAuditBatch(p.AWSLogs.Data)
	case p.Source == ScheduleSource && p.DetailType == ScheduleDetailType:
		t, err := DecodeSchedule(raw)
		if err != nil {
			return Provision{}, err
		}
		return Provision{Source: SourceSchedule, Time: t}, nil
	case p.Source == names.WebhookHintSource:
		return decodeWebhookHint(raw)
	default:
		return Provision{}, fmt.Errorf("decode provision trigger: not a schedule, audit log batch or webhook hint (source %s, detail-type %s)", logging.Quote(p.Source), logging.Quote(p.DetailType))
	}
}

// DecodeSchedule decodes an EventBridge scheduled event and returns its time.
func DecodeSchedule(raw []byte) (time.Time, error) {
	var ev events.CloudWatchEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		return time.Time{}, fmt.Errorf("decode scheduled event: %w", err)
	}
	if ev.Source != ScheduleSource || ev.DetailType != ScheduleDetailType {
		return time.Time{}, fmt.Errorf("decode scheduled event: source %s, detail-type %s is not a schedule", logging.Quote(ev.Source), logging.Quote(ev.DetailType))
	}
	return ev.Time, nil
}

func decodeWebhookHint(raw []byte) (Provision, error) {
	var h WebhookHint
	if err := json.Unmarshal(raw, &h); err != nil {
		return Provision{}, fmt.Errorf("decode webhook hint: %w", err)
	}
	if h.Namespace == "" || h.Name == "" {
		return Provision{}, errors.New("decode webhook hint: namespace and name are required")
	}
	if h.Cluster == "" {
		// The handler checks that a hint names its own cluster; one that
		// names none cannot be checked.
		return Provision{}, errors.New("decode webhook hint: cluster is required")
	}
	return Provision{Source: SourceWebhook, Time: h.Time, Cluster: h.Cluster,
		Pods: []PodRef{{Namespace: h.Namespace, Name: h.Name, ResourceVersion: h.ResourceVersion}}}, nil
}

// auditEvent is the part of a Kubernetes audit event (audit.k8s.io/v1) the
// hint needs.
type auditEvent struct {
	Verb      string `json:"verb"`
	Stage     string `json:"stage"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	StageTimestamp time.Time `json:"stageTimestamp"`
}

func decodeAuditBatch(data string) (Provision, error) {
	zipped, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return Provision{}, fmt.Errorf("decode audit log batch: base64: %w", err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(zipped))
	if err != nil {
		return Provision{}, fmt.Errorf("decode audit log batch: gzip: %w", err)
	}
	plain, err := io.ReadAll(io.LimitReader(zr, maxAuditBatchBytes+1))
	if err != nil {
		return Provision{}, fmt.Errorf("decode audit log batch: gzip: %w", err)
	}
	if len(plain) > maxAuditBatchBytes {
		return Provision{}, fmt.Errorf("decode audit log batch: more than %d bytes decompressed", maxAuditBatchBytes)
	}
	var batch events.CloudwatchLogsData
	if err := json.Unmarshal(plain, &batch); err != nil {
		return Provision{}, fmt.Errorf("decode audit log batch: %w", err)
	}
	out := Provision{Source: SourceAuditLog}
	switch batch.MessageType {
	case "CONTROL_MESSAGE":
		out.Control = true
		return out, nil
	case "DATA_MESSAGE":
	default:
		return Provision{}, fmt.Errorf("decode audit log batch: message type %s", logging.Quote(batch.MessageType))
	}
	seen := map[PodRef]bool{}
	for _, le := range batch.LogEvents {
		var ev auditEvent
		if err := json.Unmarshal([]byte(le.Message), &ev); err != nil || ev.ObjectRef == nil {
			out.Skipped++
			continue
		}
		if ev.ObjectRef.Resource != "pods" || ev.ObjectRef.Namespace == "" {
			continue
		}
		ref := PodRef{Namespace: ev.ObjectRef.Namespace, Name: ev.ObjectRef.Name}
		if !seen[ref] {
			seen[ref] = true
			out.Pods = append(out.Pods, ref)
		}
		if ev.StageTimestamp.After(out.Time) {
			out.Time = ev.StageTimestamp
		}
	}
	sort.Slice(out.Pods, func(i, j int) bool {
		a, b := out.Pods[i], out.Pods[j]
		if a.Namespace != b.Namespace {
			return a.Namespace < b.Namespace
		}
		return a.Name < b.Name
	})
	return out, nil
}
