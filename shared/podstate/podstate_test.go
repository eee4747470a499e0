package podstate

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestProvisionable(t *testing.T) {
	yes := true
	unschedulable := corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}}
	owned := func(kind string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{Kind: kind, Name: "x", Controller: &yes}}
	}
	for _, tc := range []struct {
		name string
		pod  corev1.Pod
		want bool
	}{
		{"marked unschedulable", corev1.Pod{Status: unschedulable}, true},
		{"a ReplicaSet's, marked unschedulable", corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: owned("ReplicaSet")}, Status: unschedulable}, true},
		{"not yet evaluated by kube-scheduler", corev1.Pod{}, false},
		{"scheduled", corev1.Pod{Spec: corev1.PodSpec{NodeName: "n1"}, Status: unschedulable}, false},
		{"waiting for preemption", corev1.Pod{Status: corev1.PodStatus{NominatedNodeName: "n1", Conditions: unschedulable.Conditions}}, false},
		{"a DaemonSet's", corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: owned("DaemonSet")}, Status: unschedulable}, false},
		{"a static pod", corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: owned("Node")}, Status: unschedulable}, false},
		{"scheduling gated", corev1.Pod{Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonSchedulingGated}}}}, false},
	} {
		if got := Provisionable(&tc.pod); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestOwnedBy(t *testing.T) {
	yes, no := true, false
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Controller: &no}, {Kind: "StatefulSet", Controller: &yes}}}}
	if !OwnedBy(p, "Job", "StatefulSet") || OwnedBy(p, "ReplicaSet") || OwnedBy(&corev1.Pod{}, "StatefulSet") {
		t.Error("OwnedBy must follow the controller reference only")
	}
}
