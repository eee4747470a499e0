package main

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	asgtypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/test/localcloud"
)

// migrate against EKS, Auto Scaling and EC2 as moto serves them, through
// the local cloud's AWS front and the CLI's real SDK configuration: a
// managed node group and an Auto Scaling group tagged for Cluster
// Autoscaler (with a launch template, and node-template label and taint
// tags) become NodePools that load; another cluster's group and an
// untagged one are left out.
func TestMigrateOnTheLocalCloud(t *testing.T) {
	lc := awsOnlyCloud(t, localcloud.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	const cluster = "ca-cluster"
	cfg := lc.AWSConfig()
	ekc, asg, ec2c := eks.NewFromConfig(cfg), autoscaling.NewFromConfig(cfg), ec2.NewFromConfig(cfg)
	subnets := []string{lc.Seeded.Subnets[0].ID, lc.Seeded.Subnets[1].ID}
	role := "arn:aws:iam::123456789012:role/eks"
	if _, err := ekc.CreateCluster(ctx, &eks.CreateClusterInput{Name: aws.String(cluster), RoleArn: aws.String(role),
		ResourcesVpcConfig: &ekstypes.VpcConfigRequest{SubnetIds: subnets}}); err != nil {
		t.Fatal(err)
	}
	if _, err := ekc.CreateNodegroup(ctx, &eks.CreateNodegroupInput{ClusterName: aws.String(cluster), NodegroupName: aws.String("web"),
		NodeRole: aws.String(role), Subnets: subnets, InstanceTypes: []string{"m5.large", "m5.xlarge"}, CapacityType: ekstypes.CapacityTypesSpot,
		ScalingConfig: &ekstypes.NodegroupScalingConfig{MinSize: aws.Int32(1), MaxSize: aws.Int32(6), DesiredSize: aws.Int32(2)},
		Labels:        map[string]string{"team": "web"},
		Taints:        []ekstypes.Taint{{Key: aws.String("web"), Value: aws.String("true"), Effect: ekstypes.TaintEffectNoSchedule}},
	}); err != nil {
		t.Fatal(err)
	}
	lt, err := ec2c.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("batch-lt"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{InstanceType: ec2types.InstanceTypeC6g2xlarge,
			ImageId: aws.String(lc.Seeded.AMIs["arm64"]), SecurityGroupIds: []string{lc.Seeded.SecurityGroupID}}})
	if err != nil {
		t.Fatal(err)
	}
	tag := func(k, v string) asgtypes.Tag { return asgtypes.Tag{Key: aws.String(k), Value: aws.String(v)} }
	for _, g := range []struct {
		name string
		tags []asgtypes.Tag
	}{
		{"batch", []asgtypes.Tag{tag(caEnabledTag, "true"), tag(caClusterTag+cluster, "owned"), tag(caLabelTagPrefix+"workload", "batch"),
			tag(caTaintTagPrefix+"batch", "true:NoSchedule")}},
		{"elsewhere", []asgtypes.Tag{tag(caEnabledTag, "true"), tag(caClusterTag+"another-cluster", "owned")}},
		{"untagged", nil},
	} {
		if _, err := asg.CreateAutoScalingGroup(ctx, &autoscaling.CreateAutoScalingGroupInput{AutoScalingGroupName: aws.String(g.name),
			MinSize: aws.Int32(0), MaxSize: aws.Int32(4), VPCZoneIdentifier: aws.String(strings.Join(subnets, ",")),
			LaunchTemplate: &asgtypes.LaunchTemplateSpecification{LaunchTemplateId: lt.LaunchTemplate.LaunchTemplateId}, Tags: g.tags}); err != nil {
			t.Fatal(err)
		}
	}

	var out, errOut bytes.Buffer
	code := cli{}.run([]string{"migrate", "-cluster", cluster, "-endpoint-url", lc.AWS.URL(), "-region", "us-east-1"}, nil, &out, &errOut)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	cfgOut, err := apis.Parse(out.Bytes(), "migrate")
	if err != nil {
		t.Fatalf("the output does not load: %v\n%s", err, out.String())
	}
	pools := map[string]*apis.NodePool{}
	for _, np := range cfgOut.NodePools {
		pools[np.Name] = np
	}
	if len(pools) != 2 || pools["web"] == nil || pools["batch"] == nil {
		t.Fatalf("pools %v: want web and batch only\n%s", pools, out.String())
	}
	values := func(np *apis.NodePool, key string) []string {
		for _, r := range np.Spec.Template.Spec.Requirements {
			if r.Key == key {
				return r.Values
			}
		}
		return nil
	}
	web, batch := pools["web"], pools["batch"]
	if !slices.Equal(values(web, apis.LabelInstanceType), []string{"m5.large", "m5.xlarge"}) || !slices.Equal(values(web, apis.LabelCapacityType), []string{"spot"}) ||
		web.Spec.Template.ObjectMeta.Labels["team"] != "web" || len(web.Spec.Template.Spec.Taints) != 1 || cpuOf(web) != 24 {
		t.Errorf("web %+v", web.Spec)
	}
	if !slices.Equal(values(batch, apis.LabelInstanceType), []string{"c6g.2xlarge"}) || !slices.Equal(values(batch, apis.LabelCapacityType), []string{"on-demand"}) ||
		batch.Spec.Template.ObjectMeta.Labels["workload"] != "batch" || len(batch.Spec.Template.Spec.Taints) != 1 || batch.Spec.Template.Spec.Taints[0].Key != "batch" {
		t.Errorf("batch %+v", batch.Spec)
	}
	classes := map[string]*apis.EC2NodeClass{}
	for _, nc := range cfgOut.NodeClasses {
		classes[nc.Name] = nc
	}
	bc := classes[batch.Spec.Template.Spec.NodeClassRef.Name]
	if bc == nil || len(bc.Spec.SecurityGroupSelectorTerms) != 1 || bc.Spec.SecurityGroupSelectorTerms[0].ID != lc.Seeded.SecurityGroupID ||
		len(bc.Spec.SubnetSelectorTerms) != 2 || bc.Spec.Role != "KarpenterNodeRole-"+cluster {
		t.Errorf("batch's class %+v: want the launch template's security group, the group's subnets", bc)
	}
	wc := classes[web.Spec.Template.Spec.NodeClassRef.Name]
	if wc == nil || wc.Spec.SecurityGroupSelectorTerms[0].Tags[eksClusterSGTag] != cluster || !strings.Contains(out.String(), "# warning: managed node group web: its security groups are not known") {
		t.Errorf("web's class %+v: want the cluster security group, with a warning\n%s", wc, out.String())
	}

	// A cluster with no group says so.
	if _, err := ekc.CreateCluster(ctx, &eks.CreateClusterInput{Name: aws.String("no-groups"), RoleArn: aws.String(role),
		ResourcesVpcConfig: &ekstypes.VpcConfigRequest{SubnetIds: subnets}}); err != nil {
		t.Fatal(err)
	}
	out.Reset()
	errOut.Reset()
	if code := (cli{}).run([]string{"migrate", "-cluster", "no-groups", "-endpoint-url", lc.AWS.URL(), "-region", "us-east-1"}, nil, &out, &errOut); code == exitOK ||
		!strings.Contains(errOut.String(), "no managed node group") {
		t.Errorf("a cluster without groups: exit %d, %s", code, errOut.String())
	}
}

func cpuOf(np *apis.NodePool) int64 {
	q := np.Spec.Limits[corev1.ResourceCPU]
	return q.Value()
}
