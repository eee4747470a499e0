package fleet

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	"github.com/aws/smithy-go"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/scheduling"
)

// fakeEC2 answers the calls a Launcher makes from canned data and records
// every input.
type fakeEC2 struct {
	mu        sync.Mutex
	subnets   []ec2types.Subnet
	groups    []ec2types.SecurityGroup
	images    []ec2types.Image
	templates map[string]*ec2.CreateLaunchTemplateInput
	// created stamps templates (CreateLaunchTemplate with now); deleted
	// lists DeleteLaunchTemplate's names.
	created map[string]time.Time
	now     time.Time
	deleted []string
	// fleet answers CreateFleet; nil launches the first override.
	fleet    func(*ec2.CreateFleetInput) (*ec2.CreateFleetOutput, error)
	fleetErr error

	subnetCalls   []*ec2.DescribeSubnetsInput
	groupCalls    []*ec2.DescribeSecurityGroupsInput
	imageCalls    []*ec2.DescribeImagesInput
	describeCalls int
	createLT      []*ec2.CreateLaunchTemplateInput
	fleets        []*ec2.CreateFleetInput

	// placementGroups answer DescribePlacementGroups.
	placementGroups []ec2types.PlacementGroup
	placementCalls  []*ec2.DescribePlacementGroupsInput
	// capacityReservations answers DescribeCapacityReservations (by ID
	// when the call names IDs); crCalls are its calls.
	capacityReservations []ec2types.CapacityReservation
	crCalls              []*ec2.DescribeCapacityReservationsInput

	// reservations answers DescribeInstances, one page per element.
	reservations [][]ec2types.Reservation
	describeIn   []*ec2.DescribeInstancesInput
	// missing are instance IDs TerminateInstances does not know.
	missing    map[string]bool
	terminated [][]string
	tagged     []*ec2.CreateTagsInput
}

func (f *fakeEC2) DescribeInstances(_ context.Context, in *ec2.DescribeInstancesInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.describeIn = append(f.describeIn, in)
	page := 0
	if in.NextToken != nil {
		fmt.Sscan(*in.NextToken, &page)
	}
	out := &ec2.DescribeInstancesOutput{}
	if page < len(f.reservations) {
		out.Reservations = f.reservations[page]
	}
	if page+1 < len(f.reservations) {
		out.NextToken = aws.String(fmt.Sprint(page + 1))
	}
	return out, nil
}

func (f *fakeEC2) TerminateInstances(_ context.Context, in *ec2.TerminateInstancesInput, _ ...func(*ec2.Options)) (*ec2.TerminateInstancesOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, id := range in.InstanceIds {
		if f.missing[id] {
			return nil, &smithy.GenericAPIError{Code: "InvalidInstanceID.NotFound", Message: "The instance ID '" + id + "' does not exist"}
		}
	}
	f.terminated = append(f.terminated, in.InstanceIds)
	return &ec2.TerminateInstancesOutput{}, nil
}

func (f *fakeEC2) CreateTags(_ context.Context, in *ec2.CreateTagsInput, _ ...func(*ec2.Options)) (*ec2.CreateTagsOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tagged = append(f.tagged, in)
	return &ec2.CreateTagsOutput{}, nil
}

func newFakeEC2() *fakeEC2 {
	sn := func(id, zone string, free int32) ec2types.Subnet {
		return ec2types.Subnet{SubnetId: aws.String(id), AvailabilityZone: aws.String(zone), AvailableIpAddressCount: aws.Int32(free), State: ec2types.SubnetStateAvailable}
	}
	public := func(s ec2types.Subnet) ec2types.Subnet { s.MapPublicIpOnLaunch = aws.Bool(true); return s }
	return &fakeEC2{
		subnets: []ec2types.Subnet{
			sn("subnet-a2", "us-east-1a", 100), sn("subnet-a1", "us-east-1a", 200), sn("subnet-b1", "us-east-1b", 50),
			sn("subnet-b2", "us-east-1b", 50), public(sn("subnet-c1", "us-east-1c", 10)),
		},
		groups: []ec2types.SecurityGroup{{GroupId: aws.String("sg-2")}, {GroupId: aws.String("sg-1")}},
		images: []ec2types.Image{
			{ImageId: aws.String("ami-x86-old"), Name: aws.String("custom-x86-1"), Architecture: "x86_64", CreationDate: aws.String("2025-01-01T00:00:00.000Z"), State: ec2types.ImageStateAvailable},
			{ImageId: aws.String("ami-x86-new"), Name: aws.String("custom-x86-2"), Architecture: "x86_64", CreationDate: aws.String("2025-06-01T00:00:00.000Z"), State: ec2types.ImageStateAvailable},
			{ImageId: aws.String("ami-arm"), Name: aws.String("custom-arm"), Architecture: "arm64", CreationDate: aws.String("2025-03-01T00:00:00.000Z"), State: ec2types.ImageStateAvailable},
		},
		templates: map[string]*ec2.CreateLaunchTemplateInput{},
	}
}

func (f *fakeEC2) DescribeCapacityReservations(_ context.Context, in *ec2.DescribeCapacityReservationsInput, _ ...func(*ec2.Options)) (*ec2.DescribeCapacityReservationsOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.crCalls = append(f.crCalls, in)
	out := &ec2.DescribeCapacityReservationsOutput{}
	for _, cr := range f.capacityReservations {
		if len(in.CapacityReservationIds) == 0 || slices.Contains(in.CapacityReservationIds, aws.ToString(cr.CapacityReservationId)) {
			out.CapacityReservations = append(out.CapacityReservations, cr)
		}
	}
	return out, nil
}

func (f *fakeEC2) DescribeSubnets(_ context.Context, in *ec2.DescribeSubnetsInput, _ ...func(*ec2.Options)) (*ec2.DescribeSubnetsOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.subnetCalls = append(f.subnetCalls, in)
	return &ec2.DescribeSubnetsOutput{Subnets: f.subnets}, nil
}

func (f *fakeEC2) DescribeSecurityGroups(_ context.Context, in *ec2.DescribeSecurityGroupsInput, _ ...func(*ec2.Options)) (*ec2.DescribeSecurityGroupsOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.groupCalls = append(f.groupCalls, in)
	return &ec2.DescribeSecurityGroupsOutput{SecurityGroups: f.groups}, nil
}

// DescribePlacementGroups answers from placementGroups by ID or name, as
// EC2 does: an unknown name or ID is an error.
func (f *fakeEC2) DescribePlacementGroups(_ context.Context, in *ec2.DescribePlacementGroupsInput, _ ...func(*ec2.Options)) (*ec2.DescribePlacementGroupsOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.placementCalls = append(f.placementCalls, in)
	out := &ec2.DescribePlacementGroupsOutput{}
	for _, g := range f.placementGroups {
		if slices.Contains(in.GroupIds, aws.ToString(g.GroupId)) || slices.Contains(in.GroupNames, aws.ToString(g.GroupName)) {
			out.PlacementGroups = append(out.PlacementGroups, g)
		}
	}
	if len(out.PlacementGroups) == 0 {
		return nil, &smithy.GenericAPIError{Code: "InvalidPlacementGroup.Unknown", Message: "The Placement Group is unknown"}
	}
	return out, nil
}

func (f *fakeEC2) DescribeImages(_ context.Context, in *ec2.DescribeImagesInput, _ ...func(*ec2.Options)) (*ec2.DescribeImagesOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.imageCalls = append(f.imageCalls, in)
	if len(in.ImageIds) == 0 {
		return &ec2.DescribeImagesOutput{Images: f.images}, nil
	}
	var out []ec2types.Image
	for _, im := range f.images {
		for _, id := range in.ImageIds {
			if aws.ToString(im.ImageId) == id {
				out = append(out, im)
			}
		}
	}
	return &ec2.DescribeImagesOutput{Images: out}, nil
}

func (f *fakeEC2) DescribeLaunchTemplates(_ context.Context, in *ec2.DescribeLaunchTemplatesInput, _ ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplatesOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.describeCalls++
	var out []ec2types.LaunchTemplate
	if len(in.Filters) > 0 {
		for n := range f.templates {
			out = append(out, ec2types.LaunchTemplate{LaunchTemplateName: aws.String(n), CreateTime: aws.Time(f.created[n])})
		}
		return &ec2.DescribeLaunchTemplatesOutput{LaunchTemplates: out}, nil
	}
	for _, n := range in.LaunchTemplateNames {
		if _, ok := f.templates[n]; ok {
			out = append(out, ec2types.LaunchTemplate{LaunchTemplateName: aws.String(n)})
		}
	}
	if len(out) == 0 {
		return nil, &smithy.GenericAPIError{Code: "InvalidLaunchTemplateName.NotFoundException", Message: "not found"}
	}
	return &ec2.DescribeLaunchTemplatesOutput{LaunchTemplates: out}, nil
}

func (f *fakeEC2) DeleteLaunchTemplate(_ context.Context, in *ec2.DeleteLaunchTemplateInput, _ ...func(*ec2.Options)) (*ec2.DeleteLaunchTemplateOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	name := aws.ToString(in.LaunchTemplateName)
	if _, ok := f.templates[name]; !ok {
		return nil, &smithy.GenericAPIError{Code: "InvalidLaunchTemplateName.NotFoundException", Message: "not found"}
	}
	delete(f.templates, name)
	f.deleted = append(f.deleted, name)
	return &ec2.DeleteLaunchTemplateOutput{}, nil
}

func (f *fakeEC2) CreateLaunchTemplate(_ context.Context, in *ec2.CreateLaunchTemplateInput, _ ...func(*ec2.Options)) (*ec2.CreateLaunchTemplateOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.createLT = append(f.createLT, in)
	name := aws.ToString(in.LaunchTemplateName)
	if _, ok := f.templates[name]; ok {
		return nil, &smithy.GenericAPIError{Code: "InvalidLaunchTemplateName.AlreadyExistsException", Message: "exists"}
	}
	f.templates[name] = in
	if f.created == nil {
		f.created = map[string]time.Time{}
	}
	f.created[name] = f.now
	return &ec2.CreateLaunchTemplateOutput{LaunchTemplate: &ec2types.LaunchTemplate{LaunchTemplateName: in.LaunchTemplateName}}, nil
}

func (f *fakeEC2) CreateFleet(_ context.Context, in *ec2.CreateFleetInput, _ ...func(*ec2.Options)) (*ec2.CreateFleetOutput, error) {
	f.mu.Lock()
	f.fleets = append(f.fleets, in)
	fn, ferr := f.fleet, f.fleetErr
	f.mu.Unlock()
	if ferr != nil {
		return nil, ferr
	}
	if fn != nil {
		return fn(in)
	}
	return launchFirst(in), nil
}

// launchFirst launches the fleet's target capacity from the first override
// of the first config, as moto does.
func launchFirst(in *ec2.CreateFleetInput) *ec2.CreateFleetOutput {
	c := in.LaunchTemplateConfigs[0]
	o := c.Overrides[0]
	ids := []string{"i-0123"}
	for i := 1; i < int(aws.ToInt32(in.TargetCapacitySpecification.TotalTargetCapacity)); i++ {
		ids = append(ids, fmt.Sprintf("i-%04d", 123+i))
	}
	return &ec2.CreateFleetOutput{FleetId: aws.String("fleet-1"), Instances: []ec2types.CreateFleetInstance{{
		InstanceIds: ids, InstanceType: o.InstanceType,
		Lifecycle: ec2types.InstanceLifecycle(in.TargetCapacitySpecification.DefaultTargetCapacityType),
		LaunchTemplateAndOverrides: &ec2types.LaunchTemplateAndOverridesResponse{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecification{LaunchTemplateName: c.LaunchTemplateSpecification.LaunchTemplateName},
			Overrides:                   &ec2types.FleetLaunchTemplateOverrides{InstanceType: o.InstanceType, SubnetId: o.SubnetId, AvailabilityZone: o.AvailabilityZone},
		},
	}}}
}

// fleetError is a CreateFleet error entry for an override.
func fleetError(code, typ, subnet, zone, lifecycle string) ec2types.CreateFleetError {
	return ec2types.CreateFleetError{
		ErrorCode: aws.String(code), ErrorMessage: aws.String(code + " for " + typ), Lifecycle: ec2types.InstanceLifecycle(lifecycle),
		LaunchTemplateAndOverrides: &ec2types.LaunchTemplateAndOverridesResponse{
			Overrides: &ec2types.FleetLaunchTemplateOverrides{InstanceType: ec2types.InstanceType(typ), SubnetId: aws.String(subnet), AvailabilityZone: optional(zone)},
		},
	}
}

// fakeSSM serves parameters from a map.
type fakeSSM struct {
	mu     sync.Mutex
	params map[string]string
	calls  [][]string
	// denied names parameters the caller's role may not read: a call that
	// names one fails as IAM fails it.
	denied map[string]bool
}

func (f *fakeSSM) GetParameters(_ context.Context, in *ssm.GetParametersInput, _ ...func(*ssm.Options)) (*ssm.GetParametersOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(in.Names) > maxParametersPerCall {
		return nil, fmt.Errorf("%d names: at most %d", len(in.Names), maxParametersPerCall)
	}
	f.calls = append(f.calls, in.Names)
	for _, n := range in.Names {
		if f.denied[n] {
			return nil, &smithy.GenericAPIError{Code: "AccessDeniedException", Message: "User: arn:aws:sts::123456789012:assumed-role/provision is not authorized to perform: ssm:GetParameters on resource: arn:aws:ssm:us-east-1:123456789012:parameter" + n}
		}
	}
	out := &ssm.GetParametersOutput{}
	for _, n := range in.Names {
		if v, ok := f.params[n]; ok {
			out.Parameters = append(out.Parameters, ssmtypes.Parameter{Name: aws.String(n), Value: aws.String(v)})
		} else {
			out.InvalidParameters = append(out.InvalidParameters, n)
		}
	}
	return out, nil
}

// al2023Params are the public parameters of Kubernetes 1.35's latest
// AL2023 images: standard and nvidia per architecture (no neuron).
func al2023Params() map[string]string {
	return map[string]string{
		"/aws/service/eks/optimized-ami/1.35/amazon-linux-2023/x86_64/standard/recommended/image_id": "ami-std-x86",
		"/aws/service/eks/optimized-ami/1.35/amazon-linux-2023/x86_64/nvidia/recommended/image_id":   "ami-gpu-x86",
		"/aws/service/eks/optimized-ami/1.35/amazon-linux-2023/arm64/standard/recommended/image_id":  "ami-std-arm",
		"/aws/service/eks/optimized-ami/1.35/amazon-linux-2023/arm64/nvidia/recommended/image_id":    "ami-gpu-arm",
	}
}

// publicParams are AWS's public AMI parameters the fixture's SSM holds: the
// AL2023 ones, Bottlerocket's (standard and nvidia, no arm nvidia), AL2's and Windows's.
func publicParams() map[string]string {
	m := al2023Params()
	m["/aws/service/bottlerocket/aws-k8s-1.35/x86_64/latest/image_id"] = "ami-br-x86"
	m["/aws/service/bottlerocket/aws-k8s-1.35-nvidia/x86_64/latest/image_id"] = "ami-br-gpu-x86"
	m["/aws/service/bottlerocket/aws-k8s-1.35/arm64/latest/image_id"] = "ami-br-arm"
	m["/aws/service/eks/optimized-ami/1.35/amazon-linux-2/recommended/image_id"] = "ami-al2-x86"
	for _, year := range []string{"2019", "2022", "2025"} {
		m["/aws/service/ami-windows-latest/Windows_Server-"+year+"-English-Core-EKS_Optimized-1.35/image_id"] = "ami-win" + year
	}
	m["/aws/service/eks/optimized-ami/1.35/amazon-linux-2-gpu/recommended/image_id"] = "ami-al2-gpu"
	m["/aws/service/eks/optimized-ami/1.35/amazon-linux-2-arm64/recommended/image_id"] = "ami-al2-arm"
	return m
}

var testCluster = Cluster{
	Name: "my-production-cluster", Endpoint: "https://127.0.0.1:6443",
	CertificateAuthority: []byte("-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"),
	ServiceCIDR:          "10.96.0.0/16", KubernetesVersion: "1.35",
}

type fixture struct {
	ec2 *fakeEC2
	ssm *fakeSSM
	l   *Launcher
	now time.Time
}

func newFixture(t interface{ Fatal(...any) }) *fixture {
	f := &fixture{ec2: newFakeEC2(), ssm: &fakeSSM{params: publicParams()}, now: time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)}
	l, err := New(Config{
		Cluster: testCluster, InstanceProfile: "nodewright-node", EC2: f.ec2, SSM: f.ssm,
		Catalog: catalog.Default(), Spot: fixedSpot(0.05), Now: func() time.Time { return f.now },
	})
	if err != nil {
		t.Fatal(err)
	}
	f.l = l
	return f
}

type fixedSpot float64

func (p fixedSpot) SpotPrice(string, string) (float64, bool) { return float64(p), true }

// defaultNodeClass is the users' example EC2NodeClass (defaulted).
func defaultNodeClass() *apis.EC2NodeClass {
	size := resource.MustParse("100Gi")
	nc := &apis.EC2NodeClass{
		Spec: apis.EC2NodeClassSpec{
			Role:                       "KarpenterNodeRole-my-production-cluster",
			AMISelectorTerms:           []apis.AMISelectorTerm{{Alias: "al2023@latest"}},
			SubnetSelectorTerms:        []apis.SubnetSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "my-production-cluster"}}},
			SecurityGroupSelectorTerms: []apis.SecurityGroupSelectorTerm{{Tags: map[string]string{"karpenter.sh/discovery": "my-production-cluster"}}},
			BlockDeviceMappings: []*apis.BlockDeviceMapping{{DeviceName: aws.String("/dev/xvda"), EBS: &apis.BlockDevice{
				VolumeSize: &size, VolumeType: aws.String("gp3"), IOPS: aws.Int64(3000), Throughput: aws.Int64(125),
				Encrypted: aws.Bool(true), DeleteOnTermination: aws.Bool(true),
			}}},
			Tags:            map[string]string{"Environment": "production", "Team": "platform"},
			MetadataOptions: &apis.MetadataOptions{HTTPPutResponseHopLimit: aws.Int64(2)},
		},
	}
	nc.Name = "default"
	nc.Default()
	return nc
}

// claim is a planned NodeClaim of the default pool.
func claim(types []string, zones []string, capacityTypes ...string) scheduling.NodeClaim {
	if len(capacityTypes) == 0 {
		capacityTypes = []string{"on-demand", "spot"}
	}
	return scheduling.NodeClaim{
		NodePool: "default", NodeClass: "default", InstanceTypes: types, Zones: zones, CapacityTypes: capacityTypes,
		Labels: map[string]string{"team": "platform", "environment": "production", "karpenter.sh/capacity-type": "spot", "topology.kubernetes.io/zone": "us-east-1a"},
	}
}
