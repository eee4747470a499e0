// Package podstate holds the predicates on a pod's state that every flow
// shares (provisioning, consolidation, the drain, interruption, the snapshot
// reader, the planner and the tests): whether a pod is finished or going,
// which kind of object controls it, whether it follows its node, whether it
// needs new capacity or a new home, and whether it may be disrupted. One
// definition each, so that the flows cannot disagree about a pod.
//
// It sits apart from shared/snapshot so that the Lambda functions, which
// need only these, do not link the snapshot reader's decoders for every
// workload kind. The names follow Karpenter's pkg/utils/pod (IsTerminal,
// IsActive, IsReschedulable, ...) without the Is.
package podstate

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/nodewright/nodewright/shared/apis"
)

// Terminal reports whether the pod has finished (Succeeded or Failed): its
// containers will not run again and it holds no room on its node.
func Terminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// Terminating reports whether the pod's deletion has been requested.
func Terminating(p *corev1.Pod) bool { return p.DeletionTimestamp != nil }

// Active reports whether the pod is neither finished nor being deleted.
func Active(p *corev1.Pod) bool { return !Terminal(p) && !Terminating(p) }

// OwnedBy reports whether the pod's controller is of one of kinds (a
// static pod's is its Node).
func OwnedBy(p *corev1.Pod, kinds ...string) bool {
	ref := metav1.GetControllerOfNoCopy(p)
	if ref == nil {
		return false
	}
	for _, k := range kinds {
		if ref.Kind == k {
			return true
		}
	}
	return false
}

// Mirror reports whether the pod is the API server's mirror of a static
// pod (the kubelet's own test: the annotation is present).
func Mirror(p *corev1.Pod) bool {
	_, ok := p.Annotations[corev1.MirrorPodAnnotationKey]
	return ok
}

// Static reports whether the pod is a static pod: controlled by its Node,
// or marked as a mirror. The Eviction API cannot remove it.
func Static(p *corev1.Pod) bool { return OwnedBy(p, "Node") || Mirror(p) }

// FollowsNode reports whether the pod lives and dies with its node, a
// DaemonSet's or a static pod: it never needs a home elsewhere.
func FollowsNode(p *corev1.Pod) bool { return OwnedBy(p, "DaemonSet") || Static(p) }

// Reschedulable reports whether a bound pod must find another node when its
// node goes, as Karpenter's IsReschedulable: active, or a terminating
// StatefulSet pod (whose replacement waits for it to be gone), and not
// following its node.
func Reschedulable(p *corev1.Pod) bool {
	if Terminal(p) || (Terminating(p) && !OwnedBy(p, "StatefulSet")) {
		return false
	}
	return !FollowsNode(p)
}

// Provisionable reports whether an unbound pod needs new capacity: the
// scheduler found no node for it and it is not waiting for preemption, and
// it is not a DaemonSet's or a static pod (those follow nodes).
func Provisionable(p *corev1.Pod) bool {
	if p.Spec.NodeName != "" || p.Status.NominatedNodeName != "" || OwnedBy(p, "DaemonSet", "Node") {
		return false
	}
	return Unschedulable(p)
}

// Unschedulable reports whether kube-scheduler has marked the pod
// PodScheduled=False with reason Unschedulable: it found no node for it.
func Unschedulable(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled {
			return c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable
		}
	}
	return false
}

// DoNotDisrupt reports whether the pod is annotated
// karpenter.sh/do-not-disrupt: "true".
func DoNotDisrupt(p *corev1.Pod) bool { return p.Annotations[apis.AnnotationDoNotDisrupt] == "true" }

// ToleratesDisrupted reports whether the pod tolerates the
// karpenter.sh/disrupted:NoSchedule taint put on a node being removed: it
// would land on the node again, so a drain leaves it alone.
func ToleratesDisrupted(p *corev1.Pod) bool {
	t := apis.DisruptedTaint()
	for i := range p.Spec.Tolerations {
		if p.Spec.Tolerations[i].ToleratesTaint(klog.Background(), &t, false) {
			return true
		}
	}
	return false
}

// Ready reports whether the pod's Ready condition is True.
func Ready(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
