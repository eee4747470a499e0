package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/scheduling"
)

// TestMigrateGroups: node groups become NodePools that launch the same
// types, capacity types, labels and taints into the same subnets and
// security groups, one EC2NodeClass per network placement; what cannot be
// carried over is a warning naming the group; the YAML loads as it is.
func TestMigrateGroups(t *testing.T) {
	groups := []nodeGroup{
		{Name: "web_Spot", Source: "managed node group", InstanceTypes: []string{"m5.xlarge", "m5.large"}, CapacityTypes: []string{"spot"},
			Labels:  map[string]string{"team": "web", "eks.amazonaws.com/nodegroup": "web", "karpenter.sh/nodepool": "x"},
			Taints:  []corev1.Taint{{Key: "web", Value: "true", Effect: corev1.TaintEffectNoSchedule}},
			Subnets: []string{"subnet-b", "subnet-a"}, SecurityGroups: []string{"sg-1"}, MaxSize: 10},
		{Name: "batch", Source: "Auto Scaling group", InstanceTypes: []string{"c6g.2xlarge", "x9.nonexistent"}, CapacityTypes: []string{"spot", "on-demand"},
			Subnets: []string{"subnet-a", "subnet-b"}, SecurityGroups: []string{"sg-1"}, MaxSize: 3},
		{Name: "legacy", Source: "Auto Scaling group", InstanceTypes: []string{"m5.large"}, Subnets: []string{"subnet-c"}},
		{Name: "empty", Source: "Auto Scaling group", InstanceTypes: []string{"x9.nonexistent"}, Subnets: []string{"subnet-c"}},
	}
	m := migrate(groups, "demo", "KarpenterNodeRole-demo", catalog.Default())
	var names []string
	for _, np := range m.NodePools {
		names = append(names, np.Name+"->"+np.Spec.Template.Spec.NodeClassRef.Name)
	}
	if want := []string{"batch->migrated-1", "legacy->migrated-2", "web-spot->migrated-1"}; !slices.Equal(names, want) {
		t.Fatalf("pools %v, want %v (sorted by group; web and batch share a class)", names, want)
	}
	if len(m.NodeClasses) != 2 || m.NodeClasses[0].Spec.Role != "KarpenterNodeRole-demo" ||
		m.NodeClasses[0].Spec.SubnetSelectorTerms[0].ID != "subnet-a" || m.NodeClasses[0].Spec.SecurityGroupSelectorTerms[0].ID != "sg-1" {
		t.Fatalf("classes %+v", m.NodeClasses)
	}
	web := m.NodePools[2]
	req := func(np *apis.NodePool, key string) []string {
		for _, r := range np.Spec.Template.Spec.Requirements {
			if r.Key == key {
				return r.Values
			}
		}
		return nil
	}
	if got := req(web, apis.LabelInstanceType); !slices.Equal(got, []string{"m5.large", "m5.xlarge"}) {
		t.Errorf("web types %v", got)
	}
	if got := req(web, apis.LabelCapacityType); !slices.Equal(got, []string{"spot"}) {
		t.Errorf("web capacity types %v", got)
	}
	if got := req(m.NodePools[0], apis.LabelCapacityType); !slices.Equal(got, []string{"on-demand", "spot"}) {
		t.Errorf("batch capacity types %v", got)
	}
	if got := req(m.NodePools[1], apis.LabelCapacityType); !slices.Equal(got, []string{"on-demand"}) {
		t.Errorf("legacy capacity types %v: want on-demand when the group says nothing", got)
	}
	if l := web.Spec.Template.ObjectMeta.Labels; len(l) != 1 || l["team"] != "web" {
		t.Errorf("web labels %v: want team only", l)
	}
	if ts := web.Spec.Template.Spec.Taints; len(ts) != 1 || ts[0].Key != "web" || ts[0].Effect != corev1.TaintEffectNoSchedule {
		t.Errorf("web taints %v", ts)
	}
	if cpu := web.Spec.Limits[corev1.ResourceCPU]; cpu.Value() != 40 {
		t.Errorf("web cpu limit %s: want 10 nodes of m5.xlarge's 4 vCPUs", cpu.String())
	}
	if terms := m.NodeClasses[1].Spec.SecurityGroupSelectorTerms; len(terms) != 1 || terms[0].Tags["aws:eks:cluster-name"] != "demo" {
		t.Errorf("legacy's class selects %+v: want the cluster security group", terms)
	}
	if _, ok := m.NodePools[1].Spec.Limits[corev1.ResourceCPU]; ok {
		t.Errorf("legacy has a limit without a max size")
	}
	for _, want := range []string{
		"managed node group web_Spot: label eks.amazonaws.com/nodegroup=web left out",
		"managed node group web_Spot: label karpenter.sh/nodepool=x left out",
		"Auto Scaling group batch: instance type x9.nonexistent is not in Nodewright's catalog",
		"Auto Scaling group empty: no instance type to carry over",
		"Auto Scaling group legacy: its security groups are not known",
	} {
		if !slices.ContainsFunc(m.Warnings, func(w string) bool { return strings.HasPrefix(w, want) }) {
			t.Errorf("warnings %q lack %q", m.Warnings, want)
		}
	}
	var out bytes.Buffer
	if err := m.writeYAML(&out); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out.String(), "null") || strings.Contains(out.String(), "status:") {
		t.Errorf("YAML carries nulls or a status:\n%s", out.String())
	}
	cfg, err := apis.Parse(out.Bytes(), "migrate.yaml")
	if err != nil {
		t.Fatalf("the output does not load: %v\n%s", err, out.String())
	}
	if len(cfg.NodePools) != 3 || len(cfg.NodeClasses) != 2 {
		t.Fatalf("loaded %d pools, %d classes", len(cfg.NodePools), len(cfg.NodeClasses))
	}
}

func TestCATaintTags(t *testing.T) {
	for _, c := range []struct {
		value string
		want  corev1.Taint
		err   bool
	}{
		{"true:NoSchedule", corev1.Taint{Key: "k", Value: "true", Effect: corev1.TaintEffectNoSchedule}, false},
		{"NoExecute", corev1.Taint{Key: "k", Effect: corev1.TaintEffectNoExecute}, false},
		{":PreferNoSchedule", corev1.Taint{Key: "k", Effect: corev1.TaintEffectPreferNoSchedule}, false},
		{"true:Sometimes", corev1.Taint{}, true},
	} {
		got, err := caTaint("k", c.value)
		if (err != nil) != c.err || got != c.want {
			t.Errorf("%q: %+v, %v", c.value, got, err)
		}
	}
	for in, want := range map[string]corev1.TaintEffect{"NO_SCHEDULE": corev1.TaintEffectNoSchedule, "NO_EXECUTE": corev1.TaintEffectNoExecute,
		"PREFER_NO_SCHEDULE": corev1.TaintEffectPreferNoSchedule} {
		if got, ok := eksTaintEffect(in); !ok || got != want {
			t.Errorf("%s: %s", in, got)
		}
	}
	if _, ok := eksTaintEffect("SOMETIMES"); ok {
		t.Error("an unknown EKS effect was accepted")
	}
}

// fakeGroups serves one managed node group and no Auto Scaling group.
type fakeGroups struct{ ng ekstypes.Nodegroup }

func (f fakeGroups) ListNodegroups(context.Context, *eks.ListNodegroupsInput, ...func(*eks.Options)) (*eks.ListNodegroupsOutput, error) {
	return &eks.ListNodegroupsOutput{Nodegroups: []string{aws.ToString(f.ng.NodegroupName)}}, nil
}

func (f fakeGroups) DescribeNodegroup(context.Context, *eks.DescribeNodegroupInput, ...func(*eks.Options)) (*eks.DescribeNodegroupOutput, error) {
	return &eks.DescribeNodegroupOutput{Nodegroup: &f.ng}, nil
}

func (f fakeGroups) DescribeAutoScalingGroups(context.Context, *autoscaling.DescribeAutoScalingGroupsInput, ...func(*autoscaling.Options)) (*autoscaling.DescribeAutoScalingGroupsOutput, error) {
	return &autoscaling.DescribeAutoScalingGroupsOutput{}, nil
}

func (f fakeGroups) DescribeLaunchTemplateVersions(context.Context, *ec2.DescribeLaunchTemplateVersionsInput, ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplateVersionsOutput, error) {
	return nil, errors.New("no launch template here")
}

// TestMigrateComparesWithToday: with a snapshot, migrate prices today's
// nodes and plans today's pods onto the migrated NodePools, as comments
// above the YAML (which still loads).
func TestMigrateComparesWithToday(t *testing.T) {
	f := fakeGroups{ng: ekstypes.Nodegroup{NodegroupName: aws.String("general"), InstanceTypes: []string{"m5.xlarge", "m5.2xlarge"},
		CapacityType: ekstypes.CapacityTypesOnDemand, Subnets: []string{"subnet-a"}, ScalingConfig: &ekstypes.NodegroupScalingConfig{MaxSize: aws.Int32(10)}}}
	c := cli{solve: scheduling.Solve, migration: migrateDeps{open: func(context.Context, *targetFlags) (nodeGroupAPIs, error) {
		return nodeGroupAPIs{EKS: f, ASG: f, EC2: f, Region: "us-east-1"}, nil
	}}}
	snap := `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: n1, labels: {node.kubernetes.io/instance-type: m5.xlarge, topology.kubernetes.io/zone: us-east-1a, eks.amazonaws.com/capacityType: ON_DEMAND}}
  status: {capacity: {cpu: "4", memory: 16Gi, pods: "58"}, allocatable: {cpu: 3920m, memory: 15Gi, pods: "58"}}
- apiVersion: v1
  kind: Node
  metadata: {name: n2, labels: {node.kubernetes.io/instance-type: m5.xlarge, topology.kubernetes.io/zone: us-east-1b, eks.amazonaws.com/capacityType: ON_DEMAND}}
  status: {capacity: {cpu: "4", memory: 16Gi, pods: "58"}, allocatable: {cpu: 3920m, memory: 15Gi, pods: "58"}}
- apiVersion: v1
  kind: Pod
  metadata: {name: a, namespace: default}
  spec: {nodeName: n1, containers: [{name: c, image: x, resources: {requests: {cpu: 500m, memory: 1Gi}}}]}
  status: {phase: Running}
- apiVersion: v1
  kind: Pod
  metadata: {name: b, namespace: default}
  spec: {nodeName: n2, containers: [{name: c, image: x, resources: {requests: {cpu: 500m, memory: 1Gi}}}]}
  status: {phase: Running}
`
	var out, errOut bytes.Buffer
	code := c.run([]string{"migrate", "-cluster", "demo", "-f", "-"}, strings.NewReader(snap), &out, &errOut)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	s := out.String()
	today := fmt.Sprintf("# today: 2 nodes (2 of known types), $%.4f/h", 2*mustType(t, "m5.xlarge").OnDemandPrice)
	if !strings.Contains(s, today) || !strings.Contains(s, "# Nodewright's plan for today's 2 pods with these NodePools: 1 nodes,") ||
		!strings.Contains(s, "0 pods unschedulable") {
		t.Errorf("output lacks %q or the plan:\n%s", today, s)
	}
	if _, err := apis.Parse(out.Bytes(), "migrate"); err != nil {
		t.Errorf("the output does not load: %v", err)
	}
}

func mustType(t *testing.T, name string) *catalog.InstanceType {
	t.Helper()
	it, ok := catalog.Default().Get(name)
	if !ok {
		t.Fatalf("no %s in the catalog", name)
	}
	return it
}
