package crds

import (
	"reflect"
	"testing"

	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	awsapis "github.com/aws/karpenter-provider-aws/pkg/apis"
	coreapis "sigs.k8s.io/karpenter/pkg/apis"
)

// karpenterCRDs is Karpenter's published CRDs, from the modules go.mod pins
// (sigs.k8s.io/karpenter and aws/karpenter-provider-aws), by file name.
func karpenterCRDs(t *testing.T) map[string]*apiextv1.CustomResourceDefinition {
	t.Helper()
	out := map[string]*apiextv1.CustomResourceDefinition{}
	for name, b := range map[string][]byte{
		"karpenter.sh_nodepools.yaml":           coreapis.NodePoolCRD,
		"karpenter.sh_nodeclaims.yaml":          coreapis.NodeClaimCRD,
		"karpenter.sh_nodeoverlays.yaml":        coreapis.NodeOverlayCRD,
		"karpenter.k8s.aws_ec2nodeclasses.yaml": awsapis.EC2NodeClassCRD,
	} {
		crd := &apiextv1.CustomResourceDefinition{}
		if err := yaml.Unmarshal(b, crd); err != nil {
			t.Fatalf("Karpenter's %s: %v", name, err)
		}
		out[name] = crd
	}
	return out
}

// Each CRD Nodewright ships has the names, scope and versions of Karpenter's
// published one, read from the pinned module rather than written down here.
func TestNamesMatchKarpentersPublishedCRDs(t *testing.T) {
	theirs := karpenterCRDs(t)
	for _, name := range Names() {
		ours, want := load(t, name), theirs[name]
		if want == nil {
			t.Errorf("%s: Karpenter publishes no CRD of that name", name)
			continue
		}
		if ours.Name != want.Name || ours.Spec.Group != want.Spec.Group || ours.Spec.Scope != want.Spec.Scope ||
			!reflect.DeepEqual(ours.Spec.Names, want.Spec.Names) {
			t.Errorf("%s: names %+v scope %s, Karpenter's %+v scope %s", name, ours.Spec.Names, ours.Spec.Scope, want.Spec.Names, want.Spec.Scope)
		}
		var ov, wv []string
		for _, v := range ours.Spec.Versions {
			ov = append(ov, v.Name)
		}
		for _, v := range want.Spec.Versions {
			wv = append(wv, v.Name)
		}
		if !reflect.DeepEqual(ov, wv) {
			t.Errorf("%s: versions %v, Karpenter's %v", name, ov, wv)
		}
	}
}

// The NodeClaim CRD is generated from Karpenter's own Go types, so it is
// Karpenter's published one (names, printer columns, subresources, status
// schema) except for the validations Karpenter's build adds to the spec
// after generating it: there theirs may have a pattern, a length bound, an
// enum or a CEL rule ours lacks (ours accepts a superset: an enum of ours
// takes every value of theirs), and nothing else may differ.
func TestNodeClaimIsKarpentersPublishedCRD(t *testing.T) {
	const name = "karpenter.sh_nodeclaims.yaml"
	ours, theirs := load(t, name), karpenterCRDs(t)[name]
	if len(ours.Spec.Versions) != 1 || len(theirs.Spec.Versions) != 1 {
		t.Fatalf("versions: ours %d, theirs %d", len(ours.Spec.Versions), len(theirs.Spec.Versions))
	}
	ov, tv := ours.Spec.Versions[0], theirs.Spec.Versions[0]
	if !reflect.DeepEqual(ov.AdditionalPrinterColumns, tv.AdditionalPrinterColumns) {
		t.Errorf("printer columns %+v, Karpenter's %+v", ov.AdditionalPrinterColumns, tv.AdditionalPrinterColumns)
	}
	if !reflect.DeepEqual(ov.Subresources, tv.Subresources) {
		t.Errorf("subresources %+v, Karpenter's %+v", ov.Subresources, tv.Subresources)
	}
	os, ts := ov.Schema.OpenAPIV3Schema, tv.Schema.OpenAPIV3Schema
	if !reflect.DeepEqual(os.Properties["status"], ts.Properties["status"]) {
		t.Errorf("status schema differs from Karpenter's")
	}
	var diffs []string
	compareLooser(*os, *ts, "", &diffs)
	for _, d := range diffs {
		t.Error(d)
	}
}

// compareLooser reports where ours differs from theirs other than by
// lacking a validation theirs has.
func compareLooser(ours, theirs apiextv1.JSONSchemaProps, path string, diffs *[]string) {
	if ours.Pattern != "" && ours.Pattern != theirs.Pattern {
		*diffs = append(*diffs, path+": pattern "+ours.Pattern+", Karpenter's "+theirs.Pattern)
	}
	for _, bound := range [][2]*int64{{ours.MaxLength, theirs.MaxLength}, {ours.MinLength, theirs.MinLength}} {
		if bound[0] != nil && (bound[1] == nil || *bound[0] != *bound[1]) {
			*diffs = append(*diffs, path+": a length bound Karpenter's lacks")
		}
	}
	// An enum of ours must take every value theirs takes (none: any).
	enum := map[string]bool{}
	for _, v := range ours.Enum {
		enum[string(v.Raw)] = true
	}
	for _, v := range theirs.Enum {
		if len(ours.Enum) > 0 && !enum[string(v.Raw)] {
			*diffs = append(*diffs, path+": enum refuses "+string(v.Raw)+", which Karpenter's takes")
		}
	}
	rules := map[string]bool{}
	for _, r := range theirs.XValidations {
		rules[r.Rule] = true
	}
	for _, r := range ours.XValidations {
		if !rules[r.Rule] {
			*diffs = append(*diffs, path+": rule "+r.Rule+" Karpenter's lacks")
		}
	}
	o, th := ours, theirs
	o.Properties, th.Properties, o.Items, th.Items = nil, nil, nil, nil
	o.Pattern, th.Pattern, o.MaxLength, th.MaxLength, o.MinLength, th.MinLength = "", "", nil, nil, nil, nil
	o.Enum, th.Enum, o.XValidations, th.XValidations = nil, nil, nil, nil
	if !reflect.DeepEqual(o, th) {
		*diffs = append(*diffs, path+": differs from Karpenter's beyond its added validations")
	}
	if len(ours.Properties) != len(theirs.Properties) {
		*diffs = append(*diffs, path+": properties differ in number")
	}
	for k, v := range ours.Properties {
		tv, ok := theirs.Properties[k]
		if !ok {
			*diffs = append(*diffs, path+"."+k+": not in Karpenter's")
			continue
		}
		compareLooser(v, tv, path+"."+k, diffs)
	}
	if (ours.Items == nil) != (theirs.Items == nil) {
		*diffs = append(*diffs, path+": items differ")
	} else if ours.Items != nil && ours.Items.Schema != nil && theirs.Items.Schema != nil {
		compareLooser(*ours.Items.Schema, *theirs.Items.Schema, path+"[]", diffs)
	}
}
