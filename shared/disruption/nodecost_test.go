package disruption

import (
	"math"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/scheduling"
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

// A burstable node in unlimited mode bills the CPU its pods request above
// its baseline: a t3a.medium ($0.0376) running two 900m pods bills 1.4 vCPU
// of surplus ($0.07), so a c2 ($0.08) replacing it saves; counted by its
// instance alone, it looked cheaper than any replacement.
func TestConsolidationCountsBurstableSurplus(t *testing.T) {
	w := newWorld()
	t3a, ok := catalog.Default().Get("t3a.medium")
	if !ok {
		t.Fatal("no t3a.medium in the catalog")
	}
	w.types = append(w.types, *t3a)
	w.spot[t3a.Name] = t3a.OnDemandPrice / 2
	w.pools[0].Spec.Template.Spec.Requirements = []apis.NodeSelectorRequirementWithMinValues{
		st.PoolReq(apis.LabelCapacityType, corev1.NodeSelectorOpIn, apis.CapacityTypeOnDemand)}
	w.node("a", "t3a.medium", apis.CapacityTypeOnDemand)
	w.pods("a", 2, "900m")
	cmds, rep := Decide(w.inputs())
	for n, why := range rep.Rejected {
		t.Logf("rejected %s: %s", n, why)
	}
	if got, want := summaries(cmds), []string{"single-node: a -> c2/on-demand"}; !equalStrings(got, want) {
		t.Fatalf("commands %v, want %v", got, want)
	}
	if before := t3a.OnDemandPrice + 1.4*0.05; math.Abs(cmds[0].PriceBefore-before) > 1e-9 {
		t.Errorf("price before %v, want the instance's and its surplus, %v", cmds[0].PriceBefore, before)
	}
}

// A planned replacement on a burstable type is priced with the surplus its
// requests bill, when consolidation lists its types and when it validates
// what the replacement may cost.
func TestReplacementPricesCountBurstableSurplus(t *testing.T) {
	w := newWorld()
	t3a, _ := catalog.Default().Get("t3a.medium")
	w.types = append(w.types, *t3a)
	in := w.inputs()
	v := newView(&in)
	nc := scheduling.NodeClaim{NodePool: "default", InstanceTypes: []string{"t3a.medium"}, CapacityTypes: []string{apis.CapacityTypeOnDemand},
		Zones: []string{zoneA}, Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1800m")}}
	want := t3a.OnDemandPrice + 1.4*0.05
	if _, opts := v.priced(nc); len(opts) != 1 || math.Abs(opts[0].price-want) > 1e-9 {
		t.Errorf("priced %+v, want t3a.medium at %v (instance and surplus)", opts, want)
	}
	if got, err := v.dearest(nc); err != nil || math.Abs(got-want) > 1e-9 {
		t.Errorf("dearest %v, %v; want %v", got, err, want)
	}
}
