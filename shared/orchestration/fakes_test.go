package orchestration

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/disruption"
	"github.com/nodewright/nodewright/shared/metrics"
	"github.com/nodewright/nodewright/shared/provision"
	"github.com/nodewright/nodewright/shared/scheduling"
	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/shared/termination"
)

// t0 is when every test's action is planned.
var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

// fakeStore keeps records and actions in memory, with versions and
// conditional writes as the state table has them, and every action write
// in order (the steps persisted).
type fakeStore struct {
	mu        sync.Mutex
	recs      map[string]*state.NodeClaim
	actions   map[string]*state.Action
	steps     []string // every action write's step, in order
	decisions []string
	deleted   []string // the records removed, in order
	// failPut, when set, fails an action write at that step (an invocation
	// that dies before it records the step).
	failPut string
	// failIf, when set, fails the action writes it picks.
	failIf func(*state.Action) bool
}

func newStore() *fakeStore {
	return &fakeStore{recs: map[string]*state.NodeClaim{}, actions: map[string]*state.Action{}}
}

func clone[T any](v *T) *T {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	out := new(T)
	if err := json.Unmarshal(b, out); err != nil {
		panic(err)
	}
	return out
}

func (s *fakeStore) StartAction(_ context.Context, a *state.Action, claims []*state.NodeClaim) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range claims {
		have := s.recs[c.Name]
		if have == nil || have.Version != c.Version || have.Disruption != nil {
			return fmt.Errorf("start: %s: %w", c.Name, state.ErrConflict)
		}
	}
	if _, ok := s.actions[a.ID]; ok {
		return state.ErrConflict
	}
	a.Version = 1
	a.CreatedAt = t0
	s.actions[a.ID] = clone(a)
	s.actions[a.ID].Version = 1
	s.steps = append(s.steps, a.Step)
	for _, c := range claims {
		c.Phase = state.Disrupting
		c.Disruption = &state.Disruption{Action: a.ID, Reason: a.Reason, Drift: a.Drift, Since: t0}
		c.Version++
		s.recs[c.Name] = clone(c)
		s.recs[c.Name].Version = c.Version
	}
	return nil
}

func (s *fakeStore) PutAction(_ context.Context, a *state.Action) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failPut != "" && a.Step == s.failPut || s.failIf != nil && s.failIf(a) {
		return errors.New("the invocation died")
	}
	if have := s.actions[a.ID]; have != nil && have.Version != a.Version {
		return fmt.Errorf("put action %s: %w", a.ID, state.ErrConflict)
	}
	a.Version++
	c := clone(a)
	c.Version = a.Version
	s.actions[a.ID] = c
	s.steps = append(s.steps, a.Step)
	return nil
}

func (s *fakeStore) action(id string) *state.Action {
	s.mu.Lock()
	defer s.mu.Unlock()
	a := clone(s.actions[id])
	a.Version = s.actions[id].Version
	return a
}

func (s *fakeStore) NodeClaims(context.Context) ([]*state.NodeClaim, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []*state.NodeClaim
	for _, r := range s.recs {
		c := clone(r)
		c.Version = r.Version
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (s *fakeStore) GetNodeClaim(_ context.Context, name string) (*state.NodeClaim, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.recs[name]
	if r == nil {
		return nil, fmt.Errorf("nodeclaim %s: %w", name, state.ErrNotFound)
	}
	c := clone(r)
	c.Version = r.Version
	return c, nil
}

func (s *fakeStore) PutNodeClaim(_ context.Context, nc *state.NodeClaim) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if have := s.recs[nc.Name]; have != nil && have.Version != nc.Version {
		return fmt.Errorf("put nodeclaim %s: %w", nc.Name, state.ErrConflict)
	}
	nc.Version++
	c := clone(nc)
	c.Version = nc.Version
	s.recs[nc.Name] = c
	return nil
}

func (s *fakeStore) DeleteNodeClaim(_ context.Context, nc *state.NodeClaim) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	have := s.recs[nc.Name]
	if have == nil {
		return fmt.Errorf("nodeclaim %s: %w", nc.Name, state.ErrNotFound)
	}
	if have.Version != nc.Version {
		return fmt.Errorf("delete nodeclaim %s: %w", nc.Name, state.ErrConflict)
	}
	delete(s.recs, nc.Name)
	s.deleted = append(s.deleted, nc.Name)
	return nil
}

func (s *fakeStore) put(r *state.NodeClaim) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r.Version++
	c := clone(r)
	c.Version = r.Version
	s.recs[r.Name] = c
}

func (s *fakeStore) rec(name string) *state.NodeClaim {
	r, err := s.GetNodeClaim(context.Background(), name)
	if err != nil {
		return nil
	}
	return r
}

// setPhase moves a record on as registration would.
func (s *fakeStore) setPhase(name string, p state.Phase) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.recs[name].Phase = p
	s.recs[name].Version++
}

func (s *fakeStore) RecordDecision(_ context.Context, d *state.Decision, id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.decisions = append(s.decisions, id)
	return nil
}

// fakeCapacity launches replacement records into the store, counts
// registrations, and retires nodes (removing their record and Node).
type fakeCapacity struct {
	s       *fakeStore
	src     *fakeSource
	clock   *testingclock.FakeClock
	launchN int // how many of the claims launch (default all)
	fail    bool
	calls   []string
}

func (c *fakeCapacity) LaunchClaims(_ context.Context, _ *state.Lease, claims []scheduling.NodeClaim, reason string) (*provision.Report, []*state.NodeClaim, error) {
	c.calls = append(c.calls, "launch")
	rep := &provision.Report{}
	n := len(claims)
	if c.launchN > 0 {
		n = c.launchN
	}
	if c.fail {
		n = 0
	}
	var out []*state.NodeClaim
	for i, cl := range claims {
		if i >= n {
			rep.Launches = append(rep.Launches, provision.Launch{Claim: cl, Error: "InsufficientInstanceCapacity"})
			continue
		}
		r := &state.NodeClaim{Name: fmt.Sprintf("repl-%d", len(c.s.recs)), NodePool: cl.NodePool, Phase: state.Launched,
			Reason: reason, InstanceID: fmt.Sprintf("i-repl%d", len(c.s.recs)), CreatedAt: c.clock.Now(), Claim: cl}
		c.s.put(r)
		out = append(out, r)
	}
	return rep, out, nil
}

func (c *fakeCapacity) Register(context.Context) (*provision.Report, error) {
	c.calls = append(c.calls, "register")
	return &provision.Report{}, nil
}

// fakeFleet records the instances terminated.
type fakeFleet struct{ terminated []string }

func (f *fakeFleet) Terminate(_ context.Context, ids []string) error {
	f.terminated = append(f.terminated, ids...)
	return nil
}

// fakeSource is the cluster: its Nodes and NodePools.
type fakeSource struct {
	mu    sync.Mutex
	nodes []*corev1.Node
	pools []*apis.NodePool
	// overlays are the cluster's NodeOverlays.
	overlays []*apis.NodeOverlay
}

func (f *fakeSource) View(context.Context) (*provision.View, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &provision.View{Nodes: slices.Clone(f.nodes), NodePools: f.pools, NodeOverlays: f.overlays}, nil
}

func (f *fakeSource) remove(node string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nodes = slices.DeleteFunc(f.nodes, func(n *corev1.Node) bool { return n.Name == node })
}

func (f *fakeSource) has(node string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.ContainsFunc(f.nodes, func(n *corev1.Node) bool { return n.Name == node })
}

// fakeNodes keeps the disrupted taint per node, and removes deleted
// Nodes from the cluster.
type fakeNodes struct {
	tainted map[string]bool
	src     *fakeSource
}

func (f *fakeNodes) RemoveFinalizer(context.Context, string) error { return nil }

func (f *fakeNodes) DeleteNode(_ context.Context, name string) error {
	f.src.remove(name)
	return nil
}

func (f *fakeNodes) Taint(_ context.Context, name string, t corev1.Taint, _ bool) error {
	f.tainted[name] = true
	return nil
}

func (f *fakeNodes) Untaint(_ context.Context, name, key string) error {
	delete(f.tainted, name)
	return nil
}

// fakeDrainer answers each drain call with step(node, opts, call number).
type fakeDrainer struct {
	calls []drainCall
	step  func(node string, opts termination.DrainOptions, n int) termination.DrainResult
}

type drainCall struct {
	node string
	opts termination.DrainOptions
}

func (f *fakeDrainer) Drain(_ context.Context, node string, opts termination.DrainOptions) (termination.DrainResult, error) {
	f.calls = append(f.calls, drainCall{node, opts})
	if f.step == nil {
		return termination.DrainResult{Done: true}, nil
	}
	return f.step(node, opts, len(f.calls)), nil
}

type fakeEvents struct {
	reasons []string // name:reason
	onKinds []string // kind/name:reason
}

func (f *fakeEvents) Event(_ context.Context, ref provision.Ref, _, reason, _ string) {
	f.reasons = append(f.reasons, ref.Name+":"+reason)
	f.onKinds = append(f.onKinds, ref.Kind+"/"+ref.Name+":"+reason)
}

type point struct {
	name  string
	value float64
	dims  metrics.Dims
}

type fakeMetrics struct{ points []point }

func (f *fakeMetrics) Emit(name string, v float64, dims metrics.Dims) error {
	f.points = append(f.points, point{name, v, dims})
	return nil
}

func (f *fakeMetrics) sum(name string) float64 {
	s := 0.0
	for _, p := range f.points {
		if p.name == name {
			s += p.value
		}
	}
	return s
}

// rig is an executor over fakes, with a candidate node "ip-a" (record
// "nc-a", NodePool "default") whose pods are to move.
type rig struct {
	t        *testing.T
	clock    *testingclock.FakeClock
	store    *fakeStore
	cap      *fakeCapacity
	fleet    *fakeFleet
	src      *fakeSource
	nodes    *fakeNodes
	drainer  *fakeDrainer
	events   *fakeEvents
	metrics  *fakeMetrics
	validate error
	checks   int
	e        *Executor
}

const validationWait = 15 * time.Second

func newRig(t *testing.T) *rig {
	r := &rig{t: t, clock: testingclock.NewFakeClock(t0), store: newStore(), src: &fakeSource{}, drainer: &fakeDrainer{}, events: &fakeEvents{},
		metrics: &fakeMetrics{}, fleet: &fakeFleet{}}
	r.nodes = &fakeNodes{tainted: map[string]bool{}, src: r.src}
	r.cap = &fakeCapacity{s: r.store, src: r.src, clock: r.clock}
	pool := &apis.NodePool{}
	pool.Name = "default"
	r.src.pools = []*apis.NodePool{pool}
	r.addCandidate("a")
	r.rebuild()
	return r
}

// rebuild makes a new executor over the same store and cluster, with
// fresh call records: a later invocation.
func (r *rig) rebuild() {
	r.cap = &fakeCapacity{s: r.store, src: r.src, clock: r.clock}
	r.drainer = &fakeDrainer{step: r.drainer.step}
	r.events, r.metrics, r.checks = &fakeEvents{}, &fakeMetrics{}, 0
	term := &termination.Terminator{Store: r.store, Fleet: r.fleet, Nodes: r.nodes, Drainer: r.drainer, Metrics: r.metrics,
		Now: r.clock.Now, Log: slog.New(slog.DiscardHandler)}
	r.e = &Executor{
		Store: r.store, Capacity: r.cap, Terminator: term, Source: r.src, Nodes: r.nodes, Events: r.events, Metrics: r.metrics,
		Now: r.clock.Now, Log: slog.New(slog.DiscardHandler), ValidationWait: validationWait, ReadyTimeout: 10 * time.Minute,
		Validate: func(disruption.Command, disruption.Inputs) error { r.checks++; return r.validate },
	}
}

func (r *rig) addCandidate(name string) {
	r.store.put(&state.NodeClaim{Name: "nc-" + name, NodePool: "default", Phase: state.Initialized, InstanceID: "i-" + name, NodeName: "ip-" + name,
		InstanceType: "m5.xlarge", PricePerHour: 0.192, CreatedAt: t0.Add(-24 * time.Hour)})
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ip-" + name}}
	n.Spec.ProviderID = state.ProviderIDFor("us-east-1a", "i-"+name)
	r.src.nodes = append(r.src.nodes, n)
}

// command is a single-node command on ip-a: a replacement by one
// cheaper node when replace, else a deletion.
func command(replace bool) disruption.Command {
	cmd := disruption.Command{Method: disruption.MethodSingleNode, Reason: disruption.ReasonUnderutilized,
		Candidates: []string{"nc-a"}, Nodes: []string{"ip-a"}, PriceBefore: 0.192, Explanation: "test"}
	if replace {
		cmd.Replacements = []scheduling.NodeClaim{{NodePool: "default", InstanceTypes: []string{"c6g.large"}, PricePerHour: 0.068}}
		cmd.PriceAfter = 0.068
	}
	return cmd
}

// start plans cmd and returns the action.
func (r *rig) start(cmd disruption.Command) *state.Action {
	r.t.Helper()
	recs, _ := r.store.NodeClaims(context.Background())
	a, err := r.e.Start(context.Background(), cmd, recs)
	if err != nil {
		r.t.Fatal(err)
	}
	return a
}

// advance is one Advance call with fresh inputs that the fake validation
// ignores.
func (r *rig) advance(a *state.Action) {
	r.t.Helper()
	_, err := r.e.Advance(context.Background(), &state.Lease{}, a, func(context.Context) (disruption.Inputs, error) {
		return disruption.Inputs{}, nil
	})
	if err != nil {
		r.t.Fatal(err)
	}
}

// stored is the action as the table holds it now.
func (r *rig) stored(id string) *state.Action { return r.store.action(id) }

// steps are the steps written, consecutive repeats collapsed.
func (r *rig) steps() []string { return slices.Compact(slices.Clone(r.store.steps)) }
