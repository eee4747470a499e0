package scenario

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"
)

// recorder is a Player that records the methods called.
type recorder struct{ called []string }

func (r *recorder) add(m string) error                           { r.called = append(r.called, m); return nil }
func (r *recorder) Scale(context.Context, *Scale) error          { return r.add("Scale") }
func (r *recorder) Apply(context.Context, string) error          { return r.add("Apply") }
func (r *recorder) Delete(context.Context, *Delete) error        { return r.add("Delete") }
func (r *recorder) WaitFor(context.Context, *WaitFor) error      { return r.add("WaitFor") }
func (r *recorder) Interrupt(context.Context, *Interrupt) error  { return r.add("Interrupt") }
func (r *recorder) Capacity(context.Context, *Capacity) error    { return r.add("Capacity") }
func (r *recorder) Advance(context.Context, time.Duration) error { return r.add("Advance") }
func (r *recorder) Sleep(context.Context, time.Duration) error   { return r.add("Sleep") }

// TestStepKindsTable: the table, Step's fields and Player's methods name
// the same kinds, and each parsed step plays through its own method.
func TestStepKindsTable(t *testing.T) {
	var fields []string
	st := reflect.TypeOf(Step{})
	for i := range st.NumField() {
		if tag := st.Field(i).Tag.Get("yaml"); tag != "-" {
			fields = append(fields, tag)
		}
	}
	var methods []string
	pt := reflect.TypeOf((*Player)(nil)).Elem()
	for i := range pt.NumMethod() {
		methods = append(methods, strings.ToLower(pt.Method(i).Name[:1])+pt.Method(i).Name[1:])
	}
	kinds := slices.Sorted(slices.Values(StepKinds))
	if !slices.Equal(slices.Sorted(slices.Values(fields)), kinds) || !slices.Equal(slices.Sorted(slices.Values(methods)), kinds) {
		t.Fatalf("kinds %v, Step fields %v, Player methods %v: want the same", kinds, fields, methods)
	}
	s, err := Parse("s.yaml", []byte(full))
	if err != nil {
		t.Fatal(err)
	}
	r := &recorder{}
	for _, step := range s.Steps {
		if err := step.Play(context.Background(), r); err != nil {
			t.Fatal(err)
		}
	}
	for i, step := range s.Steps {
		if want := strings.ToUpper(step.Kind[:1]) + step.Kind[1:]; r.called[i] != want {
			t.Errorf("step %d (%s) played %s", i, step.Kind, r.called[i])
		}
	}
	if err := (Step{Kind: "bogus"}).Play(context.Background(), r); err == nil || !strings.Contains(err.Error(), `unknown step "bogus" (known: scale, apply`) {
		t.Errorf("unknown kind: %v", err)
	}
}

// TestCheckTags: every check tag of the file's types names known rules
// (parseRules panics on a typo), and every default decodes.
func TestCheckTags(t *testing.T) {
	seen := map[reflect.Type]bool{}
	var walk func(reflect.Type)
	walk = func(typ reflect.Type) {
		for typ.Kind() == reflect.Pointer || typ.Kind() == reflect.Slice {
			typ = typ.Elem()
		}
		if typ.Kind() != reflect.Struct || seen[typ] || typ.PkgPath() != reflect.TypeOf(Step{}).PkgPath() {
			return
		}
		seen[typ] = true
		for i := range typ.NumField() {
			f := typ.Field(i)
			r := parseRules(f.Tag.Get("check"))
			if r.def != "" {
				v := reflect.New(f.Type).Elem()
				d := &decoder{file: "s.yaml", dir: "/"}
				if err := d.value(&yaml.Node{Kind: yaml.ScalarNode, Value: r.def}, f.Name, v, r); err != nil {
					t.Errorf("%s.%s: default %q: %v", typ.Name(), f.Name, r.def, err)
				}
			}
			walk(f.Type)
		}
	}
	walk(reflect.TypeOf(Scenario{}))
	if len(seen) < 10 {
		t.Errorf("walked %d types", len(seen))
	}
}
