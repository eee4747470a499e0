package scheduling

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/apis"
)

func TestQuickZonalSpread(t *testing.T) {
	var pods []*corev1.Pod
	for i := 0; i < 4; i++ {
		p := smokePod(string(rune('a'+i)), "1", "1Gi")
		p.Labels = map[string]string{"app": "z"}
		p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: apis.LabelZone, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "z"}}}}
		pods = append(pods, p)
	}
	res, err := Solve(Input{Pods: pods, NodePools: []*apis.NodePool{smokePool("default")}, InstanceTypes: synthetic(10), Zones: []string{"a", "b", "c"}})
	if err != nil {
		t.Fatal(err)
	}
	perZone := map[string]int{}
	for _, c := range res.NodeClaims {
		if len(c.Zones) != 1 {
			t.Fatalf("claim not pinned to a zone: %v", c.Zones)
		}
		perZone[c.Zones[0]] += len(c.Pods)
	}
	t.Logf("claims %d per zone %v", len(res.NodeClaims), perZone)
	if len(res.NodeClaims) != 3 || perZone["a"]+perZone["b"]+perZone["c"] != 4 {
		t.Fatalf("want 3 claims holding {2,1,1}, got %d claims %v", len(res.NodeClaims), perZone)
	}
}
