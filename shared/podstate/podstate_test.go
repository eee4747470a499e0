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

// pod builds a pod for the predicate tables.
type pod struct {
	phase       corev1.PodPhase
	deleting    bool
	controller  string // kind of the controlling owner
	owner       string // kind of a non-controlling owner
	annotations map[string]string
	tolerations []corev1.Toleration
	conditions  []corev1.PodCondition
}

func (o pod) build() *corev1.Pod {
	yes, no := true, false
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: o.annotations}, Spec: corev1.PodSpec{NodeName: "n1", Tolerations: o.tolerations},
		Status: corev1.PodStatus{Phase: o.phase, Conditions: o.conditions}}
	if o.owner != "" {
		p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{Kind: o.owner, Name: "o", Controller: &no})
	}
	if o.controller != "" {
		p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{Kind: o.controller, Name: "c", Controller: &yes})
	}
	if o.deleting {
		now := metav1.Now()
		p.DeletionTimestamp = &now
	}
	return p
}

func TestPredicates(t *testing.T) {
	mirror := map[string]string{corev1.MirrorPodAnnotationKey: "hash"}
	type want struct{ terminal, terminating, active, mirror, static, followsNode, reschedulable bool }
	for _, tc := range []struct {
		name string
		pod  pod
		want want
	}{
		{"running, a ReplicaSet's", pod{phase: corev1.PodRunning, controller: "ReplicaSet"}, want{active: true, reschedulable: true}},
		{"pending, no owner", pod{phase: corev1.PodPending}, want{active: true, reschedulable: true}},
		{"succeeded", pod{phase: corev1.PodSucceeded, controller: "Job"}, want{terminal: true}},
		{"failed", pod{phase: corev1.PodFailed}, want{terminal: true}},
		{"terminating", pod{phase: corev1.PodRunning, deleting: true, controller: "ReplicaSet"}, want{terminating: true}},
		{"terminating, a StatefulSet's", pod{phase: corev1.PodRunning, deleting: true, controller: "StatefulSet"}, want{terminating: true, reschedulable: true}},
		{"finished and terminating, a StatefulSet's", pod{phase: corev1.PodSucceeded, deleting: true, controller: "StatefulSet"}, want{terminal: true, terminating: true}},
		{"a DaemonSet's", pod{phase: corev1.PodRunning, controller: "DaemonSet"}, want{active: true, followsNode: true}},
		{"a DaemonSet among non-controlling owners", pod{phase: corev1.PodRunning, owner: "DaemonSet"}, want{active: true, reschedulable: true}},
		{"static, controlled by its Node", pod{phase: corev1.PodRunning, controller: "Node"}, want{active: true, static: true, followsNode: true}},
		{"a mirror", pod{phase: corev1.PodRunning, annotations: mirror}, want{active: true, mirror: true, static: true, followsNode: true}},
		{"a mirror, empty mark", pod{phase: corev1.PodRunning, annotations: map[string]string{corev1.MirrorPodAnnotationKey: ""}}, want{active: true, mirror: true, static: true, followsNode: true}},
	} {
		p := tc.pod.build()
		got := want{Terminal(p), Terminating(p), Active(p), Mirror(p), Static(p), FollowsNode(p), Reschedulable(p)}
		if got != tc.want {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

func TestDisruptionPredicates(t *testing.T) {
	ready := []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	for _, tc := range []struct {
		name                                string
		pod                                 pod
		doNotDisrupt, toleratesDisrupted, r bool
	}{
		{"plain", pod{}, false, false, false},
		{"do-not-disrupt", pod{annotations: map[string]string{"karpenter.sh/do-not-disrupt": "true"}}, true, false, false},
		{"do-not-disrupt false", pod{annotations: map[string]string{"karpenter.sh/do-not-disrupt": "false"}}, false, false, false},
		{"tolerates the disrupted taint", pod{tolerations: []corev1.Toleration{{Key: "karpenter.sh/disrupted", Operator: corev1.TolerationOpExists}}}, false, true, false},
		{"tolerates every taint", pod{tolerations: []corev1.Toleration{{Operator: corev1.TolerationOpExists}}}, false, true, false},
		{"tolerates NoExecute only", pod{tolerations: []corev1.Toleration{{Key: "karpenter.sh/disrupted", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute}}}, false, false, false},
		{"ready", pod{conditions: ready}, false, false, true},
		{"not ready", pod{conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}}, false, false, false},
	} {
		p := tc.pod.build()
		if got := DoNotDisrupt(p); got != tc.doNotDisrupt {
			t.Errorf("%s: DoNotDisrupt %v, want %v", tc.name, got, tc.doNotDisrupt)
		}
		if got := ToleratesDisrupted(p); got != tc.toleratesDisrupted {
			t.Errorf("%s: ToleratesDisrupted %v, want %v", tc.name, got, tc.toleratesDisrupted)
		}
		if got := Ready(p); got != tc.r {
			t.Errorf("%s: Ready %v, want %v", tc.name, got, tc.r)
		}
	}
}

func TestUnschedulable(t *testing.T) {
	cond := func(s corev1.ConditionStatus, reason string) []corev1.PodCondition {
		return []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}, {Type: corev1.PodScheduled, Status: s, Reason: reason}}
	}
	for _, tc := range []struct {
		name string
		pod  pod
		want bool
	}{
		{"marked unschedulable", pod{conditions: cond(corev1.ConditionFalse, corev1.PodReasonUnschedulable)}, true},
		{"scheduled", pod{conditions: cond(corev1.ConditionTrue, "")}, false},
		{"gated", pod{conditions: cond(corev1.ConditionFalse, corev1.PodReasonSchedulingGated)}, false},
		{"not evaluated", pod{}, false},
	} {
		if got := Unschedulable(tc.pod.build()); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
