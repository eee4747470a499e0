package player

import (
	"fmt"
	"math"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
)

func pods(n int, cpu, mem string, extra corev1.ResourceList) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range n {
		req := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
		for k, v := range extra {
			req[k] = v
		}
		out = append(out, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p-%d", i), Namespace: "default", UID: types.UID(fmt.Sprint("uid-", i))},
			Spec: corev1.PodSpec{NodeName: "somewhere", NodeSelector: map[string]string{apis.LabelNodePool: "gpu"},
				Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{Requests: req}}}},
		})
	}
	return out
}

// The fixed node group packs the peak's pods onto m5.xlarge on-demand
// nodes, whatever NodePool they ran on; GPU pods do not fit it.
func TestFixedNodeGroup(t *testing.T) {
	cfg, err := apis.LoadFiles("../scenarios/config/ec2nodeclass-default.yaml")
	if err != nil {
		t.Fatal(err)
	}
	class := cfg.NodeClasses[0]
	it, _ := catalog.Default().Get(FixedType)
	zones := []string{"us-east-1a", "us-east-1b"}
	for _, tc := range []struct {
		name     string
		pods     []*corev1.Pod
		nodes    int
		unplaced int
	}{
		{"none", nil, 0, 0},
		{"30 quarter-CPU pods: two 4-vCPU nodes", pods(30, "250m", "64Mi", nil), 2, 0},
		{"8 one-CPU pods: three nodes (kube-reserved leaves 3 per node)", pods(8, "1", "1Gi", nil), 3, 0},
		{"GPU pods cannot run there", pods(2, "1", "1Gi", corev1.ResourceList{"nvidia.com/gpu": resource.MustParse("1")}), 0, 2},
	} {
		got, err := FixedNodeGroup(tc.pods, class, zones)
		if err != nil {
			t.Fatal(err)
		}
		if got.Nodes != tc.nodes || got.Unplaced != tc.unplaced || math.Abs(got.PricePerHour-float64(tc.nodes)*it.OnDemandPrice) > 1e-9 {
			t.Errorf("%s: %+v, want %d nodes at $%.4f/h, %d unplaced", tc.name, got, tc.nodes, float64(tc.nodes)*it.OnDemandPrice, tc.unplaced)
		}
	}
}
