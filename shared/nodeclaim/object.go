package nodeclaim

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/apis"
)

// Kind, APIVersion and Resource of the objects.
const (
	Kind       = "NodeClaim"
	APIVersion = apis.NodePoolAPIVersion
	Resource   = "nodeclaims"
)

// Labels and annotations Nodewright sets on its NodeClaims beside
// Karpenter's.
const (
	// LabelManagedBy (value names.TagValueManagedBy) marks the NodeClaims
	// Nodewright keeps: Karpenter's own, during a migration, are left
	// alone until their node is adopted (package adoption), when the
	// record's object takes the label.
	LabelManagedBy = "nodewright.io/managed-by"
)

// NodeClaim is a NodeClaim object as the API server stores it: the fields
// of Karpenter's v1 type that Nodewright writes.
type NodeClaim struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   Spec   `json:"spec"`
	Status Status `json:"status,omitempty"`
}

// Spec is the NodeClaim's desired node (immutable once created).
type Spec struct {
	Taints                 []corev1.Taint   `json:"taints,omitempty"`
	StartupTaints          []corev1.Taint   `json:"startupTaints,omitempty"`
	Requirements           []Requirement    `json:"requirements"`
	Resources              Resources        `json:"resources,omitempty"`
	NodeClassRef           *NodeClassRef    `json:"nodeClassRef"`
	TerminationGracePeriod *metav1.Duration `json:"terminationGracePeriod,omitempty"`
	ExpireAfter            string           `json:"expireAfter,omitempty"`
}

// Requirement is a node selector requirement with Karpenter's minValues.
type Requirement struct {
	corev1.NodeSelectorRequirement `json:",inline"`
	MinValues                      *int `json:"minValues,omitempty"`
}

// Resources are the requests the node was launched for.
type Resources struct {
	Requests corev1.ResourceList `json:"requests,omitempty"`
}

// NodeClassRef names the EC2NodeClass.
type NodeClassRef struct {
	Group string `json:"group"`
	Kind  string `json:"kind"`
	Name  string `json:"name"`
}

// Status is what the node became.
type Status struct {
	NodeName    string              `json:"nodeName,omitempty"`
	ProviderID  string              `json:"providerID,omitempty"`
	ImageID     string              `json:"imageID,omitempty"`
	Capacity    corev1.ResourceList `json:"capacity,omitempty"`
	Allocatable corev1.ResourceList `json:"allocatable,omitempty"`
	Conditions  []metav1.Condition  `json:"conditions,omitempty"`
}

// Condition types (Karpenter's), the root first.
const (
	ConditionReady            = "Ready"
	ConditionLaunched         = "Launched"
	ConditionRegistered       = "Registered"
	ConditionInitialized      = "Initialized"
	ConditionDrifted          = "Drifted"
	ConditionConsolidatable   = "Consolidatable"
	ConditionDisruptionReason = "DisruptionReason"
)

// Condition returns the condition of type t (nil if absent).
func (nc *NodeClaim) Condition(t string) *metav1.Condition {
	for i := range nc.Status.Conditions {
		if nc.Status.Conditions[i].Type == t {
			return &nc.Status.Conditions[i]
		}
	}
	return nil
}

// Managed reports whether Nodewright keeps the object.
func (nc *NodeClaim) Managed() bool { return nc.Labels[LabelManagedBy] != "" }

// HasFinalizer reports whether the object carries Karpenter's termination
// finalizer.
func (nc *NodeClaim) HasFinalizer() bool {
	for _, f := range nc.Finalizers {
		if f == apis.FinalizerTermination {
			return true
		}
	}
	return false
}
