package fleet

import (
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
)

func spec(nc *apis.EC2NodeClass) templateSpec {
	return templateSpec{Cluster: testCluster, NodePool: "default", NodeClass: nc, AMI: AMI{ID: "ami-std-x86", Arch: "amd64", Variant: VariantStandard},
		SecurityGroups: []string{"sg-1", "sg-2"}, InstanceProfile: "nodewright-node", UserData: "dXNlcmRhdGE="}
}

func TestLaunchTemplateInput(t *testing.T) {
	in, err := launchTemplateInput(spec(defaultNodeClass()))
	if err != nil {
		t.Fatal(err)
	}
	d := in.LaunchTemplateData
	if !strings.HasPrefix(aws.ToString(in.LaunchTemplateName), "nodewright-my-production-cluster-") || len(aws.ToString(in.LaunchTemplateName)) != len("nodewright-my-production-cluster-")+16 {
		t.Errorf("name %q", aws.ToString(in.LaunchTemplateName))
	}
	if aws.ToString(d.ImageId) != "ami-std-x86" || aws.ToString(d.UserData) != "dXNlcmRhdGE=" || aws.ToString(d.IamInstanceProfile.Name) != "nodewright-node" {
		t.Errorf("image %v, user data %v, profile %v", aws.ToString(d.ImageId), aws.ToString(d.UserData), d.IamInstanceProfile)
	}
	if !reflect.DeepEqual(d.SecurityGroupIds, []string{"sg-1", "sg-2"}) || d.NetworkInterfaces != nil {
		t.Errorf("security groups %v, network interfaces %v", d.SecurityGroupIds, d.NetworkInterfaces)
	}
	m := d.MetadataOptions
	if m.HttpTokens != ec2types.LaunchTemplateHttpTokensStateRequired || aws.ToInt32(m.HttpPutResponseHopLimit) != 2 ||
		m.HttpEndpoint != ec2types.LaunchTemplateInstanceMetadataEndpointStateEnabled || m.HttpProtocolIpv6 != ec2types.LaunchTemplateInstanceMetadataProtocolIpv6Disabled {
		t.Errorf("metadata options %+v: want IMDSv2 required, hop limit 2 (the node class's), endpoint on, IPv6 off", *m)
	}
	if len(d.BlockDeviceMappings) != 1 {
		t.Fatalf("block devices %+v", d.BlockDeviceMappings)
	}
	ebs := d.BlockDeviceMappings[0].Ebs
	if aws.ToString(d.BlockDeviceMappings[0].DeviceName) != "/dev/xvda" || aws.ToInt32(ebs.VolumeSize) != 100 || ebs.VolumeType != ec2types.VolumeTypeGp3 ||
		aws.ToInt32(ebs.Iops) != 3000 || aws.ToInt32(ebs.Throughput) != 125 || !aws.ToBool(ebs.Encrypted) || !aws.ToBool(ebs.DeleteOnTermination) {
		t.Errorf("root volume %+v: want 100 GiB gp3 3000 IOPS 125 MB/s encrypted", *ebs)
	}
	wantTags := map[string]string{
		"kubernetes.io/cluster/my-production-cluster": "owned", "eks:eks-cluster-name": "my-production-cluster",
		"karpenter.sh/nodepool": "default", "karpenter.k8s.aws/ec2nodeclass": "default", "Environment": "production", "Team": "platform",
	}
	if len(in.TagSpecifications) != 1 || in.TagSpecifications[0].ResourceType != ec2types.ResourceTypeLaunchTemplate || !reflect.DeepEqual(tagMap(in.TagSpecifications[0].Tags), wantTags) {
		t.Errorf("launch template tags %+v, want %v", in.TagSpecifications, wantTags)
	}
	if len(d.TagSpecifications) != 1 || d.TagSpecifications[0].ResourceType != ec2types.ResourceTypeNetworkInterface || !reflect.DeepEqual(tagMap(d.TagSpecifications[0].Tags), wantTags) {
		t.Errorf("network interface tags %+v", d.TagSpecifications)
	}
	if aws.ToBool(d.Monitoring.Enabled) {
		t.Error("detailed monitoring on, the node class leaves it off")
	}
}

func tagMap(tags []ec2types.Tag) map[string]string {
	m := map[string]string{}
	for _, t := range tags {
		m[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	return m
}

func TestLaunchTemplateVariants(t *testing.T) {
	base, _ := launchTemplateInput(spec(defaultNodeClass()))
	tests := []struct {
		name  string
		edit  func(*templateSpec)
		check func(*testing.T, *ec2types.RequestLaunchTemplateData)
	}{
		{"metadata defaults", func(s *templateSpec) { s.NodeClass.Spec.MetadataOptions = nil }, func(t *testing.T, d *ec2types.RequestLaunchTemplateData) {
			if d.MetadataOptions.HttpTokens != "required" || aws.ToInt32(d.MetadataOptions.HttpPutResponseHopLimit) != 1 {
				t.Errorf("metadata %+v: want IMDSv2 and hop limit 1 by default", *d.MetadataOptions)
			}
		}},
		{"default root volume", func(s *templateSpec) { s.NodeClass.Spec.BlockDeviceMappings = nil }, func(t *testing.T, d *ec2types.RequestLaunchTemplateData) {
			b := d.BlockDeviceMappings
			if len(b) != 1 || aws.ToInt32(b[0].Ebs.VolumeSize) != 20 || !aws.ToBool(b[0].Ebs.Encrypted) || b[0].Ebs.VolumeType != "gp3" {
				t.Errorf("block devices %+v: want 20 GiB encrypted gp3", b)
			}
		}},
		{"public IP via a network interface", func(s *templateSpec) { s.NodeClass.Spec.AssociatePublicIPAddress = aws.Bool(true) }, func(t *testing.T, d *ec2types.RequestLaunchTemplateData) {
			ni := d.NetworkInterfaces
			if len(ni) != 1 || !aws.ToBool(ni[0].AssociatePublicIpAddress) || aws.ToInt32(ni[0].DeviceIndex) != 0 ||
				!reflect.DeepEqual(ni[0].Groups, []string{"sg-1", "sg-2"}) || d.SecurityGroupIds != nil {
				t.Errorf("network interfaces %+v, security groups %v", ni, d.SecurityGroupIds)
			}
		}},
		{"detailed monitoring", func(s *templateSpec) { s.NodeClass.Spec.DetailedMonitoring = aws.Bool(true) }, func(t *testing.T, d *ec2types.RequestLaunchTemplateData) {
			if !aws.ToBool(d.Monitoring.Enabled) {
				t.Error("monitoring off")
			}
		}},
		{"fractional GiB rounds up", func(s *templateSpec) {
			q := s.NodeClass.Spec.BlockDeviceMappings[0].EBS.VolumeSize
			q.Set(q.Value() + 1)
		}, func(t *testing.T, d *ec2types.RequestLaunchTemplateData) {
			if got := aws.ToInt32(d.BlockDeviceMappings[0].Ebs.VolumeSize); got != 101 {
				t.Errorf("volume size %d, want 101", got)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := spec(defaultNodeClass())
			tt.edit(&s)
			in, err := launchTemplateInput(s)
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, in.LaunchTemplateData)
			if aws.ToString(in.LaunchTemplateName) == aws.ToString(base.LaunchTemplateName) {
				t.Error("different content, same template name")
			}
		})
	}
	again, _ := launchTemplateInput(spec(defaultNodeClass()))
	if aws.ToString(again.LaunchTemplateName) != aws.ToString(base.LaunchTemplateName) {
		t.Error("same content, different template name")
	}
}

func TestTemplateNameFitsEC2Limit(t *testing.T) {
	s := spec(defaultNodeClass())
	s.Cluster.Name = strings.Repeat("c", 100)
	in, err := launchTemplateInput(s)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(aws.ToString(in.LaunchTemplateName)); n > maxTemplateName {
		t.Errorf("name of %d characters, EC2 allows %d", n, maxTemplateName)
	}
}

// The launch template pins the credit mode the plan priced burstable types
// in (unlimited for t3, t3a and t4g; standard for t2), so that an account
// whose default differs cannot change what a node costs; templates of other
// types set none.
func TestLaunchTemplateCreditSpecification(t *testing.T) {
	for _, tc := range []struct {
		types []string
		want  string
	}{
		{[]string{"m5.large"}, ""},
		{[]string{"t3a.medium", "m5.large"}, "unlimited"},
		{[]string{"t2.medium"}, "standard"},
	} {
		s := spec(defaultNodeClass())
		s.CPUCredits = catalog.CreditMode(tc.types)
		in, err := launchTemplateInput(s)
		if err != nil {
			t.Fatal(err)
		}
		cs := in.LaunchTemplateData.CreditSpecification
		if got := ""; cs != nil {
			got = aws.ToString(cs.CpuCredits)
			if got != tc.want {
				t.Errorf("%v: credit specification %q, want %q", tc.types, got, tc.want)
			}
		} else if tc.want != "" {
			t.Errorf("%v: no credit specification, want %q", tc.types, tc.want)
		}
	}
}
