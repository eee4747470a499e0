package apis

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/nodewright/nodewright/shared/quantity"
)

// validator collects field errors while a validation walks an object.
type validator struct {
	errs ErrorList
}

func (v *validator) add(path *field.Path, format string, args ...any) {
	v.errs = append(v.errs, fieldErrorf(path.String(), format, args...))
}

// required reports a missing value.
func (v *validator) required(path *field.Path, hint string) {
	if hint == "" {
		v.add(path, "required")
		return
	}
	v.add(path, "required (%s)", hint)
}

// oneOf checks a string against an enum; an empty value is reported as
// missing only when required.
func (v *validator) oneOf(path *field.Path, value string, allowed []string, required bool) bool {
	if value == "" {
		if required {
			v.required(path, "one of "+strings.Join(allowed, ", "))
		}
		return !required
	}
	if slices.Contains(allowed, value) {
		return true
	}
	v.add(path, "%q is not one of %s", value, strings.Join(allowed, ", "))
	return false
}

// intRange checks lo <= value <= hi.
func (v *validator) intRange(path *field.Path, value, lo, hi int64) {
	if value < lo || value > hi {
		v.add(path, "%d is out of range %d..%d", value, lo, hi)
	}
}

// nonNegative checks value >= 0.
func (v *validator) nonNegative(path *field.Path, value int64) {
	if value < 0 {
		v.add(path, "%d must not be negative", value)
	}
}

// maxItems checks the length of a list.
func (v *validator) maxItems(path *field.Path, n, limit int) {
	if n > limit {
		v.add(path, "must have at most %d items, has %d", limit, n)
	}
}

// pattern checks value against re; what describes the expected form.
func (v *validator) pattern(path *field.Path, value string, re *regexp.Regexp, what string) bool {
	if re.MatchString(value) {
		return true
	}
	v.add(path, "%q %s", value, what)
	return false
}

// labelKey checks a label key's syntax.
func (v *validator) labelKey(path *field.Path, key string) bool {
	if msgs := validation.IsQualifiedName(key); len(msgs) > 0 {
		v.add(path, "%q is not a valid label key: %s", key, strings.Join(msgs, "; "))
		return false
	}
	return true
}

// labelValue checks a label value's syntax.
func (v *validator) labelValue(path *field.Path, value string) {
	if msgs := validation.IsValidLabelValue(value); len(msgs) > 0 {
		v.add(path, "%q is not a valid label value: %s", value, strings.Join(msgs, "; "))
	}
}

// objectName checks metadata.name: required, a DNS subdomain, and short
// enough to be a label value (nodes carry it as one).
func (v *validator) objectName(path *field.Path, name string) {
	if name == "" {
		v.required(path, "")
		return
	}
	if msgs := validation.IsDNS1123Subdomain(name); len(msgs) > 0 {
		v.add(path, "%q is not a valid name: %s", name, strings.Join(msgs, "; "))
		return
	}
	if len(name) > validation.LabelValueMaxLength {
		v.add(path, "%q is too long: nodes carry the name as a label value, at most %d characters", name, validation.LabelValueMaxLength)
	}
}

// nonNegativeQuantity checks a parsed quantity.
func (v *validator) nonNegativeQuantity(path *field.Path, q resource.Quantity) {
	if q.Sign() < 0 {
		v.add(path, "%q must not be negative", q.String())
	}
}

// inRange checks that a quantity of resource name (written as text)
// converts to the integers the scheduler counts with (package quantity)
// without overflow.
func (v *validator) inRange(path *field.Path, name, text string, q resource.Quantity) {
	if _, err := quantity.Of(corev1.ResourceName(name), q); err != nil {
		v.add(path, "%q is too large: at most %s", text, quantityMax(name))
	}
}

// quantityMax is package quantity's bound in name's units.
func quantityMax(name string) string {
	if name == string(corev1.ResourceCPU) {
		return resource.NewQuantity(quantity.Max/1000, resource.DecimalSI).String()
	}
	return resource.NewQuantity(quantity.Max, resource.BinarySI).String()
}

// nonEmptyTags checks a selector term's tags: no empty keys or values, at
// most 20 of them.
func (v *validator) nonEmptyTags(path *field.Path, tags map[string]string) {
	if len(tags) > 20 {
		v.add(path, "must have at most 20 tags, has %d", len(tags))
	}
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		switch {
		case k == "":
			v.add(path.Key(k), "tag key must not be empty")
		case tags[k] == "":
			v.add(path.Key(k), "tag value must not be empty (use \"*\" to match any value)")
		}
	}
}

// quoteAll renders values as ["a", "b"] for error messages.
func quoteAll(values []string) string {
	q := make([]string, len(values))
	for i, s := range values {
		q[i] = fmt.Sprintf("%q", s)
	}
	return "[" + strings.Join(q, ", ") + "]"
}
