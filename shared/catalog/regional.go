package catalog

import (
	"slices"
	"time"
)

// The shipped catalog's on-demand prices are us-east-1's, as published on
// ShippedPricesDate (they agree, type for type, with the public us-east-1
// list of that day, which Karpenter's AWS provider v1.14.1 also ships).
// Other regions' prices come only from the Pricing API (package pricing).
const ShippedPricesRegion = "us-east-1"

// ShippedPricesDate is the day the shipped on-demand prices were published.
var ShippedPricesDate = time.Date(2026, time.July, 6, 0, 0, 0, 0, time.UTC)

// Regional returns a catalog of c's types priced and placed for one region:
// with prices not nil, each type's on-demand price is prices[name] (0, no
// on-demand offering, when the region publishes none: never another
// region's); with zones not nil, each type is offered in zones[name] only
// (none when absent). A nil map keeps c's figures. c is not modified.
func (c *Catalog) Regional(prices map[string]float64, zones map[string][]string) *Catalog {
	types := make([]InstanceType, 0, len(c.types))
	for _, it := range c.types {
		t := *it
		if prices != nil {
			t.OnDemandPrice = prices[t.Name]
		}
		if zones != nil {
			t.Zones = slices.Sorted(slices.Values(zones[t.Name]))
			if t.Zones == nil {
				t.Zones = []string{}
			}
			t.Zones = slices.Compact(t.Zones)
		}
		types = append(types, t)
	}
	return New(types)
}

// WithWindowsLicences is the catalog with each type's Windows licence per
// hour from licences (by type name; a type missing gets 0).
func (c *Catalog) WithWindowsLicences(licences map[string]float64) *Catalog {
	types := make([]InstanceType, 0, len(c.types))
	for _, it := range c.types {
		t := *it
		t.WindowsLicence = licences[t.Name]
		types = append(types, t)
	}
	return New(types)
}
