package disruption

import (
	"math"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
)

func TestScoreMove(t *testing.T) {
	cases := []struct {
		name                string
		savings, disruption float64
		totals              PoolTotals
		want                Verdict
		value               float64
	}{
		{"saves as large a share as it disrupts", 1, 5, PoolTotals{Cost: 10, DisruptionCost: 50}, VerdictApproved, 1},
		{"exactly 1/k is approved", 1, 10, PoolTotals{Cost: 10, DisruptionCost: 50}, VerdictApproved, 0.5},
		{"just under 1/k is rejected", 0.99, 10, PoolTotals{Cost: 10, DisruptionCost: 50}, VerdictRejected, 0.495},
		{"a small saving for many evictions is rejected", 0.08, 10, PoolTotals{Cost: 1.76, DisruptionCost: 60}, VerdictRejected, 0.08 / 1.76 / (10.0 / 60)},
		{"the single node of a pool scores 1", 0.16, 4, PoolTotals{Cost: 0.16, DisruptionCost: 4}, VerdictApproved, 1},
		{"no saving is rejected", 0, 1, PoolTotals{Cost: 10, DisruptionCost: 50}, VerdictRejected, 0},
		{"a loss is rejected", -1, 1, PoolTotals{Cost: 10, DisruptionCost: 50}, VerdictRejected, 0},
		{"no disruption at all is approved", 1, 0, PoolTotals{Cost: 10, DisruptionCost: 50}, VerdictApproved, math.Inf(1)},
		{"no totals measure nothing", 1, 1, PoolTotals{}, VerdictRejected, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := ScoreMove("p", tc.savings, tc.disruption, tc.totals)
			if s.Verdict() != tc.want || math.Abs(s.Value()-tc.value) > 1e-9 && !math.IsInf(tc.value, 1) || math.IsInf(tc.value, 1) != math.IsInf(s.Value(), 1) {
				t.Errorf("got %s (value %v), want %s value %v", s, s.Value(), tc.want, tc.value)
			}
			if s.Threshold() != 0.5 {
				t.Errorf("threshold %v, want 1/k = 0.5", s.Threshold())
			}
		})
	}
}

func TestApproveMove(t *testing.T) {
	totals := map[string]PoolTotals{
		"a": {Cost: 1, DisruptionCost: 10},
		"b": {Cost: 1, DisruptionCost: 10},
	}
	cases := []struct {
		name    string
		parts   []MovePart
		savings float64
		want    Verdict
		scored  []string // pools that scored, with their verdicts
	}{
		{"no Balanced pool: nothing scores, approved",
			[]MovePart{{NodePool: "a", Price: 0.5, DisruptionCost: 9}}, 0.01, VerdictApproved, nil},
		{"one Balanced pool approves",
			[]MovePart{{NodePool: "a", Balanced: true, Price: 0.5, DisruptionCost: 2}}, 0.5, VerdictApproved, []string{"a=approved"}},
		{"one Balanced pool rejects",
			[]MovePart{{NodePool: "a", Balanced: true, Price: 0.5, DisruptionCost: 9}}, 0.1, VerdictRejected, []string{"a=rejected"}},
		{"two nodes of one pool sum their disruption",
			[]MovePart{{NodePool: "a", Balanced: true, Price: 0.2, DisruptionCost: 2}, {NodePool: "a", Balanced: true, Price: 0.2, DisruptionCost: 2}}, 0.1, VerdictRejected, []string{"a=rejected"}},
		{"each of two nodes alone would pass: one of them",
			[]MovePart{{NodePool: "a", Balanced: true, Price: 0.2, DisruptionCost: 2}}, 0.1, VerdictApproved, []string{"a=approved"}},
		{"a cross-pool move shares the saving by price: both approve",
			[]MovePart{{NodePool: "a", Balanced: true, Price: 0.3, DisruptionCost: 2}, {NodePool: "b", Balanced: true, Price: 0.1, DisruptionCost: 1}}, 0.4, VerdictApproved, []string{"a=approved", "b=approved"}},
		{"a cross-pool move is rejected when one Balanced pool rejects",
			[]MovePart{{NodePool: "a", Balanced: true, Price: 0.3, DisruptionCost: 2}, {NodePool: "b", Balanced: true, Price: 0.1, DisruptionCost: 5}}, 0.4, VerdictRejected, []string{"a=approved", "b=rejected"}},
		{"a pool of another policy in the move does not score",
			[]MovePart{{NodePool: "a", Balanced: true, Price: 0.3, DisruptionCost: 2}, {NodePool: "b", Price: 0.1, DisruptionCost: 9}}, 0.4, VerdictApproved, []string{"a=approved"}},
		{"no parts: no move", nil, 1, VerdictRejected, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, scores := ApproveMove(tc.parts, tc.savings, totals)
			var scored []string
			for _, s := range scores {
				scored = append(scored, s.NodePool+"="+string(s.Verdict()))
			}
			if got != tc.want || !slices.Equal(scored, tc.scored) {
				t.Errorf("got %s %v, want %s %v", got, scored, tc.want, tc.scored)
			}
		})
	}
}

// balancedWorld is a pool "default" of on-demand c4 nodes ($0.16/h each)
// under policy: full ones, kept by do-not-disrupt (they count in the pool's
// totals, as Karpenter counts nodes that are no candidates), and those the
// case adds.
func balancedWorld(policy apis.ConsolidationPolicy, full int) *world {
	w := newWorld()
	p := w.defaultPool()
	p.Spec.Template.Spec.Requirements = []apis.NodeSelectorRequirementWithMinValues{
		st.PoolReq(apis.LabelCapacityType, corev1.NodeSelectorOpIn, apis.CapacityTypeOnDemand),
	}
	p.Spec.Disruption.ConsolidationPolicy = policy
	for i := 0; i < full; i++ {
		name := "full" + string(rune('a'+i))
		w.node(name, "c4", od, annotated(apis.AnnotationDoNotDisrupt, "true"))
		w.pods(name, 4, "900m")
	}
	return w
}

// A NodePool's consolidationPolicy Balanced takes a consolidation move only
// when the share of the pool's cost it saves is at least half the share of
// the pool's disruption cost it causes (Karpenter's k=2); empty nodes are
// deleted as under every policy, and multi-node moves are scored too.
func TestBalancedConsolidation(t *testing.T) {
	const costly = 2 * (1 << 25) // a priority that makes a pod's eviction cost 3
	cases := []struct {
		name   string
		policy apis.ConsolidationPolicy
		build  func(w *world)
		want   []string
		// unbalanced are the nodes a Balanced score rejected.
		unbalanced []string
	}{
		{
			name: "a replacement saving little for costly pods: taken under WhenEmptyOrUnderutilized", policy: apis.ConsolidationPolicyWhenEmptyOrUnderutilized,
			build: func(w *world) { w.node("a", "c4", od); w.pods("a", 3, "500m", priority(costly)) },
			want:  []string{"single-node: a -> c2/on-demand"},
		},
		{
			name: "a replacement saving little for costly pods: rejected under Balanced", policy: apis.ConsolidationPolicyBalanced,
			build:      func(w *world) { w.node("a", "c4", od); w.pods("a", 3, "500m", priority(costly)) },
			want:       []string{},
			unbalanced: []string{"a"},
		},
		{
			name: "the same replacement for ordinary pods: approved under Balanced", policy: apis.ConsolidationPolicyBalanced,
			build: func(w *world) { w.node("a", "c4", od); w.pods("a", 3, "500m") },
			want:  []string{"single-node: a -> c2/on-demand"},
		},
		{
			name: "a node not even worth deleting is not simulated", policy: apis.ConsolidationPolicyBalanced,
			build:      func(w *world) { w.node("a", "c4", od); w.pods("a", 3, "500m", priority(1e9)) },
			want:       []string{},
			unbalanced: []string{"a"},
		},
		{
			name: "an empty node is deleted under Balanced", policy: apis.ConsolidationPolicyBalanced,
			build: func(w *world) { w.node("e", "c4", od) },
			want:  []string{"emptiness: e"},
		},
		{
			name: "merging two nodes saving one c4 equivalent: taken under WhenEmptyOrUnderutilized", policy: apis.ConsolidationPolicyWhenEmptyOrUnderutilized,
			build: func(w *world) {
				w.node("a", "c4", od)
				w.pods("a", 3, "1")
				w.node("b", "c4", od)
				w.pods("b", 3, "1")
			},
			want: []string{"multi-node: a,b -> c7/on-demand"},
		},
		{
			name: "merging two nodes saving one c4 equivalent: every multi-node move rejected under Balanced", policy: apis.ConsolidationPolicyBalanced,
			build: func(w *world) {
				w.node("a", "c4", od)
				w.pods("a", 3, "1")
				w.node("b", "c4", od)
				w.pods("b", 3, "1")
			},
			want:       []string{},
			unbalanced: []string{"a", "b"},
		},
		{
			name: "a move across pools: the Balanced pool's share of the saving is not worth its disruption", policy: apis.ConsolidationPolicyBalanced,
			build: func(w *world) {
				other := w.pool("other")
				other.Spec.Template.Spec.Requirements = w.defaultPool().Spec.Template.Spec.Requirements
				w.pools = append(w.pools, other)
				w.node("a", "c4", od)
				w.pods("a", 3, "1")
				w.node("b", "c4", od, inPool("other"))
				w.pods("b", 3, "1")
			},
			want:       []string{},
			unbalanced: []string{"a"},
		},
		{
			name: "the same move across pools when neither is Balanced", policy: apis.ConsolidationPolicyWhenEmptyOrUnderutilized,
			build: func(w *world) {
				other := w.pool("other")
				other.Spec.Template.Spec.Requirements = w.defaultPool().Spec.Template.Spec.Requirements
				w.pools = append(w.pools, other)
				w.node("a", "c4", od)
				w.pods("a", 3, "1")
				w.node("b", "c4", od, inPool("other"))
				w.pods("b", 3, "1")
			},
			want: []string{"multi-node: a,b -> c7/on-demand"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := balancedWorld(tc.policy, 10)
			tc.build(w)
			cmds, rep := w.decide(t)
			if got := summaries(cmds); !slices.Equal(got, tc.want) {
				t.Errorf("commands %v, want %v", got, tc.want)
			}
			for _, c := range cmds {
				scored := tc.policy == apis.ConsolidationPolicyBalanced && c.Method != MethodEmptiness
				if scored != (len(c.Scores) == 1) || scored && c.Scores[0].Verdict() != VerdictApproved {
					t.Errorf("%s: scores %v (Balanced pools' approving scores, only on their consolidations)", summary(c), c.Scores)
				}
			}
			var unbalanced []string
			for n, s := range rep.Unbalanced {
				unbalanced = append(unbalanced, n)
				if s.Verdict() != VerdictRejected || s.NodePool != "default" || !strings.Contains(s.String(), "< threshold 0.50 (k: 2") {
					t.Errorf("%s: score %s", n, s)
				}
				if !strings.Contains(rep.Rejected[n], "not worth its disruption") {
					continue // another method left it for another reason after
				}
				if _, ok := rep.Unconsolidatable[n]; ok {
					t.Errorf("%s is also Unconsolidatable (Karpenter records no event for a Balanced rejection)", n)
				}
			}
			slices.Sort(unbalanced)
			if !slices.Equal(unbalanced, tc.unbalanced) {
				t.Errorf("unbalanced %v, want %v", unbalanced, tc.unbalanced)
			}
		})
	}
}
