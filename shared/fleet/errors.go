package fleet

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// ErrUnavailableOffering matches (errors.Is) a launch that failed because
// EC2 had no capacity in any offering the fleet asked for.
var ErrUnavailableOffering = errors.New("no capacity in the offerings asked for")

// UnavailableOffering is an offering (instance type, zone, capacity type)
// EC2 refused, with EC2's error code: the provision flow marks it
// unavailable for a while and solves again without it.
type UnavailableOffering struct {
	InstanceType string `json:"instanceType"`
	Zone         string `json:"zone"`
	CapacityType string `json:"capacityType"`
	Code         string `json:"code"`
}

func (o UnavailableOffering) String() string {
	return fmt.Sprintf("%s %s %s: %s", o.InstanceType, o.Zone, o.CapacityType, o.Code)
}

// FleetError is one error an instant fleet reported for one of its
// overrides.
type FleetError struct {
	InstanceType string `json:"instanceType,omitempty"`
	Zone         string `json:"zone,omitempty"`
	SubnetID     string `json:"subnetID,omitempty"`
	CapacityType string `json:"capacityType,omitempty"`
	Code         string `json:"code"`
	Message      string `json:"message,omitempty"`
}

// CodeReservationCapacityExceeded is EC2's fleet error for a launch into a
// capacity reservation that has no instance left.
const CodeReservationCapacityExceeded = "ReservationCapacityExceeded"

// capacityCodes are the fleet error codes that mean "this offering has no
// capacity for you now" rather than "this request is wrong": the offering is
// marked unavailable and the solve tries others.
var capacityCodes = map[string]bool{
	"InsufficientInstanceCapacity":      true,
	"MaxSpotInstanceCountExceeded":      true,
	"VcpuLimitExceeded":                 true,
	"UnfulfillableCapacity":             true,
	"Unsupported":                       true,
	"InsufficientFreeAddressesInSubnet": true,
	CodeReservationCapacityExceeded:     true,
	"SpotMaxPriceTooLow":                true,
}

// IsCapacityCode reports whether a fleet error code means the offering had
// no capacity (as opposed to a request EC2 refused).
func IsCapacityCode(code string) bool { return capacityCodes[code] }

// LaunchError is a CreateFleet call that launched no instance: EC2 answered,
// but with an error for every override it tried.
type LaunchError struct {
	// Unavailable are the offerings refused for lack of capacity, sorted.
	Unavailable []UnavailableOffering
	// Errors are every error the fleet reported, in the order EC2 gave them.
	Errors []FleetError
}

func (e *LaunchError) Error() string {
	if len(e.Errors) == 0 {
		return "fleet launched no instance and reported no error"
	}
	counts := map[string]int{}
	var codes []string
	for _, fe := range e.Errors {
		if counts[fe.Code] == 0 {
			codes = append(codes, fe.Code)
		}
		counts[fe.Code]++
	}
	parts := make([]string, 0, len(codes))
	for _, c := range codes {
		parts = append(parts, fmt.Sprintf("%s x%d", c, counts[c]))
	}
	msg := fmt.Sprintf("fleet launched no instance: %s", strings.Join(parts, ", "))
	if first := e.Errors[0]; first.Message != "" {
		msg += fmt.Sprintf(" (first: %s %s: %s)", first.InstanceType, first.Zone, first.Message)
	}
	return msg
}

// Is makes errors.Is(err, ErrUnavailableOffering) true when every error was
// about capacity: the caller should mark the offerings and solve again.
func (e *LaunchError) Is(target error) bool {
	if target != ErrUnavailableOffering || len(e.Errors) == 0 {
		return false
	}
	for _, fe := range e.Errors {
		if !IsCapacityCode(fe.Code) {
			return false
		}
	}
	return true
}

// UnavailableOfferings returns the offerings a failed launch found without
// capacity (nil when err is not a LaunchError).
func UnavailableOfferings(err error) []UnavailableOffering {
	var le *LaunchError
	if errors.As(err, &le) {
		return le.Unavailable
	}
	return nil
}

// unavailableOf picks the capacity errors out of a fleet's errors,
// deduplicated and sorted by type, zone, capacity type.
func unavailableOf(errs []FleetError) []UnavailableOffering {
	seen := map[UnavailableOffering]bool{}
	var out []UnavailableOffering
	for _, fe := range errs {
		if !IsCapacityCode(fe.Code) || fe.InstanceType == "" {
			continue
		}
		o := UnavailableOffering{InstanceType: fe.InstanceType, Zone: fe.Zone, CapacityType: fe.CapacityType, Code: fe.Code}
		if !seen[o] {
			seen[o] = true
			out = append(out, o)
		}
	}
	slices.SortFunc(out, CompareOfferings)
	return out
}

// CompareOfferings orders offerings by instance type, zone, capacity type
// and code (deterministic lists).
func CompareOfferings(a, b UnavailableOffering) int {
	return cmp.Or(cmp.Compare(a.InstanceType, b.InstanceType), cmp.Compare(a.Zone, b.Zone),
		cmp.Compare(a.CapacityType, b.CapacityType), cmp.Compare(a.Code, b.Code))
}
