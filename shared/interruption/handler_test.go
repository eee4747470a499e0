package interruption

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/aws/aws-lambda-go/events"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/metrics"
	"github.com/nodewright/nodewright/shared/provision"
	"github.com/nodewright/nodewright/shared/state"
)

// warned is when the tests' spot interruption warnings were sent.
var warned = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// fakeStore keeps records, actions, leases, unavailable offerings and
// messages in memory; records and actions are copied in and out, as the
// state table does.
type fakeStore struct {
	mu       sync.Mutex
	recs     map[string]*state.NodeClaim
	actions  map[string]*state.Action
	leases   map[string]string
	seen     map[string]bool
	unavail  []state.Offering
	progress []state.Action // every action write, in order
}

func newStore() *fakeStore {
	return &fakeStore{recs: map[string]*state.NodeClaim{}, actions: map[string]*state.Action{}, leases: map[string]string{}, seen: map[string]bool{}}
}

func copyOf[T any](v *T) *T {
	b, _ := json.Marshal(v)
	out := new(T)
	_ = json.Unmarshal(b, out)
	return out
}

func (s *fakeStore) NodeClaimByInstance(_ context.Context, id string) (*state.NodeClaim, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, r := range s.recs {
		if r.InstanceID == id {
			return copyOf(r), nil
		}
	}
	return nil, state.ErrNotFound
}

func (s *fakeStore) GetNodeClaim(_ context.Context, name string) (*state.NodeClaim, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.recs[name]; r != nil {
		return copyOf(r), nil
	}
	return nil, state.ErrNotFound
}

func (s *fakeStore) PutNodeClaim(_ context.Context, nc *state.NodeClaim) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recs[nc.Name] = copyOf(nc)
	return nil
}

func (s *fakeStore) GetAction(_ context.Context, id string) (*state.Action, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := s.actions[id]; a != nil {
		return copyOf(a), nil
	}
	return nil, state.ErrNotFound
}

func (s *fakeStore) PutAction(_ context.Context, a *state.Action) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.actions[a.ID] = copyOf(a)
	s.progress = append(s.progress, *copyOf(a))
	return nil
}

func (s *fakeStore) action(id string) *state.Action {
	a, _ := s.GetAction(context.Background(), id)
	return a
}

func (s *fakeStore) MarkUnavailable(_ context.Context, offs []state.Offering, _ time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unavail = append(s.unavail, offs...)
	return nil
}

func (s *fakeStore) Acquire(_ context.Context, name, holder string, _ time.Duration, _ ...string) (*state.Lease, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if h, ok := s.leases[name]; ok && h != holder {
		return nil, state.ErrHeld
	}
	s.leases[name] = holder
	return &state.Lease{Name: name, Holder: holder}, nil
}

func (s *fakeStore) Renew(context.Context, *state.Lease, time.Duration) error { return nil }

func (s *fakeStore) Release(_ context.Context, l *state.Lease) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.leases, l.Name)
	return false, nil
}

func (s *fakeStore) FirstSeen(_ context.Context, id string, _ time.Duration) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	first := !s.seen[id]
	s.seen[id] = true
	return first, nil
}

// fakeCapacity launches a replacement per Replace call and drains with
// drain(request, call number).
type fakeCapacity struct {
	mu       sync.Mutex
	replaces int
	avoided  [][]state.Offering // each Replace's avoided offerings
	retires  []provision.RetireRequest
	drain    func(req provision.RetireRequest, n int) provision.Retired
	s        *fakeStore
}

func (c *fakeCapacity) Replace(_ context.Context, _ *state.Lease, pods []string, _ string, avoid ...state.Offering) (*provision.Report, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.replaces++
	c.avoided = append(c.avoided, avoid)
	name := fmt.Sprintf("repl-%d", c.replaces)
	return &provision.Report{Launches: []provision.Launch{{NodeClaim: name, Instance: &fleet.Instance{NodeClaim: name}}}}, nil
}

func (c *fakeCapacity) Retire(_ context.Context, req provision.RetireRequest) (provision.Retired, error) {
	c.mu.Lock()
	c.retires = append(c.retires, req)
	n := len(c.retires)
	c.mu.Unlock()
	out := c.drain(req, n)
	if out.Done {
		c.s.mu.Lock()
		delete(c.s.recs, req.Record.Name)
		c.s.mu.Unlock()
	}
	return out, nil
}

type fakeSource struct{ view *provision.View }

func (f fakeSource) View(context.Context) (*provision.View, error) { return f.view, nil }

type fakeNodes struct {
	mu      sync.Mutex
	tainted map[string]bool
}

func (f *fakeNodes) Taint(_ context.Context, name string, t corev1.Taint, cordon bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tainted[name] = t.Key == apis.TaintKeyDisrupted && t.Effect == corev1.TaintEffectNoSchedule && cordon
	return nil
}

type fakeMetrics struct {
	mu     sync.Mutex
	points map[string][]metrics.Dims
}

func (f *fakeMetrics) Emit(name string, _ float64, dims metrics.Dims) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.points[name] = append(f.points[name], dims)
	return nil
}

// rig is a handler over fakes with one spot node of ours, ip-a (instance
// i-0aaaaaaaaaaaaaaaa, record nc-a), running three pods.
type rig struct {
	t       *testing.T
	clock   *testingclock.FakeClock
	store   *fakeStore
	cap     *fakeCapacity
	nodes   *fakeNodes
	metrics *fakeMetrics
	src     fakeSource
}

const instanceA = "i-0aaaaaaaaaaaaaaaa"

func newRig(t *testing.T, drain func(req provision.RetireRequest, n int) provision.Retired) *rig {
	r := &rig{t: t, clock: testingclock.NewFakeClock(warned.Add(time.Second)), store: newStore(), nodes: &fakeNodes{tainted: map[string]bool{}},
		metrics: &fakeMetrics{points: map[string][]metrics.Dims{}}}
	r.cap = &fakeCapacity{drain: drain, s: r.store}
	r.store.recs["nc-a"] = &state.NodeClaim{Name: "nc-a", NodePool: "default", Phase: state.Initialized, InstanceID: instanceA,
		InstanceType: "c6g.large", Zone: "us-east-1a", CapacityType: apis.CapacityTypeSpot}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ip-a"}}
	node.Spec.ProviderID = state.ProviderIDFor("us-east-1a", instanceA)
	view := &provision.View{Nodes: []*corev1.Node{node}}
	yes := true
	for i := range 3 {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: fmt.Sprintf("web-%d", i),
			OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web", Controller: &yes}}}}
		p.Spec.NodeName = "ip-a"
		view.Pods = append(view.Pods, p)
	}
	pool := &apis.NodePool{}
	pool.Name = "default"
	view.NodePools = []*apis.NodePool{pool}
	r.src = fakeSource{view}
	return r
}

// handler is a new invocation's handler.
func (r *rig) handler(holder string) *Handler {
	return &Handler{Store: r.store, Capacity: r.cap, Source: r.src, Nodes: r.nodes, Events: nopEvents{}, Metrics: r.metrics,
		Now: r.clock.Now, Log: slog.New(slog.DiscardHandler), Holder: holder, Poll: time.Millisecond}
}

// deliver hands msgs to a new invocation whose context ends after
// invocation (a Lambda timeout).
func (r *rig) deliver(invocation time.Duration, msgs ...events.SQSMessage) events.SQSEventResponse {
	ctx, cancel := context.WithTimeout(context.Background(), invocation)
	defer cancel()
	return r.handler(fmt.Sprintf("req-%d", len(r.store.progress))).HandleBatch(ctx, events.SQSEvent{Records: msgs})
}

// message is an SQS message carrying an EventBridge event of ours.
func message(id, detailType string, at time.Time, detail map[string]any) events.SQSMessage {
	b, _ := json.Marshal(map[string]any{
		"version": "0", "id": id, "detail-type": detailType, "source": "aws.ec2", "account": "123456789012",
		"time": at.UTC().Format(time.RFC3339), "region": "us-east-1", "resources": []string{}, "detail": detail,
	})
	return events.SQSMessage{MessageId: "msg-" + id, Body: string(b)}
}

func spotWarning(id string) events.SQSMessage {
	return message(id, "EC2 Spot Instance Interruption Warning", warned, map[string]any{"instance-id": instanceA, "instance-action": "terminate"})
}

func stateChange(id, st string) events.SQSMessage {
	return message(id, "EC2 Instance State-change Notification", warned.Add(90*time.Second), map[string]any{"instance-id": instanceA, "state": st})
}

// blockedByPDB is a drain a PDB blocks until the deadline, when the pods
// left are deleted (as the drain package does).
func (r *rig) blockedByPDB(req provision.RetireRequest, _ int) provision.Retired {
	if !req.Deadline.IsZero() && !r.clock.Now().Before(req.Deadline) {
		return provision.Retired{Done: true, Drain: provision.DrainResult{Done: true, Deleted: []string{"default/web-0", "default/web-1", "default/web-2"}}}
	}
	return provision.Retired{Drain: provision.DrainResult{Blocked: []string{"default/web-0"}, Remaining: []string{"default/web-0", "default/web-1", "default/web-2"}}}
}

// TestDrainBlockedByAPDBResumesOnTheNextMessage: a drain a PDB blocks
// outlives its invocation: the invocation ends with the action recorded
// at draining (the replacement launched, the node tainted and cordoned,
// the spot offering marked unavailable) and the message acknowledged; the
// next message for the instance carries the drain on from there, with no
// second replacement.
func TestDrainBlockedByAPDBResumesOnTheNextMessage(t *testing.T) {
	var r *rig
	released := false
	r = newRig(t, func(req provision.RetireRequest, n int) provision.Retired {
		if !released {
			return provision.Retired{Drain: provision.DrainResult{Blocked: []string{"default/web-0"}, Remaining: []string{"default/web-0"}}}
		}
		return provision.Retired{Done: true, Drain: provision.DrainResult{Done: true, Evicted: []string{"default/web-0", "default/web-1", "default/web-2"}}}
	})
	resp := r.deliver(5*time.Second, spotWarning("evt-1")) // less than the 10 s a drain keeps in hand: it stops after a pass
	if len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %+v: a drain that continues later is no failure", resp.BatchItemFailures)
	}
	a := r.store.action(ActionPrefix + instanceA)
	if a == nil || a.Step != state.StepDraining || len(a.Replacements) != 1 || a.Evicted != 0 {
		t.Fatalf("after the first invocation: %+v; want draining, one replacement, nothing evicted", a)
	}
	if !r.nodes.tainted["ip-a"] {
		t.Error("the node is not tainted karpenter.sh/disrupted:NoSchedule and cordoned")
	}
	if len(r.store.unavail) != 1 || r.store.unavail[0] != (state.Offering{InstanceType: "c6g.large", Zone: "us-east-1a", CapacityType: apis.CapacityTypeSpot, Code: "SpotInterruption"}) {
		t.Errorf("unavailable offerings %+v: want c6g.large spot in us-east-1a", r.store.unavail)
	}
	if rec := r.store.recs["nc-a"]; rec == nil || rec.Disruption == nil || !rec.Disruption.Reschedule {
		t.Errorf("record %+v: want it disrupted, its pods moving", rec)
	}

	released = true // the PDB allows disruptions again
	resp = r.deliver(time.Minute, message("evt-2", "EC2 Instance Rebalance Recommendation", warned, map[string]any{"instance-id": instanceA}),
		spotWarning("evt-1"))
	if len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %+v", resp.BatchItemFailures)
	}
	a = r.store.action(ActionPrefix + instanceA)
	if a.Step != state.StepDone || a.Evicted != 3 || len(a.Stranded) != 0 || r.cap.replaces != 1 {
		t.Errorf("after the next message: %+v, %d replacements launched; want done, 3 evicted, none stranded, one replacement", a, r.cap.replaces)
	}
	if len(r.metrics.points[metrics.InterruptionToDrained]) != 1 || len(r.metrics.points[metrics.InterruptionToReplacement]) != 1 {
		t.Errorf("metrics %v: want one replacement and one drained time", r.metrics.points)
	}
}

// TestReplacementAvoidsTheReclaimedOffering: the replacement of a spot
// instance being reclaimed is told its offering, so it never lands there
// (even when marking the offering unavailable failed or has expired).
func TestReplacementAvoidsTheReclaimedOffering(t *testing.T) {
	r := newRig(t, func(provision.RetireRequest, int) provision.Retired {
		return provision.Retired{Done: true, Drain: provision.DrainResult{Done: true}}
	})
	if resp := r.deliver(time.Minute, spotWarning("evt-1")); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %+v", resp.BatchItemFailures)
	}
	want := []state.Offering{{InstanceType: "c6g.large", Zone: "us-east-1a", CapacityType: apis.CapacityTypeSpot, Code: "SpotInterruption"}}
	if len(r.cap.avoided) != 1 || !slices.Equal(r.cap.avoided[0], want) {
		t.Errorf("replacements avoided %+v, want %+v", r.cap.avoided, want)
	}
}

// TestDrainThatCannotFinishRecordsTheStrandedPods: a PDB blocks the drain
// until the instance's deadline (the notice less the margin): the pods
// left are deleted then, and the action is done with them recorded as
// stranded and its cause saying so.
func TestDrainThatCannotFinishRecordsTheStrandedPods(t *testing.T) {
	var r *rig
	r = newRig(t, func(req provision.RetireRequest, n int) provision.Retired {
		r.clock.SetTime(r.clock.Now().Add(20 * time.Second)) // each pass takes a while
		return r.blockedByPDB(req, n)
	})
	resp := r.deliver(time.Minute, spotWarning("evt-1"))
	if len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %+v", resp.BatchItemFailures)
	}
	a := r.store.action(ActionPrefix + instanceA)
	want := []string{"default/web-0", "default/web-1", "default/web-2"}
	if a.Step != state.StepDone || !slices.Equal(a.Stranded, want) || !strings.Contains(a.Cause, "3 pods could not be moved before the deadline") {
		t.Fatalf("action %+v: want done, %v stranded, the cause saying so", a, want)
	}
	dl := warned.Add(2*time.Minute - deadlineMargin)
	for _, req := range r.cap.retires {
		if !req.Deadline.Equal(dl) || !req.Force || req.MaxGracePeriod == nil {
			t.Errorf("retire %+v: want the deadline %v (the notice less the margin), forced, grace capped", req, dl)
		}
	}
}

// TestInstanceEndsBeforeTheDrain: a spot drain blocked by a PDB outlives
// its invocation; then the instance's state changes to shutting-down (it
// is dying): the next message moves the deadline to now, the pods left are
// deleted and recorded as stranded.
func TestInstanceEndsBeforeTheDrain(t *testing.T) {
	var r *rig
	r = newRig(t, func(req provision.RetireRequest, n int) provision.Retired { return r.blockedByPDB(req, n) })
	r.deliver(5*time.Second, spotWarning("evt-1"))
	if a := r.store.action(ActionPrefix + instanceA); a.Step != state.StepDraining || len(a.Stranded) != 0 {
		t.Fatalf("after the warning: %+v; want draining, nothing stranded", a)
	}
	r.clock.SetTime(warned.Add(90 * time.Second))
	resp := r.deliver(time.Minute, stateChange("evt-2", "shutting-down"))
	if len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %+v", resp.BatchItemFailures)
	}
	a := r.store.action(ActionPrefix + instanceA)
	if a.Step != state.StepDone || len(a.Stranded) != 3 || !slices.Contains(a.Messages, "evt-2") || r.cap.replaces != 1 {
		t.Errorf("after shutting-down: %+v, %d replacements; want done with 3 stranded, both messages, one replacement", a, r.cap.replaces)
	}
	last := r.cap.retires[len(r.cap.retires)-1]
	if !last.Deadline.Equal(warned.Add(90 * time.Second)) {
		t.Errorf("last drain's deadline %v, want the state change's handling time", last.Deadline)
	}
}

// TestDrainProgressIsRecorded: pods evicted or deleted in a pass are on
// record before the invocation goes on, so an invocation that dies
// mid-drain (here: a panic in its second pass) leaves the next one an
// accurate account.
func TestDrainProgressIsRecorded(t *testing.T) {
	r := newRig(t, func(req provision.RetireRequest, n int) provision.Retired {
		if n == 1 {
			return provision.Retired{Drain: provision.DrainResult{Evicted: []string{"default/web-0"}, Remaining: []string{"default/web-1"}}}
		}
		panic("the invocation dies in the second pass")
	})
	if resp := r.deliver(time.Minute, spotWarning("evt-1")); len(resp.BatchItemFailures) != 1 {
		t.Fatalf("failures %+v: want the message back for redelivery", resp.BatchItemFailures)
	}
	recorded := false
	for _, a := range r.store.progress {
		if a.Step == state.StepDraining && a.Evicted == 1 {
			recorded = true
		}
	}
	if !recorded {
		t.Errorf("action writes %+v: want one at draining with the eviction on record", r.store.progress)
	}
}

// TestUnknownAndMalformedMessages: an AWS Health event of another service
// is acknowledged and counted as Unknown; a body that is not JSON fails
// alone and is counted as failed.
func TestUnknownAndMalformedMessages(t *testing.T) {
	r := newRig(t, nil)
	rds := message("evt-rds", "AWS Health Event", warned, map[string]any{"service": "RDS", "eventTypeCategory": "scheduledChange",
		"affectedEntities": []map[string]any{{"entityValue": instanceA}}})
	b, _ := json.Marshal(map[string]any{"version": "0", "id": "evt-rds", "detail-type": "AWS Health Event", "source": "aws.health",
		"time": warned.Format(time.RFC3339), "detail": map[string]any{"service": "RDS", "eventTypeCategory": "scheduledChange"}})
	rds.Body = string(b)
	resp := r.deliver(time.Minute, rds, events.SQSMessage{MessageId: "msg-bad", Body: "this is not json"})
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "msg-bad" {
		t.Fatalf("failures %+v, want only msg-bad", resp.BatchItemFailures)
	}
	if k := r.metrics.points[metrics.Interruptions]; len(k) != 1 || k[0][metrics.DimKind] != "Unknown" {
		t.Errorf("interruptions counted %v, want one Unknown", k)
	}
	if len(r.metrics.points[metrics.InterruptionMessagesFailed]) != 1 || len(r.cap.retires) != 0 || r.cap.replaces != 0 {
		t.Errorf("failed %d, retires %d, replaces %d; want 1, 0, 0", len(r.metrics.points[metrics.InterruptionMessagesFailed]), len(r.cap.retires), r.cap.replaces)
	}
}

// The live implementations satisfy the handler's interfaces.
var (
	_ Store     = (*state.Store)(nil)
	_ Capacity  = (*provision.Reconciler)(nil)
	_ Tainter   = (provision.Nodes)(nil)
	_ NodeNamer = (*fleet.Launcher)(nil)
)
