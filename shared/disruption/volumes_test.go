package disruption

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/scheduling"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
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
		Claims:  []*corev1.PersistentVolumeClaim{st.Claim(st.ClaimOptions{Name: "data", Volume: "pv-a", Phase: corev1.ClaimBound})},
		Volumes: []*corev1.PersistentVolume{st.Volume(st.VolumeOptions{Name: "pv-a", Zones: []string{zoneA}})},
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
	// And the volume is read, not merely refused: in zone B, the pod
	// follows it to n2's room.
	_, in = build()
	in.Volumes = &scheduling.Volumes{Claims: volumes.Claims,
		Volumes: []*corev1.PersistentVolume{st.Volume(st.VolumeOptions{Name: "pv-a", Zones: []string{zoneB}})}}
	cmds, _ = Decide(in)
	if !moves(cmds) {
		t.Fatalf("with the pod's volume in %s: %v; want n1 removed, its pod moved to n2 in %s", zoneB, summaries(cmds), zoneB)
	}
}
