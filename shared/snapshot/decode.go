package snapshot

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/resource"
	sjson "sigs.k8s.io/json"
)

// decodeLenient decodes a Kubernetes object the way the API server's
// non-strict decoder does (case-sensitive field names, unknown fields
// ignored, so output of newer Kubernetes versions loads) and, when a value
// does not fit its field, returns a *fieldError naming the field's path:
// the decoder alone stops at the first bad value and, for types with their
// own JSON form such as resource.Quantity, loses where it was.
//
// Quantities are screened first: resource.ParseQuantity takes time
// exponential in the digits of a negative exponent ("1e-999999999" does not
// return), so text longer than 64 characters or with an exponent beyond ±18
// (the range of the SI suffixes) is refused before any is parsed.
func decodeLenient(data []byte, obj any) error {
	root := reflect.TypeOf(obj).Elem()
	if fe := walk(root, data, "", quantityHolders(root), screenLeaf); fe != nil {
		return fe
	}
	err := sjson.UnmarshalCaseSensitivePreserveInts(data, obj)
	if err == nil {
		return nil
	}
	if fe := walk(root, data, "", nil, decodeLeaf); fe != nil {
		return fe
	}
	return &fieldError{Err: cleanJSONError(err)}
}

// fieldError is a problem with one field of an object.
type fieldError struct {
	Path string // like spec.containers[0].resources.requests.cpu
	Err  error
}

func (e *fieldError) Error() string {
	if e.Path == "" {
		return e.Err.Error()
	}
	return e.Path + ": " + e.Err.Error()
}

func (e *fieldError) Unwrap() error { return e.Err }

func fieldErrorf(path, format string, args ...any) *fieldError {
	return &fieldError{Path: path, Err: fmt.Errorf(format, args...)}
}

var unmarshalerType = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()

// leafFunc checks one value that has no fields of its own (a scalar or a
// type with its own JSON form) and returns its problem, if any.
type leafFunc func(t reflect.Type, raw []byte, path string) *fieldError

// walk visits raw JSON alongside the Go type it decodes into, in field-name
// order, and returns the first problem leaf finds; a container of the wrong
// shape is a problem too. When only is set, it descends only into those types.
func walk(t reflect.Type, raw []byte, path string, only map[reflect.Type]bool, leaf leafFunc) *fieldError {
	if isNull(raw) {
		return nil
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if only != nil && !only[t] {
		return nil
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) || isScalar(t) {
		return leaf(t, raw, path)
	}
	switch t.Kind() {
	case reflect.Struct:
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return leafError(t, raw, path, err)
		}
		fields := jsonFields(t)
		for _, k := range sortedKeys(m) {
			if ft, ok := fields[k]; ok {
				if fe := walk(ft, m[k], join(path, k), only, leaf); fe != nil {
					return fe
				}
			}
		}
	case reflect.Map:
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return leafError(t, raw, path, err)
		}
		for _, k := range sortedKeys(m) {
			if fe := walk(t.Elem(), m[k], mapKey(path, k), only, leaf); fe != nil {
				return fe
			}
		}
	case reflect.Slice, reflect.Array:
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return leafError(t, raw, path, err)
		}
		for i, item := range items {
			if fe := walk(t.Elem(), item, fmt.Sprintf("%s[%d]", path, i), only, leaf); fe != nil {
				return fe
			}
		}
	}
	return nil
}

// decodeLeaf decodes the value on its own, to find the one that failed.
func decodeLeaf(t reflect.Type, raw []byte, path string) *fieldError {
	if err := sjson.UnmarshalCaseSensitivePreserveInts(raw, reflect.New(t).Interface()); err != nil {
		return leafError(t, raw, path, err)
	}
	return nil
}

var (
	quantityType            = reflect.TypeOf(resource.Quantity{})
	quantityExponentPattern = regexp.MustCompile(`[eE]([+-]?[0-9]+)$`)
)

// Bounds on quantity text (see decodeLenient).
const (
	maxQuantityLength   = 64
	maxQuantityExponent = 18
)

// screenLeaf refuses quantity text the parser would spend unbounded time on.
func screenLeaf(t reflect.Type, raw []byte, path string) *fieldError {
	if t != quantityType {
		return nil
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		s = string(bytes.TrimSpace(raw))
	}
	if len(s) > maxQuantityLength {
		return fieldErrorf(path, "%s is not a valid quantity: longer than %d characters", compactValue(raw), maxQuantityLength)
	}
	if m := quantityExponentPattern.FindStringSubmatch(strings.TrimSpace(s)); m != nil {
		if exp, err := strconv.Atoi(m[1]); err != nil || exp > maxQuantityExponent || exp < -maxQuantityExponent {
			return fieldErrorf(path, "%s is not a valid quantity: exponent out of range -%d..%d", compactValue(raw), maxQuantityExponent, maxQuantityExponent)
		}
	}
	return nil
}

// holders caches quantityHolders per root type (a handful of kinds).
var holders sync.Map // reflect.Type -> map[reflect.Type]bool

// quantityHolders is root's type graph cut down to resource.Quantity and
// the types that contain one, so screening skips everything else.
func quantityHolders(root reflect.Type) map[reflect.Type]bool {
	if h, ok := holders.Load(root); ok {
		return h.(map[reflect.Type]bool)
	}
	memo := map[reflect.Type]bool{}
	var visit func(t reflect.Type) bool
	visit = func(t reflect.Type) bool {
		if v, ok := memo[t]; ok {
			return v
		}
		memo[t] = false // breaks cycles
		found := t == quantityType
		switch t.Kind() {
		case reflect.Pointer, reflect.Slice, reflect.Array, reflect.Map:
			found = visit(t.Elem()) || found
		case reflect.Struct:
			if !found {
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
	holders.Store(root, out)
	return out
}

// leafError describes a value that does not fit its field: a type's own
// message (quantities, times, int-or-string) or "X is not a valid integer".
func leafError(t reflect.Type, raw []byte, path string, err error) *fieldError {
	if reflect.PointerTo(t).Implements(unmarshalerType) {
		return fieldErrorf(path, "%v (got %s)", cleanJSONError(err), compactValue(raw))
	}
	return fieldErrorf(path, "%s is not a valid %s", compactValue(raw), describeType(t))
}

var jsonPrefix = regexp.MustCompile(`^json: `)

// cleanJSONError drops encoding/json's "json: " prefix.
func cleanJSONError(err error) error {
	return fmt.Errorf("%s", jsonPrefix.ReplaceAllString(err.Error(), ""))
}

func describeType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "integer"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "non-negative integer"
	case reflect.Float32, reflect.Float64:
		return "number"
	case reflect.Bool:
		return "boolean"
	case reflect.String:
		return "string"
	case reflect.Struct, reflect.Map:
		return "mapping"
	case reflect.Slice, reflect.Array:
		return "list"
	}
	return t.String()
}

func isScalar(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Struct, reflect.Map, reflect.Slice, reflect.Array, reflect.Interface:
		return false
	}
	return true
}

func isNull(raw []byte) bool {
	return bytes.Equal(bytes.TrimSpace(raw), []byte("null"))
}

// compactValue renders a raw JSON value for a message, shortened.
func compactValue(raw []byte) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		b.Reset()
		b.Write(bytes.TrimSpace(raw))
	}
	s := b.String()
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}

// jsonFields maps the JSON names of a struct's fields (inline embedded
// structs flattened) to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		if f.Anonymous && (name == "" || strings.Contains(opts, "inline")) && f.Type.Kind() == reflect.Struct {
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

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

var plainKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// mapKey renders a map entry: requests.cpu, requests[nvidia.com/gpu].
func mapKey(path, key string) string {
	if plainKey.MatchString(key) {
		return join(path, key)
	}
	return fmt.Sprintf("%s[%s]", path, key)
}
