package provision

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/nodeclaim"
	"github.com/nodewright/nodewright/shared/state"
)

// fakeObjects is the cluster's NodeClaims: the plans applied are kept.
type fakeObjects struct {
	mu      sync.Mutex
	current []*nodeclaim.NodeClaim
	plans   []nodeclaim.Plan
}

func (o *fakeObjects) List(context.Context) ([]*nodeclaim.NodeClaim, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.current), nil
}

func (o *fakeObjects) Ensure(context.Context, *nodeclaim.NodeClaim) (types.UID, error) {
	return "uid-1", nil
}

func (o *fakeObjects) Apply(_ context.Context, p nodeclaim.Plan, _ []*nodeclaim.NodeClaim) (nodeclaim.Report, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.plans = append(o.plans, p)
	return nodeclaim.Report{}, nil
}

// TestSweepKeepsNodeClaimObjects: a sweep creates the object a record
// lacks; `kubectl delete nodeclaim` (a deletion timestamp on Nodewright's
// object) records a deletion intent the same sweep carries out (drain,
// terminate); once the record is gone the object's finalizer is released.
func TestSweepKeepsNodeClaimObjects(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	clock := testingclock.NewFakeClock(now)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ip-1"}}
	node.Spec.ProviderID = state.ProviderIDFor("us-east-1a", "i-1")
	r, base, _, _ := testReconciler(t, clock, func(time.Time) (*View, error) {
		return &View{Nodes: []*corev1.Node{node}}, nil
	})
	fl := &sweepFleet{fakeFleet: base, running: []fleet.Running{{InstanceID: "i-1", InstanceType: "m5.large", Zone: "us-east-1a", State: "running",
		LaunchTime: now.Add(-10 * time.Minute), NodeClaim: "default-00001", NodePool: "default", ManagedBy: true}}}
	objs := &fakeObjects{}
	r.Fleet, r.Nodes, r.Drainer, r.NodeClaims = fl, &sweepNodes{}, &sweepDrainer{released: true}, objs
	rec := &state.NodeClaim{Name: "default-00001", NodePool: "default", NodeClass: "default", Phase: state.Initialized, InstanceID: "i-1",
		InstanceType: "m5.large", Zone: "us-east-1a", ProviderID: node.Spec.ProviderID, CreatedAt: now.Add(-10 * time.Minute),
		LaunchedAt: now.Add(-10 * time.Minute), RegisteredAt: now.Add(-9 * time.Minute), InitializedAt: now.Add(-8 * time.Minute)}
	if err := r.Store.PutNodeClaim(ctx, rec); err != nil {
		t.Fatal(err)
	}

	rep, err := r.Sweep(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(objs.plans) != 1 || len(objs.plans[0].Create) != 1 || objs.plans[0].Create[0].Name != rec.Name || rep.NodeClaims == nil {
		t.Fatalf("first sweep's plans %+v: want the record's object created", objs.plans)
	}
	deleted := objs.plans[0].Create[0]
	deleted.DeletionTimestamp = &metav1.Time{Time: now}
	objs.current = []*nodeclaim.NodeClaim{deleted}

	if _, err := r.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(fl.terminated, []string{"i-1"}) {
		t.Fatalf("after kubectl delete nodeclaim: terminated %v, want i-1", fl.terminated)
	}
	if got, err := r.Store.GetNodeClaim(ctx, rec.Name); err == nil && (got.Disruption == nil || got.Disruption.Cause != state.CauseDeletion) {
		t.Fatalf("record %+v: want a deletion intent", got)
	}
	fl.running = nil // the instance is gone
	for i := 0; i < 3; i++ {
		if _, err := r.Sweep(ctx); err != nil {
			t.Fatal(err)
		}
		if p := objs.plans[len(objs.plans)-1]; slices.Equal(p.Release, []string{rec.Name}) {
			return
		}
	}
	t.Errorf("the deleted object's finalizer is never released: plans %+v", objs.plans)
}
