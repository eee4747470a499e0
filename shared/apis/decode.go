package apis

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
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
	strictErrs, err := sjson.UnmarshalStrict(data, obj, sjson.DisallowDuplicateFields, sjson.DisallowUnknownFields)
	var errs ErrorList
	root := reflect.TypeOf(obj).Elem()
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

// locate walks raw JSON alongside the Go type it failed to decode into and
// records, with their paths, the values that do not fit. The decoder itself
// stops at the first such value and loses the path when a type's own
// UnmarshalJSON (quantities, durations) fails.
func locate(t reflect.Type, raw []byte, path *field.Path, errs *ErrorList) {
	if t.Kind() == reflect.Pointer {
		if isNull(raw) {
			return
		}
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) || isScalar(t) {
		if err := sjson.UnmarshalCaseSensitivePreserveInts(raw, reflect.New(t).Interface()); err != nil {
			*errs = append(*errs, leafError(t, raw, path, err))
		}
		return
	}
	switch t.Kind() {
	case reflect.Struct:
		locateStruct(t, raw, path, errs)
	case reflect.Map:
		var m map[string]json.RawMessage
		if !decodeContainer(t, raw, path, &m, errs) {
			return
		}
		for _, k := range sortedKeys(m) {
			locate(t.Elem(), m[k], path.Key(k), errs)
		}
	case reflect.Slice:
		var items []json.RawMessage
		if !decodeContainer(t, raw, path, &items, errs) {
			return
		}
		for i, item := range items {
			locate(t.Elem(), item, path.Index(i), errs)
		}
	}
}

func locateStruct(t reflect.Type, raw []byte, path *field.Path, errs *ErrorList) {
	var m map[string]json.RawMessage
	if !decodeContainer(t, raw, path, &m, errs) {
		return
	}
	fields := jsonFields(t)
	for _, k := range sortedKeys(m) {
		if ft, ok := fields[k]; ok {
			locate(ft, m[k], childPath(path, k), errs)
		}
	}
}

// decodeContainer decodes raw into an object or array shell; a value of the
// wrong shape is recorded as an error at path.
func decodeContainer(t reflect.Type, raw []byte, path *field.Path, into any, errs *ErrorList) bool {
	if isNull(raw) {
		return false
	}
	if err := json.Unmarshal(raw, into); err != nil {
		*errs = append(*errs, leafError(t, raw, path, err))
		return false
	}
	return true
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
