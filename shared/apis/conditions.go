package apis

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// KeepTransitionTimes returns desired with each condition given the
// transition time of its current twin when their type, status and reason
// are the same: a status written again does not move a condition's
// lastTransitionTime, as Karpenter's NodeClaim, NodePool and EC2NodeClass
// conditions keep it.
func KeepTransitionTimes(desired, current []metav1.Condition) []metav1.Condition {
	out := slices.Clone(desired)
	for i, d := range out {
		for _, c := range current {
			if c.Type == d.Type && c.Status == d.Status && c.Reason == d.Reason {
				out[i].LastTransitionTime = c.LastTransitionTime
			}
		}
	}
	return out
}
