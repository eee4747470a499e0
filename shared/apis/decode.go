package apis

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sjson "sigs.k8s.io/json"
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
		locate(root, data, nil, &located)
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
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Bool:
		return "boolean (true or false)"
	case reflect.String:
		return "string"
	case reflect.Struct, reflect.Map:
		return "mapping"
	case reflect.Slice, reflect.Array:
		return "list"
	}
	return t.String()
}

// jsonWalker walks raw JSON alongside the Go type it is meant to decode
// into, calling leaf for every value of a type with its own JSON form
// (quantities, durations, times) or a scalar type, and shape (when set) for a
// value that is not the object or array its type needs.
type jsonWalker struct {
	leaf  func(t reflect.Type, raw []byte, path *field.Path)
	shape func(t reflect.Type, raw []byte, path *field.Path, err error)
	// only, when set, limits the walk to values of these types and the
	// types that contain them.
	only map[reflect.Type]bool
}

func (w jsonWalker) walk(t reflect.Type, raw []byte, path *field.Path) {
	if w.only != nil && !w.only[t] {
		return
	}
	if t.Kind() == reflect.Pointer {
		if isNull(raw) {
			return
		}
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) || isScalar(t) {
		w.leaf(t, raw, path)
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		var m map[string]json.RawMessage
		if !w.container(t, raw, path, &m) {
			return
		}
		fields := jsonFields(t)
		for _, k := range sortedKeys(m) {
			if ft, ok := fields[k]; ok {
				w.walk(ft, m[k], childPath(path, k))
			}
		}
	case reflect.Map:
		var m map[string]json.RawMessage
		if !w.container(t, raw, path, &m) {
			return
		}
		for _, k := range sortedKeys(m) {
			w.walk(t.Elem(), m[k], path.Key(k))
		}
	case reflect.Slice:
		var items []json.RawMessage
		if !w.container(t, raw, path, &items) {
			return
		}
		for i, item := range items {
			w.walk(t.Elem(), item, path.Index(i))
		}
	}
}

// container decodes raw into an object or array shell.
func (w jsonWalker) container(t reflect.Type, raw []byte, path *field.Path, into any) bool {
	if isNull(raw) {
		return false
	}
	if err := json.Unmarshal(raw, into); err != nil {
		if w.shape != nil {
			w.shape(t, raw, path, err)
		}
		return false
	}
	return true
}

// locate records, with their paths, the values of raw that do not fit the
// type t. The decoder itself stops at the first such value and loses the
// path when a type's own UnmarshalJSON (quantities, durations) fails.
func locate(t reflect.Type, raw []byte, path *field.Path, errs *ErrorList) {
	jsonWalker{
		leaf: func(t reflect.Type, raw []byte, path *field.Path) {
			if err := sjson.UnmarshalCaseSensitivePreserveInts(raw, reflect.New(t).Interface()); err != nil {
				*errs = append(*errs, leafError(t, raw, path, err))
			}
		},
		shape: func(t reflect.Type, raw []byte, path *field.Path, err error) {
			*errs = append(*errs, leafError(t, raw, path, err))
		},
	}.walk(t, raw, path)
}

// screenQuantities rejects, before decoding, quantities that the quantity
// parser (or later arithmetic on them) would spend unbounded time on.
func screenQuantities(t reflect.Type, raw []byte, errs *ErrorList) {
	jsonWalker{only: typesContaining(t, quantityType), leaf: func(t reflect.Type, raw []byte, path *field.Path) {
		if t != quantityType {
			return
		}
		var s string
		if json.Unmarshal(raw, &s) != nil {
			s = string(bytes.TrimSpace(raw))
		}
		if err := screenQuantity(s); err != nil {
			*errs = append(*errs, &FieldError{Field: path.String(),
				Detail: fmt.Sprintf("%s is not a valid %s: %v", compactValue(raw), describeType(t), err)})
		}
	}}.walk(t, raw, nil)
}

// typesContaining returns root's type graph restricted to target and the
// types that (through fields, elements or pointers) contain it.
func typesContaining(root, target reflect.Type) map[reflect.Type]bool {
	memo := map[reflect.Type]bool{}
	var visit func(t reflect.Type) bool
	visit = func(t reflect.Type) bool {
		if v, ok := memo[t]; ok {
			return v
		}
		memo[t] = false // breaks cycles
		found := t == target
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			found = visit(t.Elem()) || found
		case reflect.Struct:
			if t != target {
				for i := 0; i < t.NumField(); i++ {
					found = visit(t.Field(i).Type) || found
				}
			}
		}
		memo[t] = found
		return found
	}
	visit(root)
	out := map[reflect.Type]bool{}
	for t, ok := range memo {
		if ok {
			out[t] = true
		}
	}
	return out
}

// Bounds on quantity text: resource.ParseQuantity takes time exponential in
// the digits of a negative exponent ("1e-999999999" does not return), and
// huge positive ones make comparisons as slow.
const (
	maxQuantityLength   = 64
	maxQuantityExponent = 18
)

var quantityExponentPattern = regexp.MustCompile(`[eE]([+-]?[0-9]+)$`)

// screenQuantity checks that s is short and that its decimal exponent, if
// any, is within ±18 (the range of the SI suffixes, n to E).
func screenQuantity(s string) error {
	if len(s) > maxQuantityLength {
		return fmt.Errorf("longer than %d characters", maxQuantityLength)
	}
	if m := quantityExponentPattern.FindStringSubmatch(strings.TrimSpace(s)); m != nil {
		exp, err := strconv.Atoi(m[1])
		if err != nil || exp > maxQuantityExponent || exp < -maxQuantityExponent {
			return fmt.Errorf("exponent out of range -%d..%d", maxQuantityExponent, maxQuantityExponent)
		}
	}
	return nil
}

// parseQuantity parses a quantity given as a string, after screening it.
func parseQuantity(s string) (resource.Quantity, error) {
	if err := screenQuantity(s); err != nil {
		return resource.Quantity{}, err
	}
	return resource.ParseQuantity(s)
}

func childPath(path *field.Path, name string) *field.Path {
	if path == nil {
		return field.NewPath(name)
	}
	return path.Child(name)
}

func isNull(raw []byte) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

func isScalar(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Struct, reflect.Map, reflect.Slice, reflect.Array, reflect.Interface:
		return false
	}
	return true
}

// leafError describes a value that does not fit its field.
func leafError(t reflect.Type, raw []byte, path *field.Path, err error) *FieldError {
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
	p := ""
	if path != nil {
		p = path.String()
	}
	return &FieldError{Field: p, Detail: detail}
}

// compactValue renders a raw JSON value for an error message, shortened.
func compactValue(raw []byte) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		b.Reset()
		b.Write(bytes.TrimSpace(raw))
	}
	s := b.String()
	if len(s) > 80 {
		s = s[:77] + "..."
	}
	return s
}

// jsonFields maps the JSON names of a struct's fields (with inline embedded
// structs flattened) to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, _, _ := strings.Cut(tag, ",")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			for k, v := range jsonFields(f.Type) {
				out[k] = v
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

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
		ft, ok := jsonFields(t)[tok]
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
	names := sortedKeys(jsonFields(t))
	best, bestDist := "", 3
	for _, n := range names {
		if strings.EqualFold(n, unknown) {
			return n
		}
		if d := editDistance(strings.ToLower(n), strings.ToLower(unknown)); d < bestDist && len(unknown) > 3 {
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

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
