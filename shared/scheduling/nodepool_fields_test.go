package scheduling_test

import (
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/scheduling"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
)

// Each NodePool field the plan depends on (apis.SupportTable names this
// test for them) changes the plan: the case sets the field on the pool
// (after before, applied to both solves) and finds its effect in the plan,
// which differs from the plan without it.
func TestNodePoolFieldsShapeThePlan(t *testing.T) {
	taint := func(key, value string, effect corev1.TaintEffect) []corev1.Taint {
		return []corev1.Taint{{Key: key, Value: value, Effect: effect}}
	}
	tests := []struct {
		path   string
		before func(*scheduling.Input)
		set    func(*scheduling.Input)
		want   string
	}{
		{"spec.template.metadata.labels", nil, func(in *scheduling.Input) {
			in.NodePools[0].Spec.Template.ObjectMeta.Labels = map[string]string{"team": "ml"}
		}, `"team":"ml"`},
		{"spec.template.spec.taints[].key", nil, func(in *scheduling.Input) {
			in.NodePools[0].Spec.Template.Spec.Taints = taint("dedicated", "", corev1.TaintEffectNoSchedule)
		}, `"unschedulable":[{"pod":"default/p-0"`},
		{"spec.template.spec.taints[].value", func(in *scheduling.Input) {
			in.NodePools[0].Spec.Template.Spec.Taints = taint("dedicated", "cpu", corev1.TaintEffectNoSchedule)
			for _, p := range in.Pods {
				p.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "gpu"}}
			}
		}, func(in *scheduling.Input) {
			in.NodePools[0].Spec.Template.Spec.Taints[0].Value = "gpu"
		}, `"taints":[{"key":"dedicated","value":"gpu","effect":"NoSchedule"}]`},
		{"spec.template.spec.taints[].effect", func(in *scheduling.Input) {
			in.NodePools[0].Spec.Template.Spec.Taints = taint("dedicated", "", corev1.TaintEffectNoSchedule)
		}, func(in *scheduling.Input) {
			in.NodePools[0].Spec.Template.Spec.Taints[0].Effect = corev1.TaintEffectPreferNoSchedule
		}, `"taints":[{"key":"dedicated","effect":"PreferNoSchedule"}]`},
		{"spec.template.spec.startupTaints[].key", nil, func(in *scheduling.Input) {
			in.NodePools[0].Spec.Template.Spec.StartupTaints = taint("example.com/agent", "", corev1.TaintEffectNoSchedule)
		}, `"startupTaints":[{"key":"example.com/agent","effect":"NoSchedule"}]`},
		{"spec.template.spec.startupTaints[].value", func(in *scheduling.Input) {
			in.NodePools[0].Spec.Template.Spec.StartupTaints = taint("example.com/agent", "", corev1.TaintEffectNoSchedule)
		}, func(in *scheduling.Input) {
			in.NodePools[0].Spec.Template.Spec.StartupTaints[0].Value = "starting"
		}, `"startupTaints":[{"key":"example.com/agent","value":"starting","effect":"NoSchedule"}]`},
		{"spec.template.spec.startupTaints[].effect", func(in *scheduling.Input) {
			in.NodePools[0].Spec.Template.Spec.StartupTaints = taint("example.com/agent", "", corev1.TaintEffectNoSchedule)
		}, func(in *scheduling.Input) {
			in.NodePools[0].Spec.Template.Spec.StartupTaints[0].Effect = corev1.TaintEffectNoExecute
		}, `"startupTaints":[{"key":"example.com/agent","effect":"NoExecute"}]`},
		{"spec.limits", nil, func(in *scheduling.Input) {
			in.NodePools[0].Spec.Limits = apis.Limits(st.Resources{"cpu": "2"}.List())
		}, `"unschedulable":[{"pod":"default/p-`},
		{"spec.weight", func(in *scheduling.Input) {
			in.NodePools = append(in.NodePools, st.NodePool(st.NodePoolOptions{Name: "other",
				Requirements: []apis.NodeSelectorRequirementWithMinValues{req(apis.LabelInstanceFamily, corev1.NodeSelectorOpIn, "m5")}}))
		}, func(in *scheduling.Input) {
			weight := int32(10)
			in.NodePools[1].Spec.Weight = &weight // pools of equal weight go by name: "default" first
		}, `"nodePool":"other"`},
		{"spec.template.spec.requirements[].minValues", func(in *scheduling.Input) {
			in.NodePools[0].Spec.Template.Spec.Requirements[0].Values = []string{"c5", "c6i", "m5"}
		}, func(in *scheduling.Input) {
			three := 3
			in.NodePools[0].Spec.Template.Spec.Requirements[0].MinValues = &three
		}, `"minValues":{"karpenter.k8s.aws/instance-family":3}`},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			base := fieldsInput()
			if tt.before != nil {
				tt.before(&base)
			}
			in := fieldsInput()
			if tt.before != nil {
				tt.before(&in)
			}
			tt.set(&in)
			before, after := planText(t, base), planText(t, in)
			if before == after {
				t.Fatalf("the plan does not change with %s:\n%s", tt.path, after)
			}
			if !strings.Contains(after, tt.want) {
				t.Errorf("the plan lacks %s:\n%s", tt.want, after)
			}
			if strings.Contains(before, tt.want) {
				t.Errorf("the plan without %s has %s already", tt.path, tt.want)
			}
		})
	}
}

// fieldsInput is three pods of 1 CPU and one on-demand pool of c5 types
// over the real catalog.
func fieldsInput() scheduling.Input {
	return scheduling.Input{
		InstanceTypes: catalog.Default().Types(),
		Zones:         st.Zones(),
		Pods:          st.Pods(3, st.PodOptions{Name: "p", CPU: "1", Memory: "1Gi"}),
		NodePools: []*apis.NodePool{st.NodePool(st.NodePoolOptions{Name: "default", Requirements: []apis.NodeSelectorRequirementWithMinValues{
			req(apis.LabelInstanceFamily, corev1.NodeSelectorOpIn, "c5"),
			req(apis.LabelCapacityType, corev1.NodeSelectorOpIn, "on-demand"),
		}})},
		NodeClasses: []*apis.EC2NodeClass{st.NodeClass("default")},
	}
}

func planText(t *testing.T, in scheduling.Input) string {
	t.Helper()
	res, err := scheduling.Solve(in)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
