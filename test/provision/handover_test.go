package provision_test

import (
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/handover"
	"github.com/nodewright/nodewright/shared/metrics"
	"github.com/nodewright/nodewright/shared/provision"
	"github.com/nodewright/nodewright/test/harness"
)

// TestNothingLaunchesWhileKarpenterRuns: with Karpenter's leader-election
// Lease held in the cluster, a pending pod gets no instance: the provision
// function says why (an event on the pool, the metric, the state item
// status reads), and an instance Karpenter launched (its tags, no
// Nodewright tag) survives the sweeps, not adopted. Once the Lease is gone
// (Karpenter uninstalled), the next round launches, and Karpenter's
// instance still runs, adopted by the sweep. Not parallel: the Lease stops every launch in the shared cluster
// while it is held, and the package's parallel tests wait for the
// sequential ones.
func TestNothingLaunchesWhileKarpenterRuns(t *testing.T) {
	c := ctx(t)
	const pool, group = "handover", "handover"
	const groupLabel = "nodewright.test/group"
	testPool(t, pool, func(np *apis.NodePool) {
		np.Spec.Template.Spec.Taints = []corev1.Taint{{Key: "test", Value: group, Effect: corev1.TaintEffectNoSchedule}}
		labels := map[string]string{groupLabel: group}
		for k, v := range np.Spec.Template.ObjectMeta.Labels {
			labels[k] = v
		}
		np.Spec.Template.ObjectMeta.Labels = labels
	})
	h := newHarness(t, harness.Options{})

	// Karpenter's instance, tagged as Karpenter tags its own.
	ec2c := ec2.NewFromConfig(lc.AWSConfig())
	tag := func(k, v string) ec2types.Tag { return ec2types.Tag{Key: aws.String(k), Value: aws.String(v)} }
	run, err := ec2c.RunInstances(c, &ec2.RunInstancesInput{
		ImageId: aws.String(lc.Seeded.AMIs["amd64"]), InstanceType: ec2types.InstanceTypeM5Large, MinCount: aws.Int32(1), MaxCount: aws.Int32(1),
		SubnetId: aws.String(lc.Seeded.Subnets[0].ID),
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance, Tags: []ec2types.Tag{
			tag(apis.LabelNodePool, "default"), tag(apis.LabelEC2NodeClass, "default"), tag(apis.TagKeyNodeClaim, "default-karp1"),
			tag("kubernetes.io/cluster/"+lc.Cluster.Name, "owned"), tag("eks:eks-cluster-name", lc.Cluster.Name),
		}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	karpenters := aws.ToString(run.Instances[0].InstanceId)
	t.Cleanup(func() {
		// The node bridge registers Karpenter's instance as a Node (it has
		// the cluster tag), untainted, and the sweep adopts it into the
		// default pool: the package's next tests must find neither, so the
		// test ends once the sweep has removed its record and its Node.
		c := harness.Ctx(t)
		_, _ = ec2c.TerminateInstances(c, &ec2.TerminateInstancesInput{InstanceIds: []string{karpenters}})
		store, err := harness.Store(lc)
		if err != nil {
			t.Error(err)
			return
		}
		// A record whose instance is gone is removed once the instance is
		// older than the orphan grace (DescribeInstances had time to list
		// it): the functions' clock is moved past it.
		h.Clock.Advance(provision.DefaultOrphanGrace + time.Minute)
		if err := harness.Poll(c, 2*time.Minute, "Karpenter's instance's record and Node gone", func() (bool, string, error) {
			if err := h.Sweep(c); err != nil {
				return false, "", err
			}
			if rec, err := store.NodeClaimByInstance(c, karpenters); err == nil {
				return false, "record " + rec.Name + " still there", nil
			}
			nodes, err := lc.Kube.CoreV1().Nodes().List(c, metav1.ListOptions{})
			if err != nil {
				return false, "", err
			}
			for _, n := range nodes.Items {
				if strings.HasSuffix(n.Spec.ProviderID, "/"+karpenters) {
					return false, "Node " + n.Name + " still there", nil
				}
			}
			return true, "", nil
		}); err != nil {
			t.Error(err)
		}
	})

	holder, seconds := "karpenter-5b7c9d-x2k4q_7f3e", int32(3600)
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: handover.LeaseName},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: &holder, LeaseDurationSeconds: &seconds,
			RenewTime: &metav1.MicroTime{Time: h.Clock.Now()}}}
	if _, err := lc.Kube.CoordinationV1().Leases("kube-system").Create(c, lease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deleteLease := func() {
		_ = lc.Kube.CoordinationV1().Leases("kube-system").Delete(harness.Ctx(t), handover.LeaseName, metav1.DeleteOptions{})
	}
	t.Cleanup(deleteLease)

	w := harness.Workload{Namespace: "default", Name: "handoverapp", Replicas: 2, CPU: "1", Memory: "1Gi",
		NodeSelector: map[string]string{groupLabel: group},
		Tolerations:  []corev1.Toleration{{Key: "test", Operator: corev1.TolerationOpEqual, Value: group, Effect: corev1.TaintEffectNoSchedule}}}
	if err := harness.Deploy(c, lc, w); err != nil {
		t.Fatal(err)
	}
	if err := harness.WaitUnschedulable(c, lc, "default", w.Name, 2, time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := h.Hint(c, "default", w.Name); err != nil {
		t.Fatal(err)
	}
	if err := h.Sweep(c); err != nil {
		t.Fatal(err)
	}
	if ids, err := h.PoolInstances(c, pool); err != nil || len(ids) != 0 {
		t.Fatalf("instances of pool %s while Karpenter runs: %v (%v)", pool, ids, err)
	}
	evs, err := lc.Kube.CoreV1().Events("default").List(c, metav1.ListOptions{FieldSelector: "involvedObject.kind=NodePool,involvedObject.name=" + pool})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range evs.Items {
		found = found || (e.Type == corev1.EventTypeWarning && e.Reason == string(provision.EventKarpenterRunning))
	}
	if !found {
		t.Errorf("no Warning KarpenterRunning event on NodePool %s (%d events)", pool, len(evs.Items))
	}
	if sum, n := h.Metrics.Sum(metrics.KarpenterRunning, nil); n == 0 || sum != float64(n) {
		t.Errorf("KarpenterRunning: %d points summing to %g, want every point 1", n, sum)
	}
	st, err := harness.Store(lc)
	if err != nil {
		t.Fatal(err)
	}
	if pr, err := st.PoolReadiness(c); err != nil || pr.Karpenter != "kube-system/"+holder {
		t.Errorf("state item %+v (%v): want kube-system/%s", pr, err, holder)
	}
	if rec, err := st.NodeClaimByInstance(c, karpenters); err == nil {
		t.Errorf("Karpenter's instance adopted (record %s) while Karpenter runs", rec.Name)
	}

	// Karpenter is uninstalled: its Lease goes, and the next round launches.
	deleteLease()
	if err := h.Hint(c, "default", w.Name); err != nil {
		t.Fatal(err)
	}
	if err := harness.WaitRunning(c, lc, "default", w.Name, 2, 2*time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := h.Sweep(c); err != nil {
		t.Fatal(err)
	}
	if pr, err := st.PoolReadiness(c); err != nil || pr.Karpenter != "" {
		t.Errorf("state item %+v (%v): still names Karpenter", pr, err)
	}
	out, err := ec2c.DescribeInstances(c, &ec2.DescribeInstancesInput{InstanceIds: []string{karpenters}})
	if err != nil {
		t.Fatal(err)
	}
	if s := out.Reservations[0].Instances[0].State.Name; s != ec2types.InstanceStateNameRunning {
		t.Errorf("Karpenter's instance %s is %s: the switch must not terminate it", karpenters, s)
	}
	if rec, err := st.NodeClaimByInstance(c, karpenters); err != nil || rec.Name != "default-karp1" || rec.AdoptedAt.IsZero() {
		t.Errorf("Karpenter's instance once Karpenter is gone: record %+v (%v), want it adopted as default-karp1", rec, err)
	}
}
