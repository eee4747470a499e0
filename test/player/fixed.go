package player

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/scheduling"
)

// FixedType is the one node group's instance type the comparison uses:
// what a Cluster Autoscaler user would typically run, on-demand.
const FixedType = "m5.xlarge"

// Fixed is the price of one fixed node group for a set of pods.
type Fixed struct {
	PricePerHour float64
	Nodes        int
	// Unplaced are pods such a node cannot run (GPUs, more than it holds).
	Unplaced int
}

// FixedNodeGroup packs pods onto m5.xlarge on-demand nodes with
// Nodewright's scheduler, restricted to that one type and capacity type (a
// Cluster Autoscaler node group), and prices them from the catalog. The
// pods' node selectors, node affinity and tolerations are dropped: a node
// group serves the whole workload, whatever NodePool it ran on here.
func FixedNodeGroup(pods []*corev1.Pod, class *apis.EC2NodeClass, zones []string) (Fixed, error) {
	cat := catalog.Default()
	it, ok := cat.Get(FixedType)
	if !ok {
		return Fixed{}, fmt.Errorf("fixed node group: %s is not in the catalog", FixedType)
	}
	if len(pods) == 0 {
		return Fixed{}, nil
	}
	var in []*corev1.Pod
	for _, p := range pods {
		c := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, UID: p.UID, Labels: p.Labels}, Spec: *p.Spec.DeepCopy()}
		c.Spec.NodeName, c.Spec.NodeSelector, c.Spec.Affinity, c.Spec.Tolerations = "", nil, nil, nil
		c.Spec.TopologySpreadConstraints = nil
		in = append(in, c)
	}
	pool := &apis.NodePool{ObjectMeta: metav1.ObjectMeta{Name: "fixed-" + FixedType}}
	pool.Spec.Template.Spec.NodeClassRef = &apis.NodeClassReference{Group: apis.AWSGroup, Kind: apis.EC2NodeClassKind, Name: class.Name}
	pool.Spec.Template.Spec.Requirements = []apis.NodeSelectorRequirementWithMinValues{
		{Key: apis.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{FixedType}},
		{Key: apis.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{apis.CapacityTypeOnDemand}},
	}
	res, err := scheduling.Solve(scheduling.Input{
		Pods: in, NodePools: []*apis.NodePool{pool}, NodeClasses: []*apis.EC2NodeClass{class},
		InstanceTypes: []*catalog.InstanceType{it}, Zones: zones,
	})
	if err != nil {
		return Fixed{}, fmt.Errorf("fixed node group: %w", err)
	}
	return Fixed{PricePerHour: res.PricePerHour, Nodes: len(res.NodeClaims), Unplaced: len(res.Unschedulable) + len(res.Deferred)}, nil
}
