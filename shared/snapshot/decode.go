package snapshot

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"

	sjson "sigs.k8s.io/json"

	"github.com/nodewright/nodewright/shared/fieldjson"
)

// decodeLenient decodes a Kubernetes object the way the API server's
// non-strict decoder does (case-sensitive field names, unknown fields
// ignored, so output of newer Kubernetes versions loads) and, when a value
// does not fit its field, returns a *fieldError naming the field's path:
// the decoder alone stops at the first bad value and, for types with their
// own JSON form such as resource.Quantity, loses where it was.
//
// Quantities are screened first (fieldjson.ScreenQuantity): the quantity
// parser takes unbounded time on some text.
func decodeLenient(data []byte, obj any) error {
	root := reflect.TypeOf(obj).Elem()
	if fe := firstProblem(root, data, fieldjson.TypesContaining(root, fieldjson.QuantityType), screenLeaf); fe != nil {
		return fe
	}
	err := sjson.UnmarshalCaseSensitivePreserveInts(data, obj)
	if err == nil {
		return nil
	}
	if fe := firstProblem(root, data, nil, decodeLeaf); fe != nil {
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

// firstProblem walks raw alongside the Go type it decodes into and returns
// the first problem leaf finds; a container of the wrong shape is a problem
// too. When only is set, it descends only into those types.
func firstProblem(t reflect.Type, raw []byte, only map[reflect.Type]bool, leaf leafFunc) *fieldError {
	var fe *fieldError
	fieldjson.Walker{
		Only: only,
		Key:  mapKey,
		Leaf: func(t reflect.Type, raw []byte, path string) bool {
			fe = leaf(t, raw, path)
			return fe == nil
		},
		Shape: func(t reflect.Type, raw []byte, path string, err error) bool {
			fe = leafError(t, raw, path, err)
			return false
		},
	}.Walk(t, raw, "")
	return fe
}

// decodeLeaf decodes the value on its own, to find the one that failed.
func decodeLeaf(t reflect.Type, raw []byte, path string) *fieldError {
	if err := sjson.UnmarshalCaseSensitivePreserveInts(raw, reflect.New(t).Interface()); err != nil {
		return leafError(t, raw, path, err)
	}
	return nil
}

// screenLeaf refuses quantity text the parser would spend unbounded time on.
func screenLeaf(t reflect.Type, raw []byte, path string) *fieldError {
	if t != fieldjson.QuantityType {
		return nil
	}
	if err := fieldjson.ScreenQuantity(fieldjson.QuantityText(raw)); err != nil {
		return fieldErrorf(path, "%s is not a valid quantity: %v", compactValue(raw), err)
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

func describeType(t reflect.Type) string { return fieldjson.KindName(t) }

// compactValue renders a raw JSON value for a message, shortened.
func compactValue(raw []byte) string { return fieldjson.CompactValue(raw, 60) }

func join(path, name string) string { return fieldjson.Join(path, name) }

var plainKey = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// mapKey renders a map entry: requests.cpu, requests[nvidia.com/gpu].
func mapKey(path, key string) string {
	if plainKey.MatchString(key) {
		return join(path, key)
	}
	return fmt.Sprintf("%s[%s]", path, key)
}
