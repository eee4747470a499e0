// Package overlay applies Karpenter's NodeOverlays to the instance catalog:
// the prices a savings plan or private pricing agreement gives an account
// replace the published ones wherever a solve, a consolidation decision,
// `nodewright plan` or the lower bound reads them, and the extended
// resources (hugepages, device-plugin resources) an overlay adds are
// offered by the types it selects. It sits apart from the
// catalog and the pricing sources so that every reader of prices gets the
// same overlaid values from one pure function: it takes the catalog, the
// spot prices and the overlays and returns new values, never changing what
// it is given.
//
// As Karpenter does, overlays apply in order of weight (highest first), and
// at equal weight in reverse name order; the first overlay to price an
// offering (or to set a resource of a type) sets it, and a later one of the
// same weight that would price an offering already priced (or set a
// resource already set) conflicts and is not applied anywhere.
package overlay

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/requirements"
)

// MinPrice is the least price an overlay leaves an offering (a millionth of
// a dollar an hour, EC2's precision): a price of 0 would read as "not
// offered" to the catalog and the spot pricers.
const MinPrice = 0.000001

// Conflict is an overlay that was not applied: an overlay of the same
// weight already prices an offering it selects (CapacityType) or sets a
// resource it sets (Resource).
type Conflict struct {
	Overlay, With string
	Weight        int32
	InstanceType  string
	CapacityType  string
	Resource      corev1.ResourceName
}

func (c Conflict) String() string {
	on := c.CapacityType
	if c.Resource != "" {
		on = "capacity " + string(c.Resource)
	}
	return fmt.Sprintf("NodeOverlay %s is not applied: it conflicts with NodeOverlay %s (both weight %d) on %s %s",
		c.Overlay, c.With, c.Weight, c.InstanceType, on)
}

// Result is the catalog and spot prices with the overlays applied.
type Result struct {
	Types []*catalog.InstanceType // in the order given
	Spot  catalog.SpotPricer      // nil when the input's was
	// Capacity is the extended resources each type gains, by type name
	// (nil: none).
	Capacity  map[string]corev1.ResourceList
	Conflicts []Conflict // by overlay name
}

// resourceSet is the overlay that set one resource of one type.
type resourceSet struct {
	overlay string
	weight  int32
}

// change is the price change an overlay makes to one offering.
type change struct {
	value   string // the overlay's price or priceAdjustment
	overlay string
	weight  int32
}

// Apply applies the overlays' prices to the instance types' on-demand
// prices and to spot's prices. With no overlay that prices anything, it
// returns its inputs.
func Apply(types []*catalog.InstanceType, spot catalog.SpotPricer, overlays []*apis.NodeOverlay) Result {
	res := Result{Types: types, Spot: spot}
	ordered := ordered(overlays)
	if len(ordered) == 0 {
		return res
	}
	labels := make([]map[string]string, len(types))
	for i, it := range types {
		labels[i] = it.Labels()
	}
	changes := map[offering]change{}
	set := map[string]map[corev1.ResourceName]resourceSet{} // by type
	for _, o := range ordered {
		reqs, err := requirementsOf(o)
		if err != nil {
			continue // Validate refuses it before it gets here
		}
		w, price := weightOf(o), priceOf(o)
		var matched []offering
		var sized []string
		var conflict *Conflict
		for i, it := range types {
			hit := false
			for _, ct := range []string{apis.CapacityTypeOnDemand, apis.CapacityTypeSpot} {
				if !matches(reqs, labels[i], ct) {
					continue
				}
				hit = true
				if price == "" {
					continue
				}
				k := offering{it.Name, ct}
				if c, ok := changes[k]; ok {
					if c.weight == w && conflict == nil {
						conflict = &Conflict{Overlay: o.Name, With: c.overlay, Weight: w, InstanceType: it.Name, CapacityType: ct}
					}
					continue
				}
				matched = append(matched, k)
			}
			if !hit || len(o.Spec.Capacity) == 0 {
				continue
			}
			sized = append(sized, it.Name)
			for _, name := range slices.Sorted(maps.Keys(o.Spec.Capacity)) {
				if by, ok := set[it.Name][name]; ok && by.weight == w && conflict == nil {
					conflict = &Conflict{Overlay: o.Name, With: by.overlay, Weight: w, InstanceType: it.Name, Resource: name}
				}
			}
		}
		if conflict != nil {
			res.Conflicts = append(res.Conflicts, *conflict)
			continue
		}
		for _, k := range matched {
			changes[k] = change{value: price, overlay: o.Name, weight: w}
		}
		for _, name := range sized {
			if set[name] == nil {
				set[name] = map[corev1.ResourceName]resourceSet{}
			}
			for r := range o.Spec.Capacity {
				if _, ok := set[name][r]; !ok {
					set[name][r] = resourceSet{overlay: o.Name, weight: w}
					if res.Capacity == nil {
						res.Capacity = map[string]corev1.ResourceList{}
					}
					if res.Capacity[name] == nil {
						res.Capacity[name] = corev1.ResourceList{}
					}
					res.Capacity[name][r] = o.Spec.Capacity[r]
				}
			}
		}
	}
	sort.Slice(res.Conflicts, func(i, j int) bool { return res.Conflicts[i].Overlay < res.Conflicts[j].Overlay })
	if len(changes) == 0 {
		return res
	}
	res.Types = make([]*catalog.InstanceType, len(types))
	for i, it := range types {
		c, ok := changes[offering{it.Name, apis.CapacityTypeOnDemand}]
		_, spotChanged := changes[offering{it.Name, apis.CapacityTypeSpot}]
		if !ok && !spotChanged {
			res.Types[i] = it
			continue
		}
		cp := *it
		if ok {
			cp.OnDemandPrice = Adjusted(it.OnDemandPrice, c.value)
		}
		cp.PriceOverlaid = true
		res.Types[i] = &cp
	}
	if spot != nil {
		sc := overlaidSpot{inner: spot, changes: map[string]string{}}
		for k, c := range changes {
			if k.capacityType == apis.CapacityTypeSpot {
				sc.changes[k.instanceType] = c.value
			}
		}
		if len(sc.changes) > 0 {
			res.Spot = sc
		}
	}
	return res
}

// ApplyCatalog is Apply on a catalog: a new catalog holding the overlaid
// types (cat itself when no overlay prices anything), and the rest of
// Apply's result.
func ApplyCatalog(cat *catalog.Catalog, spot catalog.SpotPricer, overlays []*apis.NodeOverlay) (*catalog.Catalog, Result) {
	r := Apply(cat.Types(), spot, overlays)
	if len(r.Types) == 0 || &r.Types[0] == &cat.Types()[0] {
		return cat, r
	}
	values := make([]catalog.InstanceType, len(r.Types))
	for i, it := range r.Types {
		values[i] = *it
	}
	return catalog.New(values), r
}

// Adjusted is price after an overlay's price ("0.25": replaced) or
// priceAdjustment ("+0.1", "-0.5": added; "+10%", "-15%": scaled). An
// offering that is not sold (price 0) stays unsold unless replaced; a
// result at or below zero is MinPrice.
func Adjusted(price float64, value string) float64 {
	if value == "" {
		return price
	}
	sign := value[0] == '+' || value[0] == '-'
	if !sign {
		p, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return price
		}
		return max(p, MinPrice)
	}
	if price <= 0 {
		return price
	}
	var out float64
	if pct, ok := strings.CutSuffix(value, "%"); ok {
		f, err := strconv.ParseFloat(pct, 64)
		if err != nil {
			return price
		}
		out = price * (1 + f/100)
	} else {
		f, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return price
		}
		out = price + f
	}
	return max(math.Round(out*1e6)/1e6, MinPrice)
}

// offering is a type bought one way.
type offering struct{ instanceType, capacityType string }

// ordered is the overlays that set a price or capacity, heaviest first,
// then by name from the end of the alphabet (Karpenter's order).
func ordered(overlays []*apis.NodeOverlay) []*apis.NodeOverlay {
	var out []*apis.NodeOverlay
	for _, o := range overlays {
		if priceOf(o) != "" || len(o.Spec.Capacity) > 0 {
			out = append(out, o)
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if wi, wj := weightOf(out[i]), weightOf(out[j]); wi != wj {
			return wi > wj
		}
		return out[i].Name > out[j].Name
	})
	return out
}

func weightOf(o *apis.NodeOverlay) int32 {
	if o.Spec.Weight == nil {
		return 0
	}
	return *o.Spec.Weight
}

func priceOf(o *apis.NodeOverlay) string {
	switch {
	case o.Spec.Price != nil:
		return *o.Spec.Price
	case o.Spec.PriceAdjustment != nil:
		return *o.Spec.PriceAdjustment
	}
	return ""
}

func requirementsOf(o *apis.NodeOverlay) (requirements.Requirements, error) {
	var rs []requirements.Requirement
	for _, r := range o.Spec.Requirements {
		req, err := requirements.New(r.Key, r.Operator, r.Values...)
		if err != nil {
			return nil, fmt.Errorf("NodeOverlay %s: %w", o.Name, err)
		}
		rs = append(rs, req)
	}
	return requirements.NewRequirements(rs...), nil
}

// matches says whether an offering of capacity type ct of a type with these
// labels meets the overlay's requirements. Zones are not the type's: a
// requirement on them (allowed only without a price) is left out.
func matches(reqs requirements.Requirements, labels map[string]string, ct string) bool {
	for _, r := range reqs {
		switch r.Key {
		case apis.LabelZone:
			continue
		case apis.LabelCapacityType:
			if !r.Matches(ct, true) {
				return false
			}
			continue
		}
		v, ok := labels[r.Key]
		if !r.Matches(v, ok) {
			return false
		}
	}
	return true
}

// overlaidSpot is a spot pricer with the overlays' changes applied.
type overlaidSpot struct {
	inner   catalog.SpotPricer
	changes map[string]string // by instance type
}

// SpotPrice implements catalog.SpotPricer.
func (s overlaidSpot) SpotPrice(instanceType, zone string) (float64, bool) {
	p, ok := s.inner.SpotPrice(instanceType, zone)
	if !ok || p <= 0 {
		return p, ok
	}
	if c, found := s.changes[instanceType]; found {
		return Adjusted(p, c), true
	}
	return p, true
}
