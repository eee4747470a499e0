package consolidation

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/scheduling"
)

// A pod whose claim is bound to a volume in zone A moves only to a node in
// zone A (Karpenter's volume topology applies to consolidation's
// simulations as to provisioning): the node holding it is not deleted for
// room in zone B, which the same cluster without the volume read would do.
// (Karpenter: the disruption simulation schedules the candidates' pods
// with the provisioner's scheduler, volume topology included.)
func TestVolumeZoneKeepsPodsInZone(t *testing.T) {
	build := func() (*world, Inputs) {
		w := newWorld()
		w.node("n1", "c2", apis.CapacityTypeOnDemand, inZone(zoneA))
		w.pods("n1", 1, "500m", func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
		})
		w.node("n2", "c4", apis.CapacityTypeOnDemand, inZone(zoneB))
		w.pods("n2", 2, "1")
		in := w.inputs()
		return w, in
	}
	volumes := &scheduling.Volumes{
		Claims: []*corev1.PersistentVolumeClaim{{
			ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "default"},
			Spec:       corev1.PersistentVolumeClaimSpec{VolumeName: "pv-a"},
			Status:     corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound},
		}},
		Volumes: []*corev1.PersistentVolume{{
			ObjectMeta: metav1.ObjectMeta{Name: "pv-a"},
			Spec: corev1.PersistentVolumeSpec{NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: []string{zoneA}},
				}}},
			}}},
			Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound},
		}},
	}
	moves := func(cmds []Command) bool {
		for _, c := range cmds {
			for _, n := range c.Nodes {
				if n == "n1" && len(c.Replacements) == 0 {
					return true
				}
				if n == "n1" {
					for _, r := range c.Replacements {
						if strings.Join(r.Zones, ",") != zoneA {
							return true
						}
					}
				}
			}
		}
		return false
	}

	// Control: volumes not read, the pod moves to n2's room in zone B.
	_, in := build()
	cmds, _ := Decide(in)
	if !moves(cmds) {
		t.Fatalf("without the volume read: %v; want n1 removed, its pod moved to zone B", summaries(cmds))
	}
	// With the volume: n1 stays, or is replaced only within zone A.
	_, in = build()
	in.Volumes = volumes
	cmds, _ = Decide(in)
	if moves(cmds) {
		t.Fatalf("with the pod's volume in %s: %v; want its pod kept in %s", zoneA, summaries(cmds), zoneA)
	}
}
