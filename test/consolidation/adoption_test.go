package consolidation_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/awslabs/operatorpkg/status"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	karpv1 "sigs.k8s.io/karpenter/pkg/apis/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/nodeclaim"
	"github.com/nodewright/nodewright/test/harness"
)

var nodeClaimGVR = schema.GroupVersionResource{Group: apis.KarpenterGroup, Version: apis.Version, Resource: nodeclaim.Resource}

// TestKarpentersNodesAreAdoptedAndConsolidated: the cluster is left as
// Karpenter v1.14.1 leaves it when it is uninstalled: three instances
// launched through the AWS front with Karpenter's tags, their Nodes (its
// labels, taint and finalizer) running a pod each, and their NodeClaim
// objects built from Karpenter's own types. There is no Karpenter Lease.
// One sweep adopts every node (a record each, the NodeClaim objects made
// Nodewright's); none is replaced, and a consolidation tick past
// consolidateAfter leaves them be while their pods run. Scaled to zero,
// consolidation removes them through the termination path.
func TestKarpentersNodesAreAdoptedAndConsolidated(t *testing.T) {
	c := harness.Ctx(t)
	lc := suite.LC
	const pool, class = "adopt", "default"
	smallPool(t, pool, func(np *apis.NodePool) {
		np.Spec.Template.Spec.Requirements = []apis.NodeSelectorRequirementWithMinValues{
			{Key: apis.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{"c6g.large"}},
			{Key: apis.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: []string{apis.CapacityTypeOnDemand}},
		}
	})
	h := suite.Harness(t, harness.Options{ValidationWait: validationWait})
	dc, err := dynamic.NewForConfig(lc.REST)
	if err != nil {
		t.Fatal(err)
	}
	poolObj, err := dc.Resource(schema.GroupVersionResource{Group: apis.KarpenterGroup, Version: apis.Version, Resource: "nodepools"}).Get(c, pool, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// Karpenter's instances: its tags, and the user data its AL2023
	// launch template gives (the pool's labels and taint).
	ec2c := ec2.NewFromConfig(lc.AWSConfig())
	tag := func(k, v string) ec2types.Tag { return ec2types.Tag{Key: aws.String(k), Value: aws.String(v)} }
	userData := base64.StdEncoding.EncodeToString([]byte(fmt.Sprintf(`apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  kubelet:
    flags:
      - --node-labels=%s=%s,%s=%s,%s=%s
      - --register-with-taints=test=%s:NoSchedule
`, apis.LabelNodePool, pool, apis.LabelEC2NodeClass, class, apis.LabelCapacityType, apis.CapacityTypeOnDemand, pool)))
	claims := map[string]string{} // instance -> NodeClaim
	var ids []string
	for i := range 3 {
		name := fmt.Sprintf("%s-karp%d", pool, i)
		sn := lc.Seeded.Subnets[i%len(lc.Seeded.Subnets)]
		run, err := ec2c.RunInstances(c, &ec2.RunInstancesInput{
			ImageId: aws.String(lc.Seeded.AMIs["arm64"]), InstanceType: ec2types.InstanceTypeC6gLarge, MinCount: aws.Int32(1), MaxCount: aws.Int32(1),
			SubnetId: aws.String(sn.ID), SecurityGroupIds: []string{lc.Seeded.SecurityGroupID}, UserData: aws.String(userData),
			TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance, Tags: []ec2types.Tag{
				tag(apis.LabelNodePool, pool), tag(apis.LabelEC2NodeClass, class), tag(apis.TagKeyNodeClaim, name),
				tag("kubernetes.io/cluster/"+lc.Cluster.Name, "owned"), tag("eks:eks-cluster-name", lc.Cluster.Name),
			}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		id := aws.ToString(run.Instances[0].InstanceId)
		ids = append(ids, id)
		claims[id] = name
	}
	t.Cleanup(func() {
		c := harness.Ctx(t)
		_, _ = ec2c.TerminateInstances(c, &ec2.TerminateInstancesInput{InstanceIds: ids})
		for _, name := range claims {
			_, _ = dc.Resource(nodeClaimGVR).Patch(c, name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
			_ = dc.Resource(nodeClaimGVR).Delete(c, name, metav1.DeleteOptions{})
		}
	})

	// Their Nodes register (the node bridge); Karpenter marks them
	// registered and initialized, under its finalizer.
	nodes := map[string]*corev1.Node{} // instance -> Node
	if err := harness.Poll(c, 2*time.Minute, "Karpenter's Nodes registered", func() (bool, string, error) {
		list, err := lc.Kube.CoreV1().Nodes().List(c, metav1.ListOptions{LabelSelector: apis.LabelNodePool + "=" + pool})
		if err != nil {
			return false, "", err
		}
		for i := range list.Items {
			n := &list.Items[i]
			if _, ok := claims[harness.InstanceOf(n)]; ok {
				nodes[harness.InstanceOf(n)] = n
			}
		}
		return len(nodes) == len(ids), fmt.Sprintf("%d of %d", len(nodes), len(ids)), nil
	}); err != nil {
		t.Fatal(err)
	}
	for _, id := range ids {
		n := nodes[id]
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:"true",%q:"true",%q:%q},"finalizers":[%q]}}`,
			apis.LabelRegistered, apis.LabelInitialized, apis.LabelNodeClaim, claims[id], karpv1.TerminationFinalizer)
		if _, err := lc.Kube.CoreV1().Nodes().Patch(c, n.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
		createKarpenterNodeClaim(t, dc, karpenterNodeClaim(claims[id], pool, class, poolObj.GetUID(), n))
	}

	w := harness.OnPool(pool, "adoptapp", 3, "1", "1Gi")
	if err := harness.Deploy(c, lc, w); err != nil {
		t.Fatal(err)
	}
	if err := harness.WaitRunning(c, lc, w.Namespace, w.Name, w.Replicas, 2*time.Minute); err != nil {
		t.Fatal(err)
	}

	// No Lease: the sweep adopts every node.
	if err := h.Sweep(c); err != nil {
		t.Fatal(err)
	}
	recs := live(t, pool)
	adopted := map[string]bool{}
	for _, r := range recs {
		if r.AdoptedAt.IsZero() || claims[r.InstanceID] != r.Name || r.NodeName != nodes[r.InstanceID].Name || r.NodeClass != class {
			t.Errorf("record %s: instance %s, node %s, class %s, adopted at %v: want %s's", r.Name, r.InstanceID, r.NodeName, r.NodeClass, r.AdoptedAt, claims[r.InstanceID])
		}
		adopted[r.InstanceID] = true
	}
	if len(adopted) != len(ids) {
		t.Fatalf("%d records for Karpenter's %d nodes: %+v", len(adopted), len(ids), recs)
	}
	for _, name := range claims {
		u, err := dc.Resource(nodeClaimGVR).Get(c, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := u.MarshalJSON()
		nc := &nodeclaim.NodeClaim{}
		if err := json.Unmarshal(raw, nc); err != nil {
			t.Fatal(err)
		}
		if !nc.Managed() || !nc.HasFinalizer() || nc.Condition(nodeclaim.ConditionReady) == nil || nc.Condition(nodeclaim.ConditionReady).Status != metav1.ConditionTrue {
			t.Errorf("NodeClaim %s: labels %v, finalizers %v, conditions %+v: want Nodewright's, Ready", name, nc.Labels, nc.Finalizers, nc.Status.Conditions)
		}
	}

	// None is replaced: past consolidateAfter, with a pod on each, the
	// pool keeps Karpenter's three instances and launches nothing.
	h.Clock.Advance(31 * time.Second)
	tick(t, h)
	if err := h.Sweep(c); err != nil {
		t.Fatal(err)
	}
	running, err := h.PoolInstances(c, pool)
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(running)
	slices.Sort(ids)
	if !slices.Equal(running, ids) {
		t.Fatalf("pool %s runs %v after the switch, want Karpenter's %v, none replaced", pool, running, ids)
	}

	// Scaled to zero, consolidation removes the adopted nodes.
	if err := harness.Scale(c, lc, w.Namespace, w.Name, 0); err != nil {
		t.Fatal(err)
	}
	if err := harness.Poll(c, time.Minute, "pods gone", func() (bool, string, error) {
		n, err := harness.Count(c, lc, w.Namespace, w.Name)
		return err == nil && n.Total == 0, n.String(), err
	}); err != nil {
		t.Fatal(err)
	}
	ticksUntil(t, h, 31*time.Second, 6, "the adopted nodes consolidated", func() (bool, string) {
		n := len(live(t, pool))
		return n == 0, fmt.Sprintf("%d left", n)
	})
	if err := harness.Poll(c, time.Minute, "Karpenter's instances terminated", func() (bool, string, error) {
		out, err := ec2c.DescribeInstances(c, &ec2.DescribeInstancesInput{InstanceIds: ids})
		if err != nil {
			return false, "", err
		}
		var states []string
		done := true
		for _, r := range out.Reservations {
			for _, in := range r.Instances {
				s := in.State.Name
				states = append(states, string(s))
				done = done && (s == ec2types.InstanceStateNameShuttingDown || s == ec2types.InstanceStateNameTerminated)
			}
		}
		return done, strings.Join(states, ","), nil
	}); err != nil {
		t.Fatal(err)
	}
}

// karpenterNodeClaim is the NodeClaim Karpenter v1.14.1 keeps for a node
// it launched, built from its own type.
func karpenterNodeClaim(name, pool, class string, poolUID types.UID, n *corev1.Node) *karpv1.NodeClaim {
	at := metav1.NewTime(time.Now().Add(-time.Minute))
	cond := func(t string) status.Condition {
		return status.Condition{Type: t, Status: metav1.ConditionTrue, Reason: t, LastTransitionTime: at}
	}
	return &karpv1.NodeClaim{
		TypeMeta: metav1.TypeMeta{APIVersion: "karpenter.sh/v1", Kind: "NodeClaim"},
		ObjectMeta: metav1.ObjectMeta{Name: name,
			Labels: map[string]string{karpv1.NodePoolLabelKey: pool, apis.LabelEC2NodeClass: class, corev1.LabelInstanceTypeStable: "c6g.large",
				karpv1.CapacityTypeLabelKey: karpv1.CapacityTypeOnDemand, corev1.LabelTopologyZone: n.Labels[corev1.LabelTopologyZone]},
			Annotations: map[string]string{karpv1.NodePoolHashAnnotationKey: "4011712234146385862", karpv1.NodePoolHashVersionAnnotationKey: karpv1.NodePoolHashVersion},
			Finalizers:  []string{karpv1.TerminationFinalizer},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "karpenter.sh/v1", Kind: "NodePool", Name: pool, UID: poolUID,
				BlockOwnerDeletion: aws.Bool(true)}},
		},
		Spec: karpv1.NodeClaimSpec{
			Requirements: []karpv1.NodeSelectorRequirementWithMinValues{
				{Key: corev1.LabelInstanceTypeStable, Operator: corev1.NodeSelectorOpIn, Values: []string{"c6g.large"}},
				{Key: karpv1.CapacityTypeLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{karpv1.CapacityTypeOnDemand}},
				{Key: karpv1.NodePoolLabelKey, Operator: corev1.NodeSelectorOpIn, Values: []string{pool}},
			},
			Taints:       []corev1.Taint{{Key: "test", Value: pool, Effect: corev1.TaintEffectNoSchedule}},
			NodeClassRef: &karpv1.NodeClassReference{Group: apis.AWSGroup, Kind: "EC2NodeClass", Name: class},
			ExpireAfter:  karpv1.MustParseNillableDuration("720h"),
		},
		Status: karpv1.NodeClaimStatus{
			ProviderID: n.Spec.ProviderID, NodeName: n.Name, ImageID: "ami-karpenter",
			Capacity: n.Status.Capacity, Allocatable: n.Status.Allocatable,
			Conditions: []status.Condition{cond(karpv1.ConditionTypeLaunched), cond(karpv1.ConditionTypeRegistered),
				cond(karpv1.ConditionTypeInitialized), cond(status.ConditionReady)},
		},
	}
}

// createKarpenterNodeClaim creates the object, then writes its status as
// Karpenter does (the status subresource).
func createKarpenterNodeClaim(t *testing.T, dc dynamic.Interface, nc *karpv1.NodeClaim) {
	t.Helper()
	c := harness.Ctx(t)
	b, err := json.Marshal(nc)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(b); err != nil {
		t.Fatal(err)
	}
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	got, err := dc.Resource(nodeClaimGVR).Create(c, u, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create NodeClaim %s: %v", nc.Name, err)
	}
	st, _, _ := unstructured.NestedFieldCopy(u.Object, "status")
	if err := unstructured.SetNestedField(got.Object, st, "status"); err != nil {
		t.Fatal(err)
	}
	if _, err := dc.Resource(nodeClaimGVR).UpdateStatus(c, got, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("NodeClaim %s status: %v", nc.Name, err)
	}
}
