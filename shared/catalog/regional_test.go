package catalog

import (
	"reflect"
	"testing"

	"github.com/nodewright/nodewright/shared/apis"
)

type flatSpot float64

func (f flatSpot) SpotPrice(string, string) (float64, bool) { return float64(f), true }

func TestOfferingsLeaveOutZonesThatLackTheType(t *testing.T) {
	zones := []string{"eu-west-1a", "eu-west-1b", "eu-west-1c"}
	for _, tc := range []struct {
		name  string
		zones []string
		want  []string
	}{
		{"zones not known: every zone", nil, zones},
		{"missing from one zone", []string{"eu-west-1a", "eu-west-1c"}, []string{"eu-west-1a", "eu-west-1c"}},
		{"offered nowhere", []string{}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			it := &InstanceType{Name: "m5.large", OnDemandPrice: 0.1, Zones: tc.zones}
			var got []string
			for _, o := range it.Offerings(zones, flatSpot(0.03)) {
				if o.CapacityType == apis.CapacityTypeOnDemand {
					got = append(got, o.Zone)
				}
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("on-demand offerings in %v, want %v", got, tc.want)
			}
			if n := len(it.Offerings(zones, flatSpot(0.03))); n != 2*len(tc.want) {
				t.Fatalf("%d offerings, want %d (on-demand and spot in each zone that has the type)", n, 2*len(tc.want))
			}
		})
	}
}

func TestRegionalCatalog(t *testing.T) {
	base := Default()
	prices := map[string]float64{"m5.large": 0.107}
	zones := map[string][]string{"m5.large": {"eu-west-1b", "eu-west-1a"}}
	r := base.Regional(prices, zones)
	m5, _ := r.Get("m5.large")
	if m5.OnDemandPrice != 0.107 || !reflect.DeepEqual(m5.Zones, []string{"eu-west-1a", "eu-west-1b"}) {
		t.Fatalf("m5.large: %v in %v", m5.OnDemandPrice, m5.Zones)
	}
	c5, _ := r.Get("c5.large")
	if c5.OnDemandPrice != 0 || c5.Zones == nil || len(c5.Zones) != 0 {
		t.Fatalf("c5.large, absent from the region's figures: %v in %v, want no price and no zone", c5.OnDemandPrice, c5.Zones)
	}
	if orig, _ := base.Get("m5.large"); orig.OnDemandPrice == 0.107 || orig.Zones != nil {
		t.Fatal("Regional modified the base catalog")
	}
	if r.Len() != base.Len() {
		t.Fatalf("%d types, want %d", r.Len(), base.Len())
	}
	if kept, _ := base.Regional(nil, nil).Get("m5.large"); kept.OnDemandPrice != base.byName["m5.large"].OnDemandPrice {
		t.Fatal("nil maps changed the prices")
	}
}

func TestShippedPricesAreDated(t *testing.T) {
	// The shipped table's us-east-1 price of m5.large on that day.
	if it, _ := Default().Get("m5.large"); it.OnDemandPrice != 0.096 || ShippedPricesDate.IsZero() || ShippedPricesRegion != "us-east-1" {
		t.Fatalf("m5.large %v, shipped %s of %s", it.OnDemandPrice, ShippedPricesRegion, ShippedPricesDate)
	}
}
