package pricing

import (
	"fmt"
	"time"

	"github.com/nodewright/nodewright/shared/catalog"
)

// Source says where a solve's on-demand prices come from.
type Source string

// Sources of on-demand prices.
const (
	// SourcePricingAPI: the region's own prices, read from the Pricing API.
	SourcePricingAPI Source = "pricing-api"
	// SourceShipped: the shipped table, which is the region's own when the
	// region is catalog.ShippedPricesRegion.
	SourceShipped Source = "shipped"
)

// Choice is what a solve prices and places on-demand capacity with, and
// what it says about them (log, metric, `plan`'s output).
type Choice struct {
	Region string `json:"region"`
	Source Source `json:"source"`
	// PricesOf is the region the prices are of: Region, except when no
	// figure was read for Region yet and the shipped ones stand in.
	PricesOf string `json:"pricesOf"`
	// AsOf is when the prices were read (Pricing API) or published
	// (shipped).
	AsOf time.Time `json:"asOf"`
	// Missing: no figure has been read for the region yet; the prices are
	// another region's stand-ins.
	Missing bool `json:"missing,omitempty"`
	// ZonesKnown: where each type is offered was read
	// (DescribeInstanceTypeOfferings); otherwise every type is offered in
	// every zone.
	ZonesKnown bool `json:"zonesKnown"`

	prices  map[string]float64
	windows map[string]float64
	zones   map[string][]string
}

// Choose decides the figures of region from what was read for it (nil:
// nothing): the region's read prices when there are any, however old (the
// last known); else the shipped table, which is the region's own for
// catalog.ShippedPricesRegion and a stand-in, marked Missing, for any other.
// Zones read are used whatever the prices' source.
func Choose(region string, read *Figures) Choice {
	c := Choice{Region: region}
	if read != nil && read.Region == region {
		if len(read.OnDemand) > 0 {
			c.Source, c.PricesOf, c.AsOf, c.prices, c.windows = SourcePricingAPI, region, read.PricesRead, read.OnDemand, read.WindowsOnDemand
		}
		if len(read.Zones) > 0 {
			c.ZonesKnown, c.zones = true, read.Zones
		}
	}
	if c.Source == "" {
		c.Source, c.PricesOf, c.AsOf = SourceShipped, catalog.ShippedPricesRegion, catalog.ShippedPricesDate
		c.Missing = region != catalog.ShippedPricesRegion
	}
	return c
}

// Catalog is base priced and placed with the choice's figures, with the
// region's Windows licences where they were read.
func (c Choice) Catalog(base *catalog.Catalog) *catalog.Catalog {
	if c.prices == nil && c.zones == nil {
		return base
	}
	cat := base.Regional(c.prices, c.zones)
	if l := c.WindowsLicences(); l != nil {
		cat = cat.WithWindowsLicences(l)
	}
	return cat
}

// Warning is what a plan says when the prices are not the region's own
// ("" when they are).
func (c Choice) Warning() string {
	if !c.Missing {
		return ""
	}
	return fmt.Sprintf("on-demand prices: no figures read yet for %s; using the shipped %s prices of %s until the Pricing API's are read",
		c.Region, c.PricesOf, c.AsOf.Format(time.DateOnly))
}

// WindowsLicences are, by instance type, what a Windows node pays per hour
// on top of its Linux price: the difference of the region's Windows and
// Linux on-demand prices, where both were read and Windows costs more; nil
// when none were (a Windows node is then priced with the shipped estimate,
// nodecost.WindowsLicence).
func (c Choice) WindowsLicences() map[string]float64 {
	var out map[string]float64
	for typ, w := range c.windows {
		if l, ok := c.prices[typ]; ok && w > l {
			if out == nil {
				out = map[string]float64{}
			}
			out[typ] = w - l
		}
	}
	return out
}
