package handlers

import (
	"context"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/metrics"
	"github.com/nodewright/nodewright/shared/provision"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/shared/state/statetest"
	"github.com/nodewright/nodewright/shared/trigger"
)

// expectingSource records what the handler tells it to expect
// (provision.Expecter).
type expectingSource struct {
	podsSource
	expected [][]trigger.PodRef
}

func (s *expectingSource) Expect(pods []trigger.PodRef) { s.expected = append(s.expected, pods) }

// podsSource is a cluster whose pods stay pending (no node registers).
type podsSource struct{ pods []*corev1.Pod }

func (s podsSource) View(context.Context) (*provision.View, error) {
	return &provision.View{Pods: s.pods}, nil
}

// memFleet launches instances in memory; they keep running.
type memFleet struct {
	mu      sync.Mutex
	running []fleet.Running
}

func (f *memFleet) Zones(context.Context, []*apis.EC2NodeClass) ([]string, error) {
	return st.Zones(), nil
}

// ResolveAll resolves every class whole, with a subnet in each of st.Zones().
func (f *memFleet) ResolveAll(_ context.Context, classes []*apis.EC2NodeClass) []fleet.Resolution {
	var out []fleet.Resolution
	for _, c := range classes {
		nc := &fleet.NodeClass{Name: c.Name, SecurityGroups: []string{"sg-1"}, AMIs: []fleet.AMI{{ID: "ami-1", Arch: "amd64"}}}
		for i, z := range st.Zones() {
			nc.Subnets = append(nc.Subnets, fleet.Subnet{ID: fmt.Sprintf("subnet-%d", i), Zone: z})
		}
		out = append(out, fleet.Resolution{Name: c.Name, Class: nc})
	}
	return out
}

func (f *memFleet) Prepare(_ context.Context, req fleet.Request) (*fleet.Plan, error) {
	p := &fleet.Plan{Token: req.Token, NodeClaim: req.Name, NodePool: req.Claim.NodePool, Count: max(req.Count, 1), CapacityType: req.Claim.CapacityType,
		Templates: []fleet.PlannedTemplate{{Name: "lt", Types: req.Claim.InstanceTypes}}}
	for _, z := range req.Claim.Zones {
		p.Subnets = append(p.Subnets, fleet.Subnet{ID: "subnet-" + z, Zone: z})
	}
	return p, nil
}

func (f *memFleet) LaunchPlan(_ context.Context, p *fleet.Plan) ([]*fleet.Instance, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []*fleet.Instance
	for range p.Count {
		id := fmt.Sprintf("i-%05d", len(f.running)+1)
		in := &fleet.Instance{NodeClaim: p.NodeClaim, NodePool: p.NodePool, InstanceID: id, InstanceType: p.Templates[0].Types[0],
			Zone: p.Subnets[0].Zone, CapacityType: p.CapacityType}
		f.running = append(f.running, fleet.Running{InstanceID: id, InstanceType: in.InstanceType, Zone: in.Zone, State: "running",
			LaunchTime: time.Now(), NodeClaim: p.NodeClaim, NodePool: p.NodePool, ManagedBy: true})
		out = append(out, in)
	}
	return out, nil
}

func (f *memFleet) TagNodeClaim(context.Context, string, string, string) error { return nil }

func (f *memFleet) Instances(context.Context) ([]fleet.Running, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]fleet.Running(nil), f.running...), nil
}

func (f *memFleet) Terminate(context.Context, []string) error { return nil }

// emitted records metric values by name.
type emitted struct {
	mu     sync.Mutex
	values map[string][]float64
}

func (e *emitted) Emit(name string, v float64, _ metrics.Dims) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.values == nil {
		e.values = map[string][]float64{}
	}
	e.values[name] = append(e.values[name], v)
	return nil
}

// handleHint has the provision handler take a webhook hint, with a new
// reconciler over src (the production pool, an in-memory table and fleet)
// that adjust may change; it returns every round's report and the table.
func handleHint(t *testing.T, src provision.ClusterSource, adjust func(*provision.Reconciler)) ([]*provision.Report, *state.Store) {
	t.Helper()
	pools, classes, err := st.ProductionPool()
	if err != nil {
		t.Fatal(err)
	}
	store, err := state.New(statetest.New(), "nodewright-state", "demo", nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &provision.Reconciler{
		Cluster: "demo", Store: store, Source: src, Fleet: &memFleet{}, Catalog: catalog.Default(),
		NodePools: pools, NodeClasses: classes,
	}
	if adjust != nil {
		adjust(r)
	}
	var reports []*provision.Report
	h := &Provision{
		Env: Env{Cluster: "demo"}, Log: NewLogger(io.Discard, "provision", "info"),
		Setup:      func(context.Context) (*provision.Reconciler, error) { return r, nil },
		AfterRound: func(rep *provision.Report, _ *provision.SweepReport) { reports = append(reports, rep) },
	}
	if err := h.Handle(context.Background(), sample(t, "webhook-hint.json")); err != nil {
		t.Fatal(err)
	}
	return reports, store
}

// A solve's work budget defers pods; the handler runs more rounds in the
// same invocation, each starting with the pods nothing was launched for
// (the pods of in-flight NodeClaims stay on them), until every pod has
// capacity: never lost. The deferred count is emitted every round and ends
// at zero.
func TestProvisionDeferredPodsLaunchInLaterRounds(t *testing.T) {
	const n = 30
	pods := st.DistinctPods(n, 7)
	marked := time.Now().Add(-time.Minute)
	for i, p := range pods {
		p.UID = types.UID(fmt.Sprintf("uid-%d", i))
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: corev1.PodReasonUnschedulable, LastTransitionTime: metav1.Time{Time: marked}}}
	}
	m := &emitted{}
	src := &expectingSource{podsSource: podsSource{pods}}
	reports, store := handleHint(t, src, func(r *provision.Reconciler) {
		r.Metrics = m
		r.Options = provision.Options{SolveGroups: 8} // 8 of the 30 single-pod groups per solve
	})
	if len(reports) < 2 || reports[0].Deferred == 0 {
		t.Fatalf("%d rounds, the first deferring %d pods: want a budget-limited first round and more rounds", len(reports), reports[0].Deferred)
	}
	// The hint's pod is passed to the source for the first round only.
	if got := fmt.Sprint(src.expected); got != "[[{default inflate-7d9c8b6f5-abcde }] []]" {
		t.Errorf("the source was told to expect %s: want the hint's pod, then nothing", got)
	}
	for i, rep := range reports {
		t.Logf("round %d: pending %d, nominated %d, deferred %d, launched %d", i+1, rep.Pending, rep.Nominated, rep.Deferred, len(rep.Launched()))
		if i > 0 && reports[i-1].Deferred > 0 && rep.Deferred >= reports[i-1].Deferred {
			t.Errorf("round %d deferred %d after %d: no progress", i+1, rep.Deferred, reports[i-1].Deferred)
		}
	}
	if last := reports[len(reports)-1]; last.Deferred != 0 {
		t.Errorf("the last round deferred %d pods", last.Deferred)
	}
	// Every pod is covered by a launched NodeClaim, or was placed in the
	// room of one (the last round then nominates it).
	recs, err := store.NodeClaims(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	covered := map[string]bool{}
	for _, rec := range recs {
		if rec.Phase != state.Launched {
			t.Errorf("record %s is %s", rec.Name, rec.Phase)
		}
		for _, p := range rec.Claim.Pods {
			covered[p] = true
		}
	}
	last := reports[len(reports)-1]
	if last.Plan != nil {
		for _, e := range last.Plan.ExistingNodes {
			for _, p := range e.Pods {
				covered[p] = true
			}
		}
	}
	if len(covered)+last.Nominated < n && len(covered) < n {
		t.Errorf("%d pods covered by NodeClaims, %d nominated: want all %d", len(covered), last.Nominated, n)
	}
	if last.Nominated != n {
		t.Errorf("the last round nominated %d pods to NodeClaims in flight, want all %d", last.Nominated, n)
	}
	d := m.values[metrics.PodsDeferred]
	if len(d) < 2 || d[0] == 0 || d[len(d)-1] != 0 {
		t.Errorf("PodsDeferred emitted %v: want the first round's backlog, down to 0", d)
	}
}
