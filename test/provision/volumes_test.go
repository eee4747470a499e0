package provision_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/scheduling"
	"github.com/nodewright/nodewright/test/harness"
)

// TestVolumeZone: a pod whose PersistentVolumeClaim the PV controller bound
// to a volume with zone affinity us-east-1c gets a node in us-east-1c: the
// function reads the claim and the volume through its cache (with the
// stack's RBAC) and plans the NodeClaim in that zone only. The pool allows
// all three zones, so without the volume the claim would allow all three.
func TestVolumeZone(t *testing.T) {
	t.Parallel()
	c := ctx(t)
	const zone, class = "us-east-1c", "nodewright-e2e-manual"
	testPool(t, "vol", nil)
	h := newHarness(t, harness.Options{})
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-zone-c"},
		Spec: corev1.PersistentVolumeSpec{
			StorageClassName: class,
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Capacity:         corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			PersistentVolumeSource: corev1.PersistentVolumeSource{
				CSI: &corev1.CSIPersistentVolumeSource{Driver: "ebs.csi.aws.com", VolumeHandle: "vol-0e2e0000000000001"},
			},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
				MatchExpressions: []corev1.NodeSelectorRequirement{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{zone}}},
			}}}},
		},
	}
	if _, err := lc.Kube.CoreV1().PersistentVolumes().Create(c, pv, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = lc.Kube.CoreV1().PersistentVolumes().Delete(harness.Ctx(t), pv.Name, metav1.DeleteOptions{})
	})
	sc := class
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "e2e-data", Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: &sc,
			AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}
	if _, err := lc.Kube.CoreV1().PersistentVolumeClaims("default").Create(c, pvc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = lc.Kube.CoreV1().PersistentVolumeClaims("default").Delete(harness.Ctx(t), pvc.Name, metav1.DeleteOptions{})
	})
	// kube-controller-manager's PV binder binds the claim to the volume.
	if err := harness.Poll(c, 2*time.Minute, "the claim bound", func() (bool, string, error) {
		got, err := lc.Kube.CoreV1().PersistentVolumeClaims("default").Get(c, pvc.Name, metav1.GetOptions{})
		if err != nil {
			return false, "", err
		}
		done := got.Spec.VolumeName == pv.Name && got.Status.Phase == corev1.ClaimBound && got.Annotations[scheduling.AnnotationBindCompleted] != ""
		return done, fmt.Sprintf("volume %q, phase %s", got.Spec.VolumeName, got.Status.Phase), nil
	}); err != nil {
		t.Fatal(err)
	}
	w := onPool("vol", "volapp", 1, "1", "1Gi")
	pod := harness.PodOf(w, 0)
	pod.Spec.Containers[0].Image = "pause"
	pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: pvc.Name}}}}
	if _, err := lc.Kube.CoreV1().Pods("default").Create(c, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = lc.Kube.CoreV1().Pods("default").Delete(harness.Ctx(t), pod.Name, metav1.DeleteOptions{})
	})
	hintWhenUnschedulable(t, h, pod.Name)
	node := nodeOnceRunning(t, pod.Name, 3*time.Minute)
	if got := node.Labels[corev1.LabelTopologyZone]; got != zone || node.Labels[apis.LabelNodePool] != "vol" {
		t.Errorf("pod on node %s in zone %q of pool %q, want zone %s of pool vol", node.Name, got, node.Labels[apis.LabelNodePool], zone)
	}
	// The node carries the deprecated aliases beside the stable labels, as
	// pods that select an alias need (on EKS the kubelet sets arch and os,
	// the cloud controller instance-type, zone and region; the local
	// cloud's bridge plays both).
	for stable, alias := range apis.LabelAliases {
		if v := node.Labels[stable]; v == "" || node.Labels[alias] != v {
			t.Errorf("node %s: %s=%q, %s=%q: want both, equal", node.Name, stable, v, alias, node.Labels[alias])
		}
	}
	st, err := harness.Store(lc)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := harness.PoolRecords(c, st, "vol")
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 1 || recs[0].Zone != zone || !slices.Equal(recs[0].Claim.Zones, []string{zone}) {
		for _, r := range recs {
			t.Logf("record %s: zone %q, claim zones %v", r.Name, r.Zone, r.Claim.Zones)
		}
		t.Errorf("%d NodeClaims: want one planned and launched in %s only", len(recs), zone)
	}
}
