package disruption

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
)

// The image, not the instance type, decides a node's OS: a Windows node on
// an x86 type (whose catalog labels say linux) has not drifted from a pool
// that requires windows, and a Linux node under that pool has.
func TestRequirementsDriftTakesTheOSFromTheNode(t *testing.T) {
	pool := &apis.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "windows"}}
	pool.Spec.Template.Spec.Requirements = []apis.NodeSelectorRequirementWithMinValues{{
		Key: apis.LabelOS, Operator: corev1.NodeSelectorOpIn, Values: []string{apis.OSWindows}}}
	v := &view{in: &Inputs{Catalog: catalog.Default()}}
	for _, tc := range []struct {
		os, want string
	}{
		{apis.OSWindows, ""},
		{apis.OSLinux, "NodePool windows no longer allows kubernetes.io/os=linux"},
	} {
		n := &nodeInfo{pool: pool, instanceType: "m5.large", zone: "us-east-1a", capacityType: "on-demand",
			node: &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: map[string]string{apis.LabelOS: tc.os}}}}
		if got := v.requirementsDrift(n); got != tc.want {
			t.Errorf("a %s node under a windows pool: drift %q, want %q", tc.os, got, tc.want)
		}
	}
}
