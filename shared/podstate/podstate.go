// Package podstate holds the predicates on a pod's state that the
// functions, the planner and the tests share: whether a pod needs new
// capacity, and which kind of object controls it. It sits apart from
// shared/snapshot so that the Lambda functions, which need only these, do
// not link the snapshot reader's decoders for every workload kind.
package podstate

import corev1 "k8s.io/api/core/v1"

// Provisionable reports whether an unbound pod needs new capacity: the
// scheduler found no node for it and it is not waiting for preemption, and
// it is not a DaemonSet's or a static pod (those follow nodes).
func Provisionable(p *corev1.Pod) bool {
	if p.Spec.NodeName != "" || p.Status.NominatedNodeName != "" || OwnedBy(p, "DaemonSet", "Node") {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return true
		}
	}
	return false
}

// OwnedBy reports whether the pod's controller is of one of kinds (a
// static pod's is its Node).
func OwnedBy(p *corev1.Pod, kinds ...string) bool {
	for _, ref := range p.OwnerReferences {
		if ref.Controller != nil && *ref.Controller {
			for _, k := range kinds {
				if ref.Kind == k {
					return true
				}
			}
		}
	}
	return false
}
