package faults

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
)

// staticPool is a static NodePool (spec.replicas) of replicas on-demand
// nodes, limited to as many, tainted so that no pod of the suite lands
// there.
func staticPool(c config, replicas int64) *apis.NodePool {
	var typeNames []string
	for _, it := range c.cat.Types() {
		typeNames = append(typeNames, it.Name)
	}
	p := st.NodePool(st.NodePoolOptions{Name: "static", Requirements: []apis.NodeSelectorRequirementWithMinValues{
		st.PoolReq(corev1.LabelInstanceTypeStable, corev1.NodeSelectorOpIn, typeNames...),
		st.PoolReq(apis.LabelCapacityType, corev1.NodeSelectorOpIn, apis.CapacityTypeOnDemand),
		st.PoolReq(corev1.LabelTopologyZone, corev1.NodeSelectorOpIn, st.Zones()...),
	}, Taints: []corev1.Taint{st.Taint("static", "true", corev1.TaintEffectNoSchedule)}, Limits: st.Resources{"nodes": fmt.Sprint(replicas)}})
	p.Spec.Replicas = &replicas
	return p
}
