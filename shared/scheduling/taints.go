package scheduling

import (
	corev1 "k8s.io/api/core/v1"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"k8s.io/klog/v2"
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
