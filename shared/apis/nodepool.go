package apis

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodePool is Karpenter's karpenter.sh/v1 NodePool: the template of the nodes
// Nodewright may launch, their limits and how they may be disrupted.
type NodePool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   NodePoolSpec   `json:"spec"`
	Status NodePoolStatus `json:"status,omitempty"`
}

// NodePoolSpec is the user's part of a NodePool.
type NodePoolSpec struct {
	Template   NodeClaimTemplate `json:"template"`
	Disruption Disruption        `json:"disruption"`
	Limits     Limits            `json:"limits,omitempty"`
	// Weight orders NodePools: higher first. Nil counts as 0.
	Weight *int32 `json:"weight,omitempty"`
	// Replicas makes a static NodePool (alpha in Karpenter): a fixed number of
	// nodes, with only limits.nodes and no weight. Nodewright accepts and
	// validates it but only provisions dynamic NodePools.
	Replicas *int64 `json:"replicas,omitempty"`
}

// NodeClaimTemplate is the metadata and spec every node of the pool starts from.
type NodeClaimTemplate struct {
	ObjectMeta TemplateMeta          `json:"metadata,omitempty"`
	Spec       NodeClaimTemplateSpec `json:"spec"`
}

// TemplateMeta is the labels and annotations put on launched nodes.
type TemplateMeta struct {
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// NodeClaimTemplateSpec is the node-level part of the template.
type NodeClaimTemplateSpec struct {
	Taints                 []corev1.Taint                         `json:"taints,omitempty"`
	StartupTaints          []corev1.Taint                         `json:"startupTaints,omitempty"`
	Requirements           []NodeSelectorRequirementWithMinValues `json:"requirements"`
	NodeClassRef           *NodeClassReference                    `json:"nodeClassRef"`
	TerminationGracePeriod *metav1.Duration                       `json:"terminationGracePeriod,omitempty"`
	ExpireAfter            NillableDuration                       `json:"expireAfter,omitempty"`
}

// Karpenter's operators beyond Kubernetes': integer bounds that include
// their value (Gte 4 allows 4 and more).
const (
	NodeSelectorOpGte corev1.NodeSelectorOperator = "Gte"
	NodeSelectorOpLte corev1.NodeSelectorOperator = "Lte"
)

// NodeSelectorRequirementWithMinValues is a node selector requirement that can
// also ask for a minimum number of distinct values among the chosen instance
// types (for example at least 5 instance families). Operators are In, NotIn,
// Exists, DoesNotExist, Gt, Lt, Gte and Lte; like Karpenter, values given
// with Exists or DoesNotExist are accepted and carry no meaning.
type NodeSelectorRequirementWithMinValues struct {
	Key       string                      `json:"key"`
	Operator  corev1.NodeSelectorOperator `json:"operator"`
	Values    []string                    `json:"values,omitempty"`
	MinValues *int                        `json:"minValues,omitempty"`
}

// NodeClassReference points at the EC2NodeClass of a NodePool.
type NodeClassReference struct {
	Kind  string `json:"kind"`
	Name  string `json:"name"`
	Group string `json:"group"`
}

// Disruption is how and when nodes of the pool may be consolidated.
type Disruption struct {
	ConsolidateAfter    NillableDuration    `json:"consolidateAfter"`
	ConsolidationPolicy ConsolidationPolicy `json:"consolidationPolicy,omitempty"`
	Budgets             []Budget            `json:"budgets,omitempty"`
}

// ConsolidationPolicy says which nodes consolidation may remove.
type ConsolidationPolicy string

// Consolidation policies.
const (
	ConsolidationPolicyWhenEmpty                ConsolidationPolicy = "WhenEmpty"
	ConsolidationPolicyWhenEmptyOrUnderutilized ConsolidationPolicy = "WhenEmptyOrUnderutilized"
	// ConsolidationPolicyBalanced consolidates underutilized nodes only
	// when a move saves enough of the pool's cost for the disruption it
	// causes (package disruption, balanced.go); empty nodes are deleted.
	ConsolidationPolicyBalanced ConsolidationPolicy = "Balanced"
)

// ConsolidationPolicies lists the valid consolidation policies.
func ConsolidationPolicies() []ConsolidationPolicy {
	return []ConsolidationPolicy{ConsolidationPolicyWhenEmpty, ConsolidationPolicyWhenEmptyOrUnderutilized, ConsolidationPolicyBalanced}
}

// DisruptionReason is a reason a budget can be limited to.
type DisruptionReason string

// Disruption reasons.
const (
	DisruptionReasonUnderutilized DisruptionReason = "Underutilized"
	DisruptionReasonEmpty         DisruptionReason = "Empty"
	DisruptionReasonDrifted       DisruptionReason = "Drifted"
)

// DisruptionReasons lists the reasons a budget may name.
func DisruptionReasons() []DisruptionReason {
	return []DisruptionReason{DisruptionReasonUnderutilized, DisruptionReasonEmpty, DisruptionReasonDrifted}
}

// Budget caps how many of the pool's nodes may be disrupted at once, always or
// during a cron schedule's window.
type Budget struct {
	Reasons  []DisruptionReason `json:"reasons,omitempty"`
	Nodes    string             `json:"nodes"`
	Schedule *string            `json:"schedule,omitempty"`
	Duration *metav1.Duration   `json:"duration,omitempty"`
}

// Limits caps the total resources of the pool's nodes (cpu, memory, nodes and
// extended resources such as nvidia.com/gpu).
type Limits corev1.ResourceList

// NodePoolStatus is what Karpenter writes back; read so that `kubectl get -o
// yaml` output loads, never trusted for decisions. Fields of the status that
// this type does not know (newer Karpenter releases add some) are ignored
// rather than rejected.
type NodePoolStatus struct {
	Resources                   corev1.ResourceList `json:"resources,omitempty"`
	Nodes                       *int64              `json:"nodes,omitempty"`
	NodeClassObservedGeneration int64               `json:"nodeClassObservedGeneration,omitempty"`
	Conditions                  []metav1.Condition  `json:"conditions,omitempty"`
}
