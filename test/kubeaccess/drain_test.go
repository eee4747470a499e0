package kubeaccess

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/nodewright/nodewright/shared/drain"
	"github.com/nodewright/nodewright/shared/kube"
	"github.com/nodewright/nodewright/test/localcloud/nodebridge"
)

// kwokNode creates a node that kwok keeps Ready and whose pods it runs.
func kwokNode(t *testing.T, name string) *corev1.Node {
	t.Helper()
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"},
			Annotations: map[string]string{nodebridge.KwokAnnotation: nodebridge.KwokAnnotationValue}},
		Status: corev1.NodeStatus{
			Capacity:    corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourceMemory: resource.MustParse("64Gi"), corev1.ResourcePods: resource.MustParse("110")},
			Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("16"), corev1.ResourceMemory: resource.MustParse("64Gi"), corev1.ResourcePods: resource.MustParse("110")},
		},
	}
	ctx := context.Background()
	n, err := cloud.Kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = kubeClient(t).RemoveFinalizer(context.Background(), name, kube.FinalizerTermination)
		_ = cloud.Kube.CoreV1().Nodes().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	eventually(t, 30*time.Second, "node "+name+" Ready", func() (bool, error) {
		n, err := cloud.Kube.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				return true, nil
			}
		}
		return false, nil
	})
	return n
}

func kubeClient(t *testing.T) *kube.Client {
	t.Helper()
	kc, err := kube.New(cloud.REST)
	if err != nil {
		t.Fatal(err)
	}
	return kc
}

func ready(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// TestDrainHonoursPDB drains a node running a Deployment's 6 pods under a
// PodDisruptionBudget of maxUnavailable 1 and a DaemonSet: a watcher counts
// the Deployment's ready pods throughout and never sees fewer than 5; the
// DaemonSet's pod stays; the drain takes several resumable calls.
func TestDrainHonoursPDB(t *testing.T) {
	ctx := context.Background()
	ns := "drain"
	if _, err := cloud.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	old := kwokNode(t, "drain-old")
	const replicas = 6
	labels := map[string]string{"app": "web"}
	tmpl := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: corev1.PodSpec{
			TerminationGracePeriodSeconds: ptr(int64(1)),
			Tolerations:                   []corev1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpExists}},
			Containers: []corev1.Container{{Name: "web", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}}}},
		},
	}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.DeploymentSpec{Replicas: ptr(int32(replicas)), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl}}
	if _, err := cloud.Kube.AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dsLabels := map[string]string{"app": "agent"}
	ds := &appsv1.DaemonSet{ObjectMeta: metav1.ObjectMeta{Name: "agent", Namespace: ns},
		Spec: appsv1.DaemonSetSpec{Selector: &metav1.LabelSelector{MatchLabels: dsLabels}, Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: dsLabels},
			Spec: corev1.PodSpec{Tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
				Containers: []corev1.Container{{Name: "agent", Image: "registry.k8s.io/pause:3.10"}}},
		}}}
	if _, err := cloud.Kube.AppsV1().DaemonSets(ns).Create(ctx, ds, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: labels}}}
	if _, err := cloud.Kube.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	webReady := func() (int, error) {
		l, err := cloud.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			return 0, err
		}
		n := 0
		for i := range l.Items {
			if ready(&l.Items[i]) {
				n++
			}
		}
		return n, nil
	}
	eventually(t, 60*time.Second, "6 web pods and the agent Ready on "+old.Name, func() (bool, error) {
		n, err := webReady()
		if err != nil || n != replicas {
			return false, err
		}
		p, err := cloud.Kube.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "web", metav1.GetOptions{})
		return err == nil && p.Status.DisruptionsAllowed == 1 && p.Status.ObservedGeneration == p.Generation, err
	})

	// The watcher: the fewest ready web pods seen while the drain runs.
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	w, err := cloud.Kube.CoreV1().Pods(ns).Watch(wctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	state := map[string]bool{}
	l, _ := cloud.Kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	for i := range l.Items {
		state[l.Items[i].Name] = ready(&l.Items[i])
	}
	fewest, events := replicas, 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			mu.Lock()
			events++
			if ev.Type == watch.Deleted {
				delete(state, p.Name)
			} else {
				state[p.Name] = ready(p)
			}
			n := 0
			for _, r := range state {
				if r {
					n++
				}
			}
			fewest = min(fewest, n)
			mu.Unlock()
		}
	}()

	kc := kubeClient(t)
	kwokNode(t, "drain-new")
	if err := kc.Cordon(ctx, old.Name, true); err != nil {
		t.Fatal(err)
	}
	calls, blockedSeen := 0, 0
	var res *drain.Result
	eventually(t, 120*time.Second, "drain done", func() (bool, error) {
		calls++
		var err error
		res, err = drain.Drain(ctx, kc, old.Name, drain.Options{EvictionTimeout: 5 * time.Second})
		if err != nil {
			return false, err
		}
		for _, b := range res.Blocked {
			if b.Reason == drain.ReasonPDB {
				blockedSeen++
				if !errors.Is(b.Err, kube.ErrBlockedByPDB) {
					return false, fmt.Errorf("blocked without the typed error: %v", b.Err)
				}
			} else {
				return false, fmt.Errorf("blocked for %s: %v", b.Reason, b.Err)
			}
		}
		return res.Done, nil
	})
	eventually(t, 60*time.Second, "6 web pods Ready again", func() (bool, error) {
		n, err := webReady()
		return n == replicas, err
	})
	stop()
	<-done
	mu.Lock()
	defer mu.Unlock()
	t.Logf("drain: %d calls, %d PDB refusals, %d pod events watched, fewest ready %d", calls, blockedSeen, events, fewest)
	if fewest < replicas-1 {
		t.Errorf("the PDB was violated: only %d of %d web pods ready at one point", fewest, replicas)
	}
	if calls < 2 || blockedSeen == 0 {
		t.Errorf("the drain took %d calls and saw %d PDB refusals: the budget never held it back", calls, blockedSeen)
	}
	if len(res.Left) != 1 || res.Left[0].Reason != drain.ReasonDaemonSet || !strings.HasPrefix(res.Left[0].Pod.Name, "agent-") {
		t.Errorf("left %+v, want the agent DaemonSet pod", res.Left)
	}
	pods, err := kc.PodsOnNode(ctx, old.Name)
	if err != nil || len(pods) != 1 || pods[0].Labels["app"] != "agent" {
		t.Errorf("pods left on %s: %d (%v), want only the agent", old.Name, len(pods), err)
	}
}

// TestEvictBlockedAndDeadline: a budget that allows no disruption refuses
// the eviction at once (typed, no 100 s of client-side retries); past the
// drain's deadline the pod is deleted with 1 s, not force-deleted.
func TestEvictBlockedAndDeadline(t *testing.T) {
	ctx := context.Background()
	node := kwokNode(t, "deadline")
	pod := testPod("guarded", node.Name)
	pod.Labels = map[string]string{"app": "guarded"}
	pod.Spec.TerminationGracePeriodSeconds = ptr(int64(30))
	if _, err := cloud.Kube.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "guarded", Namespace: "default"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr(intstr.FromInt32(1)), Selector: &metav1.LabelSelector{MatchLabels: pod.Labels}}}
	if _, err := cloud.Kube.PolicyV1().PodDisruptionBudgets("default").Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, "guarded Ready and its budget computed", func() (bool, error) {
		p, err := cloud.Kube.CoreV1().Pods("default").Get(ctx, "guarded", metav1.GetOptions{})
		if err != nil || !ready(p) {
			return false, err
		}
		b, err := cloud.Kube.PolicyV1().PodDisruptionBudgets("default").Get(ctx, "guarded", metav1.GetOptions{})
		return err == nil && b.Status.ExpectedPods == 1 && b.Status.ObservedGeneration == b.Generation, err
	})
	kc := kubeClient(t)
	start := time.Now()
	err := kc.Evict(ctx, "default", "guarded", kube.EvictOptions{Timeout: 5 * time.Second})
	var ee *kube.EvictionError
	if !errors.Is(err, kube.ErrBlockedByPDB) || !errors.As(err, &ee) || ee.Name != "guarded" {
		t.Fatalf("evict: %v, want blocked by PDB", err)
	}
	if took := time.Since(start); took > 4*time.Second {
		t.Errorf("a refused eviction took %s: client-side retries", took)
	}
	// The deletion is watched: a force delete (0) would remove the pod at
	// once, so a read after the drain could not tell it from a graceful one.
	before, err := cloud.Kube.CoreV1().Pods("default").Get(ctx, "guarded", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wctx, stop := context.WithTimeout(ctx, 30*time.Second)
	defer stop()
	w, err := cloud.Kube.CoreV1().Pods("default").Watch(wctx, metav1.ListOptions{
		FieldSelector: "metadata.name=guarded", ResourceVersion: before.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	res, err := drain.Drain(ctx, kc, node.Name, drain.Options{Deadline: time.Now().Add(-time.Second)})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Deleted) != 1 || res.Deleted[0].Reason != drain.ReasonForced || res.Done {
		t.Fatalf("past the deadline: %+v", res)
	}
	// 1 s, the shortest graceful delete: never 0, a force delete.
	for ev := range w.ResultChan() {
		if p, ok := ev.Object.(*corev1.Pod); ok && p.DeletionTimestamp != nil {
			if g := p.DeletionGracePeriodSeconds; g == nil || *g != 1 || ev.Type != watch.Modified {
				t.Errorf("first seen deleting (%s) with grace %s, want a graceful delete of 1 s", ev.Type, fmtSeconds(g))
			}
			return
		}
	}
	t.Error("the pod was not seen deleting")
}

// TestNodeWrites: taints, cordon, labels and the termination finalizer
// against the API server; a deleted node with the finalizer stays until it
// is removed.
func TestNodeWrites(t *testing.T) {
	ctx := context.Background()
	node := kwokNode(t, "writes")
	kc := kubeClient(t)
	taint := corev1.Taint{Key: "karpenter.sh/disrupted", Effect: corev1.TaintEffectNoSchedule}
	for i := 0; i < 2; i++ { // twice: the second changes nothing
		changed, err := kc.Taint(ctx, node.Name, taint)
		if err != nil || changed != (i == 0) {
			t.Fatalf("taint %d: changed %v, %v", i, changed, err)
		}
	}
	if err := kc.Cordon(ctx, node.Name, true); err != nil {
		t.Fatal(err)
	}
	v := "yes"
	if err := kc.Label(ctx, node.Name, map[string]*string{"nodewright.io/test": &v}); err != nil {
		t.Fatal(err)
	}
	if _, err := kc.AddFinalizer(ctx, node.Name, kube.FinalizerTermination); err != nil {
		t.Fatal(err)
	}
	n, err := kc.GetNode(ctx, node.Name)
	if err != nil {
		t.Fatal(err)
	}
	hasTaint := false
	for _, tt := range n.Spec.Taints {
		hasTaint = hasTaint || tt.Key == taint.Key && tt.Effect == taint.Effect
	}
	if !hasTaint || !n.Spec.Unschedulable || n.Labels["nodewright.io/test"] != "yes" || !slices.Contains(n.Finalizers, kube.FinalizerTermination) {
		t.Fatalf("node after writes: taints %v unschedulable %v labels %v finalizers %v", n.Spec.Taints, n.Spec.Unschedulable, n.Labels, n.Finalizers)
	}
	if _, err := kc.Untaint(ctx, node.Name, taint.Key, ""); err != nil {
		t.Fatal(err)
	}
	if err := kc.Cordon(ctx, node.Name, false); err != nil {
		t.Fatal(err)
	}
	if err := kc.Label(ctx, node.Name, map[string]*string{"nodewright.io/test": nil}); err != nil {
		t.Fatal(err)
	}
	if err := kc.DeleteNode(ctx, node.Name); err != nil {
		t.Fatal(err)
	}
	n, err = kc.GetNode(ctx, node.Name)
	if err != nil || n.DeletionTimestamp == nil || n.Spec.Unschedulable || n.Labels["nodewright.io/test"] != "" || len(n.Spec.Taints) > len(node.Spec.Taints) {
		t.Fatalf("deleted node with finalizer: %v %+v", err, n)
	}
	if _, err := kc.RemoveFinalizer(ctx, node.Name, kube.FinalizerTermination); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "node gone", func() (bool, error) {
		_, err := kc.GetNode(ctx, node.Name)
		return err != nil && strings.Contains(err.Error(), "not found"), nil
	})
	if err := kc.DeleteNode(ctx, node.Name); err != nil {
		t.Errorf("deleting a gone node: %v", err)
	}
}

// TestEventsAggregate: the same event three times is one Event with count
// 3, also across recorders (Lambda containers); a different message is
// another Event; the rate limit drops what exceeds the burst.
func TestEventsAggregate(t *testing.T) {
	ctx := context.Background()
	kc := kubeClient(t)
	pod, err := cloud.Kube.CoreV1().Pods("default").Create(ctx, testPod("evented", ""), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ref := kube.RefForPod(pod)
	a := kube.NewRecorder(kc, kube.RecorderOptions{Instance: "provision"})
	b := kube.NewRecorder(kc, kube.RecorderOptions{Instance: "provision"})
	for _, r := range []*kube.Recorder{a, a, b} {
		if err := r.Eventf(ctx, ref, corev1.EventTypeNormal, "Nominated", "Nominated to NodeClaim %s", "default-x7k2p"); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.Event(ctx, ref, corev1.EventTypeWarning, "FailedScheduling", "no instance type fits"); err != nil {
		t.Fatal(err)
	}
	l, err := cloud.Kube.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=evented"})
	if err != nil {
		t.Fatal(err)
	}
	counts := map[string]int32{}
	for _, e := range l.Items {
		counts[e.Reason] += e.Count
		if e.Source.Component != kube.Component || e.ReportingController != kube.Component || e.ReportingInstance != "provision" || e.InvolvedObject.UID != pod.UID {
			t.Errorf("event %+v", e)
		}
	}
	if len(l.Items) != 2 || counts["Nominated"] != 3 || counts["FailedScheduling"] != 1 {
		t.Fatalf("%d events, counts %v; want 2 with Nominated 3", len(l.Items), counts)
	}
	limited := kube.NewRecorder(kc, kube.RecorderOptions{Burst: 2})
	for i := 0; i < 5; i++ {
		_ = limited.Eventf(ctx, ref, corev1.EventTypeNormal, "Spam", "spam %d", i)
	}
	if limited.Dropped() != 3 {
		t.Errorf("dropped %d, want 3", limited.Dropped())
	}
}

func ptr[T any](v T) *T { return &v }

func fmtSeconds(s *int64) string {
	if s == nil {
		return "unset"
	}
	return fmt.Sprintf("%d s", *s)
}
