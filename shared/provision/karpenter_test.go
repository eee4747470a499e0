package provision

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/metrics"
	"github.com/nodewright/nodewright/shared/state"
)

func byDims(points []metrics.Point, key string) map[string]float64 {
	out := map[string]float64{}
	for _, p := range points {
		out[p.Dims[key]+"/"+p.Dims[metrics.LabelNodePool]] = p.Value
	}
	return out
}

// A round publishes the cluster's node count and each pool's usage (its
// records with an instance, terminating ones aside) and limits, as
// Karpenter names and scales them.
func TestKarpenterRound(t *testing.T) {
	var rec metrics.Recorder
	r := &Reconciler{Metrics: &rec}
	capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m"), corev1.ResourceMemory: resource.MustParse("4Gi")}
	w := &world{
		view: &View{Nodes: []*corev1.Node{{}, {}, {}}},
		pools: []*apis.NodePool{
			{ObjectMeta: metav1.ObjectMeta{Name: "default"}, Spec: apis.NodePoolSpec{Limits: apis.Limits{corev1.ResourceCPU: resource.MustParse("100")}}},
			{ObjectMeta: metav1.ObjectMeta{Name: "empty"}},
		},
		records: []*state.NodeClaim{
			{Name: "a", NodePool: "default", InstanceID: "i-1", Phase: state.Initialized, Capacity: capacity},
			{Name: "b", NodePool: "default", InstanceID: "i-2", Phase: state.Registered, Capacity: capacity},
			{Name: "c", NodePool: "default", InstanceID: "i-3", Phase: state.Terminating, Capacity: capacity},
			{Name: "d", NodePool: "default", Phase: state.Launching, Capacity: capacity},
			{Name: "e", NodePool: "gone", InstanceID: "i-5", Phase: state.Initialized, Capacity: capacity},
		},
	}
	r.karpenterRound(w)
	if p := rec.Points(metrics.KarpenterClusterStateNodeCount); len(p) != 1 || p[0].Value != 3 {
		t.Errorf("node count %+v", p)
	}
	usage := byDims(rec.Points(metrics.KarpenterNodePoolsUsage), metrics.LabelResourceType)
	want := map[string]float64{"cpu/default": 3, "memory/default": 8 << 30, "nodes/default": 2, "nodes/empty": 0}
	if len(usage) != len(want) {
		t.Errorf("usage %v, want %v", usage, want)
	}
	for k, v := range want {
		if usage[k] != v {
			t.Errorf("usage %s = %v, want %v", k, usage[k], v)
		}
	}
	limits := byDims(rec.Points(metrics.KarpenterNodePoolsLimit), metrics.LabelResourceType)
	if len(limits) != 1 || limits["cpu/default"] != 100 {
		t.Errorf("limits %v", limits)
	}
}

func TestKarpenterSolvedAndRegistered(t *testing.T) {
	var rec metrics.Recorder
	r := &Reconciler{Metrics: &rec}
	r.karpenterSolved(1500*time.Millisecond, 2)
	r.karpenterRegistered(&state.NodeClaim{NodePool: "default", Zone: "us-east-1a"})
	r.karpenterRegistered(&state.NodeClaim{NodePool: "default"})
	if p := rec.Points(metrics.KarpenterSchedulingDuration); len(p) != 1 || p[0].Value != 1.5 || p[0].Dims[metrics.LabelController] != "provisioner" {
		t.Errorf("scheduling duration %+v", p)
	}
	if p := rec.Points(metrics.KarpenterUnschedulablePods); len(p) != 1 || p[0].Value != 2 {
		t.Errorf("unschedulable %+v", p)
	}
	if p := rec.Points(metrics.KarpenterNodesCreated); len(p) != 2 || p[0].Dims[metrics.LabelZone] != "us-east-1a" || p[1].Dims[metrics.LabelZone] != "unknown" {
		t.Errorf("nodes created %+v", p)
	}
}

// A pod counts once: in the sweep whose interval its Ready transition
// falls in, and only on a Nodewright node.
func TestPodsStarted(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	pod := func(node string, created, ready time.Time, status corev1.ConditionStatus) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)},
			Spec:       corev1.PodSpec{NodeName: node},
			Status:     corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.NewTime(ready)}}},
		}
	}
	pods := []*corev1.Pod{
		pod("ours", now.Add(-90*time.Second), now.Add(-30*time.Second), corev1.ConditionTrue), // 60 s
		pod("ours", now.Add(-5*time.Minute), now.Add(-2*time.Minute), corev1.ConditionTrue),   // an earlier sweep's
		pod("ours", now.Add(-time.Minute), now, corev1.ConditionTrue),                         // 60 s, at the edge
		pod("ours", now.Add(-time.Minute), now.Add(-time.Minute), corev1.ConditionTrue),       // the previous sweep's edge
		pod("ours", now.Add(-time.Minute), now.Add(-10*time.Second), corev1.ConditionFalse),
		pod("theirs", now.Add(-time.Minute), now.Add(-10*time.Second), corev1.ConditionTrue),
		pod("", now.Add(-time.Minute), now.Add(-10*time.Second), corev1.ConditionTrue),
	}
	got := PodsStarted(pods, map[string]bool{"ours": true}, now, time.Minute)
	if len(got) != 2 || got[0] != time.Minute || got[1] != time.Minute {
		t.Errorf("started %v, want [1m 1m]", got)
	}
}
