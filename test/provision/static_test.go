package provision_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/provision"
	"github.com/nodewright/nodewright/test/harness"
)

// TestStaticNodePool: a NodePool with replicas 3 gets three nodes with no
// pod asking for them; a Node deleted (kubectl delete node) is drained,
// terminated and replaced; `kubectl scale nodepool --replicas=1` (the
// CRD's scale subresource) takes two away; 0 takes the last.
func TestStaticNodePool(t *testing.T) {
	t.Parallel()
	c := ctx(t)
	const pool = "static"
	three := int64(3)
	testPool(t, pool, func(np *apis.NodePool) { np.Spec.Replicas = &three })
	dc, err := dynamic.NewForConfig(lc.REST)
	if err != nil {
		t.Fatal(err)
	}
	pools := dc.Resource(schema.GroupVersionResource{Group: apis.KarpenterGroup, Version: apis.Version, Resource: "nodepools"})
	t.Cleanup(func() { _ = pools.Delete(harness.Ctx(t), pool, metav1.DeleteOptions{}) })
	h := newHarness(t, harness.Options{})
	st, err := harness.Store(lc)
	if err != nil {
		t.Fatal(err)
	}
	// nodes lists the pool's Nodes not being deleted, and checks its
	// records are the static pool's, launched for no pod.
	nodes := func() ([]corev1.Node, error) {
		l, err := lc.Kube.CoreV1().Nodes().List(c, metav1.ListOptions{LabelSelector: apis.LabelNodePool + "=" + pool})
		if err != nil {
			return nil, err
		}
		var out []corev1.Node
		for _, n := range l.Items {
			if n.DeletionTimestamp == nil {
				out = append(out, n)
			}
		}
		return out, nil
	}
	// settle sweeps (a round, then liveness and the terminator) until the
	// pool has want Nodes and want records, and no other.
	settle := func(what string, want int, also func([]corev1.Node) (bool, string)) []corev1.Node {
		t.Helper()
		var got []corev1.Node
		if err := harness.Poll(c, 4*time.Minute, what, func() (bool, string, error) {
			if err := h.Sweep(c); err != nil {
				return false, "", err
			}
			var err error
			if got, err = nodes(); err != nil {
				return false, "", err
			}
			recs, err := harness.PoolRecords(c, st, pool)
			if err != nil {
				return false, "", err
			}
			for _, r := range recs {
				if len(r.Claim.Pods) != 0 || r.Reason != provision.ReasonStatic {
					return false, "", fmt.Errorf("record %s: pods %v, reason %q: want none, %q", r.Name, r.Claim.Pods, r.Reason, provision.ReasonStatic)
				}
			}
			if len(got) != want || len(recs) != want {
				return false, fmt.Sprintf("%d Nodes, %d records", len(got), len(recs)), nil
			}
			if also != nil {
				ok, why := also(got)
				return ok, why, nil
			}
			return true, "", nil
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	// A round registers each node and puts the termination finalizer on
	// it: from then on, a deleted Node is drained and terminated.
	first := settle("three static nodes, registered", 3, func(ns []corev1.Node) (bool, string) {
		for _, n := range ns {
			if !slices.Contains(n.Finalizers, apis.FinalizerTermination) {
				return false, "node " + n.Name + " without the termination finalizer"
			}
		}
		return true, ""
	})

	lost := first[0].Name
	if err := lc.Kube.CoreV1().Nodes().Delete(c, lost, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	settle("the deleted Node replaced", 3, func(ns []corev1.Node) (bool, string) {
		for _, n := range ns {
			if n.Name == lost {
				return false, "node " + lost + " still there"
			}
		}
		return true, ""
	})

	scale := func(n int) {
		t.Helper()
		patch := []byte(fmt.Sprintf(`{"spec":{"replicas":%d}}`, n))
		if _, err := pools.Patch(c, pool, types.MergePatchType, patch, metav1.PatchOptions{}, "scale"); err != nil {
			t.Fatalf("kubectl scale nodepool %s --replicas=%d: %v", pool, n, err)
		}
	}
	s, err := pools.Get(c, pool, metav1.GetOptions{}, "scale")
	if err != nil {
		t.Fatal(err)
	}
	if r, _, _ := unstructured.NestedInt64(s.Object, "spec", "replicas"); r != 3 {
		t.Errorf("the scale subresource says %d replicas, want 3", r)
	}
	scale(1)
	settle("scaled to one", 1, nil)
	scale(0)
	settle("scaled to none", 0, nil)
}
