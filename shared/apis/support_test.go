package apis

import (
	"encoding/json"
	"flag"
	"fmt"
	"go/ast"
	goparser "go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	awsapis "github.com/aws/karpenter-provider-aws/pkg/apis"
	coreapis "sigs.k8s.io/karpenter/pkg/apis"
)

var updateParity = flag.Bool("update-parity", false, "rewrite the field table of docs/karpenter-parity.md from SupportTable")

// repoRoot is the module's root, from this package's directory.
const repoRoot = "../.."

// schemaField is one field of a published schema: its path (as SupportTable
// writes it), its schema, and whether it holds other fields.
type schemaField struct {
	path      string
	schema    apiextv1.JSONSchemaProps
	container bool
}

// karpenterSchemas reads the spec schemas of Karpenter's published CRDs
// (from the modules go.mod pins) by kind, with the apiVersion they are read at.
func karpenterSchemas(t *testing.T) map[string]struct {
	apiVersion string
	fields     map[string]schemaField
} {
	t.Helper()
	out := map[string]struct {
		apiVersion string
		fields     map[string]schemaField
	}{}
	for _, c := range []struct {
		kind, version string
		crd           []byte
	}{
		{NodePoolKind, "v1", coreapis.NodePoolCRD},
		{EC2NodeClassKind, "v1", awsapis.EC2NodeClassCRD},
		{NodeOverlayKind, "v1alpha1", coreapis.NodeOverlayCRD},
	} {
		crd := &apiextv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(c.crd, crd); err != nil {
			t.Fatalf("Karpenter's %s CRD: %v", c.kind, err)
		}
		var spec *apiextv1.JSONSchemaProps
		for _, v := range crd.Spec.Versions {
			if v.Name == c.version {
				s := v.Schema.OpenAPIV3Schema.Properties["spec"]
				spec = &s
			}
		}
		if spec == nil || len(spec.Properties) == 0 {
			t.Fatalf("Karpenter's %s CRD has no %s spec schema", c.kind, c.version)
		}
		fields := map[string]schemaField{}
		walkSchema("spec", *spec, fields)
		out[c.kind] = struct {
			apiVersion string
			fields     map[string]schemaField
		}{crd.Spec.Group + "/" + c.version, fields}
	}
	return out
}

// walkSchema records the fields under s (at path): an object's properties,
// a list's items' properties (path[]); maps and lists of plain values are
// fields of their own.
func walkSchema(path string, s apiextv1.JSONSchemaProps, out map[string]schemaField) {
	item := s
	list := s.Type == "array" && s.Items != nil && s.Items.Schema != nil
	if list {
		item = *s.Items.Schema
	}
	for name, child := range item.Properties {
		p := path
		if list {
			p += "[]"
		}
		p += "." + name
		inner := child
		if child.Type == "array" && child.Items != nil && child.Items.Schema != nil {
			inner = *child.Items.Schema
		}
		out[p] = schemaField{path: p, schema: child, container: len(inner.Properties) > 0}
		walkSchema(p, child, out)
	}
}

// enumOf is the values a field's schema allows (for a list, its items'),
// or nil.
func enumOf(s apiextv1.JSONSchemaProps) []string {
	if s.Type == "array" && s.Items != nil && s.Items.Schema != nil {
		s = *s.Items.Schema
	}
	var out []string
	for _, e := range s.Enum {
		var v string
		if json.Unmarshal(e.Raw, &v) == nil {
			out = append(out, v)
		}
	}
	return out
}

// refusedAbove reports a refused row of kind for an ancestor of path.
func refusedAbove(kind, path string) bool {
	for _, s := range SupportTable {
		if s.Kind == kind && s.Value == "" && !s.Honoured() &&
			(strings.HasPrefix(path, s.Path+".") || strings.HasPrefix(path, s.Path+"[]")) {
			return true
		}
	}
	return false
}

// Every field of Karpenter's published schemas has a row (or sits under a
// refused one), every row names a field Karpenter has, and where the table
// classifies a field's values it classifies each value the schema allows.
func TestSupportTableCoversKarpentersSchemas(t *testing.T) {
	schemas := karpenterSchemas(t)
	rows := map[string][]Support{}
	for _, s := range SupportTable {
		k := s.Kind + " " + s.Path
		if slices.ContainsFunc(rows[k], func(o Support) bool { return o.Value == s.Value }) {
			t.Errorf("%s %s %q: two rows", s.Kind, s.Path, s.Value)
		}
		rows[k] = append(rows[k], s)
		if (s.Fix == "") == (s.Test == "") {
			t.Errorf("%s %s %q: a row has either a fix (refused) or a test (honoured)", s.Kind, s.Path, s.Value)
		}
		f, ok := schemas[s.Kind].fields[s.Path]
		switch {
		case !ok:
			t.Errorf("%s %s: Karpenter's %s has no such field", s.Kind, s.Path, s.Kind)
		case f.container && (s.Honoured() || s.Value != ""):
			t.Errorf("%s %s: a field holding others is refused whole or classified field by field", s.Kind, s.Path)
		case s.Value != "" && len(enumOf(f.schema)) > 0 && !slices.Contains(enumOf(f.schema), s.Value):
			t.Errorf("%s %s: %q is not one of Karpenter's values %v", s.Kind, s.Path, s.Value, enumOf(f.schema))
		}
	}
	covered := 0
	for kind, sc := range schemas {
		for path, f := range sc.fields {
			if refusedAbove(kind, path) {
				covered++
				continue
			}
			own := rows[kind+" "+path]
			if f.container {
				if len(own) > 0 {
					covered++
				}
				continue // its fields are checked one by one
			}
			if len(own) == 0 {
				t.Errorf("%s %s: not in SupportTable (honoured, with a test, or refused, with what to do)", kind, path)
				continue
			}
			covered++
			if !slices.ContainsFunc(own, func(s Support) bool { return s.Value != "" }) {
				continue
			}
			for _, v := range enumOf(f.schema) {
				if !slices.ContainsFunc(own, func(s Support) bool { return s.Value == v }) {
					t.Errorf("%s %s: value %q is not in SupportTable", kind, path, v)
				}
			}
		}
	}
	if covered < 90 {
		t.Errorf("only %d fields covered: the schema walk is broken", covered)
	}
}

// minimalDocument is a valid document of kind, as JSON-shaped values.
func minimalDocument(kind, apiVersion string) map[string]any {
	doc := map[string]any{"apiVersion": apiVersion, "kind": kind, "metadata": map[string]any{"name": "default"}}
	switch kind {
	case NodePoolKind:
		doc["spec"] = map[string]any{"template": map[string]any{"spec": map[string]any{
			"requirements": []any{},
			"nodeClassRef": map[string]any{"group": AWSGroup, "kind": EC2NodeClassKind, "name": "default"},
		}}}
	case EC2NodeClassKind:
		tags := map[string]any{"karpenter.sh/discovery": "test"}
		doc["spec"] = map[string]any{
			"role":                       "KarpenterNodeRole-test",
			"amiSelectorTerms":           []any{map[string]any{"alias": "al2023@latest"}},
			"subnetSelectorTerms":        []any{map[string]any{"tags": tags}},
			"securityGroupSelectorTerms": []any{map[string]any{"tags": tags}},
		}
	default:
		doc["spec"] = map[string]any{}
	}
	return doc
}

// sample is a value that sets a field of schema s.
func sample(s apiextv1.JSONSchemaProps) any {
	if e := enumOf(apiextv1.JSONSchemaProps{Enum: s.Enum}); len(e) > 0 {
		return e[0]
	}
	switch s.Type {
	case "array":
		if s.Items != nil && s.Items.Schema != nil {
			return []any{sample(*s.Items.Schema)}
		}
		return []any{"1"}
	case "object":
		if len(s.Properties) > 0 {
			names := make([]string, 0, len(s.Properties))
			for n := range s.Properties {
				names = append(names, n)
			}
			sort.Strings(names)
			return map[string]any{names[0]: sample(s.Properties[names[0]])}
		}
		if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
			return map[string]any{"example.com/a": sample(*s.AdditionalProperties.Schema)}
		}
		return map[string]any{"example.com/a": "1"}
	case "integer", "number":
		return 1
	case "boolean":
		return true
	}
	return "1"
}

// set puts v at path (the table's form) in doc, making the objects and
// one-item lists on the way, and returns the path with list indexes.
func set(doc map[string]any, path string, v any) string {
	cur := doc
	parts := strings.Split(path, ".")
	var concrete []string
	for i, p := range parts {
		name, list := strings.CutSuffix(p, "[]")
		last := i == len(parts)-1
		if list {
			concrete = append(concrete, name+"[0]")
		} else {
			concrete = append(concrete, name)
		}
		switch {
		case last:
			cur[name] = v
		case list:
			item := map[string]any{}
			cur[name] = []any{item}
			cur = item
		default:
			next, ok := cur[name].(map[string]any)
			if !ok {
				next = map[string]any{}
				cur[name] = next
			}
			cur = next
		}
	}
	return strings.Join(concrete, ".")
}

// documentSetting is a minimal document of kind with the row's field (or
// value) set, and the path the refusal must name.
func documentSetting(t *testing.T, s Support, apiVersion string, f schemaField) ([]byte, string) {
	doc := minimalDocument(s.Kind, apiVersion)
	var path string
	switch {
	case s.Path == "spec.template.spec.requirements[].values" && s.Value != "":
		key, value, _ := strings.Cut(s.Value, "=")
		path = set(doc, "spec.template.spec.requirements[].key", key)
		reqs := doc["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["requirements"].([]any)
		reqs[0].(map[string]any)["operator"] = "In"
		reqs[0].(map[string]any)["values"] = []any{value}
		path = strings.TrimSuffix(path, ".key") + ".values"
	case s.Kind == NodeOverlayKind && s.Path == "spec.requirements[].operator":
		path = set(doc, s.Path, s.Value)
		req := doc["spec"].(map[string]any)["requirements"].([]any)[0].(map[string]any)
		req["key"] = LabelInstanceCPU
		switch s.Value {
		case "In", "NotIn", "Gt", "Lt", "Gte", "Lte":
			req["values"] = []any{"4"}
		}
	case s.Path == "spec.amiSelectorTerms[].alias" && s.Value != "":
		path = set(doc, s.Path, s.Value+"@latest")
	case s.Path == "spec.amiFamily" && s.Value != "":
		// A family is named beside images selected by id (an alias names
		// its own family).
		path = set(doc, s.Path, s.Value)
		doc["spec"].(map[string]any)["amiSelectorTerms"] = []any{map[string]any{"id": "ami-0123456789abcdef0"}}
	case s.Value != "":
		path = set(doc, s.Path, s.Value)
	default:
		path = set(doc, s.Path, sample(f.schema))
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return b, path
}

// Each refused field or value, set in an otherwise valid document, is
// refused by the loader with its path and what to do; each honoured one
// is not.
func TestRefusalsNameTheField(t *testing.T) {
	schemas := karpenterSchemas(t)
	for _, s := range SupportTable {
		sc := schemas[s.Kind]
		data, path := documentSetting(t, s, sc.apiVersion, sc.fields[s.Path])
		name := strings.TrimSpace(s.Kind + " " + s.Path + " " + s.Value)
		t.Run(name, func(t *testing.T) {
			_, err := Parse(data, "refuse.json")
			if s.Honoured() {
				if got := Refusals(s.Kind, data); len(got) > 0 {
					t.Errorf("honoured, yet refused: %v", got)
				}
				if s.Value != "" && err != nil && s.Kind != NodePoolKind {
					t.Errorf("an honoured value does not load: %v\n%s", err, data)
				}
				return
			}
			want := path + ": "
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), s.Fix) {
				t.Errorf("got %v\nwant a line with %q and %q\n%s", err, want, s.Fix, data)
			}
		})
	}
}

// Karpenter's kinds Nodewright does not read are refused, not skipped.
func TestKarpenterKindsNotReadAreRefused(t *testing.T) {
	cases := []struct{ name, doc, want string }{
		{"NodeClaim", "apiVersion: karpenter.sh/v1\nkind: NodeClaim\nmetadata: {name: c}\nspec: {}\n",
			"test.yaml: document 1 (NodeClaim c): kind: NodeClaim (karpenter.sh/v1) is not configuration Nodewright reads (it reads NodePool karpenter.sh/v1 and EC2NodeClass karpenter.k8s.aws/v1): remove the document"},
		{"NodeOverlay v1", "apiVersion: karpenter.sh/v1\nkind: NodeOverlay\nmetadata: {name: o}\nspec: {}\n",
			`test.yaml: document 1 (NodeOverlay o): apiVersion: "karpenter.sh/v1" is not supported: Nodewright reads karpenter.sh/v1alpha1`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.doc), "test.yaml")
			if err == nil || err.Error() != tc.want {
				t.Fatalf("got %v\nwant %s", err, tc.want)
			}
			if len(c.Other) != 0 {
				t.Errorf("the document is also kept: %+v", c.Other)
			}
		})
	}
}

// A NodePool built in code is refused by Config.Validate as a loaded one is.
func TestValidateRefusesBuiltObjects(t *testing.T) {
	np := &NodePool{}
	np.Name = "built"
	np.Spec.Template.Spec.NodeClassRef = &NodeClassReference{Group: AWSGroup, Kind: EC2NodeClassKind, Name: "x"}
	np.Spec.Template.Spec.Requirements = []NodeSelectorRequirementWithMinValues{{Key: LabelCapacityType, Operator: "In", Values: []string{"on-demand", "reserved"}}}
	np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "team", Value: "ml", Effect: corev1.TaintEffectNoSchedule, TimeAdded: &metav1.Time{Time: time.Unix(1e9, 0)}}}
	replicas := int64(3)
	np.Spec.Replicas = &replicas
	err := np.Validate()
	want := `spec.template.spec.taints[0].timeAdded: timeAdded is set by Kubernetes when a taint lands on a node; remove it`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
}

// Each honoured row names a test that exists: a function of that name in
// the _test.go files of the named directory. A test whose cases are named
// by field path (string literals starting "spec.") must have a case for
// each row that names it ("path", or "path=value" for a value).
func TestSupportTableTestsExist(t *testing.T) {
	funcs := map[string]map[string][]string{} // dir -> test function -> its "spec." literals
	testsIn := func(dir string) map[string][]string {
		if m, ok := funcs[dir]; ok {
			return m
		}
		m := map[string][]string{}
		files, _ := filepath.Glob(filepath.Join(repoRoot, dir, "*_test.go"))
		fset := token.NewFileSet()
		for _, f := range files {
			file, err := goparser.ParseFile(fset, f, nil, goparser.SkipObjectResolution)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			for _, d := range file.Decls {
				if fn, ok := d.(*ast.FuncDecl); ok && fn.Recv == nil && strings.HasPrefix(fn.Name.Name, "Test") {
					m[fn.Name.Name] = specLiterals(fn)
				}
			}
		}
		funcs[dir] = m
		return m
	}
	for _, s := range SupportTable {
		if !s.Honoured() {
			continue
		}
		dir, name, ok := strings.Cut(s.Test, ".")
		cases, found := testsIn(dir)[name]
		if !ok || !found {
			t.Errorf("%s %s %s: test %q not found (want <dir>.<TestName> of a test asserting the field's effect)", s.Kind, s.Path, s.Value, s.Test)
			continue
		}
		want := s.Path
		if s.Value != "" {
			want += "=" + s.Value
		}
		if len(cases) > 0 && !slices.Contains(cases, want) {
			t.Errorf("%s: %s has cases by field path but none for %q", s.Test, name, want)
		}
	}
}

// specLiterals are the string literals of a function that start "spec."
// (the field paths its cases are named by).
func specLiterals(fn *ast.FuncDecl) []string {
	var out []string
	ast.Inspect(fn, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if v, err := strconv.Unquote(lit.Value); err == nil && strings.HasPrefix(v, "spec.") {
				out = append(out, v)
			}
		}
		return true
	})
	return out
}

// supportMarkdown is the field table of docs/karpenter-parity.md.
func supportMarkdown() string {
	var b strings.Builder
	b.WriteString(supportBegin + "\n")
	for _, kind := range []string{NodePoolKind, EC2NodeClassKind, NodeOverlayKind} {
		fmt.Fprintf(&b, "\n### %s\n\n| field | value | state | test, or what to do instead |\n|---|---|---|---|\n", kind)
		for _, s := range SupportTable {
			if s.Kind != kind {
				continue
			}
			value := ""
			if s.Value != "" {
				value = "`" + s.Value + "`"
			}
			if s.Honoured() {
				fmt.Fprintf(&b, "| `%s` | %s | honoured | `%s` |\n", s.Path, value, s.Test)
			} else {
				fmt.Fprintf(&b, "| `%s` | %s | refused | %s |\n", s.Path, value, s.Fix)
			}
		}
	}
	b.WriteString("\n" + supportEnd)
	return b.String()
}

const (
	supportBegin = "<!-- fields: generated from shared/apis SupportTable by TestParityPageListsEveryField -->"
	supportEnd   = "<!-- end of fields -->"
)

// docs/karpenter-parity.md lists every field and its state, as the table
// says (go test ./shared/apis -run TestParityPageListsEveryField
// -update-parity rewrites it).
func TestParityPageListsEveryField(t *testing.T) {
	page := filepath.Join(repoRoot, "docs", "karpenter-parity.md")
	raw, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	i, j := strings.Index(text, supportBegin), strings.Index(text, supportEnd)
	if i < 0 || j < i {
		t.Fatalf("%s has no field table between %q and %q", page, supportBegin, supportEnd)
	}
	want := supportMarkdown()
	if got := text[i : j+len(supportEnd)]; got != want {
		if *updateParity {
			if err := os.WriteFile(page, []byte(text[:i]+want+text[j+len(supportEnd):]), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		t.Errorf("%s's field table differs from SupportTable: run go test ./shared/apis -run TestParityPageListsEveryField -update-parity", page)
	}
}
