package interruption

import (
	"context"
	"log/slog"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/podstate"
	"github.com/nodewright/nodewright/shared/provision"
	"github.com/nodewright/nodewright/shared/state"
)

// locate reads the cluster and the Node of the instance id (rec's). A Node
// gone before its pods (the instance went first and the Node with it) is
// named from the record or EC2: its pods are still bound to that name, and
// they move now rather than when the pod GC finds them.
func (h *Handler) locate(ctx context.Context, rec *state.NodeClaim, id string, log *slog.Logger) (*provision.View, *corev1.Node, error) {
	view, err := h.Source.View(ctx)
	if err != nil {
		return nil, nil, err
	}
	node := nodeOf(view, id)
	if node == nil {
		if name := h.goneNodeName(ctx, rec, log); name != "" {
			node = &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
		}
	}
	return view, node, nil
}

// goneNodeName is the name of a Node that is no longer in the cluster:
// the record's, once registered; else the instance's private DNS name from
// EC2 (an instance that ran pods and ended before a sweep registered it).
func (h *Handler) goneNodeName(ctx context.Context, rec *state.NodeClaim, log *slog.Logger) string {
	if rec.NodeName != "" {
		return rec.NodeName
	}
	if h.Names == nil || rec.InstanceID == "" {
		return ""
	}
	name, err := h.Names.NodeName(ctx, rec.InstanceID)
	if err != nil {
		log.Warn("find the node name of an instance whose Node is gone", "error", err)
		return ""
	}
	return name
}

// reschedulablePods are the pods of node that need a new home (not a
// DaemonSet's or a static pod, not finished or being deleted).
func reschedulablePods(v *provision.View, node *corev1.Node) []string {
	if node == nil {
		return nil
	}
	var out []string
	for _, p := range v.Pods {
		if p.Spec.NodeName == node.Name && podstate.Active(p) && !podstate.FollowsNode(p) {
			out = append(out, p.Namespace+"/"+p.Name)
		}
	}
	return out
}

// disruptedCopy is n as the handler left it: tainted
// karpenter.sh/disrupted:NoSchedule and cordoned (a copy: the view's
// objects are shared).
func disruptedCopy(n *corev1.Node) *corev1.Node {
	c := n.DeepCopy()
	c.Spec.Unschedulable = true
	if !slices.ContainsFunc(c.Spec.Taints, func(t corev1.Taint) bool {
		return t.Key == apis.TaintKeyDisrupted && t.Effect == corev1.TaintEffectNoSchedule
	}) {
		c.Spec.Taints = append(c.Spec.Taints, apis.DisruptedTaint())
	}
	return c
}

func nodeOf(v *provision.View, instanceID string) *corev1.Node {
	for _, n := range v.Nodes {
		if provision.InstanceIDOf(n.Spec.ProviderID) == instanceID {
			return n
		}
	}
	return nil
}

func (h *Handler) poolOf(v *provision.View, name string) *apis.NodePool {
	pools, _, _ := provision.MergeConfig(h.NodePools, h.NodeClasses, v)
	for _, p := range pools {
		if p.Name == name {
			return p
		}
	}
	return nil
}
