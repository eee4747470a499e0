package launch

import (
	"testing"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/scheduling"
)

// TestReDrivenReservedInstancesArePricedAsPaid: an instance a re-drive
// finds in a reservation is priced as the launch priced it, as already
// paid, not at the on-demand price.
func TestReDrivenReservedInstancesArePricedAsPaid(t *testing.T) {
	cat := catalog.Default()
	it, ok := cat.Get("p5.48xlarge")
	if !ok {
		t.Fatal("no p5.48xlarge in the catalog")
	}
	l := &Launcher{Catalog: cat}
	for ct, want := range map[string]float64{
		apis.CapacityTypeReserved: scheduling.ReservedPrice(it.OnDemandPrice),
		apis.CapacityTypeOnDemand: it.OnDemandPrice,
	} {
		if got := l.priceOf("p5.48xlarge", "us-east-1a", ct); got != want {
			t.Errorf("%s: priced %v, want %v", ct, got, want)
		}
	}
}
