package termination

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/state"
)

// t0 is the tests' start.
var t0 = time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)

// fakeStore keeps records, actions and leases in memory, with versions and
// conditional writes as the state table has them. beforePut, when set,
// runs before each record write (another invocation's write in between).
type fakeStore struct {
	mu        sync.Mutex
	recs      map[string]*state.NodeClaim
	actions   map[string]*state.Action
	leases    map[string]string
	beforePut func(name string)
}

func newStore() *fakeStore {
	return &fakeStore{recs: map[string]*state.NodeClaim{}, actions: map[string]*state.Action{}, leases: map[string]string{}}
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
	if s.beforePut != nil {
		s.beforePut(nc.Name)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var have int64
	if r := s.recs[nc.Name]; r != nil {
		have = r.Version
	}
	if have != nc.Version {
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
	r := s.recs[nc.Name]
	if r == nil {
		return fmt.Errorf("nodeclaim %s: %w", nc.Name, state.ErrNotFound)
	}
	if r.Version != nc.Version {
		return fmt.Errorf("delete nodeclaim %s: %w", nc.Name, state.ErrConflict)
	}
	delete(s.recs, nc.Name)
	return nil
}

// put stores a record as another writer would (its version advanced).
func (s *fakeStore) put(r *state.NodeClaim) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := int64(0)
	if have := s.recs[r.Name]; have != nil {
		v = have.Version
	}
	c := clone(r)
	c.Version = v + 1
	s.recs[r.Name] = c
}

func (s *fakeStore) rec(name string) *state.NodeClaim {
	r, err := s.GetNodeClaim(context.Background(), name)
	if err != nil {
		return nil
	}
	return r
}

func (s *fakeStore) GetAction(_ context.Context, id string) (*state.Action, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if a := s.actions[id]; a != nil {
		return clone(a), nil
	}
	return nil, state.ErrNotFound
}

func (s *fakeStore) PutAction(_ context.Context, a *state.Action) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.actions[a.ID] = clone(a)
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

func (s *fakeStore) Release(_ context.Context, l *state.Lease) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.leases, l.Name)
	return false, nil
}

// fakeFleet records the instances terminated.
type fakeFleet struct{ terminated []string }

func (f *fakeFleet) Terminate(_ context.Context, ids []string) error {
	f.terminated = append(f.terminated, ids...)
	return nil
}

// fakeNodes records what was done to Nodes.
type fakeNodes struct {
	tainted, released, deleted []string
}

func (f *fakeNodes) Taint(_ context.Context, name string, t corev1.Taint, cordon bool) error {
	if t.Key == apis.TaintKeyDisrupted && cordon {
		f.tainted = append(f.tainted, name)
	}
	return nil
}

func (f *fakeNodes) RemoveFinalizer(_ context.Context, name string) error {
	f.released = append(f.released, name)
	return nil
}

func (f *fakeNodes) DeleteNode(_ context.Context, name string) error {
	f.deleted = append(f.deleted, name)
	return nil
}

// touched reports whether anything was done to the Node.
func (f *fakeNodes) touched(name string) bool {
	return slices.Contains(f.tainted, name) || slices.Contains(f.released, name) || slices.Contains(f.deleted, name)
}

// fakeDrainer answers each pass with step(node, options, pass number).
type fakeDrainer struct {
	calls []DrainOptions
	nodes []string
	step  func(node string, opts DrainOptions, n int) DrainResult
}

func (f *fakeDrainer) Drain(_ context.Context, node string, opts DrainOptions) (DrainResult, error) {
	f.calls = append(f.calls, opts)
	f.nodes = append(f.nodes, node)
	if f.step == nil {
		return DrainResult{Done: true}, nil
	}
	return f.step(node, opts, len(f.calls)), nil
}

// fakeEvents records events as kind/namespace/name:reason (the namespace
// empty for Nodes), with the UIDs of pods.
type fakeEvents struct {
	got  []string
	uids map[string]string // pod namespace/name -> UID in its event
}

func (f *fakeEvents) NodeEvent(_ context.Context, n *corev1.Node, _, reason, _ string) {
	f.got = append(f.got, "Node/"+n.Name+":"+reason)
}

func (f *fakeEvents) NodeClaimEvent(_ context.Context, name, _, reason, _ string) {
	f.got = append(f.got, "NodeClaim/"+name+":"+reason)
}

func (f *fakeEvents) PodEvent(_ context.Context, p PodRef, _, reason, _ string) {
	f.got = append(f.got, "Pod/"+p.Namespace+"/"+p.Name+":"+reason)
	if f.uids == nil {
		f.uids = map[string]string{}
	}
	f.uids[p.Namespace+"/"+p.Name] = p.UID
}

// rig is a terminator over fakes.
type rig struct {
	clock   *testingclock.FakeClock
	store   *fakeStore
	fleet   *fakeFleet
	nodes   *fakeNodes
	drainer *fakeDrainer
	t       *Terminator
}

func newRig() *rig {
	r := &rig{clock: testingclock.NewFakeClock(t0), store: newStore(), fleet: &fakeFleet{}, nodes: &fakeNodes{}, drainer: &fakeDrainer{}}
	r.t = &Terminator{Store: r.store, Fleet: r.fleet, Nodes: r.nodes, Drainer: r.drainer, Leases: r.store, Actions: r.store,
		Now: r.clock.Now, Log: slog.New(slog.DiscardHandler)}
	return r
}

// node is a Node of instance id.
func node(name, id string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	n.Spec.ProviderID = state.ProviderIDFor("us-east-1a", id)
	return n
}

// deleted is a Node being deleted that waits on the termination finalizer.
func deleted(name, id string) *corev1.Node {
	n := node(name, id)
	now := metav1.NewTime(t0)
	n.DeletionTimestamp = &now
	n.Finalizers = []string{apis.FinalizerTermination}
	return n
}

// record stores an initialized record of instance id.
func (r *rig) record(name, id string) *state.NodeClaim {
	r.store.put(&state.NodeClaim{Name: name, NodePool: "default", Phase: state.Initialized, InstanceID: id, CreatedAt: t0.Add(-time.Hour)})
	return r.store.rec(name)
}

func must[T any](t *testing.T) func(T, error) T {
	return func(v T, err error) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}
