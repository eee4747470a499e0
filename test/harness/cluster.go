package harness

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"

	"k8s.io/client-go/util/retry"

	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/podstate"
	"github.com/nodewright/nodewright/shared/refdata"
	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/test/localcloud"
)

// Examples loads the team's example files unchanged (the "deployed
// configuration").
func Examples(files ...string) (*apis.Config, error) {
	var paths []string
	for _, f := range files {
		p, err := refdata.Example(f)
		if err != nil {
			return nil, err
		}
		paths = append(paths, p)
	}
	return apis.LoadFiles(paths...)
}

// Poll waits for cond with a deadline, checking every 100 ms; the error
// says what it waited for and the last state seen.
func Poll(ctx context.Context, timeout time.Duration, what string, cond func() (bool, string, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	t := time.NewTicker(100 * time.Millisecond)
	defer t.Stop()
	last := ""
	for {
		done, s, err := cond()
		if err != nil {
			return fmt.Errorf("waiting for %s: %w", what, err)
		}
		if done {
			return nil
		}
		last = s
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last: %s)", what, ctx.Err(), last)
		case <-t.C:
		}
	}
}

// Workload describes a Deployment of identical pods.
type Workload struct {
	Namespace, Name string
	Replicas        int
	CPU, Memory     string
	// NodeSelector and Tolerations pin the pods to a test's NodePool.
	NodeSelector map[string]string
	Tolerations  []corev1.Toleration
	Annotations  map[string]string
	// ExtraRequests adds requests (nvidia.com/gpu ...).
	ExtraRequests corev1.ResourceList
	Grace         int64
}

// Deploy creates the Deployment (and its namespace).
func Deploy(ctx context.Context, lc *localcloud.Cloud, w Workload) error {
	if w.Namespace == "" {
		w.Namespace = "default"
	}
	if w.Namespace != "default" {
		_, err := lc.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: w.Namespace}}, metav1.CreateOptions{})
		if err != nil && !strings.Contains(err.Error(), "already exists") {
			return err
		}
		if err := Poll(ctx, time.Minute, "default ServiceAccount in "+w.Namespace, func() (bool, string, error) {
			_, err := lc.Kube.CoreV1().ServiceAccounts(w.Namespace).Get(ctx, "default", metav1.GetOptions{})
			return err == nil, fmt.Sprint(err), nil
		}); err != nil {
			return err
		}
	}
	n := int32(w.Replicas)
	req := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(w.CPU), corev1.ResourceMemory: resource.MustParse(w.Memory)}
	for k, v := range w.ExtraRequests {
		req[k] = v
	}
	limits := corev1.ResourceList{}
	for k, v := range w.ExtraRequests {
		limits[k] = v
	}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: w.Name, Namespace: w.Namespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: &n,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": w.Name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": w.Name}, Annotations: w.Annotations},
				Spec: corev1.PodSpec{
					TerminationGracePeriodSeconds: &w.Grace,
					NodeSelector:                  w.NodeSelector, Tolerations: w.Tolerations,
					Containers: []corev1.Container{{Name: "app", Image: "public.ecr.aws/eks-distro/kubernetes/pause:3.7",
						Resources: corev1.ResourceRequirements{Requests: req, Limits: limits}}},
				},
			},
		},
	}
	_, err := lc.Kube.AppsV1().Deployments(w.Namespace).Create(ctx, d, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("create deployment %s/%s: %w", w.Namespace, w.Name, err)
	}
	return nil
}

// Scale sets a Deployment's replicas.
func Scale(ctx context.Context, lc *localcloud.Cloud, namespace, name string, replicas int) error {
	// The Deployment controller writes the object too: retry on conflict.
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s, err := lc.Kube.AppsV1().Deployments(namespace).GetScale(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		s.Spec.Replicas = int32(replicas)
		_, err = lc.Kube.AppsV1().Deployments(namespace).UpdateScale(ctx, name, s, metav1.UpdateOptions{})
		return err
	})
}

// PDB creates a PodDisruptionBudget over app=<app> with maxUnavailable.
func PDB(ctx context.Context, lc *localcloud.Cloud, namespace, app string, maxUnavailable int) error {
	mu := intstr.FromInt32(int32(maxUnavailable))
	_, err := lc.Kube.PolicyV1().PodDisruptionBudgets(namespace).Create(ctx, &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: app, Namespace: namespace},
		Spec:       policyv1.PodDisruptionBudgetSpec{MaxUnavailable: &mu, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}},
	}, metav1.CreateOptions{})
	return err
}

// Pods lists the pods of app=<app>.
func Pods(ctx context.Context, lc *localcloud.Cloud, namespace, app string) ([]corev1.Pod, error) {
	l, err := lc.Kube.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		return nil, err
	}
	return l.Items, nil
}

// Counts are a workload's pods by state.
type Counts struct{ Total, Running, Pending, Unschedulable int }

func (c Counts) String() string {
	return fmt.Sprintf("%d pods: %d Running, %d Pending (%d unschedulable)", c.Total, c.Running, c.Pending, c.Unschedulable)
}

// Count counts app=<app>'s pods that are not being deleted.
func Count(ctx context.Context, lc *localcloud.Cloud, namespace, app string) (Counts, error) {
	pods, err := Pods(ctx, lc, namespace, app)
	if err != nil {
		return Counts{}, err
	}
	var c Counts
	for i := range pods {
		p := &pods[i]
		if p.DeletionTimestamp != nil {
			continue
		}
		c.Total++
		switch {
		case p.Status.Phase == corev1.PodRunning && ready(p):
			c.Running++
		case p.Status.Phase == corev1.PodPending:
			c.Pending++
			if podstate.Provisionable(p) {
				c.Unschedulable++
			}
		}
	}
	return c, nil
}

func ready(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// WaitRunning waits until app has n pods Running.
func WaitRunning(ctx context.Context, lc *localcloud.Cloud, namespace, app string, n int, timeout time.Duration) error {
	return Poll(ctx, timeout, fmt.Sprintf("%d %s pods Running", n, app), func() (bool, string, error) {
		c, err := Count(ctx, lc, namespace, app)
		return err == nil && c.Running == n && c.Total == n, c.String(), err
	})
}

// WaitUnschedulable waits until app has n pods kube-scheduler marked
// Unschedulable.
func WaitUnschedulable(ctx context.Context, lc *localcloud.Cloud, namespace, app string, n int, timeout time.Duration) error {
	return Poll(ctx, timeout, fmt.Sprintf("%d %s pods Unschedulable", n, app), func() (bool, string, error) {
		c, err := Count(ctx, lc, namespace, app)
		return err == nil && c.Unschedulable >= n, c.String(), err
	})
}

// WaitSettled waits until app has all n pods and every one not Running
// has been found Unschedulable (some may have fit existing nodes); it
// returns how many are unschedulable.
func WaitSettled(ctx context.Context, lc *localcloud.Cloud, namespace, app string, n int, timeout time.Duration) (int, error) {
	var c Counts
	err := Poll(ctx, timeout, fmt.Sprintf("%d %s pods placed or Unschedulable", n, app), func() (bool, string, error) {
		var err error
		c, err = Count(ctx, lc, namespace, app)
		return err == nil && c.Total == n && c.Running+c.Unschedulable == n, c.String(), err
	})
	return c.Unschedulable, err
}

// Store reads the cluster's state table (as the functions write it).
func Store(lc *localcloud.Cloud) (*state.Store, error) {
	return state.New(dynamodb.NewFromConfig(lc.AWSConfig()), lc.Names.Table, lc.Cluster.Name, time.Now)
}

// PoolRecords returns the NodeClaim records of a NodePool.
func PoolRecords(ctx context.Context, st *state.Store, pool string) ([]*state.NodeClaim, error) {
	all, err := st.NodeClaims(ctx)
	if err != nil {
		return nil, err
	}
	var out []*state.NodeClaim
	for _, r := range all {
		if r.NodePool == pool {
			out = append(out, r)
		}
	}
	return out, nil
}

var nodePoolGVR = schema.GroupVersionResource{Group: apis.KarpenterGroup, Version: apis.Version, Resource: "nodepools"}
var nodeClassGVR = schema.GroupVersionResource{Group: apis.AWSGroup, Version: apis.Version, Resource: "ec2nodeclasses"}

// ApplyKarpenter creates NodePools and EC2NodeClasses as cluster objects
// (the CRDs must be installed), as Karpenter users `kubectl apply` them.
func ApplyKarpenter(ctx context.Context, lc *localcloud.Cloud, objs ...any) error {
	dc, err := dynamic.NewForConfig(lc.REST)
	if err != nil {
		return err
	}
	for _, o := range objs {
		b, err := json.Marshal(o)
		if err != nil {
			return err
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(b); err != nil {
			return err
		}
		unstructured.RemoveNestedField(u.Object, "status")
		unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
		gvr := nodePoolGVR
		if _, ok := o.(*apis.EC2NodeClass); ok {
			gvr = nodeClassGVR
		}
		if _, err := dc.Resource(gvr).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create %s %s: %w", gvr.Resource, u.GetName(), err)
		}
	}
	return nil
}

// PDBWatch counts, for a PDB's pods, the most that were ever unavailable
// at once (pods not Ready or gone, against the Deployment's replicas).
type PDBWatch struct {
	mu           sync.Mutex
	MaxMissing   int
	stop         func()
	notReady     map[string]bool
	replicas     int
	seenReady    map[string]bool
	everComplete bool
}

// WatchDisrupted watches a Node and returns a function that tells whether
// it was ever seen tainted karpenter.sh/disrupted:NoSchedule, and
// cordoned. The watch ends with ctx.
func WatchDisrupted(ctx context.Context, lc *localcloud.Cloud, node string) (func() (tainted, cordoned bool), error) {
	w, err := lc.Kube.CoreV1().Nodes().Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + node})
	if err != nil {
		return nil, fmt.Errorf("watch node %s: %w", node, err)
	}
	var mu sync.Mutex
	var tainted, cordoned bool
	go func() {
		for ev := range w.ResultChan() {
			n, ok := ev.Object.(*corev1.Node)
			if !ok {
				continue
			}
			mu.Lock()
			for _, tn := range n.Spec.Taints {
				if tn.Key == apis.TaintKeyDisrupted && tn.Effect == corev1.TaintEffectNoSchedule {
					tainted = true
				}
			}
			cordoned = cordoned || n.Spec.Unschedulable
			mu.Unlock()
		}
	}()
	go func() {
		<-ctx.Done()
		w.Stop()
	}()
	return func() (bool, bool) {
		mu.Lock()
		defer mu.Unlock()
		return tainted, cordoned
	}, nil
}

// FirstTermination watches app's pods in namespace and returns a function
// that tells when the first of them began terminating (an eviction or a
// deletion; zero while none has). The watch ends with ctx.
func FirstTermination(ctx context.Context, lc *localcloud.Cloud, namespace, app string) (func() time.Time, error) {
	w, err := lc.Kube.CoreV1().Pods(namespace).Watch(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		return nil, fmt.Errorf("watch %s pods: %w", app, err)
	}
	var mu sync.Mutex
	var first time.Time
	go func() {
		for ev := range w.ResultChan() {
			if p, ok := ev.Object.(*corev1.Pod); ok && (p.DeletionTimestamp != nil || ev.Type == watch.Deleted) {
				mu.Lock()
				if first.IsZero() {
					first = time.Now()
				}
				mu.Unlock()
			}
		}
	}()
	go func() {
		<-ctx.Done()
		w.Stop()
	}()
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return first
	}, nil
}

// WatchPDB watches app's pods; Violations reports how often more than
// allowed were unavailable once all replicas had first been Ready.
func WatchPDB(ctx context.Context, lc *localcloud.Cloud, namespace, app string, replicas int) (*PDBWatch, error) {
	w := &PDBWatch{replicas: replicas, seenReady: map[string]bool{}}
	wctx, cancel := context.WithCancel(ctx)
	w.stop = cancel
	wi, err := lc.Kube.CoreV1().Pods(namespace).Watch(wctx, metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		cancel()
		return nil, err
	}
	go func() {
		defer wi.Stop()
		for ev := range wi.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok {
				continue
			}
			w.mu.Lock()
			switch {
			case ev.Type == watch.Deleted || p.DeletionTimestamp != nil || !ready(p):
				delete(w.seenReady, p.Name)
			default:
				w.seenReady[p.Name] = true
			}
			if len(w.seenReady) >= w.replicas {
				w.everComplete = true
			}
			if w.everComplete {
				if missing := w.replicas - len(w.seenReady); missing > w.MaxMissing {
					w.MaxMissing = missing
				}
			}
			w.mu.Unlock()
		}
	}()
	return w, nil
}

// Max returns the most pods unavailable at once so far.
func (w *PDBWatch) Max() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.MaxMissing
}

// Stop ends the watch.
func (w *PDBWatch) Stop() { w.stop() }

// LogFile opens a log file under dir for the functions' logs.
func LogFile(dir, name string) (*os.File, error) {
	return os.Create(dir + "/" + name)
}

// PodOf is the i-th pod a workload's Deployment makes, pending.
func PodOf(w Workload, i int) *corev1.Pod {
	req := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(w.CPU), corev1.ResourceMemory: resource.MustParse(w.Memory)}
	for k, v := range w.ExtraRequests {
		req[k] = v
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", w.Name, i), Namespace: w.Namespace, Labels: map[string]string{"app": w.Name}},
		Spec: corev1.PodSpec{NodeSelector: w.NodeSelector, Tolerations: w.Tolerations,
			Containers: []corev1.Container{{Name: "app", Resources: corev1.ResourceRequirements{Requests: req}}}},
	}
}

// GetPool reads a NodePool object from the cluster.
func GetPool(ctx context.Context, lc *localcloud.Cloud, name string) (*apis.NodePool, error) {
	dc, err := dynamic.NewForConfig(lc.REST)
	if err != nil {
		return nil, err
	}
	u, err := dc.Resource(nodePoolGVR).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	b, err := u.MarshalJSON()
	if err != nil {
		return nil, err
	}
	var np apis.NodePool
	if err := json.Unmarshal(b, &np); err != nil {
		return nil, err
	}
	return &np, nil
}

// UpdatePool writes a NodePool object back to the cluster.
func UpdatePool(ctx context.Context, lc *localcloud.Cloud, np *apis.NodePool) error {
	dc, err := dynamic.NewForConfig(lc.REST)
	if err != nil {
		return err
	}
	b, err := json.Marshal(np)
	if err != nil {
		return err
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(b); err != nil {
		return err
	}
	unstructured.RemoveNestedField(u.Object, "status")
	_, err = dc.Resource(nodePoolGVR).Update(ctx, u, metav1.UpdateOptions{})
	return err
}
