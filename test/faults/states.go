package faults

// states.go holds the starting states scenarios put the world in (a
// node Karpenter launched and someone deleted, a node unhealthy past its
// repair tolerations): the world's side, not how the product is wired.

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/names"
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
