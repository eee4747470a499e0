package requirements

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
)

// FieldNodeName is the key under which a node selector term's matchFields on
// metadata.name is kept: only an existing node can satisfy it.
const FieldNodeName = "metadata.name"

// Requirements is a conjunction of requirements on distinct keys, sorted by
// key. The zero value has no requirement (everything satisfies it). Values are
// immutable: operations return new Requirements.
type Requirements []Requirement

// NewRequirements sorts rs by key and intersects requirements on the same key.
func NewRequirements(rs ...Requirement) Requirements {
	out := make(Requirements, 0, len(rs))
	for _, r := range rs {
		out = out.Add(r)
	}
	return out
}

// Add returns r with req added (intersected with r's requirement on the key).
func (r Requirements) Add(req Requirement) Requirements {
	i := sort.Search(len(r), func(i int) bool { return r[i].Key >= req.Key })
	out := make(Requirements, 0, len(r)+1)
	out = append(out, r[:i]...)
	if i < len(r) && r[i].Key == req.Key {
		out = append(out, r[i].Intersect(req))
		return append(out, r[i+1:]...)
	}
	out = append(out, req)
	return append(out, r[i:]...)
}

// Get returns the requirement on key.
func (r Requirements) Get(key string) (Requirement, bool) {
	i := sort.Search(len(r), func(i int) bool { return r[i].Key >= key })
	if i < len(r) && r[i].Key == key {
		return r[i], true
	}
	return Requirement{}, false
}

// Keys returns the constrained keys in order.
func (r Requirements) Keys() []string {
	keys := make([]string, len(r))
	for i := range r {
		keys[i] = r[i].Key
	}
	return keys
}

// Intersect returns the requirements satisfied exactly by the label sets that
// satisfy both r and o.
func (r Requirements) Intersect(o Requirements) Requirements {
	out := make(Requirements, 0, len(r)+len(o))
	i, j := 0, 0
	for i < len(r) && j < len(o) {
		switch {
		case r[i].Key == o[j].Key:
			out = append(out, r[i].Intersect(o[j]))
			i++
			j++
		case r[i].Key < o[j].Key:
			out = append(out, r[i])
			i++
		default:
			out = append(out, o[j])
			j++
		}
	}
	out = append(out, r[i:]...)
	return append(out, o[j:]...)
}

// Satisfiable returns an error naming the first key no label set can satisfy.
func (r Requirements) Satisfiable() error {
	for _, req := range r {
		if !req.Satisfiable() {
			return fmt.Errorf("no value of %s satisfies every requirement on it", req.Key)
		}
	}
	return nil
}

// Compatible says whether a node built to r can also satisfy o: on every key
// both constrain, some value (or the label's absence) satisfies both; a key
// only o constrains must either allow the label to be absent or be definable
// (a well-known label the launch will set by choosing an instance type,
// zone or capacity type). The error names the first conflicting key.
func (r Requirements) Compatible(o Requirements, definable func(key string) bool) error {
	i := 0
	for _, in := range o {
		for i < len(r) && r[i].Key < in.Key {
			i++
		}
		if i < len(r) && r[i].Key == in.Key {
			if !r[i].Intersect(in).Satisfiable() {
				return fmt.Errorf("%s conflicts with %s", in, r[i])
			}
			continue
		}
		if !in.AllowsAbsent() && (definable == nil || !definable(in.Key)) {
			if typo := TypoOf(in.Key); typo != "" {
				return fmt.Errorf("label %q does not have known values (typo of %q?)", in.Key, typo)
			}
			return fmt.Errorf("label %q does not have known values", in.Key)
		}
	}
	return nil
}

// Matches says whether a node with these labels satisfies every requirement.
func (r Requirements) Matches(labels map[string]string) bool {
	for _, req := range r {
		v, ok := labels[req.Key]
		if !req.Matches(v, ok) {
			return false
		}
	}
	return true
}

// NodeSelectorRequirements expresses r as node selector requirements.
func (r Requirements) NodeSelectorRequirements() []corev1.NodeSelectorRequirement {
	var out []corev1.NodeSelectorRequirement
	for _, req := range r {
		out = append(out, req.NodeSelectorRequirements()...)
	}
	return out
}

// String describes r for messages.
func (r Requirements) String() string {
	parts := make([]string, len(r))
	for i, req := range r {
		parts[i] = req.String()
	}
	return strings.Join(parts, "; ")
}

// FromLabels is "key In [value]" for every label (a label and its
// deprecated alias are one key, so both must agree).
func FromLabels(labels map[string]string) Requirements {
	keys := slices.Sorted(maps.Keys(labels))
	out := make(Requirements, 0, len(labels))
	for _, k := range keys {
		out = out.Add(In(k, labels[k]))
	}
	return out
}

// FromNodeSelectorRequirements builds requirements from match expressions.
func FromNodeSelectorRequirements(exprs []corev1.NodeSelectorRequirement) (Requirements, error) {
	var out Requirements
	for _, e := range exprs {
		req, err := New(e.Key, e.Operator, e.Values...)
		if err != nil {
			return nil, err
		}
		out = out.Add(req)
	}
	return out, nil
}

// FromNodeSelectorTerm builds requirements from one node selector term;
// matchFields on metadata.name become a requirement on FieldNodeName. An empty
// term matches no node, as in Kubernetes.
func FromNodeSelectorTerm(term corev1.NodeSelectorTerm) (Requirements, error) {
	if len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0 {
		return Requirements{In(FieldNodeName)}, nil
	}
	out, err := FromNodeSelectorRequirements(term.MatchExpressions)
	if err != nil {
		return nil, err
	}
	for _, f := range term.MatchFields {
		if f.Key != FieldNodeName {
			return nil, fmt.Errorf("matchFields key %q is not supported (only %s)", f.Key, FieldNodeName)
		}
		req, err := New(FieldNodeName, f.Operator, f.Values...)
		if err != nil {
			return nil, err
		}
		out = out.Add(req)
	}
	return out, nil
}

// FromNodePool builds the requirements every node of the pool satisfies: the
// template's requirements (with minValues), its labels, and the pool's name
// under karpenter.sh/nodepool.
func FromNodePool(np *apis.NodePool) (Requirements, error) {
	var out Requirements
	for i, r := range np.Spec.Template.Spec.Requirements {
		req, err := New(r.Key, r.Operator, r.Values...)
		if err != nil {
			return nil, fmt.Errorf("nodepool %s: spec.template.spec.requirements[%d]: %w", np.Name, i, err)
		}
		req.MinValues = r.MinValues
		out = out.Add(req)
	}
	out = out.Intersect(FromLabels(np.Spec.Template.ObjectMeta.Labels))
	return out.Add(In(apis.LabelNodePool, np.Name)), nil
}

// FromPod returns the alternatives a pod's node selector and required node
// affinity allow: one Requirements per required node affinity term (the terms
// are ORed), each ANDed with the node selector; one when there are no terms.
func FromPod(pod *corev1.Pod) ([]Requirements, error) {
	base := FromLabels(pod.Spec.NodeSelector)
	aff := pod.Spec.Affinity
	if aff == nil || aff.NodeAffinity == nil || aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return []Requirements{base}, nil
	}
	terms := aff.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	out := make([]Requirements, 0, len(terms))
	for i, term := range terms {
		reqs, err := FromNodeSelectorTerm(term)
		if err != nil {
			return nil, fmt.Errorf("pod %s/%s: nodeSelectorTerms[%d]: %w", pod.Namespace, pod.Name, i, err)
		}
		out = append(out, base.Intersect(reqs))
	}
	if len(out) == 0 {
		// No terms: Kubernetes matches no node. Keep that: nothing satisfies In [].
		out = append(out, base.Add(In(FieldNodeName)))
	}
	return out, nil
}

// WellKnown reports whether the launch defines key (so a pod may constrain it
// even if the pool does not): Karpenter's well-known labels.
func WellKnown(key string) bool { return apis.WellKnownLabels[key] }

// TypoOf names the well-known label key most likely meant when key is not
// one: a key that is a well-known label's name without its domain
// ("zone"), has its name under another domain ("node.io/zone"), or is
// within two edits of it ("topology.kubernetes.io/regio"); "" when none.
func TypoOf(key string) string {
	if apis.WellKnownLabels[key] {
		return ""
	}
	name := key[strings.LastIndexByte(key, '/')+1:]
	best, bestDist := "", 3
	for _, wk := range slices.Sorted(maps.Keys(apis.WellKnownLabels)) {
		wkName := wk[strings.LastIndexByte(wk, '/')+1:]
		d := apis.EditDistance(key, wk)
		if name == wkName {
			d = 0
		}
		if d < bestDist {
			best, bestDist = wk, d
		}
	}
	return best
}
