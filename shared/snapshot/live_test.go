package snapshot

import (
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/apis"
)

func livePod(name string, edit func(*corev1.Pod)) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Status: corev1.PodStatus{Phase: corev1.PodPending,
		Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}}}
	if edit != nil {
		edit(&p)
	}
	return p
}

func liveNode(name string, alloc corev1.ResourceList) corev1.Node {
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.NodeStatus{Allocatable: alloc}}
}

func TestFromCluster(t *testing.T) {
	ctrl := true
	cpu := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}
	now := metav1.Now()
	c := Cluster{
		Pods: []corev1.Pod{
			livePod("z-pending", nil),
			livePod("a-pending", nil),
			livePod("not-tried-yet", func(p *corev1.Pod) { p.Status.Conditions = nil }),
			livePod("preempting", func(p *corev1.Pod) { p.Status.NominatedNodeName = "n1" }),
			livePod("daemon", func(p *corev1.Pod) {
				p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "ds", Controller: &ctrl}}
			}),
			livePod("finished", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
			livePod("deleting", func(p *corev1.Pod) { p.DeletionTimestamp = &now }),
			livePod("bound", func(p *corev1.Pod) { p.Spec.NodeName = "n1"; p.Status.Conditions = nil }),
			livePod("on-gone-node", func(p *corev1.Pod) { p.Spec.NodeName = "gone" }),
		},
		Nodes: []corev1.Node{
			liveNode("n2", nil),
			{ObjectMeta: metav1.ObjectMeta{Name: "n3"}, Status: corev1.NodeStatus{Capacity: cpu}},
			liveNode("n1", cpu),
		},
		DaemonSets: []appsv1.DaemonSet{{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "x"}}, {ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "x"}}},
		NodePools:  []*apis.NodePool{{ObjectMeta: metav1.ObjectMeta{Name: "pool-b"}}, {ObjectMeta: metav1.ObjectMeta{Name: "pool-a"}}},
	}
	s := FromCluster(c)
	var pending, nodes, ds, pools []string
	for _, p := range s.Pending {
		pending = append(pending, p.Name)
	}
	for _, n := range s.Nodes {
		nodes = append(nodes, n.Node.Name)
	}
	for _, d := range s.DaemonSets {
		ds = append(ds, d.Name)
	}
	for _, p := range s.NodePools {
		pools = append(pools, p.Name)
	}
	check := func(what string, got, want any) {
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %v, want %v", what, got, want)
		}
	}
	check("pending", pending, []string{"a-pending", "z-pending"})
	check("nodes", nodes, []string{"n1", "n3"})
	check("daemonsets", ds, []string{"a", "b"})
	check("pools", pools, []string{"pool-a", "pool-b"})
	if len(s.Nodes[0].Pods) != 1 || s.Nodes[0].Pods[0].Name != "bound" {
		t.Errorf("pods of n1: %v", s.Nodes[0].Pods)
	}
	if s.Nodes[1].Node.Status.Allocatable.Cpu().String() != "2" {
		t.Errorf("n3 allocatable %v: want its capacity", s.Nodes[1].Node.Status.Allocatable)
	}
	check("warnings", s.Warnings, []string{"node n2 reports no capacity yet: left out", "1 pods bound to node gone, which is not listed: left out"})
	if len(c.Nodes[1].Status.Allocatable) != 0 {
		t.Error("FromCluster changed its input")
	}
}
