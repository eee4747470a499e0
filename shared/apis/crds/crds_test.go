package crds

import (
	"bytes"
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/apis/internal/crdgen"
)

func TestGeneratedCRDsAreUpToDate(t *testing.T) {
	want, err := crdgen.Generate()
	if err != nil {
		t.Fatal(err)
	}
	got := Files()
	if len(got) != len(want) {
		t.Fatalf("committed %v, generator makes %v", Names(), crdgen.Files())
	}
	for name, b := range want {
		if !bytes.Equal(got[name], b) {
			t.Errorf("%s is stale: run `make generate` and commit the result", name)
		}
	}
}

func load(t *testing.T, name string) *apiextv1.CustomResourceDefinition {
	t.Helper()
	crd := &apiextv1.CustomResourceDefinition{}
	if err := yaml.UnmarshalStrict(Files()[name], crd); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return crd
}

// The names a cluster that runs Karpenter already serves: same group,
// version, kind, plural, scope and short names, or kubectl and Karpenter's
// users would see another API.
func TestNamesMatchKarpenters(t *testing.T) {
	for _, c := range []struct {
		file, group, kind, plural string
		short                     []string
		version                   string
	}{
		{"karpenter.sh_nodepools.yaml", apis.KarpenterGroup, apis.NodePoolKind, "nodepools", nil, apis.Version},
		{"karpenter.k8s.aws_ec2nodeclasses.yaml", apis.AWSGroup, apis.EC2NodeClassKind, "ec2nodeclasses", []string{"ec2nc", "ec2ncs"}, apis.Version},
		{"karpenter.sh_nodeoverlays.yaml", apis.KarpenterGroup, apis.NodeOverlayKind, "nodeoverlays", []string{"overlays"}, "v1alpha1"},
	} {
		crd := load(t, c.file)
		s := crd.Spec
		if crd.Name != c.plural+"."+c.group || s.Group != c.group || s.Names.Kind != c.kind || s.Names.Plural != c.plural ||
			s.Scope != apiextv1.ClusterScoped || !reflect.DeepEqual(s.Names.ShortNames, c.short) || len(s.Versions) != 1 ||
			s.Versions[0].Name != c.version || !s.Versions[0].Served || !s.Versions[0].Storage || s.Versions[0].Subresources.Status == nil {
			t.Errorf("%s: %+v", c.file, crd)
		}
	}
}

// Every field of the Go types is in the schema, with no required list, so
// the API server keeps every field Nodewright reads and refuses nothing
// Karpenter's schema accepts; status keeps unknown fields.
func TestSchemaCoversTheGoTypes(t *testing.T) {
	for file, typ := range map[string]reflect.Type{
		"karpenter.sh_nodepools.yaml":           reflect.TypeOf(apis.NodePool{}),
		"karpenter.k8s.aws_ec2nodeclasses.yaml": reflect.TypeOf(apis.EC2NodeClass{}),
	} {
		schema := load(t, file).Spec.Versions[0].Schema.OpenAPIV3Schema
		var missing []string
		walk(typ, schema, "", map[reflect.Type]bool{}, &missing)
		sort.Strings(missing)
		if len(missing) > 0 {
			t.Errorf("%s lacks %s", file, strings.Join(missing, ", "))
		}
		for _, part := range []string{"spec", "status"} {
			if st := schema.Properties[part]; st.XPreserveUnknownFields == nil || !*st.XPreserveUnknownFields {
				t.Errorf("%s: %s does not keep unknown fields", file, part)
			}
		}
		raw, _ := json.Marshal(schema)
		if strings.Contains(string(raw), `"required"`) {
			t.Errorf("%s: the schema requires fields", file)
		}
	}
}

// walk checks that every JSON field of t has a property in s.
func walk(t reflect.Type, s *apiextv1.JSONSchemaProps, path string, seen map[reflect.Type]bool, missing *[]string) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
		if s.Items != nil && s.Items.Schema != nil {
			s = s.Items.Schema
		}
	}
	if t.Kind() != reflect.Struct || seen[t] || t.PkgPath() != reflect.TypeOf(apis.NodePool{}).PkgPath() {
		return
	}
	seen[t] = true
	defer delete(seen, t)
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		p, ok := s.Properties[name]
		if !ok {
			*missing = append(*missing, path+name)
			continue
		}
		walk(f.Type, &p, path+name+".", seen, missing)
	}
}
