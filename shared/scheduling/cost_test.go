package scheduling_test

import (
	"bytes"
	"testing"

	"github.com/nodewright/nodewright/shared/scheduling"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
)

// Quality targets of the cost suite: a plan's price over its lower bound.
const (
	ratioOnDemand = 1.10
	ratioSpot     = 1.15
)

// TestCostShapes solves every shape of the cost suite (uniform Deployments,
// mixes, a DaemonSet, zonal spread; production and unrestricted pools;
// on-demand, and spot beside on-demand) and holds each plan to the targets:
// every pod placed, the invariants of every plan, the same bytes twice, a
// price within 10% (on-demand) or 15% (spot) of its lower bound, never above
// one fixed node group of the best single type, and, where the exhaustive
// search answers, a lower bound no higher than the true optimum (so the bound
// is valid) and a price within the same ratio of it.
func TestCostShapes(t *testing.T) {
	shapes, err := st.Shapes()
	if err != nil {
		t.Fatal(err)
	}
	if len(shapes) < 60 {
		t.Fatalf("%d shapes, want at least 60", len(shapes))
	}
	for _, s := range shapes {
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel()
			in := s.Input()
			r, err := scheduling.Solve(in)
			if err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, in, r)
			if len(r.Unschedulable) > 0 {
				t.Fatalf("%d pods unschedulable, first %+v", len(r.Unschedulable), r.Unschedulable[0])
			}
			target := ratioOnDemand
			if s.Spot {
				target = ratioSpot
			}
			ratio := r.PricePerHour / r.LowerBoundPricePerHour
			if !(ratio <= target) {
				t.Errorf("price %.4f/h is %.3f times the lower bound %.4f/h; want at most %.2f%s", r.PricePerHour, ratio, r.LowerBoundPricePerHour, target, summary(r))
			}
			baseline, baseType, err := st.NodeGroupBaseline(s)
			if err != nil {
				t.Fatal(err)
			}
			if r.PricePerHour > baseline+1e-6 { // the plan's price is rounded to a millionth
				t.Errorf("price %.4f/h above a node group of %s at %.4f/h%s", r.PricePerHour, baseType, baseline, summary(r))
			}
			opt, ok, err := st.Optimum(s)
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				if r.LowerBoundPricePerHour > opt+1e-6 {
					t.Errorf("lower bound %.4f/h above the optimum %.4f/h: the bound is not valid", r.LowerBoundPricePerHour, opt)
				}
				if !(r.PricePerHour <= opt*target) {
					t.Errorf("price %.4f/h is %.3f times the optimum %.4f/h", r.PricePerHour, r.PricePerHour/opt, opt)
				}
			}
			again, err := scheduling.Solve(in)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(resultJSON(t, r), resultJSON(t, again)) {
				t.Error("two solves of the same input differ")
			}
			t.Logf("%s: %d nodes, price %.4f, lower bound %.4f (%.3f), node group %s %.4f, optimum %.4f (%v)", s.Name,
				len(r.NodeClaims), r.PricePerHour, r.LowerBoundPricePerHour, ratio, baseType, baseline, opt, ok)
		})
	}
}
