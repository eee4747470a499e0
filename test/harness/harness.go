// Package harness runs Nodewright's functions against the local cloud the
// way AWS runs them: each function's handler (the code Lambda runs) is
// assembled by package setup with its own IAM role (assumed through the AWS
// front, signed into the API server with an EKS token and bound by the
// stack's RBAC), and is driven with the event shapes AWS delivers: the
// EventBridge schedule, CloudWatch Logs subscription batches of the audit
// log, the webhook's asynchronous hint, and SQS batches of the
// interruption queue (received, handed over, deleted or left for
// redelivery as Lambda's event source mapping does).
package harness

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	nwevents "github.com/nodewright/nodewright/events"
	"github.com/nodewright/nodewright/infra/stack"
	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/handlers"
	"github.com/nodewright/nodewright/shared/interruption"
	"github.com/nodewright/nodewright/shared/names"
	"github.com/nodewright/nodewright/shared/orchestration"
	"github.com/nodewright/nodewright/shared/provision"
	"github.com/nodewright/nodewright/shared/setup"
	"github.com/nodewright/nodewright/shared/trigger"
	"github.com/nodewright/nodewright/test/localcloud"
)

// Options configure the functions.
type Options struct {
	NodePools    []*apis.NodePool
	NodeClasses  []*apis.EC2NodeClass
	NodeOverlays []*apis.NodeOverlay
	// Log receives every function's JSON log (default: discarded).
	Log io.Writer
	// Clock is the functions' clock (default: real time).
	Clock *Clock
	// BatchIdle and BatchMax are the provision batching windows (0:
	// the defaults, 1 s and 10 s).
	BatchIdle, BatchMax time.Duration
	// ValidationWait is consolidation's wait (0: 15 s).
	ValidationWait time.Duration
	// ConsolidationMaxWait bounds how long a consolidation tick waits on
	// an action before it leaves it to the next (0: 2 minutes).
	ConsolidationMaxWait time.Duration
	// Provision tunes the reconciler (registration timeout, orphan grace).
	Provision provision.Options
	// WrapKube and WrapAWS, when set, wrap the transport of the functions'
	// Kubernetes and AWS clients (to count their requests).
	WrapKube, WrapAWS func(http.RoundTripper) http.RoundTripper
	// Queues, when set, are the interruption queues Send, DrainQueue and
	// DLQ use (Suite.OwnQueues); nil: the local cloud's seeded ones.
	Queues *Queues
}

// Harness is the three functions wired to one local cloud.
type Harness struct {
	LC            *localcloud.Cloud
	Clock         *Clock
	Provision     *handlers.Provision
	Interruption  *handlers.Interruption
	Consolidation *handlers.Consolidation
	// Metrics holds every EMF record the functions wrote.
	Metrics *Recorder

	opts     Options
	requests atomic.Int64
	mu       sync.Mutex
	recs     map[string]*provision.Reconciler
	batches  [][]string
}

// New wires the functions. It applies the stack's RBAC to the cluster.
func New(ctx context.Context, lc *localcloud.Cloud, opts Options) (*Harness, error) {
	if opts.Clock == nil {
		opts.Clock = NewClock()
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if err := ApplyRBAC(ctx, lc); err != nil {
		return nil, err
	}
	h := &Harness{LC: lc, Clock: opts.Clock, Metrics: &Recorder{}, opts: opts, recs: map[string]*provision.Reconciler{}}
	env := handlers.Env{Cluster: lc.Cluster.Name}
	h.Provision = &handlers.Provision{
		Env: env, Log: h.logger("provision"), BatchIdle: opts.BatchIdle, BatchMax: opts.BatchMax,
		Setup: func(ctx context.Context) (*provision.Reconciler, error) { return h.Reconciler(ctx, "provision") },
	}
	h.Interruption = &handlers.Interruption{
		Env: env, Log: h.logger("interruption"), Now: opts.Clock.Now,
		Setup: func(ctx context.Context) (*interruption.Deps, error) {
			r, err := h.Reconciler(ctx, "interruption")
			if err != nil {
				return nil, err
			}
			return setup.InterruptionDeps(r), nil
		},
	}
	h.Consolidation = &handlers.Consolidation{
		Env: env, Log: h.logger("consolidation"),
		Setup: func(ctx context.Context) (*orchestration.Run, error) {
			o, err := h.options(ctx, "consolidation")
			if err != nil {
				return nil, err
			}
			r, err := h.Reconciler(ctx, "consolidation")
			if err != nil {
				return nil, err
			}
			run := setup.ConsolidationRun(r, o)
			run.Exec.ValidationWait = opts.ValidationWait
			run.MaxWait = opts.ConsolidationMaxWait
			return run, nil
		},
	}
	return h, nil
}

func (h *Harness) logger(fn string) *slog.Logger {
	return handlers.NewLogger(h.opts.Log, fn, "debug")
}

// options are a function's set-up options on the local cloud: its role's
// credentials and an EKS-token client, as in Lambda.
func (h *Harness) options(ctx context.Context, fn string) (setup.Options, error) {
	cfg, err := FunctionAWS(ctx, h.LC, fn)
	if err != nil {
		return setup.Options{}, err
	}
	c, err := setup.EKSCluster(ctx, h.LC.Cluster.Name, eks.NewFromConfig(cfg), sts.NewPresignClient(sts.NewFromConfig(cfg)))
	if err != nil {
		return setup.Options{}, err
	}
	if h.opts.WrapKube != nil {
		c.REST.Wrap(h.opts.WrapKube)
	}
	if h.opts.WrapAWS != nil {
		cfg.HTTPClient = &http.Client{Transport: h.opts.WrapAWS(http.DefaultTransport)}
	}
	env := h.LC.Env()
	env["AWS_LAMBDA_FUNCTION_NAME"] = "nodewright-" + fn
	return setup.Options{
		Env: env, AWS: cfg, Cluster: c, NodePools: h.opts.NodePools, NodeClasses: h.opts.NodeClasses, NodeOverlays: h.opts.NodeOverlays,
		Metrics: h.Metrics, Now: h.Clock.Now, Log: h.logger(fn),
	}, nil
}

// Reconciler is the function's reconciler (built once, as a warm
// container keeps it).
func (h *Harness) Reconciler(ctx context.Context, fn string) (*provision.Reconciler, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if r := h.recs[fn]; r != nil {
		return r, nil
	}
	o, err := h.options(ctx, fn)
	if err != nil {
		return nil, err
	}
	r, err := setup.Controller(ctx, o)
	if err != nil {
		return nil, err
	}
	r.Options = h.opts.Provision
	h.recs[fn] = r
	return r, nil
}

// FunctionAWS is an SDK config with the function's role's credentials,
// assumed through the AWS front as Lambda does for an execution role.
func FunctionAWS(ctx context.Context, lc *localcloud.Cloud, fn string) (aws.Config, error) {
	base := lc.AWSConfig()
	out, err := sts.NewFromConfig(base).AssumeRole(ctx, &sts.AssumeRoleInput{
		RoleArn: aws.String(localcloud.FunctionRoleARN(fn)), RoleSessionName: aws.String(fn),
	})
	if err != nil {
		return aws.Config{}, fmt.Errorf("assume the %s role: %w", fn, err)
	}
	cfg := base.Copy()
	c := out.Credentials
	cfg.Credentials = credentials.NewStaticCredentialsProvider(*c.AccessKeyId, *c.SecretAccessKey, *c.SessionToken)
	return cfg, nil
}

// ApplyRBAC creates the stack's ClusterRole and its binding (rbac.yaml),
// as an operator applies them after `cdk deploy`.
func ApplyRBAC(ctx context.Context, lc *localcloud.Cloud) error {
	data, err := stack.RBACManifest()
	if err != nil {
		return err
	}
	docs := bytes.Split(data, []byte("\n---\n"))
	if len(docs) < 2 {
		return fmt.Errorf("rbac.yaml: %d documents, want a ClusterRole and a binding", len(docs))
	}
	var role rbacv1.ClusterRole
	var binding rbacv1.ClusterRoleBinding
	if err := yaml.Unmarshal(docs[0], &role); err != nil {
		return err
	}
	if err := yaml.Unmarshal(docs[1], &binding); err != nil {
		return err
	}
	if _, err := lc.Kube.RbacV1().ClusterRoles().Create(ctx, &role, metav1.CreateOptions{}); err != nil && !strings.Contains(err.Error(), "already exists") {
		return fmt.Errorf("apply rbac.yaml: %w", err)
	}
	if _, err := lc.Kube.RbacV1().ClusterRoleBindings().Create(ctx, &binding, metav1.CreateOptions{}); err != nil && !strings.Contains(err.Error(), "already exists") {
		return fmt.Errorf("apply rbac.yaml: %w", err)
	}
	return nil
}

// lambdaContext is ctx as Lambda hands it to a handler: with a request ID
// and a deadline.
func (h *Harness) lambdaContext(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	id := fmt.Sprintf("req-%d", h.requests.Add(1))
	ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: id})
	return context.WithTimeout(ctx, timeout)
}

// Sweep invokes the provision function with the one-minute schedule's
// EventBridge event.
func (h *Harness) Sweep(ctx context.Context) error {
	ctx, cancel := h.lambdaContext(ctx, 5*time.Minute)
	defer cancel()
	return h.Provision.Handle(ctx, ScheduledEvent(h.Clock.Now()))
}

// Hint invokes the provision function with the webhook's asynchronous hint
// for a pod.
func (h *Harness) Hint(ctx context.Context, namespace, name string) error {
	b, _ := json.Marshal(trigger.WebhookHint{Source: names.WebhookHintSource, Cluster: h.LC.Cluster.Name, Namespace: namespace, Name: name, Time: h.Clock.Now()})
	ctx, cancel := h.lambdaContext(ctx, 5*time.Minute)
	defer cancel()
	return h.Provision.Handle(ctx, b)
}

// AuditLog invokes the provision function with a CloudWatch Logs
// subscription batch of the audit events kube-scheduler's "Unschedulable"
// status patches produce for the pods.
func (h *Harness) AuditLog(ctx context.Context, namespace string, pods ...string) error {
	payload, err := AuditBatch(h.LC.Cluster.Name, namespace, pods, h.Clock.Now())
	if err != nil {
		return err
	}
	ctx, cancel := h.lambdaContext(ctx, 5*time.Minute)
	defer cancel()
	return h.Provision.Handle(ctx, payload)
}

// Tick invokes the consolidation function with its schedule's event.
func (h *Harness) Tick(ctx context.Context) error {
	ctx, cancel := h.lambdaContext(ctx, 15*time.Minute)
	defer cancel()
	return h.Consolidation.Handle(ctx, ScheduledEvent(h.Clock.Now()))
}

// ScheduledEvent is EventBridge's scheduled event at t.
func ScheduledEvent(t time.Time) json.RawMessage {
	b, _ := json.Marshal(map[string]any{
		"version": "0", "id": fmt.Sprintf("sched-%d", t.UnixNano()), "detail-type": trigger.ScheduleDetailType,
		"source": trigger.ScheduleSource, "account": localcloud.Account, "time": t.UTC().Format(time.RFC3339),
		"region": "us-east-1", "resources": []string{"arn:aws:events:us-east-1:" + localcloud.Account + ":rule/nodewright-sweep"}, "detail": map[string]any{},
	})
	return b
}

// AuditBatch is a CloudWatch Logs subscription payload carrying, for each
// pod, the audit event of kube-scheduler marking it Unschedulable.
func AuditBatch(cluster, namespace string, pods []string, t time.Time) (json.RawMessage, error) {
	var logEvents []map[string]any
	for i, p := range pods {
		ev := map[string]any{
			"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Request", "auditID": fmt.Sprintf("audit-%d-%d", t.UnixNano(), i),
			"stage": "ResponseComplete", "verb": "patch",
			"requestURI":     "/api/v1/namespaces/" + namespace + "/pods/" + p + "/status",
			"user":           map[string]any{"username": "system:kube-scheduler"},
			"objectRef":      map[string]any{"resource": "pods", "namespace": namespace, "name": p, "apiVersion": "v1", "subresource": "status"},
			"responseStatus": map[string]any{"code": 200},
			"requestObject": map[string]any{"status": map[string]any{"conditions": []map[string]any{{
				"type": "PodScheduled", "status": "False", "reason": "Unschedulable", "lastTransitionTime": t.UTC().Format(time.RFC3339),
			}}}},
			"requestReceivedTimestamp": t.UTC().Format(time.RFC3339Nano), "stageTimestamp": t.UTC().Format(time.RFC3339Nano),
		}
		msg, _ := json.Marshal(ev)
		logEvents = append(logEvents, map[string]any{"id": fmt.Sprint(i), "timestamp": t.UnixMilli(), "message": string(msg)})
	}
	batch, _ := json.Marshal(map[string]any{
		"messageType": "DATA_MESSAGE", "owner": localcloud.Account, "logGroup": "/aws/eks/" + cluster + "/cluster",
		"logStream": "kube-apiserver-audit-0", "subscriptionFilters": []string{"nodewright-pending-pods"}, "logEvents": logEvents,
	})
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	if _, err := zw.Write(batch); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return json.Marshal(map[string]any{"awslogs": map[string]any{"data": base64.StdEncoding.EncodeToString(buf.Bytes())}})
}

// DrainQueue hands the interruption queue's messages (Options.Queues, or
// the seeded queue) to the interruption function as Lambda's SQS event
// source does: batches of up to 10, the succeeded messages deleted, the
// failed ones left to become visible again (and, after the queue's
// receive limit, to move to the DLQ). It returns when a receive comes
// back empty. Visibility is shortened to
// visibility so that redeliveries come quickly in tests.
func (h *Harness) DrainQueue(ctx context.Context, visibility time.Duration) (handled int, failed int, err error) {
	client := sqs.NewFromConfig(h.LC.AWSConfig())
	q := h.queues()
	url := q.URL
	for {
		out, err := client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: 0,
			VisibilityTimeout:           int32(visibility / time.Second),
			MessageSystemAttributeNames: []sqstypes.MessageSystemAttributeName{sqstypes.MessageSystemAttributeNameAll},
		})
		if err != nil {
			return handled, failed, fmt.Errorf("receive: %w", err)
		}
		if len(out.Messages) == 0 {
			return handled, failed, nil
		}
		ev := events.SQSEvent{}
		receipts := map[string]string{}
		for _, m := range out.Messages {
			attrs := map[string]string{}
			for k, v := range m.Attributes {
				attrs[k] = v
			}
			ev.Records = append(ev.Records, events.SQSMessage{
				MessageId: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body),
				Attributes: attrs, EventSource: "aws:sqs", EventSourceARN: q.ARN, AWSRegion: "us-east-1",
			})
			receipts[aws.ToString(m.MessageId)] = aws.ToString(m.ReceiptHandle)
		}
		bodies := make([]string, len(ev.Records))
		for i, m := range ev.Records {
			bodies[i] = m.Body
		}
		h.mu.Lock()
		h.batches = append(h.batches, bodies)
		h.mu.Unlock()
		lctx, cancel := h.lambdaContext(ctx, 5*time.Minute)
		resp, herr := h.Interruption.Handle(lctx, ev)
		cancel()
		if herr != nil {
			return handled, failed, herr
		}
		bad := map[string]bool{}
		for _, f := range resp.BatchItemFailures {
			bad[f.ItemIdentifier] = true
		}
		for id, rh := range receipts {
			if bad[id] {
				failed++
				continue
			}
			handled++
			if _, err := client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(url), ReceiptHandle: aws.String(rh)}); err != nil {
				return handled, failed, fmt.Errorf("delete: %w", err)
			}
		}
	}
}

// Batches returns the message bodies of every SQS batch DrainQueue handed
// the interruption function, in order.
func (h *Harness) Batches() [][]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([][]string(nil), h.batches...)
}

// Clock is the functions' clock: real time plus an offset tests and
// scenarios advance ("time the functions see moves on").
type Clock struct{ offset atomic.Int64 }

// NewClock returns a clock at real time.
func NewClock() *Clock { return &Clock{} }

// Now is real time plus the offset.
func (c *Clock) Now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) { c.offset.Add(int64(d)) }

// Recorder keeps the EMF records the functions write.
type Recorder struct {
	mu    sync.Mutex
	lines []map[string]any
}

// Write takes EMF lines.
func (r *Recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, line := range bytes.Split(bytes.TrimSpace(p), []byte("\n")) {
		var m map[string]any
		if json.Unmarshal(line, &m) == nil {
			r.lines = append(r.lines, m)
		}
	}
	return len(p), nil
}

// Values returns the values written for metric name, in order.
func (r *Recorder) Values(name string) []float64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []float64
	for _, m := range r.lines {
		if v, ok := m[name].(float64); ok {
			out = append(out, v)
		}
	}
	return out
}

// Point is one data point a function wrote: its value and its
// dimensions (ClusterName included).
type Point struct {
	Value float64
	Dims  map[string]string
}

// Points returns the data points written for metric name, in order.
func (r *Recorder) Points(name string) []Point {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Point
	for _, m := range r.lines {
		v, ok := m[name].(float64)
		if !ok {
			continue
		}
		p := Point{Value: v, Dims: map[string]string{}}
		for k, x := range m {
			if s, ok := x.(string); ok {
				p.Dims[k] = s
			}
		}
		out = append(out, p)
	}
	return out
}

// Sum adds the values written for metric name whose dimensions include
// every one of dims, and says how many points it added.
func (r *Recorder) Sum(name string, dims map[string]string) (sum float64, n int) {
	for _, p := range r.Points(name) {
		match := true
		for k, v := range dims {
			if p.Dims[k] != v {
				match = false
			}
		}
		if match {
			sum += p.Value
			n++
		}
	}
	return sum, n
}

// Names returns every metric name written.
func (r *Recorder) Names() map[string]bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := map[string]bool{}
	for _, m := range r.lines {
		aws, ok := m["_aws"].(map[string]any)
		if !ok {
			continue
		}
		cms, _ := aws["CloudWatchMetrics"].([]any)
		for _, cm := range cms {
			ms, _ := cm.(map[string]any)["Metrics"].([]any)
			for _, x := range ms {
				if n, ok := x.(map[string]any)["Name"].(string); ok {
					out[n] = true
				}
			}
		}
	}
	return out
}

// Event is an EventBridge event as the interruption rules deliver it: the
// sample of its kind (package events) with its ID, time and instances.
// For a Health event every instance is an affected entity; for the EC2
// kinds the first is the event's instance. state is the new state of a
// state-change notification.
func Event(sample, id string, at time.Time, state string, instances ...string) ([]byte, error) {
	raw, err := nwevents.Sample(sample)
	if err != nil {
		return nil, err
	}
	var ev map[string]any
	if err := json.Unmarshal(raw, &ev); err != nil {
		return nil, err
	}
	ev["id"], ev["time"] = id, at.UTC().Format(time.RFC3339)
	detail, _ := ev["detail"].(map[string]any)
	if _, ok := detail["instance-id"]; ok && len(instances) > 0 {
		detail["instance-id"] = instances[0]
	}
	if state != "" {
		detail["state"] = state
	}
	if _, ok := detail["affectedEntities"]; ok {
		var ents []map[string]any
		for _, i := range instances {
			ents = append(ents, map[string]any{"entityValue": i})
		}
		detail["affectedEntities"] = ents
		detail["startTime"] = at.Add(10 * time.Minute).UTC().Format(time.RFC1123)
	}
	return json.Marshal(ev)
}

// Send puts a message on the interruption queue (Options.Queues, or the
// seeded queue), as EventBridge does.
func (h *Harness) Send(ctx context.Context, body []byte) error {
	_, err := sqs.NewFromConfig(h.LC.AWSConfig()).SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(h.queues().URL), MessageBody: aws.String(string(body))})
	return err
}

// DLQ returns the bodies of the messages in the dead-letter queue.
func (h *Harness) DLQ(ctx context.Context) ([]string, error) {
	out, err := sqs.NewFromConfig(h.LC.AWSConfig()).ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(h.queues().DLQURL), MaxNumberOfMessages: 10, VisibilityTimeout: 0,
	})
	if err != nil {
		return nil, err
	}
	var bodies []string
	for _, m := range out.Messages {
		bodies = append(bodies, aws.ToString(m.Body))
	}
	return bodies, nil
}
