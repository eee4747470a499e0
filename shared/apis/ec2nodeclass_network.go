package apis

// PlacementGroupSelector names the EC2 placement group an EC2NodeClass's
// instances launch into, by name or by ID (exactly one).
type PlacementGroupSelector struct {
	Name *string `json:"name,omitempty"`
	ID   *string `json:"id,omitempty"`
}

// NetworkInterface is one network interface every instance of the class
// launches with, on a network card at a device index.
type NetworkInterface struct {
	NetworkCardIndex int32         `json:"networkCardIndex"`
	DeviceIndex      int32         `json:"deviceIndex"`
	InterfaceType    InterfaceType `json:"interfaceType"`
}

// InterfaceType is a network interface's kind: an ENA interface with IP
// networking, or an EFA-only interface (EFA traffic, no IP address).
type InterfaceType string

// Interface types of spec.networkInterfaces.
const (
	InterfaceTypeInterface InterfaceType = "interface"
	InterfaceTypeEFAOnly   InterfaceType = "efa-only"
)

// InterfaceTypes lists the valid values of networkInterfaces[].interfaceType.
func InterfaceTypes() []string {
	return []string{string(InterfaceTypeInterface), string(InterfaceTypeEFAOnly)}
}

// ConnectionTracking sets the idle timeouts (seconds) of connection
// tracking on the network interfaces the launch template defines (not on
// EFA-only ones); it needs Nitro instances.
type ConnectionTracking struct {
	TCPEstablishedTimeout *int32 `json:"tcpEstablishedTimeout,omitempty"`
	UDPStreamTimeout      *int32 `json:"udpStreamTimeout,omitempty"`
	UDPTimeout            *int32 `json:"udpTimeout,omitempty"`
}

// CPUOptions are the instances' CPU options: nested virtualization
// ("enabled" limits the class to types whose processors support it).
type CPUOptions struct {
	NestedVirtualization *string `json:"nestedVirtualization,omitempty"`
}

// NestedVirtualizationEnabled reports whether the class asks for nested
// virtualization.
func (nc *EC2NodeClass) NestedVirtualizationEnabled() bool {
	o := nc.Spec.CPUOptions
	return o != nil && o.NestedVirtualization != nil && *o.NestedVirtualization == "enabled"
}

// EFAOnlyInterfaces counts the class's EFA-only network interfaces; ok is
// false when the class defines no network interfaces (then a pod asking
// for EFA gets as many as the type supports).
func (nc *EC2NodeClass) EFAOnlyInterfaces() (n int, ok bool) {
	if nc.Spec.NetworkInterfaces == nil {
		return 0, false
	}
	for _, ni := range nc.Spec.NetworkInterfaces {
		if ni != nil && ni.InterfaceType == InterfaceTypeEFAOnly {
			n++
		}
	}
	return n, true
}
