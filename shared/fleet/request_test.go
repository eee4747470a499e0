package fleet

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

var threeSubnets = []Subnet{{ID: "subnet-a", Zone: "us-east-1a"}, {ID: "subnet-b", Zone: "us-east-1b"}, {ID: "subnet-c", Zone: "us-east-1c"}}

func TestFleetInput(t *testing.T) {
	manyTypes := make([]string, 120)
	for i := range manyTypes {
		manyTypes[i] = fmt.Sprintf("t%d.large", i)
	}
	tests := []struct {
		name          string
		capacityType  string
		templates     []templateOverrides
		subnets       []Subnet
		wantOverrides [][]string // per config: "type@subnet"
		wantStrategy  string
	}{
		{
			name: "spot: types x zones, price order", capacityType: "spot",
			templates:     []templateOverrides{{Name: "lt-x86", Types: []string{"c5.large", "m5.large"}}},
			subnets:       threeSubnets[:2],
			wantOverrides: [][]string{{"c5.large@subnet-a", "c5.large@subnet-b", "m5.large@subnet-a", "m5.large@subnet-b"}},
			wantStrategy:  "price-capacity-optimized",
		},
		{
			name: "on-demand: one template per architecture", capacityType: "on-demand",
			templates:     []templateOverrides{{Name: "lt-arm", Types: []string{"c7g.large"}}, {Name: "lt-x86", Types: []string{"c5.large"}}},
			subnets:       threeSubnets[:1],
			wantOverrides: [][]string{{"c7g.large@subnet-a"}, {"c5.large@subnet-a"}},
			wantStrategy:  "lowest-price",
		},
		{
			name: "on-demand in the claim's price order", capacityType: "on-demand",
			templates:     []templateOverrides{{Name: "lt-x86", Types: []string{"m5.large", "c5.large"}, Priorities: []float64{0, 1}}},
			subnets:       threeSubnets[:1],
			wantOverrides: [][]string{{"m5.large@subnet-a", "c5.large@subnet-a"}},
			wantStrategy:  "prioritized",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in, err := fleetInput("default-abcde", 1, tt.capacityType, tt.templates, tt.subnets, map[string]string{"k": "v"}, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got [][]string
			for i, c := range in.LaunchTemplateConfigs {
				if aws.ToString(c.LaunchTemplateSpecification.LaunchTemplateName) != tt.templates[i].Name || aws.ToString(c.LaunchTemplateSpecification.Version) != "$Latest" {
					t.Errorf("config %d: template %+v", i, c.LaunchTemplateSpecification)
				}
				var ovs []string
				for _, o := range c.Overrides {
					ovs = append(ovs, string(o.InstanceType)+"@"+aws.ToString(o.SubnetId))
					if z := aws.ToString(o.AvailabilityZone); z == "" || !strings.HasSuffix(z, strings.TrimPrefix(aws.ToString(o.SubnetId), "subnet-")) {
						t.Errorf("override %s in zone %q", aws.ToString(o.SubnetId), z)
					}
				}
				got = append(got, ovs)
			}
			if !reflect.DeepEqual(got, tt.wantOverrides) {
				t.Errorf("overrides %v, want %v", got, tt.wantOverrides)
			}
			if in.Type != ec2types.FleetTypeInstant || aws.ToInt32(in.TargetCapacitySpecification.TotalTargetCapacity) != 1 ||
				string(in.TargetCapacitySpecification.DefaultTargetCapacityType) != tt.capacityType || aws.ToString(in.ClientToken) != "default-abcde" {
				t.Errorf("fleet %+v target %+v token %v", in.Type, *in.TargetCapacitySpecification, aws.ToString(in.ClientToken))
			}
			strategy := ""
			if in.SpotOptions != nil {
				strategy = string(in.SpotOptions.AllocationStrategy)
			}
			if in.OnDemandOptions != nil {
				strategy += string(in.OnDemandOptions.AllocationStrategy)
			}
			if strategy != tt.wantStrategy {
				t.Errorf("allocation strategy %q, want %q", strategy, tt.wantStrategy)
			}
			var kinds []string
			for _, ts := range in.TagSpecifications {
				kinds = append(kinds, string(ts.ResourceType))
				if tagMap(ts.Tags)["k"] != "v" {
					t.Errorf("%s tags %v", ts.ResourceType, ts.Tags)
				}
			}
			if !reflect.DeepEqual(kinds, []string{"instance", "volume", "fleet"}) {
				t.Errorf("tagged resource types %v", kinds)
			}
		})
	}
	t.Run("override limit drops the most expensive types", func(t *testing.T) {
		in, err := fleetInput("x", 1, "spot", []templateOverrides{{Name: "a", Types: manyTypes[:60]}, {Name: "b", Types: manyTypes[60:]}}, threeSubnets, nil, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		total := 0
		for _, c := range in.LaunchTemplateConfigs {
			total += len(c.Overrides)
		}
		last := in.LaunchTemplateConfigs[len(in.LaunchTemplateConfigs)-1].Overrides
		if total != MaxOverrides || string(last[len(last)-1].InstanceType) != "t99.large" {
			t.Errorf("%d overrides ending with %s, want %d ending with t99.large (the 100 cheapest types x 3 zones)", total, last[len(last)-1].InstanceType, MaxOverrides)
		}
	})
	t.Run("no subnet", func(t *testing.T) {
		if _, err := fleetInput("x", 1, "spot", []templateOverrides{{Name: "a", Types: []string{"c5.large"}}}, nil, nil, nil, nil); err == nil {
			t.Error("no error without subnets")
		}
	})
}

// An on-demand fleet launches the type the solve priced cheapest (here a
// NodeOverlay made m5.large cheaper than c5.large), across templates, not
// the type with EC2's lowest list price; a plan stored without the order
// keeps lowest-price.
func TestPlanInputLaunchesInTheSolvesOrder(t *testing.T) {
	p := &Plan{Token: "t", Count: 1, CapacityType: "on-demand", Subnets: threeSubnets[:1],
		Templates: []PlannedTemplate{{Name: "lt-arm", Types: []string{"m7g.large"}}, {Name: "lt-x86", Types: []string{"m5.large", "c5.large"}}},
		Order:     []string{"m5.large", "m7g.large", "c5.large"}}
	in, err := planInput(p)
	if err != nil {
		t.Fatal(err)
	}
	if got := in.OnDemandOptions.AllocationStrategy; got != ec2types.FleetOnDemandAllocationStrategyPrioritized {
		t.Errorf("strategy %q, want prioritized", got)
	}
	got := map[string]float64{}
	for _, c := range in.LaunchTemplateConfigs {
		for _, o := range c.Overrides {
			got[string(o.InstanceType)] = aws.ToFloat64(o.Priority)
		}
	}
	if want := map[string]float64{"m5.large": 0, "m7g.large": 1, "c5.large": 2}; !reflect.DeepEqual(got, want) {
		t.Errorf("priorities %v, want %v", got, want)
	}
	p.CapacityType = "spot"
	if in, err = planInput(p); err != nil || in.SpotOptions.AllocationStrategy != ec2types.SpotAllocationStrategyPriceCapacityOptimized || in.LaunchTemplateConfigs[0].Overrides[0].Priority != nil {
		t.Errorf("spot with no NodeOverlay price: %+v, %v", in.SpotOptions, err)
	}
	p.PriceOverlaid = true
	if in, err = planInput(p); err != nil || in.SpotOptions.AllocationStrategy != ec2types.SpotAllocationStrategyCapacityOptimizedPrioritized || aws.ToFloat64(in.LaunchTemplateConfigs[0].Overrides[0].Priority) != 1 {
		t.Errorf("spot priced by a NodeOverlay: %+v, %v", in.SpotOptions, err)
	}
	p.CapacityType, p.Order = "on-demand", nil
	if in, err = planInput(p); err != nil || in.OnDemandOptions.AllocationStrategy != ec2types.FleetOnDemandAllocationStrategyLowestPrice {
		t.Errorf("a plan without its order: %v, %v", in.OnDemandOptions, err)
	}
}

func TestInstanceTags(t *testing.T) {
	nc := defaultNodeClass()
	got := instanceTags("my-production-cluster", "default", "default-abcde", nc)
	want := map[string]string{
		"kubernetes.io/cluster/my-production-cluster": "owned", "eks:eks-cluster-name": "my-production-cluster",
		"karpenter.sh/nodepool": "default", "karpenter.sh/nodeclaim": "default-abcde", "karpenter.k8s.aws/ec2nodeclass": "default",
		"Name": "default/default-abcde", "Environment": "production", "Team": "platform", "nodewright.io/managed-by": "nodewright",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("instance tags %v\nwant %v", got, want)
	}
	nc.Spec.Tags["Name"] = "mine"
	nc.Spec.Tags["karpenter.sh/nodepool"] = "spoofed"
	got = instanceTags("my-production-cluster", "default", "default-abcde", nc)
	if got["Name"] != "mine" || got["karpenter.sh/nodepool"] != "default" {
		t.Errorf("Name %q (want the node class's), nodepool %q (want ours)", got["Name"], got["karpenter.sh/nodepool"])
	}
}

func TestClientTokenAndNames(t *testing.T) {
	long := strings.Repeat("p", 80)
	if tok := ClientToken(long); len(tok) != maxClientToken || ClientToken(long) != tok || ClientToken(long+"x") == tok {
		t.Errorf("ClientToken of a long name: %q", tok)
	}
	if ClientToken("default-abcde") != "default-abcde" {
		t.Error("a short name is its own token")
	}
	tests := []struct {
		pool, random, want string
	}{
		{"default", "\x00\x01\x02\x03\x04", "default-bcdfg"},
		{"default", "\x1a\x1b\xff\x00\x00", "default-9bqbb"},
		{strings.Repeat("p", 70), "\x00\x00\x00\x00\x00", strings.Repeat("p", 57) + "-bbbbb"},
	}
	for _, tt := range tests {
		got, err := NodeClaimName(tt.pool, strings.NewReader(tt.random))
		if err != nil || got != tt.want || len(got) > 63 {
			t.Errorf("NodeClaimName(%q) = %q, %v; want %q", tt.pool, got, err, tt.want)
		}
	}
	if _, err := NodeClaimName("default", strings.NewReader("ab")); err == nil {
		t.Error("a short random source gave no error")
	}
}
