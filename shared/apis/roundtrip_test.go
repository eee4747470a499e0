package apis

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

func roundTripSources(t *testing.T) []string {
	files := exampleFiles(t)
	return append(files, filepath.Join("testdata", "kubectl-get.yaml"), filepath.Join("testdata", "full.yaml"))
}

// Decode, encode (as JSON and as YAML), decode again: the objects are equal.
func TestRoundTrip(t *testing.T) {
	for _, path := range roundTripSources(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			first, err := LoadFiles(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, format := range []string{"json", "yaml"} {
				var docs []string
				for _, obj := range objectsOf(first) {
					docs = append(docs, encode(t, obj, format))
				}
				sep := "\n"
				if format == "yaml" {
					sep = "---\n"
				}
				second, err := Parse([]byte(strings.Join(docs, sep)), "roundtrip."+format)
				if err != nil {
					t.Fatalf("%s: %v\n%s", format, err, strings.Join(docs, sep))
				}
				if a, b := objectsOf(first), objectsOf(second); !equalValues(a, b) {
					t.Errorf("%s round trip changed the objects:\n%s\n---\n%s", format, encode(t, a, "yaml"), encode(t, b, "yaml"))
				}
			}
		})
	}
}

func objectsOf(c *Config) []any {
	var out []any
	for _, np := range c.NodePools {
		out = append(out, np)
	}
	for _, nc := range c.NodeClasses {
		out = append(out, nc)
	}
	return out
}

func encode(t *testing.T, v any, format string) string {
	t.Helper()
	var b []byte
	var err error
	if format == "yaml" {
		b, err = yaml.Marshal(v)
	} else {
		b, err = json.Marshal(v)
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// full.yaml sets every spec field the types have (bar the listed ones), so a
// field Karpenter documents but the types miss would fail its strict decode,
// and a field the types have but full.yaml misses fails here.
func TestFullExampleSetsEveryField(t *testing.T) {
	c, err := LoadFiles(filepath.Join("testdata", "full.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Validate(); err != nil {
		t.Fatal(err)
	}
	notSet := map[string]bool{
		// Refused (SupportTable): TestRefusalsNameTheField sets them.
		"Spec.Replicas":                                 true,
		"Spec.InstanceProfile":                          true,
		"Spec.CapacityReservationSelectorTerms":         true,
		"Spec.Template.ObjectMeta.Annotations":          true,
		"Spec.AMISelectorTerms[*].Alias":                true, // an alias must be the only term
		"Spec.EnclaveOptions":                           true,
		"Spec.PlacementGroupSelector.ID":                true, // name and id are exclusive; full.yaml names it
		"Spec.Template.Spec.Taints[*].TimeAdded":        true,
		"Spec.Template.Spec.StartupTaints[*].TimeAdded": true,
	}
	var missing []string
	for _, obj := range []any{c.NodePools[0].Spec, c.NodeClasses[0].Spec} {
		for p := range zeroPaths(reflect.ValueOf(obj), "Spec") {
			if !notSet[p] {
				missing = append(missing, p)
			}
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("full.yaml leaves fields unset: %s", strings.Join(missing, ", "))
	}
	raw, err := os.ReadFile(filepath.Join("testdata", "full.yaml"))
	if err != nil || !strings.Contains(string(raw), "instanceStorePolicy") {
		t.Fatal("full.yaml is the file this test means")
	}
}

// zeroPaths returns the paths of v's unset fields; a field of a list's items
// counts as set when any item sets it.
func zeroPaths(v reflect.Value, path string) map[string]bool {
	ours := func(t reflect.Type) bool {
		return t.PkgPath() == reflect.TypeOf(NodePool{}).PkgPath() && t != nillableDurationType || t.Name() == "Taint"
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			return map[string]bool{path: true}
		}
		if v.Elem().Kind() == reflect.Struct && ours(v.Elem().Type()) {
			return zeroPaths(v.Elem(), path)
		}
		return nil
	case reflect.Struct:
		if !ours(v.Type()) {
			if v.IsZero() {
				return map[string]bool{path: true}
			}
			return nil
		}
		out := map[string]bool{}
		for i := 0; i < v.NumField(); i++ {
			for p := range zeroPaths(v.Field(i), path+"."+v.Type().Field(i).Name) {
				out[p] = true
			}
		}
		return out
	case reflect.Slice:
		if v.Len() == 0 {
			return map[string]bool{path: true}
		}
		common := zeroPaths(v.Index(0), path+"[*]")
		for i := 1; i < v.Len(); i++ {
			next := zeroPaths(v.Index(i), path+"[*]")
			for p := range common {
				if !next[p] {
					delete(common, p)
				}
			}
		}
		return common
	default:
		if v.IsZero() {
			return map[string]bool{path: true}
		}
		return nil
	}
}
