package catalog

import (
	"bytes"
	"os"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog/internal/gen"
)

// A class's network interfaces decide the EFA devices and the pods a node
// offers (an EFA-only interface on card 0 takes an ENI and gives no
// address), and its CPU options and connection tracking which types it
// can launch.
func TestNetworkSettingsChangeCapacity(t *testing.T) {
	p4d, _ := Default().Get("p4d.24xlarge")
	m8i, _ := Default().Get("m8i.large")
	nc := &apis.EC2NodeClass{}
	base, _ := p4d.Compute(SettingsFor(nc))
	if base.EFA != 4 {
		t.Fatalf("p4d.24xlarge offers %d EFA devices without interfaces, want 4", base.EFA)
	}
	nc.Spec.NetworkInterfaces = []*apis.NetworkInterface{
		{InterfaceType: apis.InterfaceTypeInterface},
		{NetworkCardIndex: 0, DeviceIndex: 1, InterfaceType: apis.InterfaceTypeEFAOnly},
	}
	got, _ := p4d.Compute(SettingsFor(nc))
	if got.EFA != 1 {
		t.Errorf("one EFA-only interface: %d EFA devices, want 1", got.EFA)
	}
	if want := int64((p4d.ENIs-1)*(p4d.IPv4PerENI-1) + 2); got.Pods != want || got.Pods >= base.Pods {
		t.Errorf("an EFA-only interface on card 0: %d pods, want %d (from %d)", got.Pods, want, base.Pods)
	}
	nested := &apis.EC2NodeClass{Spec: apis.EC2NodeClassSpec{CPUOptions: &apis.CPUOptions{NestedVirtualization: aws.String("enabled")}}}
	if !m8i.Launchable(SettingsFor(nested)) || p4d.Launchable(SettingsFor(nested)) {
		t.Errorf("nested virtualization: m8i.large launchable %v (want true), p4d.24xlarge %v (want false)",
			m8i.Launchable(SettingsFor(nested)), p4d.Launchable(SettingsFor(nested)))
	}
	if !p4d.Launchable(SettingsFor(nc)) {
		t.Error("p4d.24xlarge cannot launch one EFA-only interface")
	}
}

// Karpenter's network interface cases, on the catalog's figures.
func TestNetworkInterfacesParity(t *testing.T) {
	m6idn, _ := Default().Get("m6idn.32xlarge")
	// Karpenter's EFA cases use dl1.24xlarge (4 EFA), which the catalog
	// does not hold; p4d.24xlarge has 4 EFA too.
	dl1, _ := Default().Get("p4d.24xlarge")
	if m6idn == nil || dl1 == nil || dl1.EFA != 4 {
		t.Fatal("the catalog lacks m6idn.32xlarge or p4d.24xlarge with 4 EFA")
	}
	iface := func(card, device int32, typ apis.InterfaceType) *apis.NetworkInterface {
		return &apis.NetworkInterface{NetworkCardIndex: card, DeviceIndex: device, InterfaceType: typ}
	}
	with := func(nis ...*apis.NetworkInterface) NodeSettings {
		return SettingsFor(&apis.EC2NodeClass{Spec: apis.EC2NodeClassSpec{NetworkInterfaces: nis}})
	}
	primary := iface(0, 0, apis.InterfaceTypeInterface)
	cases := []struct {
		ref  string
		got  int64
		want int64
	}{
		// 8 ENIs on card 0, 50 addresses each: 8 x 49 + 2.
		{"aws/instancetype:3231", func() int64 {
			c, _ := m6idn.Compute(with(primary, iface(1, 0, apis.InterfaceTypeEFAOnly)))
			return c.Pods
		}(), 394},
		// An EFA-only interface on card 0 takes one: 7 x 49 + 2.
		{"aws/instancetype:3249", func() int64 {
			c, _ := m6idn.Compute(with(primary, iface(0, 1, apis.InterfaceTypeEFAOnly)))
			return c.Pods
		}(), 345},
	}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("%s: %d pods, want %d", c.ref, c.got, c.want)
		}
	}
	four := []*apis.NetworkInterface{primary, iface(0, 1, apis.InterfaceTypeEFAOnly), iface(1, 0, apis.InterfaceTypeEFAOnly),
		iface(2, 0, apis.InterfaceTypeEFAOnly), iface(3, 0, apis.InterfaceTypeEFAOnly)}
	if !dl1.Launchable(with(four...)) { // "aws/instancetype:3179"
		t.Error("aws/instancetype:3179: p4d.24xlarge cannot launch four EFA-only interfaces")
	}
	if dl1.Launchable(with(append(four, iface(4, 0, apis.InterfaceTypeEFAOnly))...)) { // "aws/instancetype:3205"
		t.Error("aws/instancetype:3205: p4d.24xlarge (4 EFA) launches five EFA-only interfaces")
	}
}

func TestGeneratedFeaturesAreUpToDate(t *testing.T) {
	describe, err := gen.MotoDescribePath()
	if err != nil {
		t.Fatalf("the generator's input (moto's DescribeInstanceTypes data) is missing: %v", err)
	}
	want, err := gen.Features(describe)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("zz_generated_features.go")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("zz_generated_features.go is stale: run `make generate` and commit the result")
	}
	t3, _ := Default().Get("t3.large")
	m8i, _ := Default().Get("m8i.large")
	if t3.SupportsPlacement("cluster") || !t3.SupportsPlacement("spread") || !m8i.NestedVirtualization() || t3.NestedVirtualization() {
		t.Error("t3.large: not in cluster groups, in spread ones, no nested virtualization; m8i.large: nested virtualization")
	}
}
