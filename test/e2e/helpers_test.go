package e2e

import (
	"context"
	"encoding/base64"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/yaml"

	"github.com/nodewright/nodewright/shared/refdata"
	"github.com/nodewright/nodewright/test/localcloud"
)

// eventually polls cond until it returns true or the deadline passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last error
	for {
		ok, err := cond()
		if ok {
			return
		}
		last = err
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s (last error: %v)", timeout, what, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// nodeUserData is AL2023 user data as the provision function writes it: a
// MIME multi-part document with a NodeConfig that passes labels and taints
// to the kubelet.
func nodeUserData(cluster, endpoint string, ca []byte, labels, taints string) string {
	ud := fmt.Sprintf(`MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="//"

--//
Content-Type: application/node.eks.aws

apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  cluster:
    name: %s
    apiServerEndpoint: %s
    certificateAuthority: %s
    cidr: 10.96.0.0/16
  kubelet:
    config:
      maxPods: 29
      clusterDNS:
      - 10.96.0.10
    flags:
    - --node-labels=%s
    - --register-with-taints=%s

--//--
`, cluster, endpoint, base64.StdEncoding.EncodeToString(ca), labels, taints)
	return base64.StdEncoding.EncodeToString([]byte(ud))
}

// launchTemplate makes a launch template whose AMI comes from the public
// al2023 SSM parameter, read through the AWS front.
func launchTemplate(ctx context.Context, t *testing.T, lc *localcloud.Cloud, name, userData string) string {
	t.Helper()
	cfg := lc.AWSConfig()
	param := localcloud.AMIParameter(lc.Cluster.Version, "x86_64", "standard")
	p, err := ssm.NewFromConfig(cfg).GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(param)})
	if err != nil {
		t.Fatalf("GetParameter %s: %v", param, err)
	}
	out, err := ec2.NewFromConfig(cfg).CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(name),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{
			ImageId:          p.Parameter.Value,
			UserData:         aws.String(userData),
			SecurityGroupIds: []string{lc.Seeded.SecurityGroupID},
			MetadataOptions: &ec2types.LaunchTemplateInstanceMetadataOptionsRequest{
				HttpTokens: ec2types.LaunchTemplateHttpTokensStateRequired, HttpPutResponseHopLimit: aws.Int32(1),
			},
		},
	})
	if err != nil {
		t.Fatalf("CreateLaunchTemplate: %v", err)
	}
	return aws.ToString(out.LaunchTemplate.LaunchTemplateId)
}

// fleetInput is an instant CreateFleet for one launch template and the
// given (type, subnet) overrides, tagged as the provision function tags.
func fleetInput(lc *localcloud.Cloud, lt, capType string, n int32, overrides ...ec2types.FleetLaunchTemplateOverridesRequest) *ec2.CreateFleetInput {
	tags := []ec2types.Tag{
		{Key: aws.String("kubernetes.io/cluster/" + lc.Cluster.Name), Value: aws.String("owned")},
		{Key: aws.String("eks:eks-cluster-name"), Value: aws.String(lc.Cluster.Name)},
		{Key: aws.String("karpenter.sh/nodepool"), Value: aws.String("default")},
		{Key: aws.String("karpenter.sh/nodeclaim"), Value: aws.String("default-" + strings.ToLower(lt[len(lt)-5:]))},
	}
	return &ec2.CreateFleetInput{
		Type: ec2types.FleetTypeInstant,
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateId: aws.String(lt), Version: aws.String("$Latest")},
			Overrides:                   overrides,
		}},
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
			TotalTargetCapacity: aws.Int32(n), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityType(capType),
		},
		SpotOptions:       &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategyPriceCapacityOptimized},
		OnDemandOptions:   &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyLowestPrice},
		TagSpecifications: []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeInstance, Tags: tags}},
	}
}

func override(typ string, sn localcloud.Subnet) ec2types.FleetLaunchTemplateOverridesRequest {
	return ec2types.FleetLaunchTemplateOverridesRequest{InstanceType: ec2types.InstanceType(typ), SubnetId: aws.String(sn.ID)}
}

func inflate(t *testing.T) *appsv1.Deployment {
	t.Helper()
	path, err := refdata.Example("inflate.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d appsv1.Deployment
	if err := yaml.UnmarshalStrict(b, &d); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &d
}

func instanceState(ctx context.Context, c *ec2.Client, id string) (ec2types.InstanceStateName, error) {
	out, err := c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: []string{id}})
	if err != nil {
		return "", err
	}
	for _, r := range out.Reservations {
		for _, in := range r.Instances {
			return in.State.Name, nil
		}
	}
	return "", fmt.Errorf("instance %s not found", id)
}
