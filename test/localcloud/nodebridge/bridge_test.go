package nodebridge

import (
	"context"
	"encoding/base64"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// fakeEC2 serves a fixed set of instances (unit test of the bridge; the
// e2e tests run it against moto).
type fakeEC2 struct {
	mu    sync.Mutex
	insts []ec2types.Instance
	ud    string
}

func (f *fakeEC2) DescribeInstances(_ context.Context, in *ec2.DescribeInstancesInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &ec2.DescribeInstancesOutput{Reservations: []ec2types.Reservation{{Instances: append([]ec2types.Instance(nil), f.insts...)}}}, nil
}

func (f *fakeEC2) DescribeInstanceAttribute(_ context.Context, in *ec2.DescribeInstanceAttributeInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstanceAttributeOutput, error) {
	return &ec2.DescribeInstanceAttributeOutput{InstanceId: in.InstanceId, UserData: &ec2types.AttributeValue{Value: aws.String(f.ud)}}, nil
}

func (f *fakeEC2) setState(s ec2types.InstanceStateName) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.insts[0].State = &ec2types.InstanceState{Name: s}
}

type fakeCatalog struct{}

func (fakeCatalog) InstanceType(name string, maxPods int32) (InstanceType, bool) {
	if name != "m5.large" {
		return InstanceType{}, false
	}
	pods := int64(29)
	if maxPods > 0 {
		pods = int64(maxPods)
	}
	rl := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2"), corev1.ResourcePods: *resource.NewQuantity(pods, resource.DecimalSI)}
	return InstanceType{Labels: map[string]string{corev1.LabelArchStable: "amd64", corev1.LabelInstanceTypeStable: name}, Capacity: rl, Allocatable: rl}, true
}

type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func TestReconcileRegistersAfterBootDelayAndRemoves(t *testing.T) {
	ud := "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    config: {maxPods: 50}\n    flags: [\"--node-labels=karpenter.sh/nodepool=default\", \"--register-with-taints=a=b:NoSchedule\"]\n"
	ec2c := &fakeEC2{ud: base64.StdEncoding.EncodeToString([]byte(ud)), insts: []ec2types.Instance{{
		InstanceId: aws.String("i-0abc"), InstanceType: "m5.large", InstanceLifecycle: ec2types.InstanceLifecycleTypeSpot,
		State: &ec2types.InstanceState{Name: ec2types.InstanceStateNameRunning}, Placement: &ec2types.Placement{AvailabilityZone: aws.String("us-east-1b")},
		PrivateIpAddress: aws.String("10.0.2.9"),
	}}}
	kube := fake.NewClientset()
	clk := &clock{now: time.Unix(1000, 0)}
	b := New(Config{Cluster: "c1", Region: "us-east-1", KubeletVersion: "v1.35.4", BootDelay: 2 * time.Second, EC2: ec2c, Kube: kube, Catalog: fakeCatalog{}, Now: clk.Now})
	ctx := context.Background()

	mustReconcile(t, b)
	if n := nodeCount(t, kube); n != 0 {
		t.Fatalf("nodes before the boot delay = %d, want 0", n)
	}
	clk.add(2 * time.Second)
	mustReconcile(t, b)
	n, err := kube.CoreV1().Nodes().Get(ctx, "ip-10-0-2-9.ec2.internal", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("node after the boot delay: %v", err)
	}
	wantLabels := map[string]string{
		"karpenter.sh/capacity-type": "spot", "topology.kubernetes.io/zone": "us-east-1b", "topology.kubernetes.io/region": "us-east-1",
		"topology.k8s.aws/zone-id": "use1-az2", "karpenter.sh/nodepool": "default", "kubernetes.io/arch": "amd64",
		"kubernetes.io/hostname": "ip-10-0-2-9.ec2.internal",
		// and the deprecated aliases a real kubelet and cloud controller set
		"beta.kubernetes.io/arch": "amd64", "failure-domain.beta.kubernetes.io/zone": "us-east-1b",
		"failure-domain.beta.kubernetes.io/region": "us-east-1",
	}
	for k, v := range wantLabels {
		if n.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, n.Labels[k], v)
		}
	}
	if n.Spec.ProviderID != "aws:///us-east-1b/i-0abc" || n.Annotations[KwokAnnotation] != KwokAnnotationValue {
		t.Errorf("providerID %q, annotations %v", n.Spec.ProviderID, n.Annotations)
	}
	if len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != "a" {
		t.Errorf("taints %v", n.Spec.Taints)
	}
	if p := n.Status.Allocatable[corev1.ResourcePods]; p.Value() != 50 {
		t.Errorf("allocatable pods %v, want the user data's maxPods 50", p.String())
	}

	// Deleted by someone else while running: not re-registered.
	if err := kube.CoreV1().Nodes().Delete(ctx, n.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	mustReconcile(t, b)
	if c := nodeCount(t, kube); c != 0 {
		t.Errorf("node re-registered after deletion: %d nodes", c)
	}
	if _, err := kube.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ec2c.setState(ec2types.InstanceStateNameStopped)
	mustReconcile(t, b)
	if c := nodeCount(t, kube); c != 0 {
		t.Errorf("nodes after the instance stopped = %d, want 0", c)
	}
}

func TestReconcileUnknownTypeRegistersNothing(t *testing.T) {
	ec2c := &fakeEC2{insts: []ec2types.Instance{{
		InstanceId: aws.String("i-1"), InstanceType: "zz.huge", State: &ec2types.InstanceState{Name: ec2types.InstanceStateNameRunning},
		PrivateIpAddress: aws.String("10.0.1.1"),
	}}}
	kube := fake.NewClientset()
	b := New(Config{Cluster: "c1", BootDelay: -1, EC2: ec2c, Kube: kube, Catalog: fakeCatalog{}})
	mustReconcile(t, b)
	if c := nodeCount(t, kube); c != 0 {
		t.Errorf("nodes = %d, want 0 for a type not in the catalog", c)
	}
}

func mustReconcile(t *testing.T, b *Bridge) {
	t.Helper()
	if err := b.Reconcile(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func nodeCount(t *testing.T, kube *fake.Clientset) int {
	t.Helper()
	l, err := kube.CoreV1().Nodes().List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return len(l.Items)
}
