package scenario

import (
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"gopkg.in/yaml.v3"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodewright/nodewright/test/localcloud/cloudfault"
)

// The decoder walks yaml.v3's node tree (sigs.k8s.io/yaml goes through
// JSON and keeps no lines) into the tagged types of this package: a field
// is named by its yaml tag and checked by its check tag, a comma-separated
// list of rules:
//
//	required         the field must be present
//	nonempty         a string must not be blank
//	path             a file path, resolved against the scenario's directory
//	positive         a duration must be more than 0 (durations are never negative)
//	selector         a Kubernetes label selector
//	capacityType     spot or on-demand
//	nodeCapacityType spot, on-demand or reserved (a node's)
//	fault            a fault of the local cloud (package cloudfault)
//	defaultNamespace a namespace/name whose namespace defaults to "default"
//	whole            a Range of whole numbers, with count (and a plain number) for min = max
//	bound            a Range must have min or max
//	default=V        the value when the field is absent
//	empty=MSG        the error for an empty list
//	unique=NOUN      a list's items are distinct
//	word=W           a bool written as the word W
//
// Whole numbers are never negative. A type with a check method is checked
// after its fields: the method returns what is wrong, or "".
type decoder struct {
	file, dir string
}

type rules struct {
	required, nonempty, path, positive, selector, capacityType, fault bool
	defaultNamespace, whole, bound, nodeCapacityType                  bool
	def, empty, unique, word                                          string
}

func parseRules(tag string) rules {
	var r rules
	for _, part := range strings.Split(tag, ",") {
		k, v, _ := strings.Cut(part, "=")
		switch k {
		case "required":
			r.required = true
		case "nonempty":
			r.nonempty = true
		case "path":
			r.path = true
		case "positive":
			r.positive = true
		case "selector":
			r.selector = true
		case "capacityType":
			r.capacityType = true
		case "nodeCapacityType":
			r.nodeCapacityType = true
		case "fault":
			r.fault = true
		case "defaultNamespace":
			r.defaultNamespace = true
		case "whole":
			r.whole = true
		case "bound":
			r.bound = true
		case "default":
			r.def = v
		case "empty":
			r.empty = v
		case "unique":
			r.unique = v
		case "word":
			r.word = v
		case "":
		default:
			panic(fmt.Sprintf("scenario: unknown check rule %q", k))
		}
	}
	return r
}

// checker is a type checked as a whole after its fields are decoded.
type checker interface{ check() string }

// nodeDecoder is a type that decodes itself (a step).
type nodeDecoder interface {
	decodeNode(d *decoder, n *yaml.Node, path string) error
}

var (
	durationType = reflect.TypeOf(time.Duration(0))
	rangeType    = reflect.TypeOf(Range{})
	nameType     = reflect.TypeOf(types.NamespacedName{})
)

func (d *decoder) errf(n *yaml.Node, path, format string, args ...any) error {
	line := 0
	if n != nil {
		line = n.Line
	}
	return &Error{File: d.file, Line: line, Path: path, Msg: fmt.Sprintf(format, args...)}
}

// value decodes n into v (settable) by v's type and the rules of its field.
func (d *decoder) value(n *yaml.Node, path string, v reflect.Value, r rules) error {
	if nd, ok := v.Addr().Interface().(nodeDecoder); ok {
		return nd.decodeNode(d, n, path)
	}
	switch t := v.Type(); {
	case t.Kind() == reflect.Pointer:
		p := reflect.New(t.Elem())
		v.Set(p)
		return d.value(n, path, p.Elem(), r)
	case t == rangeType:
		return d.rangeValue(n, path, v.Addr().Interface().(*Range), r)
	case t == nameType:
		return d.name(n, path, v.Addr().Interface().(*types.NamespacedName), r)
	case t == durationType:
		return d.duration(n, path, v, r)
	case t.Kind() == reflect.Struct:
		return d.mapping(n, path, v)
	case t.Kind() == reflect.Slice:
		return d.list(n, path, v, r)
	case t.Kind() == reflect.Float64:
		f, err := d.number(n, path)
		if err != nil {
			return err
		}
		if f < 0 {
			return d.errf(n, path, "%g: want at least 0", f)
		}
		v.SetFloat(f)
		return nil
	}
	s, err := d.scalar(n, path)
	if err != nil {
		return err
	}
	switch v.Kind() {
	case reflect.String:
		return d.str(n, path, s, v, r)
	case reflect.Int, reflect.Uint64:
		i, err := d.whole(n, path)
		if err != nil {
			return err
		}
		if v.Kind() == reflect.Int {
			v.SetInt(int64(i))
		} else {
			v.SetUint(uint64(i))
		}
	case reflect.Bool:
		if s != r.word {
			return d.errf(n, path, "want %s, got %q", r.word, s)
		}
		v.SetBool(true)
	default:
		panic(fmt.Sprintf("scenario: no decoding for %s at %s", v.Type(), path))
	}
	return nil
}

// field is one key a mapping accepts.
type field struct {
	rules rules
	set   func(n *yaml.Node, path string) error
}

// fields are the keys of struct v: its yaml-tagged fields, and min, max
// (and count) of an inline Range.
func (d *decoder) fields(v reflect.Value) (map[string]field, []string, *Range, rules) {
	out := map[string]field{}
	var order []string
	var inline *Range
	var inlineRules rules
	t := v.Type()
	for i := range t.NumField() {
		sf := t.Field(i)
		name, opt, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
		if name == "-" || (name == "" && opt != "inline") {
			continue
		}
		r := parseRules(sf.Tag.Get("check"))
		fv := v.Field(i)
		if opt == "inline" {
			inline, inlineRules = fv.Addr().Interface().(*Range), r
			for k, f := range d.rangeFields(inline, r) {
				out[k] = f
			}
			continue
		}
		out[name] = field{rules: r, set: func(n *yaml.Node, path string) error { return d.value(n, path, fv, r) }}
		order = append(order, name)
	}
	return out, order, inline, inlineRules
}

// mapping decodes a mapping into struct v: its fields' defaults fill the
// absent keys, the required must be present, then v is checked.
func (d *decoder) mapping(n *yaml.Node, path string, v reflect.Value) error {
	if n.Kind != yaml.MappingNode {
		return d.errf(n, path, "want a mapping, got %s", kindName(n))
	}
	fields, order, inline, inlineRules := d.fields(v)
	for _, name := range order {
		if def := fields[name].rules.def; def != "" {
			if err := fields[name].set(&yaml.Node{Kind: yaml.ScalarNode, Value: def, Line: n.Line}, join(path, name)); err != nil {
				panic(fmt.Sprintf("scenario: default of %s: %v", name, err))
			}
		}
	}
	seen, err := d.keys(n, path, fields)
	if err != nil {
		return err
	}
	for _, name := range order {
		if fields[name].rules.required && !seen[name] {
			return d.errf(n, path, "missing field %q", name)
		}
	}
	if inline != nil {
		if msg := rangeProblem(*inline, inlineRules); msg != "" {
			return d.errf(n, path, "%s", msg)
		}
	}
	if c, ok := v.Addr().Interface().(checker); ok {
		if msg := c.check(); msg != "" {
			return d.errf(n, path, "%s", msg)
		}
	}
	return nil
}

// keys sets a mapping's fields: every key must be one of fields (else the
// error lists them), none twice. It returns the keys seen.
func (d *decoder) keys(n *yaml.Node, path string, fields map[string]field) (map[string]bool, error) {
	if n.Kind != yaml.MappingNode {
		return nil, d.errf(n, path, "want a mapping, got %s", kindName(n))
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		f, ok := fields[k.Value]
		if !ok {
			return nil, d.errf(k, path, "unknown field %q (known: %s)", k.Value, strings.Join(slices.Sorted(maps.Keys(fields)), ", "))
		}
		if seen[k.Value] {
			return nil, d.errf(k, path, "field %q given twice", k.Value)
		}
		seen[k.Value] = true
		if err := f.set(val, join(path, k.Value)); err != nil {
			return nil, err
		}
	}
	return seen, nil
}

func (d *decoder) list(n *yaml.Node, path string, v reflect.Value, r rules) error {
	if n.Kind != yaml.SequenceNode {
		return d.errf(n, path, "want a list, got %s", kindName(n))
	}
	if len(n.Content) == 0 && r.empty != "" {
		return d.errf(n, path, "%s", r.empty)
	}
	for i, item := range n.Content {
		ip := fmt.Sprintf("%s[%d]", path, i)
		e := reflect.New(v.Type().Elem()).Elem()
		if err := d.value(item, ip, e, r); err != nil {
			return err
		}
		if r.unique != "" {
			for j := range v.Len() {
				if v.Index(j).Interface() == e.Interface() {
					return d.errf(item, ip, "%s %q listed twice", r.unique, e.Interface())
				}
			}
		}
		v.Set(reflect.Append(v, e))
	}
	return nil
}

func (d *decoder) scalar(n *yaml.Node, path string) (string, error) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		return "", d.errf(n, path, "want a value, got %s", kindName(n))
	}
	return n.Value, nil
}

func (d *decoder) str(n *yaml.Node, path, s string, v reflect.Value, r rules) error {
	if (r.nonempty || r.path || r.selector || r.capacityType || r.fault) && strings.TrimSpace(s) == "" {
		return d.errf(n, path, "must not be empty")
	}
	switch {
	case r.path && !filepath.IsAbs(s):
		s = filepath.Join(d.dir, s)
	case r.selector:
		if _, err := labels.Parse(s); err != nil {
			return d.errf(n, path, "label selector %q: %v", s, err)
		}
	case r.capacityType && s != "spot" && s != "on-demand":
		return d.errf(n, path, "capacity type %q: want spot or on-demand", s)
	case r.nodeCapacityType && s != "spot" && s != "on-demand" && s != "reserved":
		return d.errf(n, path, "capacity type %q: want spot, on-demand or reserved", s)
	case r.fault:
		if _, err := cloudfault.Lookup(s); err != nil {
			return d.errf(n, path, "unknown interruption %q (known: %s)", s, strings.Join(cloudfault.Names(), ", "))
		}
	}
	v.SetString(s)
	return nil
}

func (d *decoder) whole(n *yaml.Node, path string) (int, error) {
	var i int
	if err := n.Decode(&i); err != nil {
		return 0, d.errf(n, path, "want a whole number, got %q", n.Value)
	}
	if i < 0 {
		return 0, d.errf(n, path, "%d: want at least 0", i)
	}
	return i, nil
}

func (d *decoder) number(n *yaml.Node, path string) (float64, error) {
	if _, err := d.scalar(n, path); err != nil {
		return 0, err
	}
	var f float64
	if err := n.Decode(&f); err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, d.errf(n, path, "want a number, got %q", n.Value)
	}
	return f, nil
}

func (d *decoder) duration(n *yaml.Node, path string, v reflect.Value, r rules) error {
	s, err := d.scalar(n, path)
	if err != nil {
		return err
	}
	dur, err := time.ParseDuration(s)
	if err != nil {
		return d.errf(n, path, "want a duration such as 30s or 5m, got %q", s)
	}
	if dur < 0 {
		return d.errf(n, path, "%s: must not be negative", dur)
	}
	if r.positive && dur == 0 {
		return d.errf(n, path, "must be more than 0")
	}
	v.SetInt(int64(dur))
	return nil
}

// name decodes namespace/name; a name alone is in "default" when
// defaultNamespace, else cluster-scoped.
func (d *decoder) name(n *yaml.Node, path string, out *types.NamespacedName, r rules) error {
	s, err := d.scalar(n, path)
	if err != nil {
		return err
	}
	if strings.TrimSpace(s) == "" {
		return d.errf(n, path, "must not be empty")
	}
	ns, name, ok := strings.Cut(s, "/")
	if !ok {
		ns, name = "", s
		if r.defaultNamespace {
			ns = "default"
		}
	}
	if (ok && ns == "") || name == "" || strings.Contains(name, "/") {
		if r.defaultNamespace {
			return d.errf(n, path, "want namespace/name, got %q", s)
		}
		return d.errf(n, path, "want name or namespace/name, got %q", s)
	}
	*out = types.NamespacedName{Namespace: ns, Name: name}
	return nil
}

// rangeFields are a Range's keys: min, max and, for whole numbers, count
// (min = max).
func (d *decoder) rangeFields(rg *Range, r rules) map[string]field {
	bound := func(out **float64) func(*yaml.Node, string) error {
		return func(n *yaml.Node, path string) error {
			var f float64
			if r.whole {
				if _, err := d.scalar(n, path); err != nil {
					return err
				}
				i, err := d.whole(n, path)
				if err != nil {
					return err
				}
				f = float64(i)
			} else {
				var err error
				if f, err = d.number(n, path); err != nil {
					return err
				}
			}
			*out = &f
			return nil
		}
	}
	fs := map[string]field{"min": {set: bound(&rg.Min)}, "max": {set: bound(&rg.Max)}}
	if r.whole {
		fs["count"] = field{set: func(n *yaml.Node, path string) error {
			if err := bound(&rg.Min)(n, path); err != nil {
				return err
			}
			rg.Max = rg.Min
			return nil
		}}
	}
	return fs
}

// rangeValue decodes a Range on its own: {min, max, count}, or for whole
// numbers a plain number (exactly).
func (d *decoder) rangeValue(n *yaml.Node, path string, rg *Range, r rules) error {
	fields := d.rangeFields(rg, r)
	if n.Kind == yaml.ScalarNode && r.whole {
		return fields["count"].set(n, path)
	}
	if _, err := d.keys(n, path, fields); err != nil {
		return err
	}
	if msg := rangeProblem(*rg, r); msg != "" {
		return d.errf(n, path, "%s", msg)
	}
	return nil
}

// rangeProblem is what is wrong with a decoded Range ("": nothing).
func rangeProblem(rg Range, r rules) string {
	if r.bound && rg.Min == nil && rg.Max == nil {
		return "want min, max or count"
	}
	if rg.Min != nil && rg.Max != nil && *rg.Min > *rg.Max {
		return fmt.Sprintf("min %s is more than max %s", num(*rg.Min), num(*rg.Max))
	}
	return ""
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	}
	if n.Tag == "!!null" {
		return "nothing"
	}
	return fmt.Sprintf("%q", n.Value)
}
