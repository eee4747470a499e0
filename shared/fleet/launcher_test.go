package fleet

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/smithy-go"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
)

func TestLaunchSpotClaimAcrossArchitectures(t *testing.T) {
	f := newFixture(t)
	req := Request{Name: "default-abcde", NodeClass: defaultNodeClass(),
		Claim: claim([]string{"c5.large", "c6g.large", "m5.large"}, []string{"us-east-1a", "us-east-1b"})}
	inst, err := f.l.Launch(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	want := &Instance{NodeClaim: "default-abcde", NodePool: "default", InstanceID: "i-0123", InstanceType: "c5.large", Zone: "us-east-1a",
		SubnetID: "subnet-a1", SecurityGroups: []string{"sg-1", "sg-2"}, CapacityType: "spot", ImageID: "ami-std-x86", FleetID: "fleet-1", PricePerHour: 0.05}
	if !reflect.DeepEqual(inst, want) {
		t.Errorf("instance %+v\nwant %+v", inst, want)
	}
	if len(f.ec2.subnetCalls) != 1 || !reflect.DeepEqual(filterStrings(f.ec2.subnetCalls[0].Filters), []string{"tag:karpenter.sh/discovery=my-production-cluster"}) {
		t.Errorf("subnet queries %v", f.ec2.subnetCalls)
	}
	if len(f.ssm.calls) != 1 || len(f.ssm.calls[0]) != 5 {
		t.Errorf("SSM calls %v: want one with the 5 al2023 parameters", f.ssm.calls)
	}
	if len(f.ec2.createLT) != 2 {
		t.Fatalf("%d launch templates created, want 2 (x86 and arm)", len(f.ec2.createLT))
	}
	if len(f.ec2.fleets) != 1 {
		t.Fatalf("%d fleets", len(f.ec2.fleets))
	}
	in := f.ec2.fleets[0]
	images := map[string]string{}
	for _, lt := range f.ec2.createLT {
		images[aws.ToString(lt.LaunchTemplateName)] = aws.ToString(lt.LaunchTemplateData.ImageId)
	}
	var got []string
	for _, c := range in.LaunchTemplateConfigs {
		img := images[aws.ToString(c.LaunchTemplateSpecification.LaunchTemplateName)]
		for _, o := range c.Overrides {
			got = append(got, img+":"+string(o.InstanceType)+"@"+aws.ToString(o.SubnetId))
		}
	}
	wantOv := []string{
		"ami-std-x86:c5.large@subnet-a1", "ami-std-x86:c5.large@subnet-b1", "ami-std-x86:m5.large@subnet-a1", "ami-std-x86:m5.large@subnet-b1",
		"ami-std-arm:c6g.large@subnet-a1", "ami-std-arm:c6g.large@subnet-b1",
	}
	if !reflect.DeepEqual(got, wantOv) {
		t.Errorf("overrides %v\nwant %v", got, wantOv)
	}
	if in.TargetCapacitySpecification.DefaultTargetCapacityType != "spot" || aws.ToString(in.ClientToken) != "default-abcde" {
		t.Errorf("capacity type %s, token %s", in.TargetCapacitySpecification.DefaultTargetCapacityType, aws.ToString(in.ClientToken))
	}
	tags := tagMap(in.TagSpecifications[0].Tags)
	for k, v := range map[string]string{"kubernetes.io/cluster/my-production-cluster": "owned", "eks:eks-cluster-name": "my-production-cluster",
		"karpenter.sh/nodepool": "default", "karpenter.sh/nodeclaim": "default-abcde", "karpenter.k8s.aws/ec2nodeclass": "default", "Team": "platform"} {
		if tags[k] != v {
			t.Errorf("instance tag %s = %q, want %q", k, tags[k], v)
		}
	}
	ud := readUserData(t, aws.ToString(f.ec2.createLT[0].LaunchTemplateData.UserData))
	if !strings.Contains(ud[0].content, "--node-labels=environment=production,karpenter.k8s.aws/ec2nodeclass=default,karpenter.sh/nodepool=default,team=platform\n") {
		t.Errorf("user data labels: want the template labels and pool, not the claim's zone or capacity type:\n%s", ud[0].content)
	}
}

func filterStrings(fs []ec2types.Filter) []string {
	var out []string
	for _, f := range fs {
		out = append(out, aws.ToString(f.Name)+"="+strings.Join(f.Values, ","))
	}
	return out
}

func TestLaunchReusesResolutionAndTemplates(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	req := Request{Name: "default-aaaaa", NodeClass: defaultNodeClass(), Claim: claim([]string{"m5.large"}, []string{"us-east-1a"})}
	for _, name := range []string{"default-aaaaa", "default-bbbbb"} {
		req.Name = name
		if _, err := f.l.Launch(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	if len(f.ec2.subnetCalls) != 1 || len(f.ec2.createLT) != 1 || f.ec2.describeCalls != 1 {
		t.Errorf("subnet lookups %d, templates created %d, described %d: want 1, 1, 1 (cached)", len(f.ec2.subnetCalls), len(f.ec2.createLT), f.ec2.describeCalls)
	}
	// A new Launcher (the next invocation) finds the template by name.
	l2, err := New(f.l.cfg)
	if err != nil {
		t.Fatal(err)
	}
	req.Name = "default-ccccc"
	if _, err := l2.Launch(ctx, req); err != nil {
		t.Fatal(err)
	}
	if len(f.ec2.createLT) != 1 || f.ec2.describeCalls != 2 {
		t.Errorf("templates created %d, described %d: want the existing template reused", len(f.ec2.createLT), f.ec2.describeCalls)
	}
	// After the cache TTL the node class is looked up again.
	f.now = f.now.Add(DefaultCacheTTL + time.Second)
	req.Name = "default-ddddd"
	if _, err := f.l.Launch(ctx, req); err != nil {
		t.Fatal(err)
	}
	if len(f.ec2.subnetCalls) != 3 {
		t.Errorf("subnet lookups %d, want 3 (one per launcher, one after expiry)", len(f.ec2.subnetCalls))
	}
	// A changed node class makes a new template.
	nc := defaultNodeClass()
	nc.Spec.Tags["Team"] = "data"
	req.NodeClass, req.Name = nc, "default-eeeee"
	if _, err := f.l.Launch(ctx, req); err != nil {
		t.Fatal(err)
	}
	if len(f.ec2.createLT) != 2 {
		t.Errorf("templates created %d, want 2 after the node class changed", len(f.ec2.createLT))
	}
}

func TestLaunchPicksAMIVariantAndPrice(t *testing.T) {
	tests := []struct {
		name          string
		types         []string
		capacityTypes []string
		wantImages    []string
		wantType      string
		wantCapacity  string
	}{
		{"GPU types boot the nvidia image", []string{"g5.xlarge", "c5.large"}, []string{"on-demand"}, []string{"ami-gpu-x86", "ami-std-x86"}, "g5.xlarge", "on-demand"},
		{"arm only", []string{"m7g.large"}, []string{"spot"}, []string{"ami-std-arm"}, "m7g.large", "spot"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			inst, err := f.l.Launch(context.Background(), Request{Name: "default-abcde", NodeClass: defaultNodeClass(),
				Claim: claim(tt.types, []string{"us-east-1c"}, tt.capacityTypes...)})
			if err != nil {
				t.Fatal(err)
			}
			var images []string
			for _, lt := range f.ec2.createLT {
				images = append(images, aws.ToString(lt.LaunchTemplateData.ImageId))
			}
			if !reflect.DeepEqual(images, tt.wantImages) {
				t.Errorf("templates for images %v, want %v", images, tt.wantImages)
			}
			if inst.InstanceType != tt.wantType || inst.CapacityType != tt.wantCapacity || inst.SubnetID != "subnet-c1" {
				t.Errorf("instance %+v", inst)
			}
			wantPrice := 0.05
			if tt.wantCapacity == "on-demand" {
				it, _ := catalog.Default().Get(tt.wantType)
				wantPrice = it.OnDemandPrice
			}
			if inst.PricePerHour != wantPrice || wantPrice == 0 {
				t.Errorf("price %v, want %v", inst.PricePerHour, wantPrice)
			}
		})
	}
}

func TestLaunchErrors(t *testing.T) {
	ice := func(typ, subnet, zone string) ec2types.CreateFleetError {
		return fleetError("InsufficientInstanceCapacity", typ, subnet, zone, "spot")
	}
	tests := []struct {
		name            string
		fleet           func(*ec2.CreateFleetInput) (*ec2.CreateFleetOutput, error)
		fleetErr        error
		wantUnavailable bool
		wantOfferings   []UnavailableOffering
		wantInstance    bool
		wantInMessage   string
	}{
		{
			name: "every offering without capacity",
			fleet: func(*ec2.CreateFleetInput) (*ec2.CreateFleetOutput, error) {
				return &ec2.CreateFleetOutput{Errors: []ec2types.CreateFleetError{ice("m5.large", "subnet-b1", ""), ice("c5.large", "subnet-a1", "us-east-1a"),
					fleetError("MaxSpotInstanceCountExceeded", "c5.large", "subnet-b1", "us-east-1b", "spot")}}, nil
			},
			wantUnavailable: true,
			wantOfferings: []UnavailableOffering{
				{"c5.large", "us-east-1a", "spot", "InsufficientInstanceCapacity"}, {"c5.large", "us-east-1b", "spot", "MaxSpotInstanceCountExceeded"},
				{"m5.large", "us-east-1b", "spot", "InsufficientInstanceCapacity"},
			},
			wantInMessage: "InsufficientInstanceCapacity x2, MaxSpotInstanceCountExceeded x1",
		},
		{
			name: "a request error among capacity errors",
			fleet: func(*ec2.CreateFleetInput) (*ec2.CreateFleetOutput, error) {
				return &ec2.CreateFleetOutput{Errors: []ec2types.CreateFleetError{ice("c5.large", "subnet-a1", "us-east-1a"),
					fleetError("InvalidParameterValue", "m5.large", "subnet-a1", "us-east-1a", "spot")}}, nil
			},
			wantOfferings: []UnavailableOffering{{"c5.large", "us-east-1a", "spot", "InsufficientInstanceCapacity"}},
			wantInMessage: "InvalidParameterValue x1",
		},
		{
			name:          "API error",
			fleetErr:      &smithy.GenericAPIError{Code: "RequestLimitExceeded", Message: "slow down"},
			wantInMessage: "create fleet: api error RequestLimitExceeded",
		},
		{
			name: "launched after refusals",
			fleet: func(in *ec2.CreateFleetInput) (*ec2.CreateFleetOutput, error) {
				out := launchFirst(in)
				out.Errors = []ec2types.CreateFleetError{ice("c5.large", "subnet-b1", "")}
				return out, nil
			},
			wantInstance:  true,
			wantOfferings: []UnavailableOffering{{"c5.large", "us-east-1b", "spot", "InsufficientInstanceCapacity"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			f.ec2.fleet, f.ec2.fleetErr = tt.fleet, tt.fleetErr
			inst, err := f.l.Launch(context.Background(), Request{Name: "default-abcde", NodeClass: defaultNodeClass(),
				Claim: claim([]string{"c5.large", "m5.large"}, []string{"us-east-1a", "us-east-1b"})})
			if tt.wantInstance {
				if err != nil || !reflect.DeepEqual(inst.Unavailable, tt.wantOfferings) {
					t.Fatalf("instance %+v, err %v; want refused %v", inst, err, tt.wantOfferings)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.HasPrefix(err.Error(), "launch nodeclaim default-abcde: ") || !strings.Contains(err.Error(), tt.wantInMessage) {
				t.Errorf("error %q: want the nodeclaim and %q", err, tt.wantInMessage)
			}
			if got := errors.Is(err, ErrUnavailableOffering); got != tt.wantUnavailable {
				t.Errorf("errors.Is(ErrUnavailableOffering) = %v, want %v", got, tt.wantUnavailable)
			}
			if got := UnavailableOfferings(err); !reflect.DeepEqual(got, tt.wantOfferings) {
				t.Errorf("unavailable offerings %v, want %v", got, tt.wantOfferings)
			}
		})
	}
}

func TestLaunchRefusesBadRequests(t *testing.T) {
	ubuntu := defaultNodeClass()
	ubuntu.Spec.AMISelectorTerms = []apis.AMISelectorTerm{{Alias: "ubuntu@latest"}}
	tests := []struct {
		name    string
		req     Request
		params  map[string]string
		wantErr string
	}{
		{"no name", Request{NodeClass: defaultNodeClass(), Claim: claim([]string{"m5.large"}, []string{"us-east-1a"})}, nil, "no NodeClaim name"},
		{"no node class", Request{Name: "n", Claim: claim([]string{"m5.large"}, []string{"us-east-1a"})}, nil, "no EC2NodeClass"},
		{"no types", Request{Name: "n", NodeClass: defaultNodeClass(), Claim: claim(nil, []string{"us-east-1a"})}, nil, "no instance types"},
		{"no zones", Request{Name: "n", NodeClass: defaultNodeClass(), Claim: claim([]string{"m5.large"}, nil)}, nil, "no zones"},
		{"zone without subnet", Request{Name: "n", NodeClass: defaultNodeClass(), Claim: claim([]string{"m5.large"}, []string{"us-east-1f"})}, nil, "no subnet in the claim's zones [us-east-1f]"},
		{"reserved capacity", Request{Name: "n", NodeClass: defaultNodeClass(), Claim: claim([]string{"m5.large"}, []string{"us-east-1a"}, "reserved")}, nil, `capacity type "reserved"`},
		{"unsupported alias", Request{Name: "n", NodeClass: ubuntu, Claim: claim([]string{"m5.large"}, []string{"us-east-1a"})}, nil, "alias ubuntu@latest"},
		{"no AMI for the architecture", Request{Name: "n", NodeClass: defaultNodeClass(), Claim: claim([]string{"m7g.large"}, []string{"us-east-1a"})},
			map[string]string{"/aws/service/eks/optimized-ami/1.35/amazon-linux-2023/x86_64/standard/recommended/image_id": "ami-std-x86"}, "no AMI of EC2NodeClass default boots any of the claim's types: m7g.large (no arm64 standard AMI)"},
		{"no AMI parameter at all", Request{Name: "n", NodeClass: defaultNodeClass(), Claim: claim([]string{"m5.large"}, []string{"us-east-1a"})},
			map[string]string{}, "none of the AMI parameters of Kubernetes 1.35 exists"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			if tt.params != nil {
				f.ssm.params = tt.params
			}
			_, err := f.l.Launch(context.Background(), tt.req)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.HasPrefix(err.Error(), "launch nodeclaim ") {
				t.Errorf("err = %v, want %q", err, tt.wantErr)
			}
			if len(f.ec2.fleets) != 0 {
				t.Error("a fleet was requested")
			}
		})
	}
}

func TestResolveSelectorTerms(t *testing.T) {
	f := newFixture(t)
	f.ssm.params["/my/ami"] = "ami-arm"
	nc := defaultNodeClass()
	nc.Spec.SubnetSelectorTerms = []apis.SubnetSelectorTerm{{ID: "subnet-a1"}, {Tags: map[string]string{"tier": "private", "team": "*"}}, {ID: "subnet-c1"}}
	nc.Spec.SecurityGroupSelectorTerms = []apis.SecurityGroupSelectorTerm{{ID: "sg-1"}, {Name: "nodes"}, {Tags: map[string]string{"a": "b"}}}
	nc.Spec.AMISelectorTerms = []apis.AMISelectorTerm{{Tags: map[string]string{"os": "al2023"}, Owner: "self"}, {SSMParameter: "/my/ami"}}
	r, err := f.l.Resolve(context.Background(), nc)
	if err != nil {
		t.Fatal(err)
	}
	var subnetQs, groupQs [][]string
	for _, q := range f.ec2.subnetCalls {
		subnetQs = append(subnetQs, filterStrings(q.Filters))
	}
	for _, q := range f.ec2.groupCalls {
		groupQs = append(groupQs, filterStrings(q.Filters))
	}
	if want := [][]string{{"subnet-id=subnet-a1,subnet-c1"}, {"tag-key=team", "tag:tier=private"}}; !reflect.DeepEqual(subnetQs, want) {
		t.Errorf("subnet queries %v, want %v", subnetQs, want)
	}
	if want := [][]string{{"group-id=sg-1"}, {"group-name=nodes"}, {"tag:a=b"}}; !reflect.DeepEqual(groupQs, want) {
		t.Errorf("security group queries %v, want %v", groupQs, want)
	}
	if q := f.ec2.imageCalls[0]; !reflect.DeepEqual(filterStrings(q.Filters), []string{"tag:os=al2023"}) || !reflect.DeepEqual(q.Owners, []string{"self"}) {
		t.Errorf("image query %+v", q)
	}
	wantAMIs := []AMI{{ID: "ami-x86-new", Name: "custom-x86-2", Arch: "amd64"}, {ID: "ami-arm", Name: "custom-arm", Arch: "arm64"}}
	sortAMIs(wantAMIs)
	if !reflect.DeepEqual(r.AMIs, wantAMIs) {
		t.Errorf("AMIs %+v, want the newest per architecture %+v", r.AMIs, wantAMIs)
	}
	wantSubnets := []Subnet{{"subnet-a1", "us-east-1a", 200, false}, {"subnet-b1", "us-east-1b", 50, false}, {"subnet-c1", "us-east-1c", 10, true}}
	if !reflect.DeepEqual(r.Subnets, wantSubnets) || !reflect.DeepEqual(r.SecurityGroups, []string{"sg-1", "sg-2"}) {
		t.Errorf("subnets %+v, groups %v", r.Subnets, r.SecurityGroups)
	}
	zones, err := f.l.Zones(context.Background(), []*apis.EC2NodeClass{nc, defaultNodeClass()})
	if err != nil || !reflect.DeepEqual(zones, []string{"us-east-1a", "us-east-1b", "us-east-1c"}) {
		t.Errorf("zones %v, %v", zones, err)
	}
}

func TestAL2023Parameters(t *testing.T) {
	latest := AL2023Parameters("1.35", "latest")
	pinned := AL2023Parameters("1.35", "v20251120")
	if len(latest) != 5 || len(pinned) != 5 {
		t.Fatalf("%d and %d parameters, want 5 (x86 standard/nvidia/neuron, arm standard/nvidia)", len(latest), len(pinned))
	}
	if latest[0].Name != "/aws/service/eks/optimized-ami/1.35/amazon-linux-2023/x86_64/standard/recommended/image_id" || latest[0].Arch != "amd64" {
		t.Errorf("latest %+v", latest[0])
	}
	if want := "/aws/service/eks/optimized-ami/1.35/amazon-linux-2023/arm64/nvidia/amazon-eks-node-al2023-arm64-nvidia-1.35-v20251120/image_id"; pinned[4].Name != want {
		t.Errorf("pinned %q, want %q", pinned[4].Name, want)
	}
}

func TestPickSubnets(t *testing.T) {
	sn := func(id, zone string, free int32, state ec2types.SubnetState) ec2types.Subnet {
		return ec2types.Subnet{SubnetId: aws.String(id), AvailabilityZone: aws.String(zone), AvailableIpAddressCount: aws.Int32(free), State: state}
	}
	got := pickSubnets([]ec2types.Subnet{
		sn("s-3", "z1", 10, "available"), sn("s-2", "z1", 10, "available"), sn("s-9", "z1", 500, "pending"),
		sn("s-5", "z0", 1, ""), sn("s-5", "z0", 1, "available"),
	})
	want := []Subnet{{ID: "s-5", Zone: "z0", AvailableIPs: 1}, {ID: "s-2", Zone: "z1", AvailableIPs: 10}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("pickSubnets = %+v, want %+v", got, want)
	}
	// Drift compares a node's subnet with every subnet selected, not only
	// the one per zone launches pick.
	ids := subnetIDs([]ec2types.Subnet{sn("s-3", "z1", 10, "available"), sn("s-2", "z1", 10, "available"), sn("s-5", "z0", 1, ""), sn("s-5", "z0", 1, "available")})
	if want := []string{"s-2", "s-3", "s-5"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("subnetIDs = %v, want %v", ids, want)
	}
}

func TestMemoSharesOneLookup(t *testing.T) {
	var m memo[int]
	var calls atomic.Int32
	release := make(chan struct{})
	now := time.Unix(0, 0)
	var wg sync.WaitGroup
	results := make([]int, 8)
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], _ = m.get(context.Background(), "k", now, time.Minute, func() (int, error) {
				calls.Add(1)
				<-release
				return 42, nil
			})
		}()
	}
	time.Sleep(10 * time.Millisecond)
	close(release)
	wg.Wait()
	if calls.Load() != 1 {
		t.Errorf("%d lookups, want 1", calls.Load())
	}
	for _, r := range results {
		if r != 42 {
			t.Errorf("result %d", r)
		}
	}
	if _, err := m.get(context.Background(), "e", now, time.Minute, func() (int, error) { return 0, errors.New("boom") }); err == nil {
		t.Error("no error")
	}
	v, err := m.get(context.Background(), "e", now, time.Minute, func() (int, error) { return 7, nil })
	if err != nil || v != 7 {
		t.Errorf("a failure was cached: %v, %v", v, err)
	}
}

// A custom ssmParameter the function's role may not read: the error says
// how to grant it (the stack's nodewright:ssmParameters context value).
func TestResolveDeniedParameterSaysHowToGrantIt(t *testing.T) {
	f := newFixture(t)
	f.ssm.params["/team/ami"] = "ami-arm"
	f.ssm.denied = map[string]bool{"/team/ami": true}
	nc := defaultNodeClass()
	nc.Spec.AMISelectorTerms = []apis.AMISelectorTerm{{SSMParameter: "/team/ami"}}
	_, err := f.l.Resolve(context.Background(), nc)
	var ae smithy.APIError
	if err == nil || !errors.As(err, &ae) || ae.ErrorCode() != "AccessDeniedException" {
		t.Fatalf("error %v: want the AccessDeniedException", err)
	}
	for _, want := range []string{"/team/ami", "nodewright:ssmParameters=/team/ami", "deploy the stack again"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
}
