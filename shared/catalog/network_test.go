package catalog

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/nodewright/nodewright/shared/apis"
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
