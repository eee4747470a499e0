package apis

import (
	"regexp"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Limits of the networking fields in Karpenter's EC2NodeClass CRD.
const (
	MaxNetworkInterfaces     = 150
	minTCPEstablishedTimeout = 60
	maxTCPEstablishedTimeout = 432000
	minUDPStreamTimeout      = 60
	maxUDPStreamTimeout      = 180
	minUDPTimeout            = 30
	maxUDPTimeout            = 60
)

var placementGroupIDPattern = regexp.MustCompile(`^pg-[0-9a-z]+$`)

// validateNetworking checks networkInterfaces, connectionTracking,
// cpuOptions and placementGroupSelector as Karpenter's schema and CEL rules
// do.
func validateNetworking(v *validator, spec *field.Path, s *EC2NodeClassSpec) {
	validateNetworkInterfaces(v, spec.Child("networkInterfaces"), s.NetworkInterfaces)
	if ct := s.ConnectionTracking; ct != nil {
		p := spec.Child("connectionTracking")
		if ct.TCPEstablishedTimeout == nil && ct.UDPStreamTimeout == nil && ct.UDPTimeout == nil {
			v.add(p, "sets none of tcpEstablishedTimeout, udpStreamTimeout, udpTimeout: set at least one, or remove connectionTracking")
		}
		for _, t := range []struct {
			name   string
			value  *int32
			lo, hi int64
		}{
			{"tcpEstablishedTimeout", ct.TCPEstablishedTimeout, minTCPEstablishedTimeout, maxTCPEstablishedTimeout},
			{"udpStreamTimeout", ct.UDPStreamTimeout, minUDPStreamTimeout, maxUDPStreamTimeout},
			{"udpTimeout", ct.UDPTimeout, minUDPTimeout, maxUDPTimeout},
		} {
			if t.value != nil {
				v.intRange(p.Child(t.name), int64(*t.value), t.lo, t.hi)
			}
		}
	}
	if o := s.CPUOptions; o != nil && o.NestedVirtualization != nil {
		v.oneOf(spec.Child("cpuOptions", "nestedVirtualization"), *o.NestedVirtualization, enabledDisabled(), true)
	}
	if pg := s.PlacementGroupSelector; pg != nil {
		p := spec.Child("placementGroupSelector")
		switch {
		case pg.Name == nil && pg.ID == nil:
			v.add(p, "sets neither name nor id: set one of them")
		case pg.Name != nil && pg.ID != nil:
			v.add(p.Child("id"), "must not be set together with name: set one of them")
		case pg.Name != nil && *pg.Name == "":
			v.add(p.Child("name"), "must not be empty")
		case pg.ID != nil && !placementGroupIDPattern.MatchString(*pg.ID):
			v.add(p.Child("id"), "%q is not a placement group ID (pg-...)", *pg.ID)
		}
	}
}

// validateNetworkInterfaces checks that the interfaces include a primary
// ENA interface (card 0, device 0), that no card and device index pair
// repeats, and that no card has two EFA-only interfaces.
func validateNetworkInterfaces(v *validator, path *field.Path, nis []*NetworkInterface) {
	if len(nis) == 0 {
		return
	}
	v.maxItems(path, len(nis), MaxNetworkInterfaces)
	primary := false
	seen := map[[2]int32]bool{}
	efaOnCard := map[int32]bool{}
	for i, ni := range nis {
		p := path.Index(i)
		if ni == nil {
			v.add(p, "must not be null")
			continue
		}
		v.nonNegative(p.Child("networkCardIndex"), int64(ni.NetworkCardIndex))
		v.nonNegative(p.Child("deviceIndex"), int64(ni.DeviceIndex))
		v.oneOf(p.Child("interfaceType"), string(ni.InterfaceType), InterfaceTypes(), true)
		key := [2]int32{ni.NetworkCardIndex, ni.DeviceIndex}
		if seen[key] {
			v.add(p, "networkCardIndex %d and deviceIndex %d repeat an earlier interface's", ni.NetworkCardIndex, ni.DeviceIndex)
		}
		seen[key] = true
		if ni.InterfaceType == InterfaceTypeEFAOnly {
			if efaOnCard[ni.NetworkCardIndex] {
				v.add(p.Child("interfaceType"), "a second efa-only interface on network card %d: a card takes at most one", ni.NetworkCardIndex)
			}
			efaOnCard[ni.NetworkCardIndex] = true
		}
		if ni.NetworkCardIndex == 0 && ni.DeviceIndex == 0 && ni.InterfaceType == InterfaceTypeInterface {
			primary = true
		}
	}
	if !primary {
		v.add(path, "has no primary interface: add one with networkCardIndex 0, deviceIndex 0 and interfaceType interface")
	}
}
