package provision

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/nodeclaim"
	"github.com/nodewright/nodewright/shared/state"
)

// TestSweepConsolidatableFromThePodsSummary: the NodeClaim object's
// Consolidatable condition counts consolidateAfter from when the node's
// pods last changed as the pods summary has it (consolidation writes it
// there, not in the record); a record with no entry keeps its own timer.
func TestSweepConsolidatableFromThePodsSummary(t *testing.T) {
	now := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name    string
		summary time.Time // zero: no entry
		since   time.Time // zero: not consolidatable
	}{
		{"the summary's timer", now.Add(-time.Minute), time.Time{}},
		{"the summary's older timer", now.Add(-20 * time.Minute), now.Add(-15 * time.Minute)},
		{"no entry: the record's own", time.Time{}, now.Add(-2 * time.Minute)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			clock := testingclock.NewFakeClock(now)
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ip-1"}}
			node.Spec.ProviderID = state.ProviderIDFor("us-east-1a", "i-1")
			r, base, _, _ := testReconciler(t, clock, func(time.Time) (*View, error) {
				return &View{Nodes: []*corev1.Node{node}}, nil
			})
			for _, p := range r.NodePools {
				p.Spec.Disruption.ConsolidateAfter = apis.DurationOf(5 * time.Minute)
			}
			objs := &fakeObjects{}
			r.Fleet = &sweepFleet{fakeFleet: base, running: []fleet.Running{{InstanceID: "i-1", InstanceType: "m5.large", Zone: "us-east-1a", State: "running",
				LaunchTime: now.Add(-30 * time.Minute), NodeClaim: "default-00001", NodePool: "default", ManagedBy: true}}}
			r.Nodes, r.Drainer, r.NodeClaims = &sweepNodes{}, &sweepDrainer{released: true}, objs
			rec := &state.NodeClaim{Name: "default-00001", NodePool: r.NodePools[0].Name, NodeClass: "default", Phase: state.Initialized, InstanceID: "i-1",
				InstanceType: "m5.large", Zone: "us-east-1a", ProviderID: node.Spec.ProviderID, CreatedAt: now.Add(-30 * time.Minute),
				LaunchedAt: now.Add(-30 * time.Minute), RegisteredAt: now.Add(-29 * time.Minute), InitializedAt: now.Add(-28 * time.Minute),
				PodsHash: "0123456789abcdef", PodsChangedAt: now.Add(-7 * time.Minute)}
			if err := r.Store.PutNodeClaim(ctx, rec); err != nil {
				t.Fatal(err)
			}
			if !tc.summary.IsZero() {
				if _, err := r.Store.PutPodSums(ctx, nil, map[string]state.PodSum{rec.Name: {Hash: "fedcba9876543210", ChangedAt: tc.summary}}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := r.Sweep(ctx); err != nil {
				t.Fatal(err)
			}
			if len(objs.plans) != 1 || len(objs.plans[0].Create) != 1 {
				t.Fatalf("plans %+v: want the record's object created", objs.plans)
			}
			c := objs.plans[0].Create[0].Condition(nodeclaim.ConditionConsolidatable)
			switch {
			case tc.since.IsZero() && c != nil:
				t.Errorf("Consolidatable since %s; want not consolidatable yet", c.LastTransitionTime)
			case !tc.since.IsZero() && (c == nil || !c.LastTransitionTime.Time.Equal(tc.since)):
				t.Errorf("Consolidatable %+v; want since %s", c, tc.since)
			}
		})
	}
}
