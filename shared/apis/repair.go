package apis

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Node auto repair settings. Nodewright's configuration is Karpenter's
// YAML, which has no field for them, so they are annotations: on a
// NodePool, AnnotationNodeRepair "false" turns repair off for its nodes and
// AnnotationNodeRepairToleration+<condition> sets how long a condition is
// tolerated (a Go duration such as "45m"); on a Node, AnnotationNodeRepair
// "false" keeps that node from being repaired. Repair is on by default
// (Karpenter's NodeRepair feature gate is off by default).
const (
	AnnotationNodeRepair           = "nodewright.io/node-repair"
	AnnotationNodeRepairToleration = "nodewright.io/node-repair-toleration-"
)

// ConditionEC2StatusCheck is the repair policy of a failing EC2 status
// check (DescribeInstanceStatus: the instance or the system check
// impaired). It is no Node condition: the consolidation function polls it.
const ConditionEC2StatusCheck corev1.NodeConditionType = "EC2StatusCheck"

// RepairPolicy is one unhealthy state of a node and how long it is
// tolerated before the node is replaced (Karpenter's
// cloudprovider.RepairPolicy, one per condition here: its statuses are
// those the AWS provider lists for the condition).
type RepairPolicy struct {
	Condition  corev1.NodeConditionType
	Statuses   []corev1.ConditionStatus
	Toleration time.Duration
}

// Bad reports whether a condition status is one the policy repairs.
func (p RepairPolicy) Bad(s corev1.ConditionStatus) bool { return slices.Contains(p.Statuses, s) }

// AnnotationKey is the NodePool annotation that sets the policy's
// toleration: "nodewright.io/node-repair-toleration-" and the condition in
// kebab case (ready, accelerated-hardware-ready, ec2-status-check).
func (p RepairPolicy) AnnotationKey() string {
	return AnnotationNodeRepairToleration + kebab(string(p.Condition))
}

// DefaultRepairPolicies are Karpenter AWS provider v1.14.1's RepairPolicies
// (the kubelet's Ready, the EKS node monitoring agent's conditions) and
// Nodewright's EC2 status check, with their default tolerations.
func DefaultRepairPolicies() []RepairPolicy {
	f := []corev1.ConditionStatus{corev1.ConditionFalse}
	return []RepairPolicy{
		{Condition: corev1.NodeReady, Statuses: []corev1.ConditionStatus{corev1.ConditionFalse, corev1.ConditionUnknown}, Toleration: 30 * time.Minute},
		{Condition: "AcceleratedHardwareReady", Statuses: f, Toleration: 10 * time.Minute},
		{Condition: "StorageReady", Statuses: f, Toleration: 30 * time.Minute},
		{Condition: "NetworkingReady", Statuses: f, Toleration: 30 * time.Minute},
		{Condition: "KernelReady", Statuses: f, Toleration: 30 * time.Minute},
		{Condition: "ContainerRuntimeReady", Statuses: f, Toleration: 30 * time.Minute},
		{Condition: ConditionEC2StatusCheck, Statuses: f, Toleration: 30 * time.Minute},
	}
}

// NodeRepair is a NodePool's repair settings.
type NodeRepair struct {
	// Enabled: the pool's nodes are repaired (the default).
	Enabled bool
	// Policies are the default policies with the pool's tolerations.
	Policies []RepairPolicy
}

// NodeRepair reads the pool's repair annotations. An invalid one is an
// error naming its path (and the settings are the defaults with repair
// off: a pool whose settings cannot be read is not repaired).
func (np *NodePool) NodeRepair() (NodeRepair, error) {
	v := &validator{}
	out := nodeRepair(v, field.NewPath("metadata", "annotations"), np.Annotations)
	if err := v.errs.asError(); err != nil {
		out.Enabled = false
		return out, fmt.Errorf("NodePool %s: %w", np.Name, err)
	}
	return out, nil
}

// NodeRepairOptOut reports whether a Node is annotated to be left alone by
// repair (AnnotationNodeRepair "false").
func NodeRepairOptOut(annotations map[string]string) bool {
	return strings.EqualFold(strings.TrimSpace(annotations[AnnotationNodeRepair]), "false")
}

// nodeRepair parses the annotations, reporting what is invalid to v.
func nodeRepair(v *validator, path *field.Path, annotations map[string]string) NodeRepair {
	out := NodeRepair{Enabled: true, Policies: DefaultRepairPolicies()}
	if s, ok := annotations[AnnotationNodeRepair]; ok {
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "true":
		case "false":
			out.Enabled = false
		default:
			v.add(path.Key(AnnotationNodeRepair), "%q must be \"true\" or \"false\"", s)
		}
	}
	keys := map[string]int{}
	for i, p := range out.Policies {
		keys[p.AnnotationKey()] = i
	}
	for _, k := range slices.Sorted(maps.Keys(annotations)) {
		if !strings.HasPrefix(k, AnnotationNodeRepairToleration) {
			continue
		}
		i, ok := keys[k]
		if !ok {
			v.add(path.Key(k), "not a repair toleration%s (one of %s)", suggestKey(k, slices.Sorted(maps.Keys(keys))), strings.Join(slices.Sorted(maps.Keys(keys)), ", "))
			continue
		}
		d, err := time.ParseDuration(strings.TrimSpace(annotations[k]))
		if err != nil || d < 0 {
			v.add(path.Key(k), "%q is not a non-negative duration such as \"45m\"", annotations[k])
			continue
		}
		out.Policies[i].Toleration = d
	}
	return out
}

// validateNodeRepair refuses invalid repair annotations at load.
func validateNodeRepair(v *validator, path *field.Path, annotations map[string]string) {
	nodeRepair(v, path, annotations)
}

// suggestKey is a "did you mean" hint for a misspelt key ("" when none is
// close).
func suggestKey(k string, known []string) string {
	best, dist := "", 4
	for _, c := range known {
		if d := EditDistance(k, c); d < dist {
			best, dist = c, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(": did you mean %s?", best)
}

// kebab turns "AcceleratedHardwareReady" into "accelerated-hardware-ready"
// and "EC2StatusCheck" into "ec2-status-check".
func kebab(s string) string {
	var b strings.Builder
	r := []rune(s)
	for i, c := range r {
		upper := c >= 'A' && c <= 'Z'
		if upper && i > 0 {
			prevLower := r[i-1] >= 'a' && r[i-1] <= 'z'
			nextLower := i+1 < len(r) && r[i+1] >= 'a' && r[i+1] <= 'z'
			prevUpperOrDigit := (r[i-1] >= 'A' && r[i-1] <= 'Z') || (r[i-1] >= '0' && r[i-1] <= '9')
			if prevLower || (prevUpperOrDigit && nextLower) {
				b.WriteByte('-')
			}
		}
		if upper {
			c += 'a' - 'A'
		}
		b.WriteRune(c)
	}
	return b.String()
}
