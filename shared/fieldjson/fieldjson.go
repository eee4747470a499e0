// Package fieldjson walks raw JSON alongside the Go type it decodes into, so
// that a value that does not fit can be reported with its field path (the
// decoders stop at the first bad value and lose the path inside types with
// their own JSON form, such as resource.Quantity), and screens quantity text
// that resource.ParseQuantity would spend unbounded time on. The strict
// configuration loader (package apis) and the lenient snapshot reader
// (package snapshot) share it; each words its own messages.
package fieldjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/resource"
)

// Walker visits raw JSON alongside a Go type, in field-name order.
type Walker struct {
	// Leaf is called for every value of a scalar type or a type with its
	// own JSON form; returning false stops the walk.
	Leaf func(t reflect.Type, raw []byte, path string) bool
	// Shape, when set, is called for a value that is not the object or
	// array its type needs; returning false stops the walk.
	Shape func(t reflect.Type, raw []byte, path string, err error) bool
	// Key renders the path of a map entry (default: path[key]).
	Key func(path, key string) string
	// Only, when set, limits the walk to these types (see TypesContaining).
	Only map[reflect.Type]bool
}

var unmarshalerType = reflect.TypeOf((*json.Unmarshaler)(nil)).Elem()

// Walk visits raw as a value of type t at path; false when stopped.
func (w Walker) Walk(t reflect.Type, raw []byte, path string) bool {
	if IsNull(raw) {
		return true
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if w.Only != nil && !w.Only[t] {
		return true
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) || IsScalar(t) {
		return w.Leaf(t, raw, path)
	}
	switch t.Kind() {
	case reflect.Struct:
		var m map[string]json.RawMessage
		if ok, cont := w.container(t, raw, path, &m); !ok {
			return cont
		}
		fields := JSONFields(t)
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if ft, ok := fields[k]; ok && !w.Walk(ft, m[k], Join(path, k)) {
				return false
			}
		}
	case reflect.Map:
		var m map[string]json.RawMessage
		if ok, cont := w.container(t, raw, path, &m); !ok {
			return cont
		}
		for _, k := range slices.Sorted(maps.Keys(m)) {
			if !w.Walk(t.Elem(), m[k], w.key(path, k)) {
				return false
			}
		}
	case reflect.Slice, reflect.Array:
		var items []json.RawMessage
		if ok, cont := w.container(t, raw, path, &items); !ok {
			return cont
		}
		for i, item := range items {
			if !w.Walk(t.Elem(), item, fmt.Sprintf("%s[%d]", path, i)) {
				return false
			}
		}
	}
	return true
}

// container decodes raw into an object or array shell; ok false when it is
// not one, with whether the walk goes on.
func (w Walker) container(t reflect.Type, raw []byte, path string, into any) (ok, cont bool) {
	if err := json.Unmarshal(raw, into); err != nil {
		if w.Shape != nil {
			return false, w.Shape(t, raw, path, err)
		}
		return false, true
	}
	return true, true
}

func (w Walker) key(path, key string) string {
	if w.Key != nil {
		return w.Key(path, key)
	}
	return fmt.Sprintf("%s[%s]", path, key)
}

// Join appends a field name to a path.
func Join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "." + name
}

// JSONFields maps the JSON names of a struct's fields (inline embedded
// structs flattened) to their types.
func JSONFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		tag := f.Tag.Get("json")
		name, opts, _ := strings.Cut(tag, ",")
		if tag == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		if f.Anonymous && (name == "" || strings.Contains(opts, "inline")) && f.Type.Kind() == reflect.Struct {
			for k, v := range JSONFields(f.Type) {
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

// IsNull says whether raw is JSON null.
func IsNull(raw []byte) bool { return bytes.Equal(bytes.TrimSpace(raw), []byte("null")) }

// IsScalar says whether t has no fields or elements of its own.
func IsScalar(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Struct, reflect.Map, reflect.Slice, reflect.Array, reflect.Interface:
		return false
	}
	return true
}

// CompactValue renders a raw JSON value for a message, cut to at most max
// characters.
func CompactValue(raw []byte, max int) string {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		b.Reset()
		b.Write(bytes.TrimSpace(raw))
	}
	s := b.String()
	if len(s) > max {
		s = s[:max-3] + "..."
	}
	return s
}

// QuantityType is resource.Quantity's type.
var QuantityType = reflect.TypeOf(resource.Quantity{})

// Bounds on quantity text: resource.ParseQuantity takes time exponential in
// the digits of a negative exponent ("1e-999999999" does not return), and
// huge positive ones make comparisons as slow.
const (
	MaxQuantityLength   = 64
	MaxQuantityExponent = 18
)

var quantityExponent = regexp.MustCompile(`[eE]([+-]?[0-9]+)$`)

// ScreenQuantity checks that s is short and that its decimal exponent, if
// any, is within ±18 (the range of the SI suffixes, n to E).
func ScreenQuantity(s string) error {
	if len(s) > MaxQuantityLength {
		return fmt.Errorf("longer than %d characters", MaxQuantityLength)
	}
	if m := quantityExponent.FindStringSubmatch(strings.TrimSpace(s)); m != nil {
		exp, err := strconv.Atoi(m[1])
		if err != nil || exp > MaxQuantityExponent || exp < -MaxQuantityExponent {
			return fmt.Errorf("exponent out of range -%d..%d", MaxQuantityExponent, MaxQuantityExponent)
		}
	}
	return nil
}

// ParseQuantity parses a quantity after screening it.
func ParseQuantity(s string) (resource.Quantity, error) {
	if err := ScreenQuantity(s); err != nil {
		return resource.Quantity{}, err
	}
	return resource.ParseQuantity(s)
}

// QuantityText is the text of a raw JSON quantity (a string or a number).
func QuantityText(raw []byte) string {
	var s string
	if json.Unmarshal(raw, &s) != nil {
		s = string(bytes.TrimSpace(raw))
	}
	return s
}

var containing sync.Map // [2]reflect.Type -> map[reflect.Type]bool

// TypesContaining returns root's type graph cut down to target and the types
// that (through fields, elements or pointers) contain it, for Walker.Only.
func TypesContaining(root, target reflect.Type) map[reflect.Type]bool {
	key := [2]reflect.Type{root, target}
	if v, ok := containing.Load(key); ok {
		return v.(map[reflect.Type]bool)
	}
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
	containing.Store(key, out)
	return out
}

// KindName names what a value of kind t's kind looks like in a message:
// "integer", "string", "mapping", "list" and so on.
func KindName(t reflect.Type) string {
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
