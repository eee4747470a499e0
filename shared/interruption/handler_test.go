package interruption

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	dynamotypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/aws/aws-lambda-go/events"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/metrics"
	"github.com/nodewright/nodewright/shared/names"
	"github.com/nodewright/nodewright/shared/provision"
	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/shared/termination"
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
	leases   map[string]fakeLease
	seen     map[string]bool
	unavail  []state.Offering
	progress []state.Action // every action write, in order
	// putErr, when set, fails every record write (the table unreachable).
	putErr error
	// lookupErrs fail the next record lookups, one each.
	lookupErrs []error
	now        func() time.Time
	renewals   int // lease renewals that succeeded
}

func newStore() *fakeStore {
	return &fakeStore{recs: map[string]*state.NodeClaim{}, actions: map[string]*state.Action{}, leases: map[string]fakeLease{}, seen: map[string]bool{}}
}

// fakeLease is a held lease: its holder, and until when (zero: for ever).
type fakeLease struct {
	holder string
	until  time.Time
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
	if len(s.lookupErrs) > 0 {
		err := s.lookupErrs[0]
		s.lookupErrs = s.lookupErrs[1:]
		return nil, err
	}
	for _, r := range s.recs {
		if r.InstanceID == id {
			c := copyOf(r)
			c.Version = r.Version
			return c, nil
		}
	}
	return nil, state.ErrNotFound
}

func (s *fakeStore) GetNodeClaim(_ context.Context, name string) (*state.NodeClaim, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r := s.recs[name]; r != nil {
		c := copyOf(r)
		c.Version = r.Version
		return c, nil
	}
	return nil, state.ErrNotFound
}

// PutNodeClaim writes nc if the stored record still has nc.Version, as
// the state table does.
func (s *fakeStore) PutNodeClaim(_ context.Context, nc *state.NodeClaim) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.putErr != nil {
		return s.putErr
	}
	var have int64
	if r := s.recs[nc.Name]; r != nil {
		have = r.Version
	}
	if have != nc.Version {
		return fmt.Errorf("update nodeclaim %s: %w", nc.Name, state.ErrConflict)
	}
	nc.Version++
	c := copyOf(nc)
	c.Version = nc.Version
	s.recs[nc.Name] = c
	return nil
}

func (s *fakeStore) DeleteNodeClaim(_ context.Context, nc *state.NodeClaim) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.recs[nc.Name]
	if r == nil {
		return state.ErrNotFound
	}
	if r.Version != nc.Version {
		return fmt.Errorf("delete nodeclaim %s: %w", nc.Name, state.ErrConflict)
	}
	delete(s.recs, nc.Name)
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

func (s *fakeStore) Acquire(_ context.Context, name, holder string, ttl time.Duration, _ ...string) (*state.Lease, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.clock()
	if l, ok := s.leases[name]; ok && l.holder != holder && (l.until.IsZero() || !now.After(l.until)) {
		return nil, &state.HeldError{Name: name, Holder: l.holder, Until: l.until}
	}
	s.leases[name] = fakeLease{holder: holder, until: now.Add(ttl)}
	return &state.Lease{Name: name, Holder: holder, Until: now.Add(ttl)}, nil
}

func (s *fakeStore) Renew(_ context.Context, l *state.Lease, ttl time.Duration) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	// As the table's condition: the holder's, and not run out.
	if cur, ok := s.leases[l.Name]; !ok || cur.holder != l.Holder || !cur.until.IsZero() && s.clock().After(cur.until) {
		return fmt.Errorf("renew lease %s: %w", l.Name, state.ErrLeaseLost)
	}
	s.leases[l.Name] = fakeLease{holder: l.Holder, until: s.clock().Add(ttl)}
	s.renewals++
	return nil
}

// clock is the store's time (the rig's fake clock; the zero time without one).
func (s *fakeStore) clock() time.Time {
	if s.now == nil {
		return time.Time{}
	}
	return s.now()
}

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

// fakeCapacity launches a replacement per Replace call.
type fakeCapacity struct {
	mu       sync.Mutex
	replaces int
	avoided  [][]state.Offering // each Replace's avoided offerings
	// inFlight, when set, are NodeClaims a concurrent round launched for
	// the pods: Replace launches nothing and nominates them there.
	inFlight []string
}

func (c *fakeCapacity) Replace(_ context.Context, _ *state.Lease, pods []string, _ string, avoid ...state.Offering) (*provision.Report, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.replaces++
	c.avoided = append(c.avoided, avoid)
	if len(c.inFlight) > 0 {
		return &provision.Report{Nominated: len(pods), NominatedTo: c.inFlight}, nil
	}
	name := fmt.Sprintf("repl-%d", c.replaces)
	return &provision.Report{Launches: []provision.Launch{{NodeClaim: name, Instance: &fleet.Instance{NodeClaim: name}}}}, nil
}

// fakeDrainer answers each drain pass with drain(options, pass number).
type fakeDrainer struct {
	mu    sync.Mutex
	calls []termination.DrainOptions
	drain func(opts termination.DrainOptions, n int) termination.DrainResult
}

func (d *fakeDrainer) Drain(_ context.Context, _ string, opts termination.DrainOptions) (termination.DrainResult, error) {
	d.mu.Lock()
	d.calls = append(d.calls, opts)
	n := len(d.calls)
	d.mu.Unlock()
	return d.drain(opts, n), nil
}

func (d *fakeDrainer) passes() []termination.DrainOptions {
	d.mu.Lock()
	defer d.mu.Unlock()
	return slices.Clone(d.calls)
}

// fakeFleet records the instances terminated.
type fakeFleet struct {
	mu         sync.Mutex
	terminated []string
}

func (f *fakeFleet) Terminate(_ context.Context, ids []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.terminated = append(f.terminated, ids...)
	return nil
}

type fakeSource struct{ view *provision.View }

func (f fakeSource) View(context.Context) (*provision.View, error) { return f.view, nil }

type fakeNodes struct {
	mu      sync.Mutex
	tainted map[string]bool
	taints  int // calls
	deleted []string
}

func (f *fakeNodes) Taint(_ context.Context, name string, t corev1.Taint, cordon bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.taints++
	f.tainted[name] = t.Key == apis.TaintKeyDisrupted && t.Effect == corev1.TaintEffectNoSchedule && cordon
	return nil
}

func (f *fakeNodes) RemoveFinalizer(context.Context, string) error { return nil }

func (f *fakeNodes) DeleteNode(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deleted = append(f.deleted, name)
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
	drainer *fakeDrainer
	fleet   *fakeFleet
	nodes   *fakeNodes
	metrics *fakeMetrics
	events  *kindEvents
	src     fakeSource
	// leaseTTL is the handlers' node lease TTL: an hour by default, as a
	// test's clock may jump past DefaultLeaseTTL at once, faster than the
	// keeper (which looks every leaseCheck, real time) can renew it; the
	// lease's own tests set DefaultLeaseTTL.
	leaseTTL time.Duration
}

const instanceA = "i-0aaaaaaaaaaaaaaaa"

func newRig(t *testing.T, drain func(opts termination.DrainOptions, n int) termination.DrainResult) *rig {
	r := &rig{t: t, clock: testingclock.NewFakeClock(warned.Add(time.Second)), store: newStore(), nodes: &fakeNodes{tainted: map[string]bool{}},
		metrics: &fakeMetrics{points: map[string][]metrics.Dims{}}, events: &kindEvents{}, leaseTTL: time.Hour}
	r.cap, r.drainer, r.fleet = &fakeCapacity{}, &fakeDrainer{drain: drain}, &fakeFleet{}
	r.store.now = r.clock.Now
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
	term := &termination.Terminator{Store: r.store, Fleet: r.fleet, Nodes: r.nodes, Drainer: r.drainer, Metrics: r.metrics,
		Now: r.clock.Now, Log: slog.New(slog.DiscardHandler)}
	h := New(&Deps{Store: r.store, Capacity: r.cap, Terminator: term, Source: r.src, Nodes: r.nodes, Metrics: r.metrics, Events: r.events},
		r.clock.Now, slog.New(slog.DiscardHandler), holder)
	h.Poll = time.Millisecond
	h.LeaseTTL = r.leaseTTL
	return h
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
func (r *rig) blockedByPDB(opts termination.DrainOptions, _ int) termination.DrainResult {
	if !opts.Deadline.IsZero() && !r.clock.Now().Before(opts.Deadline) {
		return termination.DrainResult{Done: true, Deleted: []string{"default/web-0", "default/web-1", "default/web-2"}}
	}
	return termination.DrainResult{Blocked: []string{"default/web-0"}, Remaining: []string{"default/web-0", "default/web-1", "default/web-2"}}
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
	r = newRig(t, func(opts termination.DrainOptions, n int) termination.DrainResult {
		if !released {
			return termination.DrainResult{Blocked: []string{"default/web-0"}, Remaining: []string{"default/web-0"}}
		}
		return termination.DrainResult{Done: true, Evicted: []string{"default/web-0", "default/web-1", "default/web-2"}}
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
	r := newRig(t, func(termination.DrainOptions, int) termination.DrainResult {
		return termination.DrainResult{Done: true}
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
	r = newRig(t, func(opts termination.DrainOptions, n int) termination.DrainResult {
		r.clock.SetTime(r.clock.Now().Add(20 * time.Second)) // each pass takes a while
		return r.blockedByPDB(opts, n)
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
	for _, opts := range r.drainer.passes() {
		if !opts.Deadline.Equal(dl) || !opts.Force || opts.MaxGracePeriod == nil {
			t.Errorf("drain pass %+v: want the deadline %v (the notice less the margin), forced, grace capped", opts, dl)
		}
	}
	if !slices.Equal(r.fleet.terminated, []string{instanceA}) || r.store.recs["nc-a"] != nil {
		t.Errorf("terminated %v, record %+v: want the instance terminated and its record removed", r.fleet.terminated, r.store.recs["nc-a"])
	}
}

// TestInstanceEndsBeforeTheDrain: a spot drain blocked by a PDB outlives
// its invocation; then the instance's state changes to shutting-down (it
// is dying): the next message moves the deadline to now, the pods left are
// deleted and recorded as stranded.
func TestInstanceEndsBeforeTheDrain(t *testing.T) {
	var r *rig
	r = newRig(t, func(opts termination.DrainOptions, n int) termination.DrainResult { return r.blockedByPDB(opts, n) })
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
	passes := r.drainer.passes()
	last := passes[len(passes)-1]
	if !last.Deadline.Equal(warned.Add(90 * time.Second)) {
		t.Errorf("last drain's deadline %v, want the state change's handling time", last.Deadline)
	}
}

// TestDrainProgressIsRecorded: pods evicted or deleted in a pass are on
// record before the invocation goes on, so an invocation that dies
// mid-drain (here: a panic in its second pass) leaves the next one an
// accurate account.
func TestDrainProgressIsRecorded(t *testing.T) {
	r := newRig(t, func(opts termination.DrainOptions, n int) termination.DrainResult {
		if n == 1 {
			return termination.DrainResult{Evicted: []string{"default/web-0"}, Remaining: []string{"default/web-1"}}
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

// TestNodeIsTaintedOnce: the handler taints and cordons the node once; the
// drain passes that follow know it (each pass tainted it again: a read and
// a patch of the Node per pass, for every warning of a batch).
func TestNodeIsTaintedOnce(t *testing.T) {
	r := newRig(t, func(opts termination.DrainOptions, n int) termination.DrainResult {
		if n < 3 {
			return termination.DrainResult{Evicted: []string{fmt.Sprintf("default/web-%d", n-1)}, Remaining: []string{"default/web-2"}}
		}
		return termination.DrainResult{Done: true, Evicted: []string{"default/web-2"}}
	})
	if resp := r.deliver(time.Minute, spotWarning("evt-1")); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %+v", resp.BatchItemFailures)
	}
	if len(r.fleet.terminated) != 1 {
		t.Fatalf("terminated %v, want the instance after three passes", r.fleet.terminated)
	}
	if !r.nodes.tainted["ip-a"] || r.nodes.taints != 1 {
		t.Errorf("the node was tainted %d times (tainted and cordoned: %v), want once", r.nodes.taints, r.nodes.tainted["ip-a"])
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
	if len(r.metrics.points[metrics.InterruptionMessagesFailed]) != 1 || len(r.drainer.passes()) != 0 || r.cap.replaces != 0 {
		t.Errorf("failed %d, drain passes %d, replaces %d; want 1, 0, 0", len(r.metrics.points[metrics.InterruptionMessagesFailed]), len(r.drainer.passes()), r.cap.replaces)
	}
}

// The live implementations satisfy the handler's interfaces.
var (
	_ Store      = (*state.Store)(nil)
	_ Capacity   = (*provision.Reconciler)(nil)
	_ Terminator = (*termination.Terminator)(nil)
	_ Tainter    = (provision.Nodes)(nil)
	_ NodeNamer  = (*fleet.Launcher)(nil)
)

// waitFor waits until cond holds (a condition, not a sleep), failing the
// test after a deadline.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestSpotWarningWhileAnotherInvocationHoldsTheNode (defect 4): a
// rebalance replacement holds the node's lease and drains it, a PDB
// blocking, with no deadline. A spot warning for the instance arrives in
// another invocation: it records its deadline on the node's record
// although the lease is held, and only then acknowledges the message; the
// holder reads the record between passes and drains to that deadline, so
// the blocked pods go before the instance does.
func TestSpotWarningWhileAnotherInvocationHoldsTheNode(t *testing.T) {
	var r *rig
	r = newRig(t, func(opts termination.DrainOptions, n int) termination.DrainResult { return r.blockedByPDB(opts, n) })
	r.src.view.NodePools[0].Annotations = map[string]string{AnnotationRebalance: RebalanceReplace}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	holder := make(chan events.SQSEventResponse, 1)
	rebalance := message("evt-r", "EC2 Instance Rebalance Recommendation", warned, map[string]any{"instance-id": instanceA})
	go func() {
		holder <- r.handler("rebalance").HandleBatch(ctx, events.SQSEvent{Records: []events.SQSMessage{rebalance}})
	}()
	waitFor(t, "the rebalance drain to begin", func() bool { return len(r.drainer.passes()) > 0 })

	resp := r.deliver(5*time.Second, spotWarning("evt-s"))
	if len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %+v: a warning whose intent is recorded is acknowledged", resp.BatchItemFailures)
	}
	want := warned.Add(2*time.Minute - deadlineMargin)
	rec, err := r.store.GetNodeClaim(context.Background(), "nc-a")
	if err != nil || rec.Disruption == nil || !rec.Disruption.Deadline.Equal(want) {
		var d any
		if rec != nil {
			d = rec.Disruption
		}
		t.Fatalf("record's intent %+v (%v) once the warning is acknowledged: want its deadline %v", d, err, want)
	}
	r.clock.SetTime(want)
	select {
	case resp := <-holder:
		if len(resp.BatchItemFailures) != 0 {
			t.Fatalf("holder failures %+v", resp.BatchItemFailures)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the holder's drain never applied the warning's deadline")
	}
	passes := r.drainer.passes()
	if last := passes[len(passes)-1]; !last.Deadline.Equal(want) || !last.Force {
		t.Errorf("holder's last drain pass %+v: want the warning's deadline %v, forced", last, want)
	}
	a := r.store.action(ActionPrefix + instanceA)
	if a.Step != state.StepDone || len(a.Stranded) != 3 || !a.Deadline.Equal(want) || r.cap.replaces != 1 {
		t.Errorf("action %+v, %d replacements: want done, 3 stranded at the warning's deadline, one replacement", a, r.cap.replaces)
	}
}

// TestSpotWarningOnANodeBeingConsolidated (defect 7): consolidation drains
// a node with its pool's terminationGracePeriod as deadline, earlier than
// the spot notice's; the warning takes the node's intent over without
// dropping that deadline: the drain keeps the earlier one.
func TestSpotWarningOnANodeBeingConsolidated(t *testing.T) {
	var r *rig
	r = newRig(t, func(opts termination.DrainOptions, n int) termination.DrainResult {
		r.clock.SetTime(r.clock.Now().Add(20 * time.Second)) // each pass takes a while
		return r.blockedByPDB(opts, n)
	})
	consolidated := warned.Add(time.Minute)
	rec := r.store.recs["nc-a"]
	rec.Phase = state.Disrupting
	rec.Disruption = &state.Disruption{Action: "consolidation-single-node-1-abcd", Reason: "Underutilized", Since: warned.Add(-time.Minute),
		Reschedule: true, Deadline: consolidated}
	if resp := r.deliver(time.Minute, spotWarning("evt-1")); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %+v", resp.BatchItemFailures)
	}
	passes := r.drainer.passes()
	if len(passes) == 0 || !passes[0].Deadline.Equal(consolidated) {
		t.Fatalf("drain passes %+v: want the first drained to consolidation's earlier deadline %v", passes, consolidated)
	}
	if a := r.store.action(ActionPrefix + instanceA); a.Step != state.StepDone || !a.Deadline.Equal(consolidated) {
		t.Errorf("action %+v: want done with the earlier deadline", a)
	}
}

// TestWarningWhoseIntentCannotBeRecordedComesBack (defect 4): while
// another invocation holds the node, a spot warning whose intent cannot be
// written (the table throttles) is not acknowledged: SQS delivers it
// again, rather than the deadline being lost.
func TestWarningWhoseIntentCannotBeRecordedComesBack(t *testing.T) {
	r := newRig(t, nil)
	r.store.leases[state.LeaseNode("nc-a")] = fakeLease{holder: "rebalance"}
	r.store.putErr = errors.New("ProvisionedThroughputExceededException")
	resp := r.deliver(5*time.Second, spotWarning("evt-s"))
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "msg-evt-s" {
		t.Fatalf("failures %+v: want the warning back for redelivery", resp.BatchItemFailures)
	}
	r.store.putErr = nil
	if resp := r.deliver(5*time.Second, spotWarning("evt-s")); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %+v on redelivery", resp.BatchItemFailures)
	}
	if rec := r.store.recs["nc-a"]; rec.Disruption == nil || !rec.Disruption.Deadline.Equal(warned.Add(2*time.Minute-deadlineMargin)) {
		t.Errorf("record's intent %+v after redelivery: want the warning's deadline", rec.Disruption)
	}
}

// pausing is a handler whose pauses between drain passes step the rig's
// fake clock, recorded.
func (r *rig) pausing(poll time.Duration, waits *[]time.Duration) *Handler {
	h := r.handler("req-clock")
	h.Poll = poll
	h.Wait = func(_ context.Context, d time.Duration) error {
		*waits = append(*waits, d)
		r.clock.Step(d)
		return nil
	}
	return h
}

// TestDrainPausesOnTheInjectedClock: the pause between drain passes is
// Handler.Wait, on the handler's clock: a fake clock drives a drain a PDB
// blocks to its deadline (the pods left deleted then), in Poll steps.
func TestDrainPausesOnTheInjectedClock(t *testing.T) {
	var r *rig
	r = newRig(t, func(opts termination.DrainOptions, n int) termination.DrainResult { return r.blockedByPDB(opts, n) })
	var waits []time.Duration
	h := r.pausing(10*time.Second, &waits)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if resp := h.HandleBatch(ctx, events.SQSEvent{Records: []events.SQSMessage{spotWarning("evt-1")}}); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %+v", resp.BatchItemFailures)
	}
	dl := warned.Add(2*time.Minute - deadlineMargin)
	a := r.store.action(ActionPrefix + instanceA)
	now := r.clock.Now()
	if a.Step != state.StepDone || len(a.Stranded) != 3 || now.Before(dl) || !now.Before(dl.Add(10*time.Second)) {
		t.Errorf("action %+v at %s on the fake clock; want done with 3 stranded within a poll after the deadline %s", a, now, dl)
	}
	if len(waits) == 0 || slices.ContainsFunc(waits, func(d time.Duration) bool { return d != 10*time.Second }) {
		t.Errorf("pauses %v: want each the 10s poll", waits)
	}
}

// TestDrainPassComesByDeleteBy: a pass a budget blocks says when the held
// pod must be deleted to keep its whole grace before the deadline
// (DeleteBy): the handler's next pass comes then, not a poll later.
func TestDrainPassComesByDeleteBy(t *testing.T) {
	var r *rig
	by := warned.Add(30 * time.Second)
	var at []time.Time
	r = newRig(t, func(termination.DrainOptions, int) termination.DrainResult {
		now := r.clock.Now()
		at = append(at, now)
		if now.Before(by) {
			return termination.DrainResult{Blocked: []string{"default/web-0"}, Remaining: []string{"default/web-0"}, DeleteBy: by}
		}
		return termination.DrainResult{Done: true, Deleted: []string{"default/web-0"}}
	})
	var waits []time.Duration
	h := r.pausing(10*time.Second, &waits)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if resp := h.HandleBatch(ctx, events.SQSEvent{Records: []events.SQSMessage{spotWarning("evt-1")}}); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %+v", resp.BatchItemFailures)
	}
	if len(at) == 0 || !at[len(at)-1].Equal(by) {
		t.Errorf("drain passes at %v (pauses %v); want the last at DeleteBy %s", at, waits, by)
	}
	if a := r.store.action(ActionPrefix + instanceA); a.Step != state.StepDone {
		t.Errorf("action %+v: want done", a)
	}
}

// TestSpotWarningTakesOverFromADeadHolder (fault suite seed 2201): the
// invocation that held the node's lease died mid-drain (its lease runs
// out 40 s after the warning, unrenewed). The warning comes back (its
// visibility lapsed with the dead invocation's heartbeat): the new
// invocation records the intent, waits for the lease to lapse rather than
// acknowledging, takes the node over and drains it to the deadline, so the
// pods a budget holds are deleted before the instance goes.
func TestSpotWarningTakesOverFromADeadHolder(t *testing.T) {
	var r *rig
	var firstPass time.Time
	r = newRig(t, func(opts termination.DrainOptions, n int) termination.DrainResult {
		if firstPass.IsZero() {
			firstPass = r.clock.Now()
		}
		return r.blockedByPDB(opts, n)
	})
	lapses := warned.Add(40 * time.Second)
	r.store.leases[state.LeaseNode("nc-a")] = fakeLease{holder: "dead", until: lapses}
	var waits []time.Duration
	h := r.pausing(time.Second, &waits)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if resp := h.HandleBatch(ctx, events.SQSEvent{Records: []events.SQSMessage{spotWarning("evt-1")}}); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %+v", resp.BatchItemFailures)
	}
	passes := r.drainer.passes()
	if len(passes) == 0 {
		t.Fatal("no drain pass: the warning was acknowledged while a dead invocation held the node")
	}
	dl := warned.Add(2*time.Minute - deadlineMargin)
	a := r.store.action(ActionPrefix + instanceA)
	if a == nil || a.Step != state.StepDone || len(a.Stranded) != 3 {
		t.Fatalf("action %+v: want done, the 3 pods a budget held deleted at the deadline", a)
	}
	if now := r.clock.Now(); now.Before(dl) || !now.Before(dl.Add(2*time.Second)) {
		t.Errorf("done at %s: want at the deadline %s (within a poll)", now, dl)
	}
	if first := r.store.progress[0]; first.Step != state.StepReplacing {
		t.Errorf("first action write %+v: want the replacement step", first)
	}
	if r.cap.replaces != 1 {
		t.Errorf("%d replacements: want one", r.cap.replaces)
	}
	if firstPass.Before(lapses) || !firstPass.Before(lapses.Add(time.Second)) {
		t.Errorf("first drain pass at %s: want it once the dead holder's lease lapsed (%s), within a second", firstPass, lapses)
	}
}

// fakeVisibility records each visibility change, at the rig's time.
type fakeVisibility struct {
	mu      sync.Mutex
	now     func() time.Time
	changes []visibilityChange
}

type visibilityChange struct {
	at      time.Time
	receipt string
	after   time.Duration
}

func (f *fakeVisibility) RetryIn(_ context.Context, receipt string, after time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.changes = append(f.changes, visibilityChange{f.now(), receipt, after})
	return nil
}

// TestMessageStaysOutOfSightWhileWorkedOn: the message a handler works on
// is kept out of sight a heartbeat at a time, never lapsing while the
// drain goes on (so only a dead invocation's message comes back, within a
// heartbeat); once handled it stays out of sight until the invocation
// ends, and a failed one comes back after the retry visibility.
func TestMessageStaysOutOfSightWhileWorkedOn(t *testing.T) {
	for _, tc := range []struct {
		name      string
		putErr    error
		wantLast  func(time.Duration) bool
		wantDrain bool
	}{
		{"drained to the deadline", nil, func(d time.Duration) bool { return d > time.Minute }, true},
		{"failed", errors.New("ProvisionedThroughputExceededException"), func(d time.Duration) bool { return d == 30*time.Second }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r *rig
			r = newRig(t, func(opts termination.DrainOptions, n int) termination.DrainResult { return r.blockedByPDB(opts, n) })
			r.store.putErr = tc.putErr
			var waits []time.Duration
			h := r.pausing(time.Second, &waits)
			q := &fakeVisibility{now: r.clock.Now}
			h.Queue = q
			msg := spotWarning("evt-1")
			msg.ReceiptHandle = "rh-1"
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			resp := h.HandleBatch(ctx, events.SQSEvent{Records: []events.SQSMessage{msg}})
			if failed := len(resp.BatchItemFailures) == 1; failed != (tc.putErr != nil) {
				t.Fatalf("failures %+v", resp.BatchItemFailures)
			}
			if len(q.changes) < 2 {
				t.Fatalf("visibility changes %+v: want a heartbeat and a settlement", q.changes)
			}
			start := warned.Add(time.Second)
			if first := q.changes[0]; !first.at.Equal(start) || first.after != names.InterruptionHeartbeat || first.receipt != "rh-1" {
				t.Errorf("first change %+v: want the heartbeat (%v) on rh-1 as the message is taken", first, names.InterruptionHeartbeat)
			}
			beats := q.changes[:len(q.changes)-1]
			for i := 1; i < len(beats); i++ {
				if gap := beats[i].at.Sub(beats[i-1].at); gap >= names.InterruptionHeartbeat || beats[i].after != names.InterruptionHeartbeat {
					t.Fatalf("heartbeat %d after %v (%+v): the message came back into sight while the drain went on", i, gap, beats[i])
				}
			}
			if tc.wantDrain && beats[len(beats)-1].at.Before(warned.Add(2*time.Minute-deadlineMargin-names.InterruptionHeartbeat)) {
				t.Errorf("last heartbeat at %s: want heartbeats until the drain's end at its deadline", beats[len(beats)-1].at)
			}
			if last := q.changes[len(q.changes)-1]; !tc.wantLast(last.after) {
				t.Errorf("settlement %+v: wrong visibility", last)
			}
		})
	}
}

// TestTransientFailureIsHandledAgainInTheInvocation: a spot warning whose
// handling fails with a transient error (the table throttles past the
// SDK's own retries, the API server is unavailable) is handled again
// within the invocation, a second, then two, then three apart, rather than
// left to the queue; a lasting one, or one that is not transient, fails
// the message.
func TestTransientFailureIsHandledAgainInTheInvocation(t *testing.T) {
	throttled := &dynamotypes.ProvisionedThroughputExceededException{Message: aws.String("Rate of requests exceeds the allowed throughput.")}
	unavailable := apierrors.NewServiceUnavailable("etcd leader changed")
	for _, tc := range []struct {
		name      string
		errs      []error
		wantFail  bool
		wantWaits []time.Duration
	}{
		{"throttled once", []error{throttled}, false, []time.Duration{time.Second}},
		{"API server unavailable twice", []error{unavailable, unavailable}, false, []time.Duration{time.Second, 2 * time.Second}},
		{"throttled throughout", []error{throttled, throttled, throttled, throttled}, true, []time.Duration{time.Second, 2 * time.Second, 3 * time.Second}},
		{"not transient", []error{errors.New("AccessDeniedException: not authorized")}, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, func(termination.DrainOptions, int) termination.DrainResult {
				return termination.DrainResult{Done: true}
			})
			r.store.lookupErrs = tc.errs
			var waits []time.Duration
			h := r.pausing(time.Second, &waits)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			resp := h.HandleBatch(ctx, events.SQSEvent{Records: []events.SQSMessage{spotWarning("evt-1")}})
			if failed := len(resp.BatchItemFailures) == 1; failed != tc.wantFail {
				t.Fatalf("failures %+v: want failed %v", resp.BatchItemFailures, tc.wantFail)
			}
			if !slices.Equal(waits, tc.wantWaits) {
				t.Errorf("pauses %v: want %v", waits, tc.wantWaits)
			}
			if a := r.store.action(ActionPrefix + instanceA); !tc.wantFail && (a == nil || a.Step != state.StepDone) {
				t.Errorf("action %+v: want the node handled", a)
			}
		})
	}
}

// TestReplacementsLaunchedByAConcurrentRound: once the intent marks the
// node, a concurrent provision round may launch for its pods before the
// handler's Replace; Replace then launches nothing, and the action names
// the round's NodeClaims as its replacements, where its pods go.
func TestReplacementsLaunchedByAConcurrentRound(t *testing.T) {
	r := newRig(t, func(termination.DrainOptions, int) termination.DrainResult {
		return termination.DrainResult{Done: true, Evicted: []string{"default/web-0", "default/web-1", "default/web-2"}}
	})
	r.cap.inFlight = []string{"default-round1"}
	if resp := r.deliver(5*time.Second, spotWarning("evt-1")); len(resp.BatchItemFailures) != 0 {
		t.Fatalf("failures %+v", resp.BatchItemFailures)
	}
	a := r.store.action(ActionPrefix + instanceA)
	if a == nil || !slices.Equal(a.Replacements, []string{"default-round1"}) {
		t.Fatalf("action %+v: want the round's NodeClaim as its replacement", a)
	}
}
