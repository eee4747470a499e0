package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// FinalizerTermination is Karpenter's finalizer on the Nodes it manages:
// deleting such a Node (`kubectl delete node`) leaves it in place until the
// provision function has drained it and terminated its instance.
const FinalizerTermination = "karpenter.sh/termination"

// conflictRetries bounds the read-modify-write retries of node updates that
// lose a race with another writer (the kubelet, the node lifecycle controller).
const conflictRetries = 5

// GetNode returns the node; a missing node is an error for which
// apierrors.IsNotFound is true.
func (c *Client) GetNode(ctx context.Context, name string) (*corev1.Node, error) {
	n := &corev1.Node{}
	if err := c.core.Get().Resource("nodes").Name(name).Do(ctx).Into(n); err != nil {
		return nil, fmt.Errorf("get node %s: %w", name, err)
	}
	return n, nil
}

// Taint adds taint to the node, or updates the value of a taint with the
// same key and effect. It returns whether the node changed.
func (c *Client) Taint(ctx context.Context, node string, taint corev1.Taint) (bool, error) {
	return c.updateNode(ctx, node, "taint", func(n *corev1.Node) bool {
		for i, t := range n.Spec.Taints {
			if t.Key == taint.Key && t.Effect == taint.Effect {
				if t.Value == taint.Value {
					return false
				}
				n.Spec.Taints[i].Value = taint.Value
				return true
			}
		}
		if taint.Effect == corev1.TaintEffectNoExecute && taint.TimeAdded == nil {
			now := metav1.Now()
			taint.TimeAdded = &now
		}
		n.Spec.Taints = append(n.Spec.Taints, taint)
		return true
	})
}

// Untaint removes the node's taints with key and effect (any effect when
// effect is empty). It returns whether the node changed.
func (c *Client) Untaint(ctx context.Context, node, key string, effect corev1.TaintEffect) (bool, error) {
	return c.updateNode(ctx, node, "untaint", func(n *corev1.Node) bool {
		before := len(n.Spec.Taints)
		n.Spec.Taints = slices.DeleteFunc(n.Spec.Taints, func(t corev1.Taint) bool {
			return t.Key == key && (effect == "" || t.Effect == effect)
		})
		return len(n.Spec.Taints) != before
	})
}

// Cordon marks the node unschedulable (or schedulable again with false).
func (c *Client) Cordon(ctx context.Context, node string, unschedulable bool) error {
	patch := `{"spec":{"unschedulable":true}}`
	if !unschedulable {
		patch = `{"spec":{"unschedulable":null}}`
	}
	return c.patchNode(ctx, node, "cordon", types.MergePatchType, []byte(patch))
}

// AddFinalizer adds finalizer to the node (FinalizerTermination, typically).
// It returns whether the node changed.
func (c *Client) AddFinalizer(ctx context.Context, node, finalizer string) (bool, error) {
	return c.updateNode(ctx, node, "add finalizer", func(n *corev1.Node) bool {
		if slices.Contains(n.Finalizers, finalizer) {
			return false
		}
		n.Finalizers = append(n.Finalizers, finalizer)
		return true
	})
}

// RemoveFinalizer removes finalizer from the node; a node that is gone is
// not an error (the finalizer's work is done). It returns whether the node
// changed.
func (c *Client) RemoveFinalizer(ctx context.Context, node, finalizer string) (bool, error) {
	changed, err := c.updateNode(ctx, node, "remove finalizer", func(n *corev1.Node) bool {
		before := len(n.Finalizers)
		n.Finalizers = slices.DeleteFunc(n.Finalizers, func(f string) bool { return f == finalizer })
		return len(n.Finalizers) != before
	})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return changed, err
}

// Label sets the node's labels: a nil value removes the label.
func (c *Client) Label(ctx context.Context, node string, labels map[string]*string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": labels}})
	if err != nil {
		return fmt.Errorf("label node %s: %w", node, err)
	}
	return c.patchNode(ctx, node, "label", types.MergePatchType, patch)
}

// Annotate sets annotations on the node (a merge patch: others are kept).
func (c *Client) Annotate(ctx context.Context, node string, annotations map[string]string) error {
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	if err != nil {
		return fmt.Errorf("annotate node %s: %w", node, err)
	}
	return c.patchNode(ctx, node, "annotate", types.MergePatchType, patch)
}

// DeleteNode deletes the node. A node that is already gone is not an error.
// With a finalizer on it, the node stays (with a deletionTimestamp) until the
// finalizer is removed.
func (c *Client) DeleteNode(ctx context.Context, name string) error {
	err := c.core.Delete().Resource("nodes").Name(name).Do(ctx).Error()
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete node %s: %w", name, err)
	}
	return nil
}

func (c *Client) patchNode(ctx context.Context, node, what string, pt types.PatchType, data []byte) error {
	if err := c.core.Patch(pt).Resource("nodes").Name(node).Body(data).Do(ctx).Error(); err != nil {
		return fmt.Errorf("%s node %s: %w", what, node, err)
	}
	return nil
}

// updateNode reads the node, lets mutate change its taints or finalizers, and
// writes them back with a merge patch that carries the node's
// resourceVersion, so a concurrent change is never overwritten: on a
// conflict it reads again and retries.
func (c *Client) updateNode(ctx context.Context, name, what string, mutate func(*corev1.Node) bool) (bool, error) {
	for attempt := 0; ; attempt++ {
		n, err := c.GetNode(ctx, name)
		if err != nil {
			return false, fmt.Errorf("%s: %w", what, err)
		}
		if !mutate(n) {
			return false, nil
		}
		taints := n.Spec.Taints
		if taints == nil {
			taints = []corev1.Taint{}
		}
		finalizers := n.Finalizers
		if finalizers == nil {
			finalizers = []string{}
		}
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"resourceVersion": n.ResourceVersion, "finalizers": finalizers},
			"spec":     map[string]any{"taints": taints},
		})
		if err != nil {
			return false, fmt.Errorf("%s node %s: %w", what, name, err)
		}
		err = c.core.Patch(types.MergePatchType).Resource("nodes").Name(name).Body(patch).Do(ctx).Error()
		switch {
		case err == nil:
			return true, nil
		case apierrors.IsConflict(err) && attempt < conflictRetries:
			continue
		default:
			return false, fmt.Errorf("%s node %s: %w", what, name, err)
		}
	}
}

// GetPod returns the pod; a missing pod is an error for which
// apierrors.IsNotFound is true.
func (c *Client) GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
	p := &corev1.Pod{}
	if err := c.core.Get().Namespace(namespace).Resource("pods").Name(name).Do(ctx).Into(p); err != nil {
		return nil, fmt.Errorf("get pod %s/%s: %w", namespace, name, err)
	}
	return p, nil
}

// DeleteOptions qualify a pod deletion.
type DeleteOptions struct {
	// GracePeriod overrides the pod's terminationGracePeriodSeconds when set,
	// in whole seconds rounded up (0 is a force delete).
	GracePeriod *time.Duration
	// UID, when set, deletes the pod only if it is still that pod (not a
	// replacement with the same name).
	UID types.UID
}

// DeletePod deletes the pod, bypassing PodDisruptionBudgets: the drain's last
// resort after its deadline. A pod that is already gone (or was replaced,
// when opts.UID is set) is not an error.
func (c *Client) DeletePod(ctx context.Context, namespace, name string, opts DeleteOptions) error {
	del := &metav1.DeleteOptions{}
	if opts.GracePeriod != nil {
		s := wholeSeconds(*opts.GracePeriod)
		del.GracePeriodSeconds = &s
	}
	if opts.UID != "" {
		del.Preconditions = &metav1.Preconditions{UID: &opts.UID}
	}
	err := c.core.Delete().Namespace(namespace).Resource("pods").Name(name).Body(del).Do(ctx).Error()
	if err != nil && !apierrors.IsNotFound(err) && !(opts.UID != "" && apierrors.IsConflict(err)) {
		return fmt.Errorf("delete pod %s/%s: %w", namespace, name, err)
	}
	return nil
}

// ErrBlockedByPDB is what errors.Is finds in an eviction that a
// PodDisruptionBudget refused (HTTP 429 with a DisruptionBudget cause, or 500
// when several budgets select the pod).
var ErrBlockedByPDB = errors.New("blocked by PodDisruptionBudget")

// EvictionError is an eviction the API server refused.
type EvictionError struct {
	Namespace, Name string
	// BlockedByPDB says a PodDisruptionBudget refused it (try later).
	BlockedByPDB bool
	// Err is the API server's error.
	Err error
}

func (e *EvictionError) Error() string {
	what := "refused"
	if e.BlockedByPDB {
		what = "blocked by PodDisruptionBudget"
	}
	return fmt.Sprintf("evict pod %s/%s: %s: %v", e.Namespace, e.Name, what, e.Err)
}

// Unwrap returns the API server's error.
func (e *EvictionError) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrBlockedByPDB) true for a PDB refusal.
func (e *EvictionError) Is(target error) bool { return target == ErrBlockedByPDB && e.BlockedByPDB }

// wholeSeconds is d in the API's whole seconds, rounded up: a grace period
// of 0.9 s truncated would be 0, a force delete.
func wholeSeconds(d time.Duration) int64 {
	s := int64(d / time.Second)
	if d%time.Second > 0 {
		s++
	}
	return s
}

// DefaultEvictionTimeout bounds one eviction call when EvictOptions.Timeout
// is zero.
const DefaultEvictionTimeout = 10 * time.Second

// EvictOptions qualify an eviction.
type EvictOptions struct {
	// Timeout bounds the call (DefaultEvictionTimeout when zero). client-go
	// would retry a 429 for about 100 s on its own; Evict never retries: a
	// refusal comes back at once, as ErrBlockedByPDB.
	Timeout time.Duration
	// GracePeriod overrides the pod's terminationGracePeriodSeconds, in
	// whole seconds rounded up.
	GracePeriod *time.Duration
	// UID, when set, evicts the pod only if it is still that pod.
	UID types.UID
}

// Evict asks the Eviction API (policy/v1) to evict the pod, which honours
// its PodDisruptionBudgets. A pod that is already gone is not an error. A
// refusal by a budget is an *EvictionError for which errors.Is(err,
// ErrBlockedByPDB) is true.
func (c *Client) Evict(ctx context.Context, namespace, name string, opts EvictOptions) error {
	timeout := opts.Timeout
	if timeout <= 0 {
		timeout = DefaultEvictionTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	ev := &policyv1.Eviction{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "Eviction"},
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
	}
	if opts.GracePeriod != nil || opts.UID != "" {
		ev.DeleteOptions = &metav1.DeleteOptions{}
		if opts.GracePeriod != nil {
			s := wholeSeconds(*opts.GracePeriod)
			ev.DeleteOptions.GracePeriodSeconds = &s
		}
		if opts.UID != "" {
			ev.DeleteOptions.Preconditions = &metav1.Preconditions{UID: &opts.UID}
		}
	}
	err := c.core.Post().Namespace(namespace).Resource("pods").Name(name).SubResource("eviction").
		MaxRetries(0).Body(ev).Do(ctx).Error()
	switch {
	case err == nil, apierrors.IsNotFound(err):
		return nil
	case opts.UID != "" && apierrors.IsConflict(err):
		return nil // replaced by a pod of the same name: not ours to evict
	case isPDBRefusal(err):
		return &EvictionError{Namespace: namespace, Name: name, BlockedByPDB: true, Err: err}
	default:
		return &EvictionError{Namespace: namespace, Name: name, Err: err}
	}
}

// isPDBRefusal tells a budget's refusal from other errors: 429 with a
// DisruptionBudget cause (the API server's priority and fairness also answers
// 429, without one), or the 500 the API server gives when more than one
// budget selects the pod.
func isPDBRefusal(err error) bool {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return false
	}
	s := status.Status()
	if s.Details != nil {
		for _, cause := range s.Details.Causes {
			if cause.Type == policyv1.DisruptionBudgetCause {
				return true
			}
		}
	}
	return s.Code == 500 && strings.Contains(strings.ToLower(s.Message), "more than one poddisruptionbudget")
}

// PodsOnNode lists the pods bound to the node, with a consistent read (not
// from a Cache): what a drain acts on must be current.
func (c *Client) PodsOnNode(ctx context.Context, node string) ([]corev1.Pod, error) {
	var out []corev1.Pod
	_, err := c.list(ctx, c.core, "pods", "spec.nodeName="+node, func() listObject { return &corev1.PodList{} }, func(l listObject) {
		out = append(out, l.(*corev1.PodList).Items...)
	})
	if err != nil {
		return nil, fmt.Errorf("pods on node %s: %w", node, err)
	}
	return out, nil
}
