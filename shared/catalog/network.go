package catalog

import (
	"github.com/nodewright/nodewright/shared/apis"
)

// NetworkSettings are the parts of an EC2NodeClass that decide which types
// it can launch and how many EFA devices and pods they offer: its own
// network interfaces, nested virtualization and connection tracking.
type NetworkSettings struct {
	// Interfaces are the class's networkInterfaces (nil: it defines none,
	// and a pod asking for EFA gets the type's EFA interfaces).
	Interfaces []*apis.NetworkInterface
	// NestedVirtualization is cpuOptions.nestedVirtualization enabled.
	NestedVirtualization bool
	// ConnectionTracking is set: EC2 applies its timeouts on Nitro only.
	ConnectionTracking bool
}

// networkSettingsFor reads the networking fields of an EC2NodeClass.
func networkSettingsFor(nc *apis.EC2NodeClass) NetworkSettings {
	return NetworkSettings{Interfaces: nc.Spec.NetworkInterfaces, NestedVirtualization: nc.NestedVirtualizationEnabled(),
		ConnectionTracking: nc.Spec.ConnectionTracking != nil}
}

// efaOnly counts the class's EFA-only interfaces (all cards, or card 0).
func (n NetworkSettings) efaOnly(card0 bool) int {
	c := 0
	for _, ni := range n.Interfaces {
		if ni != nil && ni.InterfaceType == apis.InterfaceTypeEFAOnly && (!card0 || ni.NetworkCardIndex == 0) {
			c++
		}
	}
	return c
}

// efa is the EFA devices a node of the type offers pods: the class's
// EFA-only interfaces when it defines interfaces, else the type's.
func (it *InstanceType) efa(s NodeSettings) int64 {
	if s.Network.Interfaces != nil {
		return int64(s.Network.efaOnly(false))
	}
	return int64(it.EFA)
}

// Launchable reports whether the class's settings can launch the type, as
// Karpenter's compatibility checks decide: nested virtualization needs a
// processor that offers it, connection tracking a Nitro type, and the
// class's EFA-only interfaces at most the type's EFA count. (Network card
// and device index limits are EC2's to refuse: the catalog does not hold
// them.)
func (it *InstanceType) Launchable(s NodeSettings) bool {
	n := s.Network
	switch {
	case n.NestedVirtualization && !it.NestedVirtualization():
		return false
	case n.ConnectionTracking && it.Hypervisor != "nitro":
		return false
	case n.efaOnly(false) > it.EFA:
		return false
	}
	return true
}

// NestedVirtualization reports whether the type's processor lists
// nested-virtualization among DescribeInstanceTypes' supported features.
func (it *InstanceType) NestedVirtualization() bool { return nestedVirtualizationTypes[it.Name] }

// SupportsPlacement reports whether the type launches into placement groups
// of the strategy (cluster, partition, spread): DescribeInstanceTypes lists
// every type for partition and spread, and not burstable, flex, Mac or the
// first generations for cluster.
func (it *InstanceType) SupportsPlacement(strategy string) bool {
	return strategy != "cluster" || !noClusterPlacementTypes[it.Name]
}

//go:generate go run ./internal/gen/catalog-gen -features -out zz_generated_features.go

func setOf(names ...string) map[string]bool {
	out := make(map[string]bool, len(names))
	for _, n := range names {
		out[n] = true
	}
	return out
}
