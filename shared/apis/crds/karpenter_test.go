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
