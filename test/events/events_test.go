// Package events_test checks that every sample payload in events/ parses
// with aws-lambda-go's event types (strictly: no unknown fields) and that the
// payloads inside them decode: EventBridge details, audit log lines, the
// AdmissionReview in the Function URL request, the events in the SQS batch.
package events_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	lambdaevents "github.com/aws/aws-lambda-go/events"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/events"
	"github.com/nodewright/nodewright/shared/webhook"
)

// strict decodes b into v, failing on unknown fields and trailing data.
func strict(t *testing.T, what string, b []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if dec.More() {
		t.Fatalf("%s: trailing data", what)
	}
}

// Details of the EventBridge events, as AWS documents them.
type (
	instanceAction struct {
		InstanceID string `json:"instance-id"`
		Action     string `json:"instance-action"`
	}
	rebalance struct {
		InstanceID string `json:"instance-id"`
	}
	stateChange struct {
		InstanceID string `json:"instance-id"`
		State      string `json:"state"`
	}
	capacityReservation struct {
		InstanceID      string `json:"instance-id"`
		Action          string `json:"instance-action"`
		TerminationTime string `json:"instance-termination-time"`
		AZID            string `json:"azId"`
	}
	healthEvent struct {
		EventArn          string `json:"eventArn"`
		Service           string `json:"service"`
		EventScopeCode    string `json:"eventScopeCode"`
		CommunicationID   string `json:"communicationId"`
		EventTypeCode     string `json:"eventTypeCode"`
		EventTypeCategory string `json:"eventTypeCategory"`
		StartTime         string `json:"startTime"`
		EndTime           string `json:"endTime"`
		LastUpdatedTime   string `json:"lastUpdatedTime"`
		StatusCode        string `json:"statusCode"`
		EventRegion       string `json:"eventRegion"`
		EventDescription  []struct {
			Language          string `json:"language"`
			LatestDescription string `json:"latestDescription"`
		} `json:"eventDescription"`
		AffectedEntities []struct {
			EntityValue string `json:"entityValue"`
		} `json:"affectedEntities"`
	}
	scheduled struct{}
)

// auditEvent is the part of an audit.k8s.io/v1 Event the provision trigger reads.
type auditEvent struct {
	Kind       string `json:"kind"`
	APIVersion string `json:"apiVersion"`
	Verb       string `json:"verb"`
	ObjectRef  struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	RequestObject *struct {
		Status corev1.PodStatus `json:"status"`
	} `json:"requestObject"`
}

func TestEverySampleParses(t *testing.T) {
	checks := map[string]func(*testing.T, []byte){
		events.SpotInterruptionWarning: eventBridge("aws.ec2", "EC2 Spot Instance Interruption Warning", func(t *testing.T, d []byte) {
			var v instanceAction
			strict(t, "detail", d, &v)
			if v.InstanceID == "" || v.Action != "terminate" {
				t.Errorf("detail %+v", v)
			}
		}),
		events.RebalanceRecommendation: eventBridge("aws.ec2", "EC2 Instance Rebalance Recommendation", func(t *testing.T, d []byte) {
			var v rebalance
			strict(t, "detail", d, &v)
			if v.InstanceID == "" {
				t.Errorf("detail %+v", v)
			}
		}),
		events.InstanceStateChange: eventBridge("aws.ec2", "EC2 Instance State-change Notification", func(t *testing.T, d []byte) {
			var v stateChange
			strict(t, "detail", d, &v)
			if v.InstanceID == "" || v.State == "" {
				t.Errorf("detail %+v", v)
			}
		}),
		events.CapacityReservationInterrupted: eventBridge("aws.ec2", "EC2 Capacity Reservation Instance Interruption Warning", func(t *testing.T, d []byte) {
			var v capacityReservation
			strict(t, "detail", d, &v)
			if v.InstanceID == "" || v.TerminationTime == "" {
				t.Errorf("detail %+v", v)
			}
		}),
		events.HealthScheduledChange: eventBridge("aws.health", "AWS Health Event", func(t *testing.T, d []byte) {
			var v healthEvent
			strict(t, "detail", d, &v)
			if v.Service != "EC2" || v.EventTypeCategory != "scheduledChange" || len(v.AffectedEntities) != 1 {
				t.Errorf("detail %+v", v)
			}
		}),
		events.ScheduledEvent: eventBridge("aws.events", "Scheduled Event", func(t *testing.T, d []byte) {
			var v scheduled
			strict(t, "detail", d, &v)
		}),
		events.AuditLogDecoded:            checkAuditDecoded,
		events.AuditLogDelivery:           checkAuditDelivery,
		events.AdmissionReview:            checkAdmissionReview,
		events.FunctionURLAdmissionReview: checkFunctionURL,
		events.SQSInterruptionBatch:       checkSQSBatch,
	}
	names := events.Names()
	if len(names) != len(checks) {
		t.Errorf("events/ has %d samples, the test knows %d: add a check for each new sample", len(names), len(checks))
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			check, ok := checks[name]
			if !ok {
				t.Fatalf("no check for sample %s", name)
			}
			check(t, sample(t, name))
		})
	}
}

func sample(t *testing.T, name string) []byte {
	t.Helper()
	b, err := events.Sample(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func eventBridge(source, detailType string, detail func(*testing.T, []byte)) func(*testing.T, []byte) {
	return func(t *testing.T, b []byte) {
		var ev lambdaevents.CloudWatchEvent
		strict(t, "event", b, &ev)
		if ev.Version != "0" || ev.ID == "" || ev.Source != source || ev.DetailType != detailType ||
			ev.AccountID == "" || ev.Region == "" || ev.Time.IsZero() || len(ev.Resources) == 0 {
			t.Errorf("envelope %+v: want source %s, detail-type %s and every field set", ev, source, detailType)
		}
		detail(t, ev.Detail)
	}
}

func checkAuditDecoded(t *testing.T, b []byte) {
	var d lambdaevents.CloudwatchLogsData
	strict(t, "logs data", b, &d)
	if d.MessageType != "DATA_MESSAGE" || len(d.LogEvents) != 2 {
		t.Fatalf("logs data %+v", d)
	}
	var create, status auditEvent
	strictLoose(t, "audit line 1", []byte(d.LogEvents[0].Message), &create)
	if create.Verb != "create" || create.ObjectRef.Resource != "pods" {
		t.Errorf("first line: %+v, want a pod create", create)
	}
	strictLoose(t, "audit line 2", []byte(d.LogEvents[1].Message), &status)
	if status.Verb != "patch" || status.ObjectRef.Subresource != "status" || status.RequestObject == nil ||
		len(status.RequestObject.Status.Conditions) != 1 || status.RequestObject.Status.Conditions[0].Reason != corev1.PodReasonUnschedulable {
		t.Errorf("second line: %+v, want a pods/status patch marking Unschedulable", status)
	}
}

// strictLoose decodes without rejecting unknown fields (audit events carry
// many the trigger does not read) but fails on malformed JSON.
func strictLoose(t *testing.T, what string, b []byte, v any) {
	t.Helper()
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func checkAuditDelivery(t *testing.T, b []byte) {
	var ev lambdaevents.CloudwatchLogsEvent
	strict(t, "logs event", b, &ev)
	got, err := ev.AWSLogs.Parse()
	if err != nil {
		t.Fatalf("awslogs.data: %v", err)
	}
	var want lambdaevents.CloudwatchLogsData
	strict(t, "decoded sample", sample(t, events.AuditLogDecoded), &want)
	if !jsonEqual(t, got, want) {
		t.Errorf("awslogs.data decodes to %+v, want the decoded sample (run go generate ./events)", got)
	}
}

func checkAdmissionReview(t *testing.T, b []byte) {
	var ar admissionv1.AdmissionReview
	strict(t, "AdmissionReview", b, &ar)
	r := ar.Request
	if r == nil || r.Operation != admissionv1.Update || r.SubResource != "status" || r.Resource.Resource != "pods" || r.UID == "" {
		t.Fatalf("request %+v, want a pods/status UPDATE", r)
	}
	var pod corev1.Pod
	strict(t, "request.object", r.Object.Raw, &pod)
	c := pod.Status.Conditions
	if len(c) != 1 || c[0].Type != corev1.PodScheduled || c[0].Reason != corev1.PodReasonUnschedulable {
		t.Errorf("pod conditions %+v, want PodScheduled=False Unschedulable", c)
	}
}

func checkFunctionURL(t *testing.T, b []byte) {
	var req lambdaevents.LambdaFunctionURLRequest
	strict(t, "Function URL request", b, &req)
	wantPath := "/" + events.SampleWebhookToken
	if req.RequestContext.HTTP.Method != "POST" || req.IsBase64Encoded {
		t.Errorf("request %+v: want a POST with a plain body", req.RequestContext.HTTP)
	}
	if req.RawPath != wantPath || req.RequestContext.HTTP.Path != wantPath {
		t.Errorf("rawPath %q, http.path %q: want the token in the path, %q", req.RawPath, req.RequestContext.HTTP.Path, wantPath)
	}
	if _, ok := req.Headers["authorization"]; ok {
		t.Error("the API server sends no authorization header to a webhook URL; the token is in the path")
	}
	checkAdmissionReview(t, []byte(req.Body))
	if !jsonEqualBytes(t, []byte(req.Body), sample(t, events.AdmissionReview)) {
		t.Error("body differs from the AdmissionReview sample (run go generate ./events)")
	}
	checkWebhookAccepts(t, req)
}

// checkWebhookAccepts hands the sample to the webhook's handler with the
// sample token as the secret: it must authenticate it, allow the review and
// hint the provision function (the pod has just become Unschedulable).
func checkWebhookAccepts(t *testing.T, req lambdaevents.LambdaFunctionURLRequest) {
	t.Helper()
	inv := &recordingInvoker{}
	now := func() time.Time { return time.Date(2025, 6, 1, 12, 0, 1, 0, time.UTC) }
	h := &webhook.Handler{
		Cluster: "demo",
		Secret: webhook.NewSecretCache(func(context.Context) (webhook.Tokens, error) {
			return webhook.Tokens{Current: events.SampleWebhookToken}, nil
		}, now, webhook.CacheOptions{}),
		Invoker: inv,
		Now:     now,
		Log:     slog.New(slog.NewJSONHandler(io.Discard, nil)),
	}
	resp, err := h.Handle(context.Background(), req)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("webhook answered %d (%v) to the sample: %s", resp.StatusCode, err, resp.Body)
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal([]byte(resp.Body), &review); err != nil || review.Response == nil || !review.Response.Allowed {
		t.Errorf("webhook response %s (%v): want an allowed AdmissionReview", resp.Body, err)
	}
	if inv.calls != 1 {
		t.Errorf("provision hinted %d times, want 1", inv.calls)
	}
	req.RawPath = "/" + strings.ToLower(events.SampleWebhookToken)
	if resp, _ := h.Handle(context.Background(), req); resp.StatusCode != http.StatusForbidden {
		t.Errorf("wrong token: status %d, want 403", resp.StatusCode)
	}
}

type recordingInvoker struct{ calls int }

func (r *recordingInvoker) InvokeAsync(context.Context, []byte) error {
	r.calls++
	return nil
}

func checkSQSBatch(t *testing.T, b []byte) {
	var batch lambdaevents.SQSEvent
	strict(t, "SQS event", b, &batch)
	want := []string{events.SpotInterruptionWarning, events.RebalanceRecommendation}
	if len(batch.Records) != len(want) {
		t.Fatalf("records %d, want %d", len(batch.Records), len(want))
	}
	for i, r := range batch.Records {
		if r.EventSource != "aws:sqs" || r.MessageId == "" || r.ReceiptHandle == "" {
			t.Errorf("record %d: %+v", i, r)
		}
		var ev lambdaevents.CloudWatchEvent
		strict(t, "record body", []byte(r.Body), &ev)
		if !jsonEqualBytes(t, []byte(r.Body), sample(t, want[i])) {
			t.Errorf("record %d body differs from %s (run go generate ./events)", i, want[i])
		}
	}
}

func jsonEqual(t *testing.T, a, b any) bool {
	t.Helper()
	ab, err1 := json.Marshal(a)
	bb, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	return bytes.Equal(ab, bb)
}

func jsonEqualBytes(t *testing.T, a, b []byte) bool {
	t.Helper()
	var av, bv any
	if err := json.Unmarshal(a, &av); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &bv); err != nil {
		t.Fatal(err)
	}
	return jsonEqual(t, av, bv)
}
