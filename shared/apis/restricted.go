package apis

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// restrictedLabelDomains are the label domains that NodePool requirements and
// template labels may not use, except for well-known labels: kubelet refuses
// some of them and Karpenter (and so Nodewright) owns the others.
func restrictedLabelDomains() []string {
	return []string{"kubernetes.io", "k8s.io", KarpenterGroup, AWSGroup}
}

// labelDomainExceptions are sub-domains of the restricted domains that users
// may still use.
func labelDomainExceptions() []string {
	return []string{"kops.k8s.io", corev1.LabelNamespaceSuffixNode, corev1.LabelNamespaceNodeRestriction}
}

// karpenterKnownLabel reports whether key is one of the labels in a restricted
// domain that Karpenter (core and the AWS provider) accepts in NodePools.
func karpenterKnownLabel(key string) bool {
	switch key {
	case LabelArch, LabelOS, LabelInstanceType, LabelZone, LabelRegion, LabelWindowsBuild,
		LabelCapacityType,
		LabelEC2NodeClass, LabelCapacityReservationID, LabelCapacityReservationType,
		LabelCapacityReservationInterruptible, LabelInstanceTenancy,
		LabelPlacementGroupID, LabelPlacementGroupPartition:
		return true
	}
	return WellKnownLabels[key]
}

// labelDomain returns the prefix of key before "/", or "".
func labelDomain(key string) string {
	if i := strings.IndexByte(key, '/'); i >= 0 {
		return key[:i]
	}
	return ""
}

// inDomain reports whether domain is d or a sub-domain of d.
func inDomain(domain, d string) bool {
	return domain == d || strings.HasSuffix(domain, "."+d)
}

// restrictedLabelReason says why key may not be used as a NodePool requirement
// key or template label, or returns "" when it may.
func restrictedLabelReason(key string) string {
	switch key {
	case LabelHostname:
		return fmt.Sprintf("label %q is restricted", key)
	case LabelNodePool:
		return fmt.Sprintf("label %q is restricted: Nodewright sets it to the NodePool's name", key)
	}
	if karpenterKnownLabel(NormalizeLabel(key)) {
		return ""
	}
	domain := labelDomain(key)
	for _, d := range labelDomainExceptions() {
		if inDomain(domain, d) {
			return ""
		}
	}
	for _, d := range restrictedLabelDomains() {
		if inDomain(domain, d) {
			return fmt.Sprintf("label domain %q is restricted (%q is not one of its well-known labels)", d, key)
		}
	}
	return ""
}
