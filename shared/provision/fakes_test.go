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
// LaunchPlan (call counts from 1); else every call launches p.Count
// instances of the plan's first override (or the first that pick
// accepts), as EC2 picks the cheapest of the overrides it is given.
type fakeFleet struct {
	mu     sync.Mutex
	launch func(p *fleet.Plan, call int) ([]*fleet.Instance, error)
	pick   func(typ, zone string) bool
	calls  []*fleet.Plan
	// prepares counts Prepare calls: each resolves another AMI, as a class
	// whose AMI selector finds a newer image does. onPrepare, when set,
	// runs before each (call counts from 1): another invocation acting
	// between this one's solve and its records.
	prepares  int
	onPrepare func(call int)
	tagged    map[string]string // instance -> NodeClaim
	next      int
	// now stamps the instances' launch times; running are the instances
	// launched and not terminated (Instances lists them, Terminate ends
	// them); terminated the IDs Terminate was called with.
	now        func() time.Time
	running    []fleet.Running
	terminated []string
	// unresolved answers ResolveAll for the classes it names with their
	// error; every other class resolves whole, in st.Zones().
	unresolved map[string]error
	// reservations are the capacity reservations each class resolves to.
	reservations map[string][]fleet.Reservation
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
		nc := &fleet.NodeClass{Name: c.Name, SecurityGroups: []string{"sg-1"}, AMIs: []fleet.AMI{{ID: "ami-1", Arch: "amd64"}},
			Reservations: f.reservations[c.Name]}
		for i, z := range st.Zones() {
			nc.Subnets = append(nc.Subnets, fleet.Subnet{ID: fmt.Sprintf("subnet-%d", i), Zone: z, AvailableIPs: 100})
		}
		out = append(out, fleet.Resolution{Name: c.Name, Class: nc})
	}
	return out
}

// Prepare plans one template with the claim's types, a subnet per zone.
func (f *fakeFleet) Prepare(_ context.Context, req fleet.Request) (*fleet.Plan, error) {
	token := req.Token
	if token == "" {
		token = fleet.ClientToken(req.Name)
	}
	ct := req.Claim.CapacityType
	if ct == "" {
		ct = apis.CapacityTypeOnDemand
	}
	f.mu.Lock()
	f.prepares++
	call, hook := f.prepares, f.onPrepare
	ami := fmt.Sprintf("ami-%d", f.prepares)
	f.mu.Unlock()
	if hook != nil {
		hook(call)
	}
	p := &fleet.Plan{Token: token, NodeClaim: req.Name, NodePool: req.Claim.NodePool, Count: max(req.Count, 1), CapacityType: ct,
		Templates: []fleet.PlannedTemplate{{Name: "lt-" + req.Claim.NodeClass, ImageID: ami, Types: req.Claim.InstanceTypes}},
		Exclude:   req.Exclude}
	for _, z := range req.Claim.Zones {
		p.Subnets = append(p.Subnets, fleet.Subnet{ID: "subnet-" + z, Zone: z})
	}
	return p, nil
}

func (f *fakeFleet) LaunchPlan(_ context.Context, p *fleet.Plan) ([]*fleet.Instance, error) {
	f.mu.Lock()
	f.calls = append(f.calls, p)
	call := len(f.calls)
	launch := f.launch
	f.mu.Unlock()
	if launch != nil {
		return launch(p, call)
	}
	return f.instances(p, p.Count), nil
}

// offering is the override the fake launches of p.
func (f *fakeFleet) offering(p *fleet.Plan) (string, string) {
	excluded := map[[2]string]bool{}
	for _, o := range p.Exclude {
		if o.CapacityType == "" || o.CapacityType == p.CapacityType {
			excluded[[2]string{o.InstanceType, o.Zone}] = true
		}
	}
	var first [2]string
	for _, t := range p.Templates {
		for _, typ := range t.Types {
			for _, sn := range p.Subnets {
				if excluded[[2]string{typ, sn.Zone}] {
					continue
				}
				if first[0] == "" {
					first = [2]string{typ, sn.Zone}
				}
				if f.pick == nil || f.pick(typ, sn.Zone) {
					return typ, sn.Zone
				}
			}
		}
	}
	if first[0] == "" {
		return "m6g.large", "us-east-1a"
	}
	return first[0], first[1]
}

// instances makes n instances for p.
func (f *fakeFleet) instances(p *fleet.Plan, n int) []*fleet.Instance {
	typ, zone := f.offering(p)
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*fleet.Instance
	for range n {
		f.next++
		out = append(out, &fleet.Instance{
			NodeClaim: p.NodeClaim, NodePool: p.NodePool, InstanceID: fmt.Sprintf("i-%05d", f.next),
			InstanceType: typ, Zone: zone, CapacityType: p.CapacityType, PricePerHour: 0.1,
		})
		var at time.Time
		if f.now != nil {
			at = f.now()
		}
		f.running = append(f.running, fleet.Running{InstanceID: fmt.Sprintf("i-%05d", f.next), InstanceType: typ,
			Zone: zone, State: "running", LaunchTime: at, NodeClaim: p.NodeClaim, NodePool: p.NodePool, ManagedBy: true, CapacityType: p.CapacityType})
	}
	return out
}

func (f *fakeFleet) Calls() []*fleet.Plan {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]*fleet.Plan(nil), f.calls...)
}

func (f *fakeFleet) TagNodeClaim(_ context.Context, instanceID, _, nodeClaim string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.tagged == nil {
		f.tagged = map[string]string{}
	}
	f.tagged[instanceID] = nodeClaim
	for i := range f.running {
		if f.running[i].InstanceID == instanceID {
			f.running[i].NodeClaim = nodeClaim
		}
	}
	return nil
}

func (f *fakeFleet) Instances(context.Context) ([]fleet.Running, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fleet.Running(nil), f.running...), nil
}

func (f *fakeFleet) Terminate(_ context.Context, ids []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.terminated = append(f.terminated, ids...)
	gone := map[string]bool{}
	for _, id := range ids {
		gone[id] = true
	}
	kept := f.running[:0]
	for _, in := range f.running {
		if !gone[in.InstanceID] {
			kept = append(kept, in)
		}
	}
	f.running = kept
	return nil
}

// Running reports whether the instance is running.
func (f *fakeFleet) Running(id string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, in := range f.running {
		if in.InstanceID == id {
			return true
		}
	}
	return false
}

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
	fl, m := &fakeFleet{now: clock.Now}, &fakeMetrics{}
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

// collectingFleet is a fakeFleet that collects launch templates: keeps
// are the templates each collection was told to keep.
type collectingFleet struct {
	*fakeFleet
	keeps []map[string]bool
}

func (f *collectingFleet) CollectTemplates(_ context.Context, keep map[string]bool, max int) ([]string, error) {
	f.keeps = append(f.keeps, keep)
	return nil, nil
}
