package provision_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/metrics"
	"github.com/nodewright/nodewright/shared/provision"
	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/test/harness"
)

// TestBrokenNodePoolIsLeftOut (defect 9): a NodePool of weight 100 whose
// EC2NodeClass does not exist, next to a valid pool of weight 10 that
// takes the same pods. The broken pool is left out of the solve (a Warning
// event on it, NodePoolNotReady at 1, the state item status shows) and the
// ten pods run on the valid pool. Once the class is applied, the next pods
// go to the weight-100 pool: it came back by itself.
func TestBrokenNodePoolIsLeftOut(t *testing.T) {
	t.Parallel()
	c := ctx(t)
	const group, broken, valid, class = "readiness", "readiness-broken", "readiness-valid", "readiness-class"
	const groupLabel = "nodewright.test/group"
	pool := func(weight int32, className string) func(*apis.NodePool) {
		return func(np *apis.NodePool) {
			np.Spec.Weight = &weight
			np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "test", Value: group, Effect: corev1.TaintEffectNoSchedule}}
			labels := map[string]string{groupLabel: group}
			for k, v := range np.Spec.Template.ObjectMeta.Labels {
				labels[k] = v
			}
			np.Spec.Template.ObjectMeta.Labels = labels
			if className != "" {
				ref := *np.Spec.Template.Spec.NodeClassRef
				ref.Name = className
				np.Spec.Template.Spec.NodeClassRef = &ref
			}
		}
	}
	dc, err := dynamic.NewForConfig(lc.REST)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// Leave no broken pool (nor its class) to the package's other tests.
		bg := harness.Ctx(t)
		_ = dc.Resource(schema.GroupVersionResource{Group: apis.KarpenterGroup, Version: apis.Version, Resource: "nodepools"}).Delete(bg, broken, metav1.DeleteOptions{})
		_ = dc.Resource(schema.GroupVersionResource{Group: apis.AWSGroup, Version: apis.Version, Resource: "ec2nodeclasses"}).Delete(bg, class, metav1.DeleteOptions{})
	})
	testPool(t, valid, pool(10, ""))
	testPool(t, broken, pool(100, class))
	h := newHarness(t, harness.Options{})
	w := harness.Workload{Namespace: "default", Name: "readyapp", Replicas: 10, CPU: "1", Memory: "1Gi",
		NodeSelector: map[string]string{groupLabel: group},
		Tolerations:  []corev1.Toleration{{Key: "test", Operator: corev1.TolerationOpEqual, Value: group, Effect: corev1.TaintEffectNoSchedule}}}
	if err := harness.Deploy(c, lc, w); err != nil {
		t.Fatal(err)
	}
	if err := harness.WaitUnschedulable(c, lc, "default", w.Name, 10, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := h.Hint(c, "default", w.Name); err != nil {
		t.Fatal(err)
	}
	if err := harness.WaitRunning(c, lc, "default", w.Name, 10, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	nodes, err := harness.NodesOf(c, lc, "default", w.Name)
	if err != nil {
		t.Fatal(err)
	}
	for name, n := range nodes {
		if p := n.Labels[apis.LabelNodePool]; p != valid {
			t.Errorf("node %s of pool %s: want the valid pool %s", name, p, valid)
		}
	}
	evs, err := lc.Kube.CoreV1().Events("default").List(c, metav1.ListOptions{FieldSelector: "involvedObject.kind=NodePool,involvedObject.name=" + broken})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range evs.Items {
		found = found || (e.Type == corev1.EventTypeWarning && e.Reason == string(provision.NodeClassNotFound))
	}
	if !found {
		t.Errorf("no Warning NodeClassNotFound event on NodePool %s (%d events)", broken, len(evs.Items))
	}
	// The package's tests share one cluster and its provision lease: the
	// round that launched for readyapp may have been another test's. This
	// harness's own round (a sweep, invoked once the lease is free: asking a
	// holder to run again would keep it running) emits the metric.
	st, err := harness.Store(lc)
	if err != nil {
		t.Fatal(err)
	}
	if err := harness.Poll(c, 3*time.Minute, "a round of this harness's provision function", func() (bool, string, error) {
		if _, n := h.Metrics.Sum(metrics.NodePoolNotReady, map[string]string{metrics.DimNodePool: broken}); n > 0 {
			return true, "", nil
		}
		l, err := st.ReadLease(c, state.LeaseProvision)
		if err != nil && !errors.Is(err, state.ErrNotFound) {
			return false, "", err
		}
		if err == nil && l.Holder != "" && l.Until.After(h.Clock.Now()) {
			return false, "the provision lease is held by " + l.Holder, nil
		}
		return false, "no NodePoolNotReady point yet", h.Sweep(c)
	}); err != nil {
		t.Fatal(err)
	}
	if sum, n := h.Metrics.Sum(metrics.NodePoolNotReady, map[string]string{metrics.DimNodePool: broken}); n == 0 || sum != float64(n) {
		t.Errorf("NodePoolNotReady for %s: %d points summing to %g, want every point 1", broken, n, sum)
	}
	pr, err := st.PoolReadiness(c)
	if err != nil {
		t.Fatal(err)
	}
	listed := false
	for _, p := range pr.NotReady {
		listed = listed || (p.NodePool == broken && p.Reason == string(provision.NodeClassNotFound))
	}
	if !listed {
		t.Errorf("state item %+v: want %s listed as NodeClassNotFound", pr, broken)
	}

	// The class is applied: the pool is ready again, and being weight 100
	// it takes the next pods.
	nc := *deploy.NodeClasses[0]
	nc.ObjectMeta = metav1.ObjectMeta{Name: class}
	if err := harness.ApplyKarpenter(c, lc, &nc); err != nil {
		t.Fatal(err)
	}
	// They select the pool by name: the valid pool's nodes may have room
	// left, and only a node of the fixed pool may take them.
	more := w
	more.Name, more.Replicas = "readyapp-more", 2
	more.NodeSelector = map[string]string{groupLabel: group, apis.LabelNodePool: broken}
	if err := harness.Deploy(c, lc, more); err != nil {
		t.Fatal(err)
	}
	if err := harness.WaitUnschedulable(c, lc, "default", more.Name, 2, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := harness.Poll(c, 2*time.Minute, "the new pods on the fixed pool", func() (bool, string, error) {
		if err := h.Hint(c, "default", more.Name); err != nil {
			return false, "", err
		}
		got, err := harness.NodesOf(c, lc, "default", more.Name)
		if err != nil {
			return false, "", err
		}
		pools := map[string]int{}
		for _, n := range got {
			pools[n.Labels[apis.LabelNodePool]]++
		}
		cnt, err := harness.Count(c, lc, "default", more.Name)
		return err == nil && cnt.Running == 2 && len(pools) == 1 && pools[broken] > 0, fmt.Sprintf("%s, nodes by pool %v", cnt, pools), err
	}); err != nil {
		t.Fatal(err)
	}
	if pr, err := st.PoolReadiness(c); err != nil || len(pr.NotReady) != 0 {
		t.Errorf("state item %+v, %v: want no pool left out once the class exists", pr, err)
	}
}
