package consolidation_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/disruption"
	"github.com/nodewright/nodewright/shared/metrics"
	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/test/harness"
	"github.com/nodewright/nodewright/test/localcloud/nodebridge"
)

// repairPool is a test pool of one small spot type (one 1-CPU pod per
// node) whose Ready toleration is a minute, set as a user sets it: the
// NodePool annotation (the default, 30 minutes, would hold the test that
// long). Consolidation is off, so that only repair removes its nodes.
func repairPool(t *testing.T, name string) {
	smallPool(t, name, func(np *apis.NodePool) {
		np.Annotations = map[string]string{apis.DefaultRepairPolicies()[0].AnnotationKey(): "1m"}
		np.Spec.Disruption.ConsolidateAfter = dur("Never")
	})
}

// markNotReady stops kwok managing the node (its kubelet is gone) and
// reports it NotReady from now, as the node controller would.
func markNotReady(t *testing.T, name string) {
	t.Helper()
	c := harness.Ctx(t)
	nodes := suite.LC.Kube.CoreV1().Nodes()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n, err := nodes.Get(c, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		delete(n.Annotations, nodebridge.KwokAnnotation)
		_, err = nodes.Update(c, n, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("take node %s from kwok: %v", name, err)
	}
	// kwok may still be writing the status it last decided: set NotReady
	// until it holds.
	err = harness.Poll(c, 30*time.Second, "node "+name+" NotReady", func() (bool, string, error) {
		n, err := nodes.Get(c, name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		for i := range n.Status.Conditions {
			cond := &n.Status.Conditions[i]
			if cond.Type != corev1.NodeReady {
				continue
			}
			if cond.Status == corev1.ConditionFalse {
				return true, "", nil
			}
			now := metav1.Now()
			cond.Status, cond.Reason, cond.Message = corev1.ConditionFalse, "KubeletNotReady", "the test stopped its kubelet"
			cond.LastTransitionTime, cond.LastHeartbeatTime = now, now
		}
		if _, err := nodes.UpdateStatus(c, n, metav1.UpdateOptions{}); err != nil && !apierrors.IsConflict(err) {
			return false, "", err
		}
		return false, "Ready not False yet", nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// initialized sweeps until the pool's n records are initialized (their
// Nodes Ready), as a running pool's are before a node fails.
func initialized(t *testing.T, h *harness.Harness, pool string, n int) {
	t.Helper()
	c := harness.Ctx(t)
	err := harness.Poll(c, time.Minute, fmt.Sprintf("%d initialized records in %s", n, pool), func() (bool, string, error) {
		if err := h.Sweep(c); err != nil {
			return false, "", err
		}
		done := 0
		for _, r := range live(t, pool) {
			if r.Phase == state.Initialized {
				done++
			}
		}
		return done == n, fmt.Sprintf("%d initialized", done), nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// nodesOf is app's nodes, by name, sorted.
func nodesOf(t *testing.T, app string) []string {
	t.Helper()
	ns, err := harness.NodesOf(harness.Ctx(t), suite.LC, "default", app)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for n := range ns {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// TestNodeRepair: a kwok node marked NotReady past its pool's toleration
// is replaced: repair deletes it and its pod runs on a new node. In a pool
// of 10, three NotReady nodes are more than 20% unhealthy: none is
// replaced, and an event on the NodePool says why.
func TestNodeRepair(t *testing.T) {
	c := harness.Ctx(t)
	h := suite.Harness(t, harness.Options{ValidationWait: validationWait})

	t.Run("a NotReady node is replaced", func(t *testing.T) {
		repairPool(t, "repair")
		launch(t, h, harness.OnPool("repair", "repairapp", 2, "1", "1Gi"))
		before := nodesOf(t, "repairapp")
		if len(before) != 2 {
			t.Fatalf("nodes %v for 2 one-CPU pods on c6g.large, want 2", before)
		}
		sick := before[0]
		initialized(t, h, "repair", 2)
		markNotReady(t, sick)
		// Within the toleration: the node stays.
		tick(t, h)
		if _, err := suite.LC.Kube.CoreV1().Nodes().Get(c, sick, metav1.GetOptions{}); err != nil {
			t.Fatalf("node %s within its 1m toleration: %v, want it kept", sick, err)
		}
		h.Clock.Advance(2 * time.Minute)
		tick(t, h)
		err := harness.Poll(c, time.Minute, "node "+sick+" removed", func() (bool, string, error) {
			_, err := suite.LC.Kube.CoreV1().Nodes().Get(c, sick, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return true, "", nil
			}
			return false, "still there", err
		})
		if err != nil {
			t.Fatal(err)
		}
		if !nodeEvent(t, sick, "DisruptionPlanned") {
			t.Errorf("no DisruptionPlanned event on %s", sick)
		}
		if sum, _ := h.Metrics.Sum(metrics.ConsolidationActions, map[string]string{metrics.DimMethod: string(disruption.MethodRepair), metrics.DimReason: string(disruption.ReasonUnhealthy)}); sum != 1 {
			t.Errorf("metric %s{repair, Unhealthy}: %v, want 1", metrics.ConsolidationActions, sum)
		}
		// Its pod, pending again, gets a new node.
		if _, err := harness.WaitSettled(c, suite.LC, "default", "repairapp", 2, time.Minute); err != nil {
			t.Fatal(err)
		}
		if err := h.Hint(c, "default", "repairapp"); err != nil {
			t.Fatal(err)
		}
		if err := harness.WaitRunning(c, suite.LC, "default", "repairapp", 2, 2*time.Minute); err != nil {
			t.Fatal(err)
		}
		after := nodesOf(t, "repairapp")
		if len(after) != 2 || slices.Contains(after, sick) || !slices.Contains(after, before[1]) {
			t.Errorf("nodes %v after the repair of %s (before %v): want %s and a new one", after, sick, before, before[1])
		}
	})

	t.Run("more than 20% unhealthy: repair pauses", func(t *testing.T) {
		repairPool(t, "repairten")
		launch(t, h, harness.OnPool("repairten", "repairten", 10, "1", "1Gi"))
		nodes := nodesOf(t, "repairten")
		if len(nodes) != 10 {
			t.Fatalf("%d nodes for 10 one-CPU pods on c6g.large, want 10", len(nodes))
		}
		sick := nodes[:3]
		initialized(t, h, "repairten", 10)
		for _, n := range sick {
			markNotReady(t, n)
		}
		h.Clock.Advance(2 * time.Minute)
		tick(t, h)
		if !nodeEvent(t, "repairten", "NodeRepairBlocked") {
			t.Fatalf("no NodeRepairBlocked event on NodePool repairten")
		}
		evs, err := suite.LC.Kube.CoreV1().Events("").List(c, metav1.ListOptions{FieldSelector: "involvedObject.name=repairten,reason=NodeRepairBlocked"})
		if err != nil {
			t.Fatal(err)
		}
		if len(evs.Items) == 0 || evs.Items[0].InvolvedObject.Kind != apis.NodePoolKind || !strings.Contains(evs.Items[0].Message, "3 of its 10 nodes are unhealthy, more than 20% (2 allowed)") {
			t.Errorf("events %+v: want a NodePool event saying 3 of its 10 nodes are unhealthy, more than 20%% (2 allowed)", evs.Items)
		}
		for _, name := range sick {
			n, err := suite.LC.Kube.CoreV1().Nodes().Get(c, name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("node %s: %v, want it left alone", name, err)
			}
			for _, taint := range n.Spec.Taints {
				if taint.Key == apis.TaintKeyDisrupted {
					t.Errorf("node %s tainted %s: repair planned it", name, taint.Key)
				}
			}
		}
		if n := len(live(t, "repairten")); n != 10 {
			t.Errorf("%d live records in repairten, want 10", n)
		}
	})
}
