package scheduling_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/scheduling"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
)

// The EC2NodeClass's networking fields narrow the types a plan may launch
// as Karpenter's compatibility checks do: nested virtualization to the
// processors that offer it, connection tracking to Nitro, and EFA-only
// interfaces set the EFA devices a node offers (whatever the type has).
func TestNetworkSettingsSelectTypes(t *testing.T) {
	class := func(set func(*apis.EC2NodeClass)) opt {
		nc := st.NodeClass("default")
		set(nc)
		return nodeClasses(nc)
	}
	primary := &apis.NetworkInterface{InterfaceType: apis.InterfaceTypeInterface}
	efaOnly := func(card int32) *apis.NetworkInterface {
		return &apis.NetworkInterface{NetworkCardIndex: card, InterfaceType: apis.InterfaceTypeEFAOnly}
	}
	for _, sc := range []scenario{
		{name: "nested virtualization takes the types that offer it",
			in: input(realCatalog(), pools(pool("default", 0)), pods(pod(po{Name: "vm", CPU: "1"})),
				class(func(nc *apis.EC2NodeClass) {
					nc.Spec.CPUOptions = &apis.CPUOptions{NestedVirtualization: aws.String("enabled")}
				})),
			want: []check{claims(1), everyType("vm", "nested-virtualization capable", (*catalog.InstanceType).NestedVirtualization)}},
		{name: "connection tracking takes Nitro types",
			in: input(realCatalog(), pools(pool("default", 0, req(apis.LabelInstanceHypervisor, opIn, "nitro", "xen"))), pods(pod(po{Name: "web", CPU: "1"})),
				class(func(nc *apis.EC2NodeClass) {
					nc.Spec.ConnectionTracking = &apis.ConnectionTracking{UDPTimeout: aws.Int32(30)}
				})),
			want: []check{claims(1), everyType("web", "Nitro", func(it *catalog.InstanceType) bool { return it.Hypervisor == "nitro" })}},
		{name: "one EFA-only interface offers one EFA device",
			in: input(realCatalog(), pools(pool("default", 0)), pods(pod(po{Name: "hpc", CPU: "1", Requests: res{"vpc.amazonaws.com/efa": "2"}})),
				class(func(nc *apis.EC2NodeClass) { nc.Spec.NetworkInterfaces = []*apis.NetworkInterface{primary, efaOnly(1)} })),
			want: []check{unschedulable("hpc")}},
		{name: "two EFA-only interfaces take types with two EFA cards",
			in: input(realCatalog(), pools(pool("default", 0)), pods(pod(po{Name: "hpc", CPU: "1", Requests: res{"vpc.amazonaws.com/efa": "2"}})),
				class(func(nc *apis.EC2NodeClass) {
					nc.Spec.NetworkInterfaces = []*apis.NetworkInterface{primary, efaOnly(1), efaOnly(2)}
				})),
			want: []check{claims(1), everyType("hpc", "two EFA", func(it *catalog.InstanceType) bool { return it.EFA >= 2 })}},
	} {
		t.Run(sc.name, func(t *testing.T) {
			r, err := scheduling.Solve(sc.in)
			if err != nil {
				t.Fatalf("Solve: %v", err)
			}
			checkInvariants(t, sc.in, r)
			p := newPlan(sc.in, r)
			for _, c := range sc.want {
				c(t, p)
			}
		})
	}
}
