package harness

import (
	"context"
	"encoding/json"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/test/localcloud"
)

// CopyPool is a deep copy of a NodePool.
func CopyPool(np *apis.NodePool) (*apis.NodePool, error) {
	b, err := json.Marshal(np)
	if err != nil {
		return nil, err
	}
	var out apis.NodePool
	if err := json.Unmarshal(b, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// TestPool applies a NodePool of a test's own to the cluster as an object:
// base's requirements and node class, a taint test=<name> so that only the
// test's pods (OnPool) land there, no limits and no weight unless mutate
// sets them.
func TestPool(ctx context.Context, lc *localcloud.Cloud, base *apis.NodePool, name string, mutate func(*apis.NodePool)) (*apis.NodePool, error) {
	np, err := CopyPool(base)
	if err != nil {
		return nil, err
	}
	np.ObjectMeta = metav1.ObjectMeta{Name: name}
	np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "test", Value: name, Effect: corev1.TaintEffectNoSchedule}}
	np.Spec.Limits = nil
	np.Spec.Weight = nil
	if mutate != nil {
		mutate(np)
	}
	return np, ApplyKarpenter(ctx, lc, np)
}

// OnPool is a workload pinned to a test pool.
func OnPool(pool, app string, replicas int, cpu, memory string) Workload {
	return Workload{
		Namespace: "default", Name: app, Replicas: replicas, CPU: cpu, Memory: memory,
		NodeSelector: map[string]string{apis.LabelNodePool: pool},
		Tolerations:  []corev1.Toleration{{Key: "test", Operator: corev1.TolerationOpEqual, Value: pool, Effect: corev1.TaintEffectNoSchedule}},
	}
}

// NodesOf returns the Nodes app's pods run on, by name.
func NodesOf(ctx context.Context, lc *localcloud.Cloud, namespace, app string) (map[string]*corev1.Node, error) {
	pods, err := Pods(ctx, lc, namespace, app)
	if err != nil {
		return nil, err
	}
	out := map[string]*corev1.Node{}
	for _, p := range pods {
		if p.Spec.NodeName == "" || p.DeletionTimestamp != nil {
			continue
		}
		n, err := lc.Kube.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
		if err != nil {
			return nil, err
		}
		out[n.Name] = n
	}
	return out, nil
}

// InstanceOf is the instance ID of a Node's providerID.
func InstanceOf(n *corev1.Node) string {
	return n.Spec.ProviderID[strings.LastIndexByte(n.Spec.ProviderID, '/')+1:]
}

// PoolInstances lists the pending and running instances tagged with pool.
func (h *Harness) PoolInstances(ctx context.Context, pool string) ([]string, error) {
	r, err := h.Reconciler(ctx, "provision")
	if err != nil {
		return nil, err
	}
	all, err := r.Fleet.Instances(ctx)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, in := range all {
		if in.NodePool == pool && (in.State == "running" || in.State == "pending") {
			out = append(out, in.InstanceID)
		}
	}
	return out, nil
}
