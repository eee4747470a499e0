package fleet

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/scheduling"
)

// networkLaunch launches the claim for the class on a fixture whose account
// has a cluster placement group (training, pg-0train) and a partition one
// (shards, pg-0shards, 3 partitions), and returns the launch templates made
// and the fleet request, as JSON, with the error.
func networkLaunch(t *testing.T, nc *apis.EC2NodeClass, c scheduling.NodeClaim) (templates []*ec2types.RequestLaunchTemplateData, fleet string, userData []string, err error) {
	t.Helper()
	f := newFixture(t)
	f.ec2.placementGroups = []ec2types.PlacementGroup{
		{GroupId: aws.String("pg-0train"), GroupName: aws.String("training"), Strategy: ec2types.PlacementStrategyCluster, State: ec2types.PlacementGroupStateAvailable},
		{GroupId: aws.String("pg-0shards"), GroupName: aws.String("shards"), Strategy: ec2types.PlacementStrategyPartition, PartitionCount: aws.Int32(3), State: ec2types.PlacementGroupStateAvailable},
	}
	_, err = f.l.Launch(context.Background(), Request{Name: "default-abcde", NodeClass: nc, Claim: c})
	for _, lt := range f.ec2.createLT {
		templates = append(templates, lt.LaunchTemplateData)
		ud, derr := base64.StdEncoding.DecodeString(aws.ToString(lt.LaunchTemplateData.UserData))
		if derr != nil {
			t.Fatal(derr)
		}
		userData = append(userData, string(ud))
	}
	j, jerr := json.Marshal(f.ec2.fleets)
	if jerr != nil {
		t.Fatal(jerr)
	}
	return templates, string(j), userData, err
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// efaClaim is a claim whose pods ask for one EFA device.
func efaClaim(types ...string) scheduling.NodeClaim {
	c := claim(types, []string{"us-east-1a"}, "on-demand")
	c.Requests = corev1.ResourceList{apis.ResourceEFA: resource.MustParse("1"), corev1.ResourceCPU: resource.MustParse("1")}
	return c
}

// A claim whose pods ask for vpc.amazonaws.com/efa launches each type with
// as many EFA interfaces as it supports, one per network card (the first at
// device 0, the others at 1), in one launch template per EFA count; a claim
// without EFA gets bare security groups, as before.
func TestEFAInterfacesFollowTheClaim(t *testing.T) {
	nc := defaultNodeClass()
	templates, fleet, _, err := networkLaunch(t, nc, efaClaim("c5n.18xlarge", "p4d.24xlarge", "c6gn.16xlarge"))
	if err != nil {
		t.Fatal(err)
	}
	// c5n (1 EFA) and p4d (4) boot the standard and nvidia x86 images, c6gn
	// (1) the arm one: three templates.
	if len(templates) != 3 {
		t.Fatalf("want 3 templates (one per AMI and EFA count), got %d", len(templates))
	}
	counts := map[string]int{}
	for _, d := range templates {
		if d.SecurityGroupIds != nil {
			t.Errorf("an EFA template names bare security groups: %v", d.SecurityGroupIds)
		}
		for i, ni := range d.NetworkInterfaces {
			if aws.ToString(ni.InterfaceType) != "efa" || aws.ToInt32(ni.NetworkCardIndex) != int32(i) ||
				aws.ToInt32(ni.DeviceIndex) != min(int32(i), 1) || len(ni.Groups) == 0 {
				t.Errorf("interface %d: %s", i, jsonOf(t, ni))
			}
		}
		counts[aws.ToString(d.ImageId)] = len(d.NetworkInterfaces)
	}
	if want := map[string]int{"ami-std-x86": 1, "ami-gpu-x86": 4, "ami-std-arm": 1}; jsonOf(t, counts) != jsonOf(t, want) {
		t.Errorf("EFA interfaces per image: got %v, want %v", counts, want)
	}
	if !strings.Contains(fleet, `"InstanceType":"p4d.24xlarge"`) {
		t.Errorf("the fleet lacks p4d.24xlarge: %s", fleet)
	}

	plain, _, _, err := networkLaunch(t, defaultNodeClass(), claim([]string{"c5n.18xlarge"}, []string{"us-east-1a"}, "on-demand"))
	if err != nil {
		t.Fatal(err)
	}
	if len(plain) != 1 || plain[0].NetworkInterfaces != nil || len(plain[0].SecurityGroupIds) == 0 {
		t.Errorf("without EFA the template has interfaces: %s", jsonOf(t, plain))
	}
}

// Each networking field of the EC2NodeClass changes the launch template as
// Karpenter's does (apis.SupportTable names this test for them).
func TestNetworkFieldsShapeTheLaunch(t *testing.T) {
	primary := &apis.NetworkInterface{NetworkCardIndex: 0, DeviceIndex: 0, InterfaceType: apis.InterfaceTypeInterface}
	tests := []struct {
		path  string
		set   func(*apis.EC2NodeClass)
		claim scheduling.NodeClaim
		want  []string
	}{
		{"spec.networkInterfaces[].interfaceType", func(nc *apis.EC2NodeClass) {
			nc.Spec.NetworkInterfaces = []*apis.NetworkInterface{primary, {NetworkCardIndex: 1, DeviceIndex: 0, InterfaceType: apis.InterfaceTypeEFAOnly}}
		}, efaClaim("p4d.24xlarge"), []string{`"Groups":["sg-1","sg-2"],"InterfaceType":"interface"`, `"InterfaceType":"efa-only"`}},
		{"spec.networkInterfaces[].networkCardIndex", func(nc *apis.EC2NodeClass) {
			nc.Spec.NetworkInterfaces = []*apis.NetworkInterface{primary, {NetworkCardIndex: 3, DeviceIndex: 0, InterfaceType: apis.InterfaceTypeEFAOnly}}
		}, claim([]string{"p4d.24xlarge"}, []string{"us-east-1a"}, "on-demand"), []string{`"NetworkCardIndex":3`}},
		{"spec.networkInterfaces[].deviceIndex", func(nc *apis.EC2NodeClass) {
			nc.Spec.NetworkInterfaces = []*apis.NetworkInterface{primary, {NetworkCardIndex: 0, DeviceIndex: 2, InterfaceType: apis.InterfaceTypeInterface}}
		}, claim([]string{"c5.large"}, []string{"us-east-1a"}, "on-demand"), []string{`"DeviceIndex":2`}},
		{"spec.ipPrefixCount", func(nc *apis.EC2NodeClass) { nc.Spec.IPPrefixCount = aws.Int32(3) },
			claim([]string{"c5.large"}, []string{"us-east-1a"}, "on-demand"), []string{`"DeviceIndex":0`, `"Ipv4PrefixCount":3`}},
		{"spec.connectionTracking.tcpEstablishedTimeout", func(nc *apis.EC2NodeClass) {
			nc.Spec.ConnectionTracking = &apis.ConnectionTracking{TCPEstablishedTimeout: aws.Int32(600)}
		}, claim([]string{"c5.large"}, []string{"us-east-1a"}, "on-demand"), []string{`"ConnectionTrackingSpecification":{"TcpEstablishedTimeout":600`}},
		{"spec.connectionTracking.udpStreamTimeout", func(nc *apis.EC2NodeClass) {
			nc.Spec.ConnectionTracking = &apis.ConnectionTracking{UDPStreamTimeout: aws.Int32(120)}
		}, claim([]string{"c5.large"}, []string{"us-east-1a"}, "on-demand"), []string{`"UdpStreamTimeout":120`}},
		{"spec.connectionTracking.udpTimeout", func(nc *apis.EC2NodeClass) {
			nc.Spec.ConnectionTracking = &apis.ConnectionTracking{UDPTimeout: aws.Int32(45)}
		}, efaClaim("c5n.18xlarge"), []string{`"UdpTimeout":45`}},
		{"spec.cpuOptions.nestedVirtualization", func(nc *apis.EC2NodeClass) {
			nc.Spec.CPUOptions = &apis.CPUOptions{NestedVirtualization: aws.String("enabled")}
		}, claim([]string{"m8i.large"}, []string{"us-east-1a"}, "on-demand"), []string{`"CpuOptions":{"AmdSevSnp":"","CoreCount":null,"NestedVirtualization":"enabled"`}},
		{"spec.placementGroupSelector.name", func(nc *apis.EC2NodeClass) {
			nc.Spec.PlacementGroupSelector = &apis.PlacementGroupSelector{Name: aws.String("training")}
		}, claim([]string{"c5.large"}, []string{"us-east-1a"}, "on-demand"), []string{`"Placement":{`, `"GroupId":"pg-0train"`, "karpenter.k8s.aws/placement-group-id=pg-0train"}},
		{"spec.placementGroupSelector.id", func(nc *apis.EC2NodeClass) {
			nc.Spec.PlacementGroupSelector = &apis.PlacementGroupSelector{ID: aws.String("pg-0shards")}
		}, func() scheduling.NodeClaim {
			c := claim([]string{"c5.large"}, []string{"us-east-1a"}, "on-demand")
			c.Requirements = []corev1.NodeSelectorRequirement{{Key: apis.LabelPlacementGroupPartition, Operator: corev1.NodeSelectorOpIn, Values: []string{"3", "2"}}}
			return c
		}(), []string{`"GroupId":"pg-0shards"`, `"PartitionNumber":2`, "karpenter.k8s.aws/placement-group-partition=2"}},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			view := func(nc *apis.EC2NodeClass) string {
				templates, fleet, userData, err := networkLaunch(t, nc, tt.claim)
				if err != nil {
					t.Fatalf("launch: %v", err)
				}
				return jsonOf(t, templates) + "\n" + fleet + "\n" + strings.Join(userData, "\n")
			}
			base := view(defaultNodeClass())
			nc := defaultNodeClass()
			tt.set(nc)
			if err := nc.Validate(); err != nil {
				t.Fatalf("the case's class is invalid: %v", err)
			}
			got := view(nc)
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("the launch lacks %q:\n%s", w, got)
				}
				if strings.Contains(base, w) {
					t.Errorf("the launch without %s has %q already", tt.path, w)
				}
			}
		})
	}
}

// A class whose placement group is missing does not resolve (and so does
// not launch); a cluster group leaves out the types EC2 will not place in
// one.
func TestPlacementGroupResolution(t *testing.T) {
	nc := defaultNodeClass()
	nc.Spec.PlacementGroupSelector = &apis.PlacementGroupSelector{Name: aws.String("gone")}
	if _, _, _, err := networkLaunch(t, nc, claim([]string{"c5.large"}, []string{"us-east-1a"}, "on-demand")); !errors.Is(err, ErrNoPlacementGroup) {
		t.Errorf("a missing placement group: got %v, want ErrNoPlacementGroup", err)
	}
	nc.Spec.PlacementGroupSelector = &apis.PlacementGroupSelector{Name: aws.String("training")}
	_, fleet, _, err := networkLaunch(t, nc, claim([]string{"t3.large", "c5.large"}, []string{"us-east-1a"}, "on-demand"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(fleet, "t3.large") || !strings.Contains(fleet, "c5.large") {
		t.Errorf("a cluster placement group's fleet: want c5.large without t3.large, got %s", fleet)
	}
}

// A node launched into a placement group records the group (for placement
// group drift), in the plan and on the instance.
func TestLaunchRecordsThePlacementGroup(t *testing.T) {
	f := newFixture(t)
	f.ec2.placementGroups = []ec2types.PlacementGroup{{GroupId: aws.String("pg-0train"), GroupName: aws.String("training"), Strategy: ec2types.PlacementStrategyCluster}}
	nc := defaultNodeClass()
	nc.Spec.PlacementGroupSelector = &apis.PlacementGroupSelector{Name: aws.String("training")}
	req := Request{Name: "default-abcde", NodeClass: nc, Claim: claim([]string{"c5.large"}, []string{"us-east-1a"}, "on-demand")}
	p, err := f.l.Prepare(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if p.PlacementGroup != "pg-0train" {
		t.Errorf("plan's placement group %q, want pg-0train", p.PlacementGroup)
	}
	inst, err := f.l.Launch(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if inst.PlacementGroupID != "pg-0train" {
		t.Errorf("instance's placement group %q, want pg-0train", inst.PlacementGroupID)
	}
}
