package apis

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	sjson "sigs.k8s.io/json"

	"github.com/nodewright/nodewright/shared/fieldjson"
)

// strictErrorPattern matches the messages sigs.k8s.io/json gives for unknown
// and duplicate fields.
var strictErrorPattern = regexp.MustCompile(`^(unknown|duplicate) field "(.*)"$`)

// decodeStrict decodes one JSON object into obj (a pointer) the way the API
// server would with strict field validation: unknown and duplicate fields are
// errors (except unknown fields under status, which newer Karpenter releases
// extend), and a value of the wrong type is reported with its field path.
func decodeStrict(data []byte, obj any) ErrorList {
	root := reflect.TypeOf(obj).Elem()
	var errs ErrorList
	if screenQuantities(root, data, &errs); len(errs) > 0 {
		return errs
	}
	strictErrs, err := sjson.UnmarshalStrict(data, obj, sjson.DisallowDuplicateFields, sjson.DisallowUnknownFields)
	for _, se := range strictErrs {
		m := strictErrorPattern.FindStringSubmatch(se.Error())
		if m == nil {
			errs = append(errs, &FieldError{Detail: se.Error()})
			continue
		}
		kind, path := m[1], m[2]
		if kind == "unknown" && (path == "status" || strings.HasPrefix(path, "status.")) {
			continue
		}
		detail := kind + " field"
		if kind == "unknown" {
			if s := suggestField(root, path); s != "" {
				detail += fmt.Sprintf(" (did you mean %q?)", s)
			}
		}
		errs = append(errs, &FieldError{Field: path, Detail: detail})
	}
	if err != nil {
		located := ErrorList{}
		locate(root, data, &located)
		if len(located) == 0 {
			located = append(located, &FieldError{Detail: err.Error()})
		}
		errs = append(errs, located...)
	}
	return errs
}

// Types with their own JSON form, described for error messages.
var (
	quantityType         = reflect.TypeOf(resource.Quantity{})
	durationType         = reflect.TypeOf(metav1.Duration{})
	timeType             = reflect.TypeOf(metav1.Time{})
	nillableDurationType = reflect.TypeOf(NillableDuration{})
	unmarshalerType      = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()
)

// describeType names what a field of type t expects.
func describeType(t reflect.Type) string {
	switch t {
	case quantityType:
		return "quantity (like 500m, 4 or 16Gi)"
	case durationType:
		return "duration (like 30s or 1h30m)"
	case timeType:
		return "time (RFC 3339, like 2024-01-02T15:04:05Z)"
	case nillableDurationType:
		return "duration (like 720h) or Never"
	}
	if t.Kind() == reflect.Bool {
		return "boolean (true or false)"
	}
	return fieldjson.KindName(t)
}

// locate records, with their paths, the values of raw that do not fit the
// type t. The decoder itself stops at the first such value and loses the
// path when a type's own UnmarshalJSON (quantities, durations) fails.
func locate(t reflect.Type, raw []byte, errs *ErrorList) {
	fieldjson.Walker{
		Leaf: func(t reflect.Type, raw []byte, path string) bool {
			if err := sjson.UnmarshalCaseSensitivePreserveInts(raw, reflect.New(t).Interface()); err != nil {
				*errs = append(*errs, leafError(t, raw, path, err))
			}
			return true
		},
		Shape: func(t reflect.Type, raw []byte, path string, err error) bool {
			*errs = append(*errs, leafError(t, raw, path, err))
			return true
		},
	}.Walk(t, raw, "")
}

// screenQuantities rejects, before decoding, quantities that the quantity
// parser (or later arithmetic on them) would spend unbounded time on.
func screenQuantities(t reflect.Type, raw []byte, errs *ErrorList) {
	fieldjson.Walker{Only: fieldjson.TypesContaining(t, quantityType), Leaf: func(t reflect.Type, raw []byte, path string) bool {
		if t != quantityType {
			return true
		}
		if err := fieldjson.ScreenQuantity(fieldjson.QuantityText(raw)); err != nil {
			*errs = append(*errs, &FieldError{Field: path,
				Detail: fmt.Sprintf("%s is not a valid %s: %v", compactValue(raw), describeType(t), err)})
		}
		return true
	}}.Walk(t, raw, "")
}

// parseQuantity parses a quantity given as a string, after screening it.
func parseQuantity(s string) (resource.Quantity, error) { return fieldjson.ParseQuantity(s) }

func isNull(raw []byte) bool { return fieldjson.IsNull(raw) }

// leafError describes a value that does not fit its field.
func leafError(t reflect.Type, raw []byte, path string, err error) *FieldError {
	value := compactValue(raw)
	detail := fmt.Sprintf("%s is not a valid %s", value, describeType(t))
	switch {
	case t.Kind() == reflect.String && (value == "true" || value == "false"):
		detail += " (YAML reads unquoted yes, no, on, off, true and false as booleans: quote the value)"
	case t.Kind() == reflect.String && !strings.HasPrefix(value, `"`) && !strings.HasPrefix(value, "{") && !strings.HasPrefix(value, "["):
		detail += fmt.Sprintf(` (quote it: "%s")`, value)
	case t == durationType || t == timeType:
		detail += ": " + err.Error()
	}
	return &FieldError{Field: path, Detail: detail}
}

// compactValue renders a raw JSON value for an error message, shortened.
func compactValue(raw []byte) string { return fieldjson.CompactValue(raw, 80) }

// pathTokenPattern splits a decoder path into field names, dropping list
// indexes.
var pathTokenPattern = regexp.MustCompile(`\[[0-9]+\]`)

// suggestField proposes the known field an unknown one was probably meant to
// be: the same name in another case, or one a couple of edits away.
func suggestField(root reflect.Type, path string) string {
	tokens := strings.Split(pathTokenPattern.ReplaceAllString(path, ""), ".")
	t := root
	for _, tok := range tokens[:len(tokens)-1] {
		t = elemType(t)
		if t.Kind() != reflect.Struct {
			return ""
		}
		ft, ok := fieldjson.JSONFields(t)[tok]
		if !ok {
			return ""
		}
		t = ft
	}
	t = elemType(t)
	if t.Kind() != reflect.Struct {
		return ""
	}
	unknown := tokens[len(tokens)-1]
	names := slices.Sorted(maps.Keys(fieldjson.JSONFields(t)))
	best, bestDist := "", 3
	for _, n := range names {
		if strings.EqualFold(n, unknown) {
			return n
		}
		if d := EditDistance(strings.ToLower(n), strings.ToLower(unknown)); d < bestDist && len(unknown) > 3 {
			best, bestDist = n, d
		}
	}
	return best
}

// elemType strips pointers, slices and maps down to the element type.
func elemType(t reflect.Type) reflect.Type {
	for {
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			t = t.Elem()
		default:
			return t
		}
	}
}
