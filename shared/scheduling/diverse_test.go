package scheduling_test

import (
	"bytes"
	"encoding/json"
	"testing"

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
	}{
		{"synthetic400", nil},
		{"catalog", []opt{realCatalog()}},
	} {
		t.Run(c.name, func(t *testing.T) {
			const n = 1000
			in := input(append(c.opts, spotAndOnDemand("default"), podList(st.DiversePods(n, 42)))...)
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
			if ratio := r.PricePerHour / r.LowerBoundPricePerHour; !(ratio <= 1.15) {
				t.Errorf("price %.3f/h is %.3f times the lower bound %.3f/h; want within 15%%", r.PricePerHour, ratio, r.LowerBoundPricePerHour)
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
