package apis

import (
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// NodeOverlay is Karpenter's karpenter.sh/v1alpha1 NodeOverlay: a price
// (or price adjustment) for the instance types its requirements select,
// for savings plans and private pricing, and extended resources their
// nodes offer. Nodewright declares the type
// here, as it does NodePool, rather than importing Karpenter's: that
// package drags in controller-runtime and Prometheus, which the functions
// do not link.
type NodeOverlay struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   NodeOverlaySpec   `json:"spec"`
	Status NodeOverlayStatus `json:"status,omitempty"`
}

// NodeOverlayAPIVersion is the only version of NodeOverlay Karpenter serves.
const NodeOverlayAPIVersion = KarpenterGroup + "/v1alpha1"

// NodeOverlaySpec is the user's part of a NodeOverlay.
type NodeOverlaySpec struct {
	// Requirements select the instance types and offerings (capacity
	// type) the overlay applies to; none selects every one.
	Requirements []corev1.NodeSelectorRequirement `json:"requirements,omitempty"`
	// PriceAdjustment changes the price: "+0.1", "-0.5" (dollars an hour)
	// or "+10%", "-15%". Price replaces it: "0.25". At most one is set.
	PriceAdjustment *string `json:"priceAdjustment,omitempty"`
	Price           *string `json:"price,omitempty"`
	// Capacity adds extended resources (hugepages, device-plugin
	// resources) to the types the overlay selects; never cpu, memory,
	// ephemeral-storage or pods.
	Capacity corev1.ResourceList `json:"capacity,omitempty"`
	// Weight orders overlapping overlays: the highest applies. Nil is 0.
	Weight *int32 `json:"weight,omitempty"`
}

// NodeOverlayStatus is Karpenter's output, read and never acted on.
type NodeOverlayStatus struct {
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Limits and forms from Karpenter's NodeOverlay CRD.
const (
	MinOverlayWeight = 1
	MaxOverlayWeight = 10000
)

var (
	overlayPricePattern      = regexp.MustCompile(`^\d+(\.\d+)?$`)
	overlayAdjustmentPattern = regexp.MustCompile(`^(([+-]{1}(\d*\.?\d+))|(\+{1}\d*\.?\d+%)|(^(-\d{1,2}(\.\d+)?%)$)|(-100%))$`)
)

// overlaySelectable reports whether an overlay's requirement may use key:
// Nodewright applies an overlay to the catalog's instance types, so it
// selects them by their own labels and their offerings' capacity type.
func overlaySelectable(key string) bool {
	switch key {
	case LabelArch, LabelOS, LabelInstanceType, LabelCapacityType, LabelZone:
		return true
	}
	return strings.HasPrefix(key, AWSGroup+"/instance-")
}

// Validate checks the NodeOverlay as Karpenter's CRD schema, CEL rules and
// runtime validation would, and refuses what Nodewright cannot honour;
// it returns an ErrorList (nil when valid).
func (o *NodeOverlay) Validate() error {
	v := &validator{}
	v.objectName(field.NewPath("metadata", "name"), o.Name)
	spec := field.NewPath("spec")
	s := &o.Spec
	reqs := spec.Child("requirements")
	v.maxItems(reqs, len(s.Requirements), MaxRequirements)
	for i := range s.Requirements {
		r := &s.Requirements[i]
		p := reqs.Index(i)
		checked := NodeSelectorRequirementWithMinValues{Key: r.Key, Operator: r.Operator, Values: r.Values}
		if r.Key == LabelNodePool {
			// Karpenter lets an overlay select a NodePool (a NodePool may
			// not set the label): the refusal below says why Nodewright
			// does not, instead of calling the label restricted.
			checked.Key = LabelInstanceType
		}
		validateRequirement(v, p, &checked)
		if r.Operator == corev1.NodeSelectorOpNotIn && len(r.Values) == 0 {
			v.add(p.Child("values"), "operator NotIn needs at least one value")
		}
		switch {
		case r.Key == "" || r.Key != LabelNodePool && restrictedLabelReason(r.Key) != "":
		case !overlaySelectable(r.Key):
			v.add(p.Child("key"), "%q: Nodewright applies a NodeOverlay to instance types by their own labels (kubernetes.io/arch, kubernetes.io/os, node.kubernetes.io/instance-type, karpenter.k8s.aws/instance-*) and capacity type, in every NodePool; NodePool and custom labels are not supported yet: select the types instead", r.Key)
		case r.Key == LabelZone && (s.Price != nil || s.PriceAdjustment != nil):
			v.add(p.Child("key"), "%q: Nodewright prices an instance type alike in every zone of its region; remove the zone requirement", r.Key)
		}
	}
	if s.Price != nil && s.PriceAdjustment != nil {
		v.add(spec, "cannot set both price and priceAdjustment")
	}
	if s.Price != nil {
		v.pattern(spec.Child("price"), *s.Price, overlayPricePattern, "must be a non-negative price in dollars an hour, like 0.25")
	}
	if s.PriceAdjustment != nil {
		v.pattern(spec.Child("priceAdjustment"), *s.PriceAdjustment, overlayAdjustmentPattern,
			`must be a signed amount ("+0.1", "-0.5") or percentage ("+10%", "-15%", at most "-100%")`)
	}
	for name := range s.Capacity {
		switch name {
		case corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage, corev1.ResourcePods:
			v.add(spec.Child("capacity").Key(string(name)), "a NodeOverlay adds extended resources only, not %s", name)
		}
	}
	if s.Weight != nil {
		v.intRange(spec.Child("weight"), int64(*s.Weight), MinOverlayWeight, MaxOverlayWeight)
	}
	return withRefusals(refusalsOf(NodeOverlayKind, o), v.errs).asError()
}
