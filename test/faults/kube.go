package faults

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ktypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/kube"
	"github.com/nodewright/nodewright/shared/provision"
)

// Kube is the API server at the flows' narrow interfaces
// (provision.ClusterSource, PodSource, Nodes, Events and drain.Cluster),
// with the parts of the cluster the flows rely on: kubelets that join
// when their instance runs, a scheduler that binds pending pods, the
// Eviction API honouring PodDisruptionBudgets, grace periods, finalizers,
// and ReplicaSets that recreate their pods.
type Kube struct {
	w     *World
	nodes map[string]*corev1.Node
	pods  map[string]*corev1.Pod
	pdbs  []*policyv1.PodDisruptionBudget
	// joined are the instances whose kubelet registered once.
	joined map[string]bool
	gen    int
	// claims are the NodeClaim objects, as JSON (nodeclaims.go).
	claims map[string]map[string]any
}

func newKube(w *World) *Kube {
	return &Kube{w: w, nodes: map[string]*corev1.Node{}, pods: map[string]*corev1.Pod{}, joined: map[string]bool{}, claims: map[string]map[string]any{}}
}

var (
	kubeGone     = fault{name: "410 Gone", err: apierrors.NewResourceExpired("too old resource version")}
	kubeConflict = fault{name: "409 Conflict", err: apierrors.NewConflict(schema.GroupResource{Resource: "nodes"}, "node", fmt.Errorf("the object has been modified"))}
	podConflict  = fault{name: "409 Conflict", err: apierrors.NewConflict(schema.GroupResource{Resource: "pods"}, "pod", fmt.Errorf("Precondition failed: UID in precondition"))}
)

func (k *Kube) View(ctx context.Context) (*provision.View, error) {
	var v *provision.View
	err := k.w.call(ctx, "Kube", "View", []fault{kubeGone}, func() error {
		v = &provision.View{}
		for _, n := range slices.Sorted(maps.Keys(k.nodes)) {
			v.Nodes = append(v.Nodes, k.nodes[n].DeepCopy())
		}
		for _, p := range slices.Sorted(maps.Keys(k.pods)) {
			v.Pods = append(v.Pods, k.pods[p].DeepCopy())
		}
		for _, b := range k.pdbs {
			v.PDBs = append(v.PDBs, b.DeepCopy())
		}
		return nil
	})
	return v, err
}

func (k *Kube) Pods(ctx context.Context) ([]*corev1.Pod, error) {
	var out []*corev1.Pod
	err := k.w.call(ctx, "Kube", "Pods", []fault{kubeGone}, func() error {
		for _, p := range slices.Sorted(maps.Keys(k.pods)) {
			out = append(out, k.pods[p].DeepCopy())
		}
		return nil
	})
	return out, err
}

func (k *Kube) node(name string) (*corev1.Node, error) {
	n := k.nodes[name]
	if n == nil {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "nodes"}, name)
	}
	k.w.touch(name, "node write")
	k.w.changed = true
	return n, nil
}

func (k *Kube) MarkNode(ctx context.Context, name string, lbls, annotations map[string]string) error {
	return k.w.call(ctx, "Kube", "MarkNode", []fault{kubeConflict}, func() error {
		n, err := k.node(name)
		if err != nil {
			return err
		}
		if n.DeletionTimestamp != nil {
			return apierrors.NewForbidden(schema.GroupResource{Resource: "nodes"}, name, fmt.Errorf("no new finalizers can be added if the object is being deleted"))
		}
		if !slices.Contains(n.Finalizers, apis.FinalizerTermination) {
			n.Finalizers = append(n.Finalizers, apis.FinalizerTermination)
		}
		if len(annotations) > 0 && n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		for key, v := range annotations {
			n.Annotations[key] = v
		}
		for key, v := range lbls {
			n.Labels[key] = v
		}
		return nil
	})
}

func (k *Kube) Relabel(ctx context.Context, name string, lbls map[string]*string) error {
	return k.w.call(ctx, "Kube", "Relabel", []fault{kubeConflict}, func() error {
		n, err := k.node(name)
		if err != nil {
			return err
		}
		for key, v := range lbls {
			if v == nil {
				delete(n.Labels, key)
			} else {
				n.Labels[key] = *v
			}
		}
		return nil
	})
}

func (k *Kube) RemoveFinalizer(ctx context.Context, name string) error {
	return k.w.call(ctx, "Kube", "RemoveFinalizer", []fault{kubeConflict}, func() error {
		n, err := k.node(name)
		if apierrors.IsNotFound(err) {
			return nil
		}
		var keep []string
		for _, f := range n.Finalizers {
			if f != apis.FinalizerTermination {
				keep = append(keep, f)
			}
		}
		n.Finalizers = keep
		if n.DeletionTimestamp != nil && len(keep) == 0 {
			k.removeNode(name)
		}
		return nil
	})
}

func (k *Kube) Taint(ctx context.Context, name string, taint corev1.Taint, cordon bool) error {
	return k.w.call(ctx, "Kube", "Taint", []fault{kubeConflict}, func() error {
		n, err := k.node(name)
		if err != nil {
			return err
		}
		found := false
		for _, t := range n.Spec.Taints {
			if t.Key == taint.Key && t.Effect == taint.Effect {
				found = true
			}
		}
		if !found {
			n.Spec.Taints = append(n.Spec.Taints, taint)
		}
		if cordon {
			n.Spec.Unschedulable = true
		}
		return nil
	})
}

func (k *Kube) Untaint(ctx context.Context, name, key string) error {
	return k.w.call(ctx, "Kube", "Untaint", []fault{kubeConflict}, func() error {
		n, err := k.node(name)
		if err != nil {
			return err
		}
		var keep []corev1.Taint
		for _, t := range n.Spec.Taints {
			if t.Key != key {
				keep = append(keep, t)
			}
		}
		n.Spec.Taints = keep
		return nil
	})
}

func (k *Kube) DeleteNode(ctx context.Context, name string) error {
	return k.w.call(ctx, "Kube", "DeleteNode", []fault{kubeConflict}, func() error {
		n, err := k.node(name)
		if apierrors.IsNotFound(err) {
			return nil
		}
		k.deleteNode(n)
		return nil
	})
}

// deleteNode marks a Node deleted (it goes once its finalizers are gone).
func (k *Kube) deleteNode(n *corev1.Node) {
	if len(n.Finalizers) > 0 {
		if n.DeletionTimestamp == nil {
			n.DeletionTimestamp = &metav1.Time{Time: k.w.clock.Now()}
		}
		return
	}
	k.removeNode(n.Name)
}

// removeNode removes a Node; the pod garbage collector removes its pods.
func (k *Kube) removeNode(name string) {
	delete(k.nodes, name)
	k.w.changed = true
	for _, key := range slices.Sorted(maps.Keys(k.pods)) {
		if p := k.pods[key]; p.Spec.NodeName == name {
			k.w.podGone(p, "its Node was deleted")
			k.remove(key)
		}
	}
}

func (k *Kube) Event(ctx context.Context, ref provision.Ref, eventType, reason, message string) {
	_ = k.w.call(ctx, "Kube", "Event", nil, func() error { return nil })
}

func (k *Kube) PodsOnNode(ctx context.Context, node string) ([]corev1.Pod, error) {
	var out []corev1.Pod
	err := k.w.call(ctx, "Kube", "PodsOnNode", []fault{kubeGone}, func() error {
		for _, key := range slices.Sorted(maps.Keys(k.pods)) {
			if p := k.pods[key]; p.Spec.NodeName == node {
				out = append(out, *p.DeepCopy())
			}
		}
		return nil
	})
	return out, err
}

// Evict is the Eviction API: a pod a budget protects is refused (429)
// while the budget allows no disruption.
func (k *Kube) Evict(ctx context.Context, namespace, name string, opts kube.EvictOptions) error {
	return k.w.call(ctx, "Kube", "Evict", nil, func() error {
		p := k.pods[namespace+"/"+name]
		if p == nil || (opts.UID != "" && p.UID != opts.UID) {
			return nil
		}
		k.w.touch(p.Spec.NodeName, "evict "+name)
		if p.DeletionTimestamp != nil {
			return nil
		}
		if b := k.blockingBudget(p); b != nil {
			return &kube.EvictionError{Namespace: namespace, Name: name, BlockedByPDB: true,
				Err: apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget "+b.Name, 10)}
		}
		k.w.removal(p, false, opts.GracePeriod)
		k.terminate(p, opts.GracePeriod)
		return nil
	})
}

// DeletePod deletes, bypassing budgets.
func (k *Kube) DeletePod(ctx context.Context, namespace, name string, opts kube.DeleteOptions) error {
	return k.w.call(ctx, "Kube", "DeletePod", []fault{podConflict}, func() error {
		p := k.pods[namespace+"/"+name]
		if p == nil {
			return apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, name)
		}
		if opts.UID != "" && p.UID != opts.UID {
			return podConflict.err
		}
		k.w.touch(p.Spec.NodeName, "delete "+name)
		k.w.removal(p, true, opts.GracePeriod)
		k.terminate(p, opts.GracePeriod)
		return nil
	})
}

// ownGrace is a pod's terminationGracePeriodSeconds.
func ownGrace(p *corev1.Pod) time.Duration {
	if p.Spec.TerminationGracePeriodSeconds != nil {
		return time.Duration(*p.Spec.TerminationGracePeriodSeconds) * time.Second
	}
	return time.Duration(corev1.DefaultTerminationGracePeriodSeconds) * time.Second
}

// terminate starts a pod's termination (a shorter grace shortens one in
// progress; 0 removes it at once).
func (k *Kube) terminate(p *corev1.Pod, grace *time.Duration) {
	g := ownGrace(p)
	if grace != nil {
		g = *grace
	}
	end := k.w.clock.Now().Add(g)
	if p.DeletionTimestamp == nil || end.Before(p.DeletionTimestamp.Time) {
		p.DeletionTimestamp = &metav1.Time{Time: end}
	}
	k.w.changed = true
	if g <= 0 {
		k.finish(p)
	}
}

// finish removes a pod whose termination ended, and its ReplicaSet makes
// another.
func (k *Kube) finish(p *corev1.Pod) {
	k.remove(p.Namespace + "/" + p.Name)
}

func (k *Kube) remove(key string) {
	p := k.pods[key]
	if p == nil {
		return
	}
	delete(k.pods, key)
	k.w.changed = true
	if p.Labels["app"] != "" && !strings.HasPrefix(p.Name, "foreign") {
		k.gen++
		base := p.Labels["pod-base"]
		c := newPod(fmt.Sprintf("%s-r%d", base, k.gen), p)
		k.pods[c.Namespace+"/"+c.Name] = c
	}
}

// newPod is a pending copy of template named name.
func newPod(name string, template *corev1.Pod) *corev1.Pod {
	c := template.DeepCopy()
	c.Name = name
	c.UID = typesUID("uid-" + name)
	c.Spec.NodeName = ""
	c.DeletionTimestamp = nil
	c.Status = corev1.PodStatus{Phase: corev1.PodPending}
	return c
}

func typesUID(s string) ktypes.UID { return ktypes.UID(s) }

// blockingBudget is a budget that allows no more disruption of p.
func (k *Kube) blockingBudget(p *corev1.Pod) *policyv1.PodDisruptionBudget {
	for _, b := range k.pdbs {
		if b.Namespace != p.Namespace || !selects(b, p) {
			continue
		}
		unavailable := 0
		for _, q := range k.pods {
			if q.Namespace == p.Namespace && selects(b, q) && !healthy(q) {
				unavailable++
			}
		}
		if b.Spec.MaxUnavailable != nil && unavailable >= b.Spec.MaxUnavailable.IntValue() {
			return b
		}
	}
	return nil
}

func selects(b *policyv1.PodDisruptionBudget, p *corev1.Pod) bool {
	sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
	return err == nil && sel.Matches(labels.Set(p.Labels))
}

func healthy(p *corev1.Pod) bool {
	return p.Spec.NodeName != "" && p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning
}

// protected reports whether a budget covers p and allows no disruption.
func (k *Kube) protected(p *corev1.Pod) bool { return k.blockingBudget(p) != nil }

// tick moves the cluster on to now: terminations end, kubelets join, the
// scheduler binds pending pods.
func (k *Kube) tick(now time.Time) {
	for _, key := range slices.Sorted(maps.Keys(k.pods)) {
		p := k.pods[key]
		if p != nil && p.DeletionTimestamp != nil && !now.Before(p.DeletionTimestamp.Time) {
			k.finish(p)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(k.w.ec2.instances)) {
		in := k.w.ec2.instances[id]
		if in.State == "pending" && now.Sub(in.Launched) >= 10*time.Second {
			in.State = "running"
			k.w.changed = true
		}
		if in.State == "shutting-down" && now.Sub(in.Ended) >= 30*time.Second {
			in.State = "terminated"
			k.w.changed = true
		}
		if in.State != "running" || k.joined[id] || now.Sub(in.Launched) < joinAfter {
			continue
		}
		k.joined[id] = true
		k.nodes[in.DNS] = k.w.nodeFor(in)
		k.w.changed = true
	}
	k.schedule(now)
}

// joinAfter is how long an instance takes to register its Node.
const joinAfter = time.Minute

// schedule binds each pending pod to the first Ready, schedulable node
// (by name) whose taints it tolerates and that has room, else marks it
// unschedulable.
func (k *Kube) schedule(now time.Time) {
	used := map[string]int64{}
	for _, p := range k.pods {
		if p.Spec.NodeName != "" {
			used[p.Spec.NodeName] += cpuOf(p)
		}
	}
	nodes := slices.Sorted(maps.Keys(k.nodes))
	for _, key := range slices.Sorted(maps.Keys(k.pods)) {
		p := k.pods[key]
		if p.Spec.NodeName != "" || p.DeletionTimestamp != nil {
			continue
		}
		bound := false
		for _, name := range nodes {
			n := k.nodes[name]
			if n.DeletionTimestamp != nil || n.Spec.Unschedulable || !nodeReady(n) || !tolerates(p, n) || !selected(p, n) || k.w.ec2.byDNS(name) == nil || k.w.ec2.byDNS(name).State != "running" {
				continue
			}
			free := n.Status.Allocatable.Cpu().MilliValue() - used[name]
			if cpuOf(p) > free {
				continue
			}
			p.Spec.NodeName = name
			p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}}
			used[name] += cpuOf(p)
			bound = true
			k.w.changed = true
			break
		}
		if !bound && len(p.Status.Conditions) == 0 {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
				LastTransitionTime: metav1.Time{Time: now.Truncate(time.Second)}}}
			k.w.changed = true
		}
	}
}

// nodeReady: the node controller taints a node that is not Ready
// (node.kubernetes.io/not-ready): the scheduler places nothing there.
func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// selected reports whether the node has the labels the pod's nodeSelector
// asks for.
func selected(p *corev1.Pod, n *corev1.Node) bool {
	for k, v := range p.Spec.NodeSelector {
		if n.Labels[k] != v {
			return false
		}
	}
	return true
}

func tolerates(p *corev1.Pod, n *corev1.Node) bool {
	for i := range n.Spec.Taints {
		t := &n.Spec.Taints[i]
		if t.Effect != corev1.TaintEffectNoSchedule && t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		ok := false
		for j := range p.Spec.Tolerations {
			if p.Spec.Tolerations[j].ToleratesTaint(klog.Background(), t, false) {
				ok = true
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

func cpuOf(p *corev1.Pod) int64 {
	var sum int64
	for _, c := range p.Spec.Containers {
		sum += c.Resources.Requests.Cpu().MilliValue()
	}
	return sum
}

// nodeFor is the Node an instance's kubelet registers.
func (w *World) nodeFor(in *instance) *corev1.Node {
	it, _ := w.catalog.Get(in.Type)
	alloc := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("110")}
	if it != nil {
		_, a := it.Compute(w.settings)
		alloc = a.ResourceList()
	}
	lbls := map[string]string{
		corev1.LabelHostname: in.DNS, corev1.LabelTopologyZone: in.Zone, corev1.LabelTopologyRegion: "us-east-1",
		corev1.LabelInstanceTypeStable: in.Type, corev1.LabelArchStable: "amd64", corev1.LabelOSStable: "linux",
		apis.LabelCapacityType: in.CapacityType,
	}
	if pool := in.Tags["karpenter.sh/nodepool"]; pool != "" {
		lbls[apis.LabelNodePool] = pool
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: in.DNS, Labels: lbls, CreationTimestamp: metav1.Time{Time: w.clock.Now().Truncate(time.Second)}},
		Spec:       corev1.NodeSpec{ProviderID: fmt.Sprintf("aws:///%s/%s", in.Zone, in.ID)},
		Status: corev1.NodeStatus{Allocatable: alloc, Capacity: alloc,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}},
	}
}
