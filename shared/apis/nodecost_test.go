package apis

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNodeCostPerHourAnnotation(t *testing.T) {
	for _, tc := range []struct {
		value string // "": no annotation
		want  float64
		bad   bool
	}{
		{"", 0, false},
		{"0.02", 0.02, false},
		{"0", 0, false},
		{"$0.02", 0, true},
		{"-1", 0, true},
		{"NaN", 0, true},
		{"5000", 0, true},
		{"abc", 0, true},
	} {
		np := &NodePool{ObjectMeta: metav1.ObjectMeta{Name: "default"}}
		if tc.value != "" {
			np.Annotations = map[string]string{AnnotationNodeCostPerHour: tc.value}
		}
		const path = "metadata.annotations[nodewright.io/node-cost-per-hour]"
		got, err := np.NodeCostPerHour()
		verr := np.Validate()
		if tc.bad {
			for _, e := range []error{err, verr} {
				if e == nil || !strings.Contains(e.Error(), path) || !strings.Contains(e.Error(), `such as "0.02"`) {
					t.Errorf("%q: error %v, want one naming %s and an example", tc.value, e, path)
				}
			}
			continue
		}
		if err != nil || (verr != nil && strings.Contains(verr.Error(), path)) || got != tc.want {
			t.Errorf("%q: %v, %v, %v; want %v", tc.value, got, err, verr, tc.want)
		}
	}
}
