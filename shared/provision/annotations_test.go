package provision

import (
	"context"
	"maps"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/state"
)

// markingNodes records the labels and annotations MarkNode puts on each
// Node.
type markingNodes struct {
	sweepNodes
	mu                  sync.Mutex
	labels, annotations map[string]map[string]string
}

func (n *markingNodes) MarkNode(_ context.Context, name string, labels, annotations map[string]string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.labels[name], n.annotations[name] = maps.Clone(labels), maps.Clone(annotations)
	return nil
}

// A NodePool's spec.template.metadata.annotations are put on the Node when
// it registers, as Karpenter's registration copies its NodeClaim's (the
// template's) onto the Node; a pool without them adds none.
func TestRegisteredNodeGetsTemplateAnnotations(t *testing.T) {
	for _, tc := range []struct {
		name        string
		annotations map[string]string
	}{
		{"template annotations", map[string]string{"example.com/owner": "team-a", "example.com/cost-centre": "42"}},
		{"no template annotations", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
			clock := testingclock.NewFakeClock(now)
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ip-1", Labels: map[string]string{}, CreationTimestamp: metav1.NewTime(now)}}
			node.Spec.ProviderID = state.ProviderIDFor("us-east-1a", "i-1")
			r, _, _, _ := testReconciler(t, clock, func(time.Time) (*View, error) { return &View{Nodes: []*corev1.Node{node}}, nil })
			pool := r.NodePools[0]
			pool.Spec.Template.ObjectMeta.Annotations = tc.annotations
			nodes := &markingNodes{labels: map[string]map[string]string{}, annotations: map[string]map[string]string{}}
			r.Nodes = nodes
			rec := &state.NodeClaim{Name: pool.Name + "-00001", NodePool: pool.Name, NodeClass: "default", Phase: state.Launched,
				InstanceID: "i-1", InstanceType: "m5.large", Zone: "us-east-1a", CapacityType: apis.CapacityTypeOnDemand,
				CreatedAt: now.Add(-time.Minute), LaunchedAt: now.Add(-time.Minute)}
			if err := r.Store.PutNodeClaim(context.Background(), rec); err != nil {
				t.Fatal(err)
			}
			rep, err := r.Register(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Registered) != 1 || nodes.labels["ip-1"][apis.LabelRegistered] != "true" {
				t.Fatalf("registered %v, labels %v: want the node registered and marked", rep.Registered, nodes.labels["ip-1"])
			}
			if got := nodes.annotations["ip-1"]; !maps.Equal(got, tc.annotations) {
				t.Errorf("node annotations %v, want %v", got, tc.annotations)
			}
		})
	}
}
