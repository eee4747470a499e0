package scheduling

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"

	"github.com/nodewright/nodewright/shared/apis"
)

// tolerates says whether tolerations tolerate every NoSchedule and NoExecute
// taint, and PreferNoSchedule taints too when strict (Nodewright treats those
// as required until a pod cannot be placed otherwise).
func tolerates(tolerations []corev1.Toleration, taints []corev1.Taint, strict bool) bool {
	_, untolerated := untoleratedTaint(tolerations, taints, strict)
	return !untolerated
}

// untoleratedTaint returns the first taint the tolerations don't tolerate.
func untoleratedTaint(tolerations []corev1.Toleration, taints []corev1.Taint, strict bool) (corev1.Taint, bool) {
	return corev1helpers.FindMatchingUntoleratedTaint(klog.Background(), taints, tolerations, func(t *corev1.Taint) bool {
		return t.Effect == corev1.TaintEffectNoSchedule || t.Effect == corev1.TaintEffectNoExecute ||
			(strict && t.Effect == corev1.TaintEffectPreferNoSchedule)
	}, false)
}

// ephemeralTaints are the taints Karpenter knows a node carries while it
// comes up (not ready, unreachable, the cloud provider's uninitialized,
// Karpenter's unregistered), matched by key and effect.
var ephemeralTaints = []corev1.Taint{
	{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoSchedule},
	{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute},
	{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoSchedule},
	{Key: taintExternalCloudProvider, Effect: corev1.TaintEffectNoSchedule},
	{Key: apis.TaintKeyUnregistered, Effect: corev1.TaintEffectNoExecute},
}

// taintExternalCloudProvider is the taint a kubelet started with an external
// cloud provider registers with until the cloud controller initializes the
// node (k8s.io/cloud-provider/api.TaintExternalCloudProvider).
const taintExternalCloudProvider = "node.cloudprovider.kubernetes.io/uninitialized"

// ephemeralTaintPrefixes are key prefixes of taint families controllers add
// while a node comes up (the Node Readiness Controller's readiness.k8s.io/).
var ephemeralTaintPrefixes = []string{"readiness.k8s.io/"}

func isEphemeralTaint(t *corev1.Taint) bool {
	for i := range ephemeralTaints {
		if ephemeralTaints[i].MatchTaint(t) {
			return true
		}
	}
	for _, p := range ephemeralTaintPrefixes {
		if strings.HasPrefix(t.Key, p) {
			return true
		}
	}
	return false
}

// comingUpTaints are the taints that count on a node that is still coming
// up: its taints less the ephemeral ones and its pool's startup taints
// (matched by key and effect), which go away once it is initialized.
func comingUpTaints(taints, startup []corev1.Taint) []corev1.Taint {
	var out []corev1.Taint
	for i := range taints {
		t := &taints[i]
		if isEphemeralTaint(t) || slices.ContainsFunc(startup, func(s corev1.Taint) bool { return s.MatchTaint(t) }) {
			continue
		}
		out = append(out, *t)
	}
	return out
}
