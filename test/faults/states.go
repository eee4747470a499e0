package faults

// states.go holds the starting states scenarios put the world in (a
// node Karpenter launched and someone deleted, nodes Karpenter launched
// before the switch, a node unhealthy past its repair tolerations): the
// world's side, not how the product is wired.

import (
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/names"
	"github.com/nodewright/nodewright/shared/nodeclaim"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
)

// foreignNode is a node Karpenter launched (no managed-by tag) that
// someone deleted: its Node waits on karpenter.sh/termination.
func (f *flows) foreignNode() {
	w := f.w
	w.ec2.next++
	in := &instance{ID: fmt.Sprintf("i-%017x", 0xf00000+w.ec2.next), Type: "c6a.xlarge", Zone: "us-east-1a", CapacityType: "on-demand", State: "running",
		DNS: "ip-10-9-9-9.ec2.internal", Launched: w.clock.Now().Add(-time.Hour),
		Tags: map[string]string{names.TagKeyCluster(clusterName): names.TagValueOwned, names.TagKeyNodePool: "karpenter-pool", names.TagKeyNodeClaim: "karpenter-pool-abcde"}}
	w.ec2.instances[in.ID] = in
	w.kube.joined[in.ID] = true
	n := w.nodeFor(in)
	n.Finalizers = []string{apis.FinalizerTermination}
	n.DeletionTimestamp = &metav1.Time{Time: w.clock.Now()}
	w.kube.nodes[n.Name] = n
	p := st.Pod(st.PodOptions{Name: "foreign-app", CPU: "1", Memory: "1Gi", Owner: "ReplicaSet/foreign"})
	p.Namespace, p.Spec.NodeName = "default", n.Name
	p.Status = corev1.PodStatus{Phase: corev1.PodRunning}
	w.kube.pods["default/foreign-app"] = p
	w.foreign[in.ID], w.foreign[n.Name] = true, true
}

// unhealthy makes an instance's Node NotReady and its EC2 status check
// fail, both for ago: past the repair tolerations (30 minutes) when ago is
// longer. From the toleration's end on, repair may delete its pods,
// budgets notwithstanding (the world's deadline for it).
func (f *flows) unhealthy(instanceID string, ago time.Duration) {
	w := f.w
	in := w.ec2.instances[instanceID]
	since := w.clock.Now().Add(-ago)
	in.Impaired = since
	n := w.kube.nodes[in.DNS]
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			n.Status.Conditions[i].Status = corev1.ConditionFalse
			n.Status.Conditions[i].LastTransitionTime = metav1.Time{Time: since}
		}
	}
	w.unhealthy[instanceID] = since.Add(30 * time.Minute)
}

// karpenterNodes are n nodes Karpenter launched into the configured
// NodePool "default" before the switch (no managed-by tag; its tags, its
// Node labels and finalizer, its NodeClaim objects), each running one pod;
// Karpenter's controller is gone, so the sweeps adopt them. The last one's
// NodeClaim was being deleted: its deletion is Nodewright's to carry out.
func (f *flows) karpenterNodes(n int) {
	w := f.w
	for i := range n {
		w.ec2.next++
		id := fmt.Sprintf("i-%017x", 0xa00000+w.ec2.next)
		name := fmt.Sprintf("default-karp%d", i)
		in := &instance{ID: id, Type: "c6a.xlarge", Zone: "us-east-1a", CapacityType: apis.CapacityTypeOnDemand, State: "running",
			DNS: fmt.Sprintf("ip-10-8-8-%d.ec2.internal", i), Launched: w.clock.Now().Add(-time.Hour),
			Tags: map[string]string{names.TagKeyCluster(clusterName): names.TagValueOwned, names.TagKeyEKSClusterName: clusterName,
				names.TagKeyNodePool: "default", names.TagKeyEC2NodeClass: "default", names.TagKeyNodeClaim: name}}
		w.ec2.instances[id] = in
		w.kube.joined[id] = true
		node := w.nodeFor(in)
		node.Labels[apis.LabelRegistered], node.Labels[apis.LabelInitialized], node.Labels[apis.LabelNodeClaim] = "true", "true", name
		node.Finalizers = []string{apis.FinalizerTermination}
		node.CreationTimestamp = metav1.Time{Time: in.Launched.Add(time.Minute)}
		w.kube.nodes[node.Name] = node
		p := st.Pod(st.PodOptions{Name: fmt.Sprintf("karp-app-%d", i), CPU: "1", Memory: "1Gi", Owner: "ReplicaSet/karp", Labels: map[string]string{"app": "karp"}})
		p.Namespace, p.Spec.NodeName, p.UID = "default", node.Name, typesUID("uid-karp-"+fmt.Sprint(i))
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
		w.kube.pods[p.Namespace+"/"+p.Name] = p
		at := metav1.Time{Time: in.Launched.Add(2 * time.Minute)}
		nc := &nodeclaim.NodeClaim{
			TypeMeta: metav1.TypeMeta{APIVersion: nodeclaim.APIVersion, Kind: nodeclaim.Kind},
			ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{apis.LabelNodePool: "default", corev1.LabelInstanceTypeStable: in.Type},
				Finalizers: []string{apis.FinalizerTermination}, CreationTimestamp: metav1.Time{Time: in.Launched}},
			Spec: nodeclaim.Spec{NodeClassRef: &nodeclaim.NodeClassRef{Group: apis.AWSGroup, Kind: apis.EC2NodeClassKind, Name: "default"},
				Requirements: []nodeclaim.Requirement{{NodeSelectorRequirement: corev1.NodeSelectorRequirement{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{in.Type}}}}},
			Status: nodeclaim.Status{ProviderID: node.Spec.ProviderID, NodeName: node.Name, Capacity: node.Status.Capacity, Allocatable: node.Status.Allocatable,
				Conditions: []metav1.Condition{{Type: nodeclaim.ConditionInitialized, Status: metav1.ConditionTrue, Reason: "Initialized", LastTransitionTime: at},
					{Type: nodeclaim.ConditionReady, Status: metav1.ConditionTrue, Reason: "Ready", LastTransitionTime: at}}},
		}
		b, _ := json.Marshal(nc)
		obj := map[string]any{}
		_ = json.Unmarshal(b, &obj)
		w.kube.gen++
		meta := obj["metadata"].(map[string]any)
		meta["uid"], meta["resourceVersion"] = fmt.Sprintf("uid-%d", w.kube.gen), fmt.Sprint(w.kube.gen)
		if i == n-1 {
			meta["deletionTimestamp"] = w.clock.Now().UTC().Format(time.RFC3339)
			w.karpenterDeleting[id] = true
		}
		w.kube.claims[name] = obj
		w.adoptable[id] = true
	}
}

// adoptionRace is the adoption scenario: Karpenter is gone, leaving two
// nodes of the configured pool; two sweeps race to adopt them while
// consolidation ticks.
func (f *flows) adoptionRace() []*invocation {
	f.karpenterNodes(2)
	f.w.tick()
	return []*invocation{f.inv("sweep", f.provision(true)), f.inv("sweep", f.provision(true)), f.inv("consolidation", f.consolidation())}
}
