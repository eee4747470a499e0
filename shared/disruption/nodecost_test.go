package disruption

import (
	"math"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
)

// What a node costs beyond its instance is counted on both sides of a
// consolidation: two c1 nodes cost as much as one c2 by their instances, so
// merging them saves nothing; with each node's volumes and address
// counted, the merge saves one node's extras.
func TestConsolidationCountsNodeCosts(t *testing.T) {
	const extra = 0.0072
	for _, tc := range []struct {
		name      string
		nodeCosts map[string]float64
		want      []string
	}{
		{"instances alone: no saving", nil, []string{}},
		{"with each node's extras: merge", map[string]float64{"default": extra}, []string{"multi-node: a,b -> c2/on-demand"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld()
			w.pools[0].Spec.Template.Spec.Requirements = []apis.NodeSelectorRequirementWithMinValues{
				st.PoolReq(apis.LabelCapacityType, corev1.NodeSelectorOpIn, apis.CapacityTypeOnDemand)}
			for _, n := range []string{"a", "b"} {
				w.node(n, "c1", apis.CapacityTypeOnDemand)
				w.pods(n, 1, "600m")
			}
			in := w.inputs()
			in.NodeCosts = tc.nodeCosts
			cmds, rep := Decide(in)
			for n, why := range rep.Rejected {
				t.Logf("rejected %s: %s", n, why)
			}
			if got := summaries(cmds); !equalStrings(got, tc.want) {
				t.Fatalf("commands %v, want %v", got, tc.want)
			}
			if len(cmds) == 1 {
				c := cmds[0]
				if math.Abs(c.PriceBefore-2*(0.04+extra)) > 1e-9 || math.Abs(c.PriceAfter-(0.08+extra)) > 1e-6 {
					t.Errorf("prices before %v after %v, want %v and %v (instances and extras)", c.PriceBefore, c.PriceAfter, 2*(0.04+extra), 0.08+extra)
				}
			}
		})
	}
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
