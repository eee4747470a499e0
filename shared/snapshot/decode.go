package snapshot

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"sort"
	"strings"

	sjson "sigs.k8s.io/json"
)

// decodeLenient decodes a Kubernetes object the way the API server's
// non-strict decoder does (case-sensitive field names, unknown fields
// ignored, so output of newer Kubernetes versions loads) and, when a value
// does not fit its field, returns a *fieldError naming the field's path:
// the decoder alone stops at the first bad value and, for types with their
// own JSON form such as resource.Quantity, loses where it was.
func decodeLenient(data []byte, obj any) error {
	err := sjson.UnmarshalCaseSensitivePreserveInts(data, obj)
	if err == nil {
		return nil
	}
	if fe := locate(reflect.TypeOf(obj).Elem(), data, ""); fe != nil {
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

// locate walks raw JSON alongside the Go type it failed to decode into and
// returns the first value (in field-name order) that does not fit.
func locate(t reflect.Type, raw []byte, path string) *fieldError {
	if isNull(raw) {
		return nil
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if reflect.PointerTo(t).Implements(unmarshalerType) || isScalar(t) {
		if err := sjson.UnmarshalCaseSensitivePreserveInts(raw, reflect.New(t).Interface()); err != nil {
			return leafError(t, raw, path, err)
		}
		return nil
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
				if fe := locate(ft, m[k], join(path, k)); fe != nil {
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
			if fe := locate(t.Elem(), m[k], mapKey(path, k)); fe != nil {
				return fe
			}
		}
	case reflect.Slice, reflect.Array:
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return leafError(t, raw, path, err)
		}
		for i, item := range items {
			if fe := locate(t.Elem(), item, fmt.Sprintf("%s[%d]", path, i)); fe != nil {
				return fe
			}
		}
	}
	return nil
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
