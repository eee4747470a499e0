package provision

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/metrics"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/shared/state/statetest"
)

// fakeSource answers View with what fn returns at the clock's time.
type fakeSource struct {
	clock *testingclock.FakeClock
	fn    func(now time.Time) (*View, error)
	mu    sync.Mutex
	calls int
}

func (s *fakeSource) View(context.Context) (*View, error) {
	s.mu.Lock()
	s.calls++
	s.mu.Unlock()
	return s.fn(s.clock.Now())
}

// fakeFleet launches instances in memory. launch, when set, answers each
// LaunchGroup (call counts from 1); else every call launches req.Count
// instances of the claim's first type in its first zone.
type fakeFleet struct {
	mu     sync.Mutex
	launch func(req fleet.Request, call int) ([]*fleet.Instance, error)
	calls  []fleet.Request
	tagged map[string]string // instance -> NodeClaim
	next   int
	// unresolved answers ResolveAll for the classes it names with their
	// error; every other class resolves whole, in st.Zones().
	unresolved map[string]error
}

func (f *fakeFleet) Zones(context.Context, []*apis.EC2NodeClass) ([]string, error) {
	return st.Zones(), nil
}

func (f *fakeFleet) ResolveAll(_ context.Context, classes []*apis.EC2NodeClass) []fleet.Resolution {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []fleet.Resolution
	for _, c := range classes {
		if err := f.unresolved[c.Name]; err != nil {
			out = append(out, fleet.Resolution{Name: c.Name, Err: err})
			continue
		}
		nc := &fleet.NodeClass{Name: c.Name, SecurityGroups: []string{"sg-1"}, AMIs: []fleet.AMI{{ID: "ami-1", Arch: "amd64"}}}
		for i, z := range st.Zones() {
			nc.Subnets = append(nc.Subnets, fleet.Subnet{ID: fmt.Sprintf("subnet-%d", i), Zone: z, AvailableIPs: 100})
		}
		out = append(out, fleet.Resolution{Name: c.Name, Class: nc})
	}
	return out
}

func (f *fakeFleet) LaunchGroup(_ context.Context, req fleet.Request) ([]*fleet.Instance, error) {
	f.mu.Lock()
	f.calls = append(f.calls, req)
	call := len(f.calls)
	launch := f.launch
	f.mu.Unlock()
	if launch != nil {
		return launch(req, call)
	}
	return f.instances(req, max(req.Count, 1)), nil
}

// instances makes n instances for req.
func (f *fakeFleet) instances(req fleet.Request, n int) []*fleet.Instance {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*fleet.Instance
	for range n {
		f.next++
		zone := "us-east-1a"
		if len(req.Claim.Zones) > 0 {
			zone = req.Claim.Zones[0]
		}
		ct := req.Claim.CapacityType
		if ct == "" {
			ct = apis.CapacityTypeOnDemand
		}
		out = append(out, &fleet.Instance{
			NodeClaim: req.Name, NodePool: req.Claim.NodePool, InstanceID: fmt.Sprintf("i-%05d", f.next),
			InstanceType: req.Claim.InstanceTypes[0], Zone: zone, CapacityType: ct, PricePerHour: 0.1,
		})
	}
	return out
}

func (f *fakeFleet) Calls() []fleet.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fleet.Request(nil), f.calls...)
}

func (f *fakeFleet) TagNodeClaim(_ context.Context, instanceID, _, nodeClaim string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.tagged == nil {
		f.tagged = map[string]string{}
	}
	f.tagged[instanceID] = nodeClaim
	return nil
}

func (f *fakeFleet) Instances(context.Context) ([]fleet.Running, error) { return nil, nil }
func (f *fakeFleet) Terminate(context.Context, []string) error          { return nil }

// fakeMetrics records emitted values.
type fakeMetrics struct {
	mu     sync.Mutex
	values map[string][]float64
	dims   map[string][]metrics.Dims
}

func (m *fakeMetrics) Emit(name string, v float64, dims metrics.Dims) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.values == nil {
		m.values, m.dims = map[string][]float64{}, map[string][]metrics.Dims{}
	}
	m.values[name] = append(m.values[name], v)
	m.dims[name] = append(m.dims[name], dims)
	return nil
}

func (m *fakeMetrics) Values(name string) []float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]float64(nil), m.values[name]...)
}

// fakeEvents records Kubernetes events.
type fakeEvents struct {
	mu     sync.Mutex
	events []string // "Kind/namespace/name Type Reason: message"
}

func (e *fakeEvents) Event(_ context.Context, ref Ref, typ, reason, msg string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.events = append(e.events, fmt.Sprintf("%s/%s/%s %s %s: %s", ref.Kind, ref.Namespace, ref.Name, typ, reason, msg))
}

func (e *fakeEvents) All() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.events...)
}

// testStore is a state store over an in-memory table.
func testStore(t *testing.T, clock *testingclock.FakeClock) (*state.Store, *statetest.DB) {
	t.Helper()
	db := statetest.New()
	s, err := state.New(db, "nodewright-state", "test-cluster", clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	return s, db
}

// testLease is a held provision lease (the in-memory table does not check
// fencing conditions).
func testLease(clock *testingclock.FakeClock) *state.Lease {
	return &state.Lease{Name: state.LeaseProvision, Holder: "test", Token: 1, Until: clock.Now().Add(time.Minute)}
}

// unschedulableAt is a pending pod kube-scheduler marked Unschedulable at
// marked (stamped to the second, as the API server stores it), created at
// created.
func unschedulableAt(name string, created, marked time.Time) *corev1.Pod {
	p := st.Pod(st.PodOptions{Name: name, CPU: "1", Memory: "1Gi", Owner: "ReplicaSet/web-1"})
	p.UID = types.UID("uid-" + name)
	p.CreationTimestamp = metav1.Time{Time: created.Truncate(time.Second)}
	p.Status.Conditions = []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		LastTransitionTime: metav1.Time{Time: marked.Truncate(time.Second)},
	}}
	return p
}

// unevaluated is a pod just created that kube-scheduler has not looked at
// yet (no PodScheduled condition).
func unevaluated(name string, created time.Time) *corev1.Pod {
	p := st.Pod(st.PodOptions{Name: name, CPU: "1", Memory: "1Gi", Owner: "ReplicaSet/web-1"})
	p.UID = types.UID("uid-" + name)
	p.CreationTimestamp = metav1.Time{Time: created.Truncate(time.Second)}
	return p
}

// testReconciler is a reconciler over fakes and an in-memory table, on
// clock, with the production pool and class of the shared examples.
func testReconciler(t *testing.T, clock *testingclock.FakeClock, src func(now time.Time) (*View, error)) (*Reconciler, *fakeFleet, *fakeMetrics, *statetest.DB) {
	t.Helper()
	pools, classes, err := st.ProductionPool()
	if err != nil {
		t.Fatal(err)
	}
	store, db := testStore(t, clock)
	fl, m := &fakeFleet{}, &fakeMetrics{}
	n := 0
	var mu sync.Mutex
	r := &Reconciler{
		Cluster: "test-cluster", Store: store, Source: &fakeSource{clock: clock, fn: src}, Fleet: fl, Catalog: cat,
		NodePools: pools, NodeClasses: classes, Metrics: m, Now: clock.Now,
		Names: func(pool string) (string, error) {
			mu.Lock()
			defer mu.Unlock()
			n++
			return fmt.Sprintf("%s-%05d", pool, n), nil
		},
	}
	r.wait = func(ctx context.Context, d time.Duration) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		clock.Step(d)
		return nil
	}
	return r, fl, m, db
}
