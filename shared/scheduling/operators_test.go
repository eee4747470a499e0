package scheduling_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/scheduling"
)

// Each operator a NodePool requirement may use (Karpenter v1.14's, Gte and
// Lte included) selects and rejects instance types by their labels: the
// pool allows the m5 and m5d families, and the requirement under test
// narrows them.
func TestRequirementOperatorsSelectInstanceTypes(t *testing.T) {
	const (
		cpu  = apis.LabelInstanceCPU
		nvme = apis.LabelInstanceLocalNVME
	)
	tests := []struct {
		name           string
		req            apis.NodeSelectorRequirementWithMinValues
		selected, gone []string
	}{
		{"In", req(cpu, corev1.NodeSelectorOpIn, "2"), []string{"m5.large", "m5d.large"}, []string{"m5.xlarge"}},
		{"NotIn", req(cpu, corev1.NodeSelectorOpNotIn, "2"), []string{"m5.xlarge"}, []string{"m5.large", "m5d.large"}},
		{"Exists", req(nvme, corev1.NodeSelectorOpExists), []string{"m5d.large"}, []string{"m5.large"}},
		{"DoesNotExist", req(nvme, corev1.NodeSelectorOpDoesNotExist), []string{"m5.large"}, []string{"m5d.large"}},
		{"Gt", req(cpu, corev1.NodeSelectorOpGt, "2"), []string{"m5.xlarge"}, []string{"m5.large"}},
		{"Lt", req(cpu, corev1.NodeSelectorOpLt, "4"), []string{"m5.large"}, []string{"m5.xlarge"}},
		{"Gte takes its bound", req(cpu, apis.NodeSelectorOpGte, "4"), []string{"m5.xlarge", "m5.2xlarge"}, []string{"m5.large"}},
		{"Gte below", req(cpu, apis.NodeSelectorOpGte, "2"), []string{"m5.large", "m5.xlarge"}, nil},
		{"Lte takes its bound", req(cpu, apis.NodeSelectorOpLte, "4"), []string{"m5.large", "m5.xlarge"}, []string{"m5.2xlarge"}},
		{"Lte above", req(cpu, apis.NodeSelectorOpLte, "2"), []string{"m5.large"}, []string{"m5.xlarge"}},
	}
	zones := []string{"us-east-1a"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pool := operatorPool(req(apis.LabelInstanceFamily, corev1.NodeSelectorOpIn, "m5", "m5d"), tt.req)
			if err := pool.Validate(); err != nil {
				t.Fatalf("the pool does not validate: %v", err)
			}
			types, err := scheduling.InstanceTypesFor(pool, catalog.Default().Types(), zones, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, it := range types {
				got = append(got, it.Name)
			}
			for _, name := range tt.selected {
				if !slices.Contains(got, name) {
					t.Errorf("%s not selected (got %v)", name, got)
				}
			}
			for _, name := range tt.gone {
				if slices.Contains(got, name) {
					t.Errorf("%s selected, want it rejected", name)
				}
			}
		})
	}
}

func operatorPool(reqs ...apis.NodeSelectorRequirementWithMinValues) *apis.NodePool {
	np := &apis.NodePool{}
	np.Name = "operators"
	np.Spec.Template.Spec.Requirements = reqs
	np.Spec.Template.Spec.NodeClassRef = &apis.NodeClassReference{Group: apis.AWSGroup, Kind: apis.EC2NodeClassKind, Name: "default"}
	np.Default()
	return np
}
