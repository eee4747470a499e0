package provision

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodewright/nodewright/shared/fleet"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/shared/termination"
)

// sweepFleet is a fleet whose tagged instances are running, and that
// records the instances terminated.
type sweepFleet struct {
	*fakeFleet
	mu         sync.Mutex
	running    []fleet.Running
	terminated []string
}

func (f *sweepFleet) Instances(context.Context) ([]fleet.Running, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.running), nil
}

func (f *sweepFleet) Terminate(_ context.Context, ids []string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.terminated = append(f.terminated, ids...)
	return nil
}

// sweepNodes records what was done to Nodes.
type sweepNodes struct {
	mu               sync.Mutex
	tainted, deleted []string
}

func (n *sweepNodes) MarkNode(context.Context, string, map[string]string, map[string]string) error {
	return nil
}
func (n *sweepNodes) RemoveFinalizer(context.Context, string) error { return nil }
func (n *sweepNodes) Relabel(context.Context, string, map[string]*string) error {
	return nil
}
func (n *sweepNodes) Untaint(context.Context, string, string) error { return nil }

func (n *sweepNodes) Taint(_ context.Context, name string, _ corev1.Taint, _ bool) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.tainted = append(n.tainted, name)
	return nil
}

func (n *sweepNodes) DeleteNode(_ context.Context, name string) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.deleted = append(n.deleted, name)
	return nil
}

// sweepDrainer is blocked by a PDB until released.
type sweepDrainer struct {
	released bool
	drained  []string
}

func (d *sweepDrainer) Drain(_ context.Context, node string, _ termination.DrainOptions) (termination.DrainResult, error) {
	d.drained = append(d.drained, node)
	if !d.released {
		return termination.DrainResult{Blocked: []string{"default/web-0"}, Remaining: []string{"default/web-0"}}, nil
	}
	return termination.DrainResult{Done: true, Evicted: []string{"default/web-0"}}, nil
}

// TestSweepDrainsAnOrphanThatRunsPodsBeforeItTerminates (defect 7): after
// an ambiguous CreateFleet error an instance of ours has no record, but
// its Node registered and runs a pod. The sweep does not terminate it
// under the pod: it adopts a record carrying the orphan's intent, taints
// and drains the node (a PDB blocks the first pass), and terminates the
// instance only once drained.
func TestSweepDrainsAnOrphanThatRunsPodsBeforeItTerminates(t *testing.T) {
	now := time.Date(2026, 11, 27, 9, 0, 0, 0, time.UTC)
	clock := testingclock.NewFakeClock(now)
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ip-orphan"}}
	node.Spec.ProviderID = state.ProviderIDFor("us-east-1a", "i-orphan")
	pod := st.Pod(st.PodOptions{Name: "web-0", CPU: "1", Memory: "1Gi", Owner: "ReplicaSet/web-1"})
	pod.Spec.NodeName = "ip-orphan"
	r, base, _, _ := testReconciler(t, clock, func(time.Time) (*View, error) {
		return &View{Nodes: []*corev1.Node{node}, Pods: []*corev1.Pod{pod}}, nil
	})
	fl := &sweepFleet{fakeFleet: base, running: []fleet.Running{{InstanceID: "i-orphan", InstanceType: "m5.large", Zone: "us-east-1a", State: "running",
		LaunchTime: now.Add(-10 * time.Minute), NodeClaim: "default-abcde", NodePool: "default", ManagedBy: true}}}
	nodes, drainer := &sweepNodes{}, &sweepDrainer{}
	r.Fleet, r.Nodes, r.Drainer = fl, nodes, drainer

	if _, err := r.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if len(fl.terminated) != 0 || !slices.Equal(drainer.drained, []string{"ip-orphan"}) || !slices.Contains(nodes.tainted, "ip-orphan") {
		t.Fatalf("first sweep: terminated %v, drained %v, tainted %v; want the orphan tainted and drained, not terminated under its pod",
			fl.terminated, drainer.drained, nodes.tainted)
	}
	rec, err := r.Store.GetNodeClaim(context.Background(), termination.OrphanAction("i-orphan"))
	if err != nil || rec.InstanceID != "i-orphan" || rec.Disruption == nil || rec.Disruption.Cause != state.CauseOrphan || !rec.Disruption.Reschedule {
		t.Fatalf("adopted record %+v (%v): want one for i-orphan carrying the orphan's intent", rec, err)
	}

	drainer.released = true
	if _, err := r.Sweep(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(fl.terminated, []string{"i-orphan"}) || !slices.Equal(nodes.deleted, []string{"ip-orphan"}) {
		t.Errorf("second sweep: terminated %v, Nodes deleted %v; want the drained orphan terminated and its Node deleted", fl.terminated, nodes.deleted)
	}
	if _, err := r.Store.GetNodeClaim(context.Background(), termination.OrphanAction("i-orphan")); err == nil {
		t.Error("the adopted record outlives its instance")
	}
}
