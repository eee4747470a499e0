package cost

import (
	"testing"

	"github.com/nodewright/nodewright/shared/catalog"
)

// Against the shipped catalog (us-east-1 on-demand prices of
// catalog.ShippedPricesDate): the cheapest non-burstable types whose
// allocatable holds a replica and the DaemonSets.
func TestControllerFootprint(t *testing.T) {
	types := catalog.Default().Types()
	for _, tc := range []struct {
		sizing   ControllerSizing
		typ      string
		hourly   float64
		monthly  float64
		overhead NodeOverhead
	}{
		// 1,125m CPU and 1 GiB: a1.large (2 vCPU, 1,930m and 3,055 MiB
		// allocatable) at $0.051/h, twice.
		{KarpenterChart, "a1.large", 0.102, 0.102 * 730, EKSDaemonSets},
		// 5,125m CPU and 3 GiB: an 8-vCPU type, a1.2xlarge at $0.204/h, twice.
		{KarpenterScaleTests, "a1.2xlarge", 0.408, 0.408 * 730, EKSDaemonSets},
	} {
		t.Run(tc.sizing.Name, func(t *testing.T) {
			f, err := ControllerFootprint(tc.sizing, tc.overhead, types)
			if err != nil {
				t.Fatal(err)
			}
			if f.InstanceType != tc.typ || f.Nodes != 2 || !near(f.HourlyUSD, tc.hourly) || !near(f.MonthlyUSD, tc.monthly) {
				t.Errorf("footprint %+v, want 2 x %s, $%v/h, $%v a month", f, tc.typ, tc.hourly, tc.monthly)
			}
			it, _ := catalog.Default().Get(f.InstanceType)
			if _, burst := it.Burstable(); burst || it.Exotic() {
				t.Errorf("%s is burstable or exotic", it.Name)
			}
		})
	}
}

// A cheaper type that does not fit, a burstable one and an exotic one are
// passed over; ties go by name; nothing fitting is an error.
func TestControllerFootprintChoice(t *testing.T) {
	def := catalog.Default()
	get := func(n string) *catalog.InstanceType {
		it, ok := def.Get(n)
		if !ok {
			t.Fatalf("no %s in the catalog", n)
		}
		c := *it
		return &c
	}
	small, burst, gpu, big, twin := get("c6g.medium"), get("t4g.2xlarge"), get("g5g.2xlarge"), get("c6g.2xlarge"), get("c7g.2xlarge")
	burst.OnDemandPrice, gpu.OnDemandPrice, small.OnDemandPrice = 0.01, 0.01, 0.001
	twin.OnDemandPrice = big.OnDemandPrice
	f, err := ControllerFootprint(KarpenterScaleTests, EKSDaemonSets, []*catalog.InstanceType{twin, small, burst, gpu, big})
	if err != nil || f.InstanceType != "c6g.2xlarge" {
		t.Errorf("footprint %+v (%v), want c6g.2xlarge (cheapest fitting, name before c7g.2xlarge)", f, err)
	}
	if _, err := ControllerFootprint(KarpenterScaleTests, EKSDaemonSets, []*catalog.InstanceType{small}); err == nil {
		t.Error("nothing fits: no error")
	}
	if _, err := ControllerFootprint(ControllerSizing{Name: "none"}, EKSDaemonSets, []*catalog.InstanceType{big}); err == nil {
		t.Error("zero sizing: no error")
	}
}
