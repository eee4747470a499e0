package player

import (
	"testing"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func budget(expected, healthy, desired int32) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"},
		Status:     policyv1.PodDisruptionBudgetStatus{ExpectedPods: expected, CurrentHealthy: healthy, DesiredHealthy: desired},
	}
}

// A PDB counts a violation once per episode of fewer healthy pods than it
// desires, only after all its pods were healthy, and not across a scale.
func TestPDBTracker(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status [][3]int32 // expected, healthy, desired
		want   int
	}{
		{"scaling up from nothing is not a violation", [][3]int32{{10, 0, 9}, {10, 5, 9}, {10, 10, 9}}, 0},
		{"one at a time as allowed", [][3]int32{{10, 10, 9}, {10, 9, 9}, {10, 10, 9}, {10, 9, 9}}, 0},
		{"two down when one is allowed", [][3]int32{{10, 10, 9}, {10, 8, 9}, {10, 8, 9}, {10, 9, 9}}, 1},
		{"two episodes", [][3]int32{{10, 10, 9}, {10, 8, 9}, {10, 10, 9}, {10, 7, 9}}, 2},
		{"a scale down disarms until all are healthy", [][3]int32{{10, 10, 9}, {3, 1, 2}, {3, 3, 2}, {3, 1, 2}}, 1},
		{"never all healthy", [][3]int32{{10, 8, 9}, {10, 7, 9}}, 0},
	} {
		tr := newPDBTracker()
		for _, s := range tc.status {
			tr.observe(budget(s[0], s[1], s[2]))
		}
		if tr.Violations != tc.want {
			t.Errorf("%s: %d violations, want %d", tc.name, tr.Violations, tc.want)
		}
	}
}
