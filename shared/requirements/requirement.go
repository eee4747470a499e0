// Package requirements is the label-requirement algebra of scheduling: a
// requirement is a predicate on one node label (In, NotIn, Exists,
// DoesNotExist, Gt, Lt and Karpenter's Gte and Lte, with its minValues), and
// requirements can be intersected, checked for compatibility and matched
// against labels. It is pure, allocation-light and has no I/O, so the
// scheduler and the tests use it directly.
package requirements

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
)

// Requirement is a predicate on the value of one label key. A node either has
// the label, with one value, or lacks it; the requirement says which values it
// allows and whether lacking the label is allowed.
//
// The allowed values are `values` when complement is false, and every value but
// `values` when complement is true; when gt or lt is set the allowed values are
// further limited to integers strictly between them.
type Requirement struct {
	Key        string
	complement bool
	values     []string // sorted, unique
	gt, lt     int64    // exclusive integer bounds, active when hasGt / hasLt
	hasGt      bool
	hasLt      bool
	absent     bool // a node without the label satisfies it
	// MinValues asks for at least this many distinct values of the key among
	// the instance types a NodeClaim may launch (nil: no minimum).
	MinValues *int
}

// New builds a requirement from an operator and its values. Gt, Lt, Gte and
// Lte need a single integer value; Gte n is read as Gt n-1 and Lte n as Lt
// n+1 (the same integers), as Karpenter reads Gt n as Gte n+1. A deprecated
// alias of a well-known label is read as the label it means
// (apis.NormalizeLabel), as Karpenter reads it.
func New(key string, op corev1.NodeSelectorOperator, values ...string) (Requirement, error) {
	r := Requirement{Key: apis.NormalizeLabel(key)}
	switch op {
	case corev1.NodeSelectorOpIn:
		r.values = sortedUnique(values)
	case corev1.NodeSelectorOpNotIn:
		r.complement, r.absent, r.values = true, true, sortedUnique(values)
	case corev1.NodeSelectorOpExists:
		r.complement = true
	case corev1.NodeSelectorOpDoesNotExist:
		r.absent = true
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, apis.NodeSelectorOpGte, apis.NodeSelectorOpLte:
		if len(values) != 1 {
			return Requirement{}, fmt.Errorf("%s %s needs exactly one integer value, got %d", key, op, len(values))
		}
		n, err := strconv.ParseInt(values[0], 10, 64)
		if err != nil {
			return Requirement{}, fmt.Errorf("%s %s %q: not an integer", key, op, values[0])
		}
		r.complement = true
		switch {
		case op == corev1.NodeSelectorOpGt:
			r.gt, r.hasGt = n, true
		case op == corev1.NodeSelectorOpLt:
			r.lt, r.hasLt = n, true
		case op == apis.NodeSelectorOpGte && n > math.MinInt64:
			r.gt, r.hasGt = n-1, true
		case op == apis.NodeSelectorOpLte && n < math.MaxInt64:
			r.lt, r.hasLt = n+1, true
		default:
			// Gte MinInt64 or Lte MaxInt64: any integer; Gt MinInt64 is
			// the closest bound (the one integer it leaves out is never
			// a label's value).
			r.gt, r.hasGt = math.MinInt64, true
		}
	default:
		return Requirement{}, fmt.Errorf("%s: unknown operator %q", key, op)
	}
	return r, nil
}

// MustNew is New for requirements written in code; it panics on error.
func MustNew(key string, op corev1.NodeSelectorOperator, values ...string) Requirement {
	r, err := New(key, op, values...)
	if err != nil {
		panic(err)
	}
	return r
}

// In is the requirement "key In values".
func In(key string, values ...string) Requirement {
	return Requirement{Key: apis.NormalizeLabel(key), values: sortedUnique(values)}
}

// Has says whether a node whose label key has value v satisfies r.
func (r Requirement) Has(v string) bool {
	if r.hasGt || r.hasLt {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || (r.hasGt && n <= r.gt) || (r.hasLt && n >= r.lt) {
			return false
		}
	}
	_, found := slices.BinarySearch(r.values, v)
	return found != r.complement
}

// AllowsAbsent says whether a node without the label satisfies r.
func (r Requirement) AllowsAbsent() bool { return r.absent }

// Matches says whether a node with (present) or without the label satisfies r.
func (r Requirement) Matches(v string, present bool) bool {
	if !present {
		return r.absent
	}
	return r.Has(v)
}

// Values returns the allowed values when they are a finite list (ok false for
// NotIn, Exists, Gt and Lt).
func (r Requirement) Values() (values []string, ok bool) {
	if r.complement {
		return nil, false
	}
	return r.values, true
}

// Any returns one value r allows, deterministically: its first value when
// it lists them (In), else the smallest non-negative integer within its
// bounds that it does not exclude; false when it allows no value (only the
// label's absence, or nothing).
func (r Requirement) Any() (string, bool) {
	if !r.complement {
		if len(r.values) == 0 {
			return "", false
		}
		return r.values[0], true
	}
	lo := int64(0)
	if r.hasGt {
		lo = max(lo, r.gt+1)
	}
	for n, tries := lo, 0; tries <= len(r.values) && (!r.hasLt || n < r.lt) && n >= 0; n, tries = n+1, tries+1 {
		if v := strconv.FormatInt(n, 10); r.Has(v) {
			return v, true
		}
	}
	return "", false
}

// Len is the number of allowed values, math.MaxInt when unbounded.
func (r Requirement) Len() int {
	if !r.complement {
		return len(r.values)
	}
	if !r.hasGt || !r.hasLt {
		return math.MaxInt
	}
	n := r.lt - r.gt - 1
	for _, v := range r.values {
		if x, err := strconv.ParseInt(v, 10, 64); err == nil && x > r.gt && x < r.lt {
			n--
		}
	}
	if n < 0 {
		return 0
	}
	if n > math.MaxInt32 {
		return math.MaxInt
	}
	return int(n)
}

// Satisfiable says whether some node (with or without the label) satisfies r.
func (r Requirement) Satisfiable() bool { return r.absent || r.Len() > 0 }

// Intersect returns the requirement satisfied exactly by the nodes that
// satisfy both r and o (same key assumed); minValues is the larger of the two.
func (r Requirement) Intersect(o Requirement) Requirement {
	out := Requirement{Key: r.Key, absent: r.absent && o.absent, MinValues: maxPtr(r.MinValues, o.MinValues)}
	out.gt, out.hasGt = tighter(r.gt, r.hasGt, o.gt, o.hasGt, true)
	out.lt, out.hasLt = tighter(r.lt, r.hasLt, o.lt, o.hasLt, false)
	switch {
	case !r.complement && !o.complement:
		out.values = intersectSorted(r.values, o.values)
	case r.complement && o.complement:
		out.complement = true
		out.values = unionSorted(r.values, o.values)
		return out.normalized()
	case r.complement:
		out.values = subtractSorted(o.values, r.values)
	default:
		out.values = subtractSorted(r.values, o.values)
	}
	// A finite list: apply the bounds to it and drop them.
	if out.hasGt || out.hasLt {
		out.values = slices.DeleteFunc(out.values, func(v string) bool { return !inBounds(v, out) })
		out.hasGt, out.hasLt, out.gt, out.lt = false, false, 0, 0
	}
	return out
}

// normalized turns a bounded complement with no integer left into the empty
// set of values.
func (r Requirement) normalized() Requirement {
	if r.complement && r.hasGt && r.hasLt && r.Len() == 0 {
		r.complement, r.values, r.hasGt, r.hasLt, r.gt, r.lt = false, nil, false, false, 0, 0
	}
	return r
}

func inBounds(v string, r Requirement) bool {
	n, err := strconv.ParseInt(v, 10, 64)
	return err == nil && (!r.hasGt || n > r.gt) && (!r.hasLt || n < r.lt)
}

// NodeSelectorRequirements expresses r as node selector requirements (ANDed);
// a requirement that mixes exclusions and bounds needs more than one.
func (r Requirement) NodeSelectorRequirements() []corev1.NodeSelectorRequirement {
	ns := func(op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
		return corev1.NodeSelectorRequirement{Key: r.Key, Operator: op, Values: values}
	}
	var out []corev1.NodeSelectorRequirement
	switch {
	case !r.complement && len(r.values) == 0:
		if r.absent {
			return []corev1.NodeSelectorRequirement{ns(corev1.NodeSelectorOpDoesNotExist)}
		}
		// Nothing satisfies it: In with no values says so.
		return []corev1.NodeSelectorRequirement{ns(corev1.NodeSelectorOpIn)}
	case !r.complement:
		out = append(out, ns(corev1.NodeSelectorOpIn, slices.Clone(r.values)...))
		// "In or absent" has no single operator; In is the stricter form.
	default: // every value but the excluded ones, perhaps within bounds
		if len(r.values) > 0 {
			out = append(out, ns(corev1.NodeSelectorOpNotIn, slices.Clone(r.values)...))
		}
		if r.hasGt {
			out = append(out, ns(corev1.NodeSelectorOpGt, strconv.FormatInt(r.gt, 10)))
		}
		if r.hasLt {
			out = append(out, ns(corev1.NodeSelectorOpLt, strconv.FormatInt(r.lt, 10)))
		}
		if !r.absent && !r.hasGt && !r.hasLt {
			out = append(out, ns(corev1.NodeSelectorOpExists))
		}
	}
	return out
}

// String describes r for messages, e.g. `topology.kubernetes.io/zone In [a b]`.
func (r Requirement) String() string {
	var parts []string
	for _, ns := range r.NodeSelectorRequirements() {
		s := ns.Key + " " + string(ns.Operator)
		if len(ns.Values) > 0 {
			s += " [" + strings.Join(ns.Values, " ") + "]"
		}
		parts = append(parts, s)
	}
	if r.MinValues != nil {
		parts = append(parts, fmt.Sprintf("minValues %d", *r.MinValues))
	}
	return strings.Join(parts, ", ")
}

func tighter(a int64, hasA bool, b int64, hasB bool, lower bool) (int64, bool) {
	switch {
	case hasA && hasB:
		if lower {
			return max(a, b), true
		}
		return min(a, b), true
	case hasA:
		return a, true
	case hasB:
		return b, true
	}
	return 0, false
}

func maxPtr(a, b *int) *int {
	switch {
	case a == nil:
		return b
	case b == nil || *a >= *b:
		return a
	}
	return b
}

func sortedUnique(v []string) []string {
	if len(v) == 0 {
		return nil
	}
	out := slices.Clone(v)
	sort.Strings(out)
	return slices.Compact(out)
}

func intersectSorted(a, b []string) []string {
	var out []string
	for i, j := 0, 0; i < len(a) && j < len(b); {
		switch {
		case a[i] == b[j]:
			out = append(out, a[i])
			i++
			j++
		case a[i] < b[j]:
			i++
		default:
			j++
		}
	}
	return out
}

func unionSorted(a, b []string) []string {
	out := make([]string, 0, len(a)+len(b))
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			out = append(out, a[i])
			i++
			j++
		case a[i] < b[j]:
			out = append(out, a[i])
			i++
		default:
			out = append(out, b[j])
			j++
		}
	}
	out = append(out, a[i:]...)
	return append(out, b[j:]...)
}

// subtractSorted is a minus b.
func subtractSorted(a, b []string) []string {
	var out []string
	j := 0
	for _, v := range a {
		for j < len(b) && b[j] < v {
			j++
		}
		if j < len(b) && b[j] == v {
			continue
		}
		out = append(out, v)
	}
	return out
}
