// Package crdgen generates the CustomResourceDefinitions of NodePool
// (karpenter.sh/v1), EC2NodeClass (karpenter.k8s.aws/v1) and NodeOverlay
// (karpenter.sh/v1alpha1) from Nodewright's
// own API types (shared/apis) with controller-tools' schema generator, the
// library Karpenter's CRDs come from.
//
// The CRDs must let a cluster that already runs Karpenter keep Karpenter's:
// same group, version, kind, plural, scope, categories and short names, and
// a structural schema that accepts every object Karpenter's schema accepts.
// So the generated schema carries types and structure only: no required
// fields, no enums, no patterns and no defaults (Nodewright applies
// Karpenter's defaults and validation itself when it reads an object, and
// reports an invalid one by name and field path), and status keeps fields it
// does not know (Karpenter writes some that Nodewright's types lack). Spec
// keeps unknown fields too, so that nothing is pruned silently: compared with
// Karpenter v1's CRDs (aws/karpenter-provider-aws, pkg/apis/crds, read for
// this), every property of theirs is here with the same type, or an
// int-or-string where theirs is a string, except the EC2NodeClass fields newer
// than Nodewright's types (cpuOptions, connectionTracking,
// networkInterfaces, placementGroupSelector), which are stored whole and
// reported by Nodewright's reader as unknown fields.
package crdgen

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"golang.org/x/tools/go/packages"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-tools/pkg/crd"
	crdmarkers "sigs.k8s.io/controller-tools/pkg/crd/markers"
	"sigs.k8s.io/controller-tools/pkg/loader"
	"sigs.k8s.io/controller-tools/pkg/markers"
	"sigs.k8s.io/yaml"
)

// APIPackage is the Go package of the types.
const APIPackage = "github.com/nodewright/nodewright/shared/apis"

// kind is one CRD to generate.
type kind struct {
	group, kind, plural, singular, file string
	version                             string // "" is v1
	shortNames                          []string
	columns                             []apiextv1.CustomResourceColumnDefinition
	scale                               bool
}

var kinds = []kind{
	{
		group: "karpenter.sh", kind: "NodePool", plural: "nodepools", singular: "nodepool", file: "karpenter.sh_nodepools.yaml",
		columns: []apiextv1.CustomResourceColumnDefinition{
			{Name: "NodeClass", Type: "string", JSONPath: ".spec.template.spec.nodeClassRef.name"},
			{Name: "Nodes", Type: "string", JSONPath: ".status.nodes"},
			{Name: "Ready", Type: "string", JSONPath: `.status.conditions[?(@.type=="Ready")].status`},
			{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
			{Name: "Weight", Type: "integer", JSONPath: ".spec.weight", Priority: 1},
		},
		scale: true,
	},
	{
		group: "karpenter.k8s.aws", kind: "EC2NodeClass", plural: "ec2nodeclasses", singular: "ec2nodeclass",
		file: "karpenter.k8s.aws_ec2nodeclasses.yaml", shortNames: []string{"ec2nc", "ec2ncs"},
		columns: []apiextv1.CustomResourceColumnDefinition{
			{Name: "Ready", Type: "string", JSONPath: `.status.conditions[?(@.type=="Ready")].status`},
			{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
			{Name: "Role", Type: "string", JSONPath: ".spec.role", Priority: 1},
		},
	},
	{
		group: "karpenter.sh", kind: "NodeOverlay", plural: "nodeoverlays", singular: "nodeoverlay", version: "v1alpha1",
		file: "karpenter.sh_nodeoverlays.yaml", shortNames: []string{"overlays"},
		columns: []apiextv1.CustomResourceColumnDefinition{
			{Name: "Ready", Type: "string", JSONPath: `.status.conditions[?(@.type=="Ready")].status`},
			{Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp"},
			{Name: "Weight", Type: "integer", JSONPath: ".spec.weight", Priority: 1},
		},
	},
}

// Generate loads the API package and returns each CRD's file name and YAML.
func Generate() (map[string][]byte, error) {
	pkgs, err := loader.LoadRoots(APIPackage)
	if err != nil {
		return nil, fmt.Errorf("load %s: %w", APIPackage, err)
	}
	if len(pkgs) != 1 {
		return nil, fmt.Errorf("load %s: %d packages", APIPackage, len(pkgs))
	}
	pkg := pkgs[0]
	reg := &markers.Registry{}
	if err := crdmarkers.Register(reg); err != nil {
		return nil, err
	}
	p := &crd.Parser{Collector: &markers.Collector{Registry: reg}, Checker: &loader.TypeChecker{}}
	crd.AddKnownTypes(p)
	p.PackageOverrides[APIPackage] = func(p *crd.Parser, pkg *loader.Package) {
		p.AddPackage(pkg)
		// "720h", "Never": a string with its own JSON form.
		p.Schemata[crd.TypeIdent{Package: pkg, Name: "NillableDuration"}] = apiextv1.JSONSchemaProps{Type: "string"}
	}
	out := map[string][]byte{}
	for _, k := range kinds {
		ident := crd.TypeIdent{Package: pkg, Name: k.kind}
		p.NeedFlattenedSchemaFor(ident)
		// controller-tools' checker resolves only what type declarations
		// need, so function bodies that use other imports (budget.go's
		// math and cron) come back as "undefined" errors that do not touch
		// a schema; anything else is fatal.
		if errs := schemaErrors(pkg); errs != nil {
			return nil, errs
		}
		schema := p.FlattenedSchemata[ident]
		loosen(&schema)
		for _, part := range []string{"spec", "status"} {
			sub := schema.Properties[part]
			keepUnknown(&sub)
			schema.Properties[part] = sub
		}
		b, err := render(k, schema)
		if err != nil {
			return nil, err
		}
		out[k.file] = b
	}
	b, err := nodeClaim()
	if err != nil {
		return nil, err
	}
	out[NodeClaimFile] = b
	return out, nil
}

func schemaErrors(pkg *loader.Package) error {
	var errs []error
	for _, e := range pkg.Errors {
		if e.Kind == packages.TypeError && strings.HasPrefix(e.Msg, "undefined: ") && !strings.Contains(e.Msg, ".") {
			continue
		}
		errs = append(errs, e)
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%s: %v", pkg.PkgPath, errors.Join(errs...))
}

// loosen drops what could make the schema refuse an object Karpenter's
// accepts: required lists, enums, patterns, formats and bounds. Quantities
// keep their int-or-string form (structural schemas need it).
func loosen(s *apiextv1.JSONSchemaProps) {
	s.Required = nil
	s.Enum = nil
	s.Pattern = ""
	s.Format = ""
	s.MaxLength, s.MinLength, s.MaxItems, s.MinItems, s.MaxProperties, s.MinProperties = nil, nil, nil, nil, nil, nil
	s.Maximum, s.Minimum = nil, nil
	s.XValidations = nil
	s.XListType, s.XListMapKeys = nil, nil
	s.Description = ""
	for k, v := range s.Properties {
		loosen(&v)
		s.Properties[k] = v
	}
	if s.Items != nil && s.Items.Schema != nil {
		loosen(s.Items.Schema)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		loosen(s.AdditionalProperties.Schema)
	}
	for i := range s.AnyOf {
		loosen(&s.AnyOf[i])
	}
}

// keepUnknown marks every object of the tree to keep fields the schema does
// not list, rather than prune them silently: an EC2NodeClass written for a
// newer Karpenter (cpuOptions, say) is stored whole, and Nodewright's reader
// reports the field it does not know by its path.
func keepUnknown(s *apiextv1.JSONSchemaProps) {
	if s.Type == "object" && len(s.Properties) > 0 {
		s.XPreserveUnknownFields = ptr(true)
	}
	for k, v := range s.Properties {
		keepUnknown(&v)
		s.Properties[k] = v
	}
	if s.Items != nil && s.Items.Schema != nil {
		keepUnknown(s.Items.Schema)
	}
	if s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil {
		keepUnknown(s.AdditionalProperties.Schema)
	}
}

func render(k kind, schema apiextv1.JSONSchemaProps) ([]byte, error) {
	name := k.version
	if name == "" {
		name = "v1"
	}
	version := apiextv1.CustomResourceDefinitionVersion{
		Name: name, Served: true, Storage: true,
		Schema:                   &apiextv1.CustomResourceValidation{OpenAPIV3Schema: &schema},
		Subresources:             &apiextv1.CustomResourceSubresources{Status: &apiextv1.CustomResourceSubresourceStatus{}},
		AdditionalPrinterColumns: k.columns,
	}
	if k.scale {
		version.Subresources.Scale = &apiextv1.CustomResourceSubresourceScale{SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.nodes"}
	}
	def := apiextv1.CustomResourceDefinition{
		TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: k.plural + "." + k.group, Annotations: map[string]string{
			"nodewright.io/generated-from": APIPackage + "." + k.kind,
		}},
		Spec: apiextv1.CustomResourceDefinitionSpec{
			Group: k.group,
			Names: apiextv1.CustomResourceDefinitionNames{
				Kind: k.kind, ListKind: k.kind + "List", Plural: k.plural, Singular: k.singular,
				ShortNames: k.shortNames, Categories: []string{"karpenter"},
			},
			Scope:    apiextv1.ClusterScoped,
			Versions: []apiextv1.CustomResourceDefinitionVersion{version},
		},
	}
	b, err := yaml.Marshal(def)
	if err != nil {
		return nil, fmt.Errorf("render %s: %w", k.file, err)
	}
	return append([]byte("# Generated by shared/apis/internal/crdgen from Nodewright's API types: do not edit (make generate).\n"), b...), nil
}

// Files lists the generated file names in order.
func Files() []string {
	out := []string{NodeClaimFile}
	for _, k := range kinds {
		out = append(out, k.file)
	}
	sort.Strings(out)
	return out
}

func ptr[T any](v T) *T { return &v }
