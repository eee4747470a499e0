package catalog

import (
	"slices"

	"github.com/nodewright/nodewright/shared/apis"
)

// Offering is one way to buy an instance type: a zone and a capacity type, at a
// price per hour. Available is false while EC2 has told us it has no capacity.
type Offering struct {
	Zone         string
	CapacityType string
	Price        float64
	Available    bool
}

// SpotPricer answers the current spot price of a type in a zone; ok is false
// when there is no price (the type is then not offered as spot there).
type SpotPricer interface {
	SpotPrice(instanceType, zone string) (price float64, ok bool)
}

// OfferedIn says whether EC2 offers the type in the zone: always when the
// type's zones are not known.
func (it *InstanceType) OfferedIn(zone string) bool {
	if it.Zones == nil {
		return true
	}
	_, ok := slices.BinarySearch(it.Zones, zone)
	return ok
}

// Offerings lists the offerings of the type in those of the given zones EC2
// offers it in (OfferedIn), in zone order, on-demand before spot: on-demand
// at the catalog price (none when the type has no published price), spot at
// sp's price (none when sp is nil or has no price). All are available;
// callers mark the ones EC2 refused.
func (it *InstanceType) Offerings(zones []string, sp SpotPricer) []Offering {
	out := make([]Offering, 0, 2*len(zones))
	for _, z := range zones {
		if !it.OfferedIn(z) {
			continue
		}
		if it.OnDemandPrice > 0 {
			out = append(out, Offering{Zone: z, CapacityType: apis.CapacityTypeOnDemand, Price: it.OnDemandPrice, Available: true})
		}
		if sp == nil {
			continue
		}
		if p, ok := sp.SpotPrice(it.Name, z); ok && p > 0 {
			out = append(out, Offering{Zone: z, CapacityType: apis.CapacityTypeSpot, Price: p, Available: true})
		}
	}
	return out
}
