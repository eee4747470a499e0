package disruption

import (
	"time"

	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/scheduling"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
)

// TestEvictionCost follows Karpenter's pod eviction cost
// (pkg/utils/disruption EvictionCost; suite_test.go Describe("Pod Eviction
// Cost")).
func TestEvictionCost(t *testing.T) {
	pod := func(opts ...podOpt) *corev1.Pod {
		p := st.Pod(st.PodOptions{Name: "p"})
		for _, o := range opts {
			o(p)
		}
		return p
	}
	cases := []struct {
		name string
		ref  string
		pod  *corev1.Pod
		want func(float64) bool
	}{
		{"no priority or deletion cost", `It("should have a standard disruptionCost for a pod with no priority or disruptionCost specified")`,
			pod(), func(c float64) bool { return c == 1 }},
		{"a positive deletion cost", `It("should have a higher disruptionCost for a pod with a positive deletion disruptionCost")`,
			pod(podAnnotated(corev1.PodDeletionCost, "100")), func(c float64) bool { return c > 1 }},
		{"a negative deletion cost", `It("should have a lower disruptionCost for a pod with a positive deletion disruptionCost")`,
			pod(podAnnotated(corev1.PodDeletionCost, "-100")), func(c float64) bool { return c < 1 }},
		{"a higher priority", `It("should have a higher disruptionCost for a pod with a higher priority")`,
			pod(priority(1000)), func(c float64) bool { return c > 1 }},
		{"a lower priority", `It("should have a lower disruptionCost for a pod with a lower priority")`,
			pod(priority(-1000)), func(c float64) bool { return c < 1 }},
		{"clamped at 10", "pkg/utils/disruption EvictionCost (clamped to [-10, 10])",
			pod(podAnnotated(corev1.PodDeletionCost, "2147483647"), priority(1000000000)), func(c float64) bool { return c == 10 }},
		{"an unreadable deletion cost counts as none", "pkg/utils/disruption EvictionCost (parse error logged, ignored)",
			pod(podAnnotated(corev1.PodDeletionCost, "lots")), func(c float64) bool { return c == 1 }},
	}
	for _, tc := range cases {
		if got := evictionCost(tc.pod); !tc.want(got) {
			t.Errorf("%s: cost %v (%s)", tc.name, got, tc.ref)
		}
	}
	if a, b := evictionCost(pod(podAnnotated(corev1.PodDeletionCost, "100"))), evictionCost(pod(podAnnotated(corev1.PodDeletionCost, "1000"))); a >= b {
		t.Errorf(`higher deletion costs must cost more: %v >= %v (It("should have higher costs for higher deletion costs"))`, a, b)
	}
}

// TestReplacements checks the option filter on its own: the
// one-node-of-the-same-type rule, strictly cheaper, the two-node split,
// spot to spot.
func TestReplacements(t *testing.T) {
	w := newWorld()
	v := newView(func() *Inputs { in := w.inputs(); return &in }())
	claim := func(types ...string) scheduling.NodeClaim {
		return scheduling.NodeClaim{NodePool: "default", NodeClass: "default", InstanceTypes: types, Zones: []string{zoneA},
			CapacityTypes: []string{od}, CapacityType: od, Pods: []string{"default/x"}}
	}
	spotClaim := func(types ...string) scheduling.NodeClaim {
		c := claim(types...)
		c.CapacityTypes = []string{od, spot}
		return c
	}
	ladder := func(from, to int) []string {
		var out []string
		for n := from; n <= to; n++ {
			out = append(out, w.typ("c"+strconv.Itoa(n)).Name)
		}
		return out
	}
	cases := []struct {
		name   string
		ref    string
		claims []scheduling.NodeClaim
		rule   replaceRule
		want   [][]string // options per replacement; nil: none
		why    string
	}{
		{"options as dear as the candidate are dropped", "consolidation.go computeConsolidation (RemoveInstanceTypeOptionsByPriceAndMinValues)",
			[]scheduling.NodeClaim{claim("c1", "c2", "c3", "c4")}, replaceRule{before: 0.12, maxClaims: 1},
			[][]string{{"c1", "c2"}}, ""},
		{"nothing strictly cheaper", "consolidation_test.go It(\"won't replace on-demand node if on-demand replacement is more expensive\")",
			[]scheduling.NodeClaim{claim("c3", "c4")}, replaceRule{before: 0.12, maxClaims: 1}, nil, "costs $0.1200/h, the candidates $0.1200/h"},
		{"a candidate's type and anything as dear go", "multinodeconsolidation.go filterOutSameInstanceType (t3a.small is in both lists)",
			[]scheduling.NodeClaim{claim("c1", "c2", "c3", "c4")}, replaceRule{before: 0.5, maxClaims: 1, sameType: map[string]float64{"c2": 0.08, "c8": 0.32}},
			[][]string{{"c1"}}, ""},
		{"only the candidate's own type is cheap enough", "consolidation_test.go DescribeTable(\"won't merge 2 nodes into 1 of the same type\")",
			[]scheduling.NodeClaim{claim("c2", "c3")}, replaceRule{before: 0.16, maxClaims: 1, sameType: map[string]float64{"c2": 0.08}},
			nil, "no type for its pods"},
		{"two replacements share the room", "Nodewright: one node into two smaller ones when strictly cheaper",
			[]scheduling.NodeClaim{claim(ladder(1, 8)...), claim(ladder(1, 8)...)}, replaceRule{before: 0.32, maxClaims: 2},
			[][]string{ladder(1, 3), ladder(1, 3)}, ""},
		{"two replacements when one is allowed", "consolidation.go computeConsolidation (\"we're not going to turn a single node into multiple candidates\")",
			[]scheduling.NodeClaim{claim("c1"), claim("c1")}, replaceRule{before: 0.32, maxClaims: 1}, nil, "need 2 new nodes (at most 1)"},
		{"spot to spot with enough options keeps the 15 cheapest", "consolidation.go computeSpotToSpotConsolidation",
			[]scheduling.NodeClaim{spotClaim(ladder(1, 30)...)}, replaceRule{before: 0.64, maxClaims: 1, allSpot: true, spotToSpot: true},
			[][]string{ladder(1, 15)}, ""},
		{"spot to spot turned off", "consolidation_test.go It(\"cannot replace spot with spot if the spotToSpotConsolidation is disabled\")",
			[]scheduling.NodeClaim{spotClaim(ladder(1, 30)...)}, replaceRule{before: 0.64, maxClaims: 1, allSpot: true}, nil, "off"},
		{"on-demand to spot needs no 15 options", "consolidation.go computeConsolidation (only all-spot candidates are spot-to-spot)",
			[]scheduling.NodeClaim{spotClaim("c1", "c2")}, replaceRule{before: 0.16, maxClaims: 1},
			[][]string{{"c1", "c2"}}, ""},
		{"a minimum saving narrows the options", "Nodewright: AnnotationMinSavings",
			[]scheduling.NodeClaim{claim(ladder(1, 8)...)}, replaceRule{before: 0.32, need: 0.2, maxClaims: 1},
			[][]string{ladder(1, 3)}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, after, why := v.replacements(tc.claims, tc.rule)
			if tc.want == nil {
				if why == "" || !strings.Contains(why, tc.why) {
					t.Fatalf("replacements %v, why %q; want none because %q (%s)", got, why, tc.why, tc.ref)
				}
				return
			}
			if why != "" || len(got) != len(tc.want) {
				t.Fatalf("replacements %v, why %q; want %v (%s)", got, why, tc.want, tc.ref)
			}
			for i := range got {
				if strings.Join(got[i].InstanceTypes, ",") != strings.Join(tc.want[i], ",") {
					t.Errorf("replacement %d: %v, want %v (%s)", i, got[i].InstanceTypes, tc.want[i], tc.ref)
				}
			}
			if !worth(tc.rule.before, after, tc.rule.need) {
				t.Errorf("expected price %v does not save on %v", after, tc.rule.before)
			}
		})
	}
}

func TestMinSaving(t *testing.T) {
	pool := func(ann map[string]string) []*nodeInfo {
		np := newWorld().pool("p")
		np.Annotations = ann
		return []*nodeInfo{{pool: np}}
	}
	cases := []struct {
		ann  map[string]string
		want float64
		err  string
	}{
		{nil, 0, ""},
		{map[string]string{AnnotationMinSavings: "0.05"}, 0.05, ""},
		{map[string]string{AnnotationMinSavings: "$0.05"}, 0.05, ""},
		{map[string]string{AnnotationMinSavingsPercent: "25"}, 0.25, ""},
		{map[string]string{AnnotationMinSavingsPercent: "25%"}, 0.25, ""},
		{map[string]string{AnnotationMinSavings: "0.5", AnnotationMinSavingsPercent: "10"}, 0.5, ""},
		{map[string]string{AnnotationMinSavings: "-1"}, 0, "is not a price per hour"},
		{map[string]string{AnnotationMinSavingsPercent: "150"}, 0, "is not a percentage"},
	}
	for _, tc := range cases {
		got, err := minSaving(pool(tc.ann), 1.0)
		if (err == nil) != (tc.err == "") || (err != nil && !strings.Contains(err.Error(), tc.err)) || got != tc.want {
			t.Errorf("%v: %v, %v; want %v, %q", tc.ann, got, err, tc.want, tc.err)
		}
	}
}

// TestDecideIsDeterministic shuffles the inputs: the commands are the same
// to the byte.
func TestDecideIsDeterministic(t *testing.T) {
	build := func() *world {
		w := newWorld()
		w.foreign("mng-1", "c4")
		for i, n := range []string{"a", "b", "c", "d", "e", "f"} {
			w.node(n, []string{"c4", "c8", "c2"}[i%3], []string{od, spot}[i%2])
			w.pods(n, i%3+1, "300m")
		}
		w.pending("waiting", "200m")
		return w
	}
	w := build()
	first, rep := Decide(w.inputs())
	if len(first) == 0 {
		t.Fatalf("no command to compare (skipped %v, rejected %v)", rep.Skipped, rep.Rejected)
	}
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 5; i++ {
		w := build()
		in := w.inputs()
		rng.Shuffle(len(in.Nodes), func(i, j int) { in.Nodes[i], in.Nodes[j] = in.Nodes[j], in.Nodes[i] })
		rng.Shuffle(len(in.Pods), func(i, j int) { in.Pods[i], in.Pods[j] = in.Pods[j], in.Pods[i] })
		rng.Shuffle(len(in.Records), func(i, j int) { in.Records[i], in.Records[j] = in.Records[j], in.Records[i] })
		again, _ := Decide(in)
		if a, b := mustJSON(t, first), mustJSON(t, again); a != b {
			t.Fatalf("shuffle %d decided differently:\n%s\n%s", i, a, b)
		}
	}
}

// TestDecideWithBadInputs: nothing panics, problems are reported, and a
// budget that cannot be read blocks (fails closed).
func TestDecideWithBadInputs(t *testing.T) {
	t.Run("a budget that cannot be read blocks", func(t *testing.T) {
		w := newWorld()
		w.pools[0].Spec.Disruption.Budgets = []apis.Budget{budget("many")}
		w.emptyNodes("e", 2)
		cmds, rep := w.decide(t)
		if len(cmds) != 0 || len(rep.Warnings) == 0 || !strings.Contains(rep.Warnings[0], "budgets[0]") {
			t.Fatalf("commands %q warnings %q", summaries(cmds), rep.Warnings)
		}
	})
	t.Run("nil entries and no catalog", func(t *testing.T) {
		w := newWorld()
		w.node("a", "c4", od)
		w.pods("a", 1, "500m")
		in := w.inputs()
		in.Catalog = nil
		in.Nodes = append(in.Nodes, nil)
		in.Pods = append(in.Pods, nil)
		in.Records = append(in.Records, nil)
		in.NodePools = append(in.NodePools, nil)
		in.PDBs = append(in.PDBs, nil)
		cmds, rep := Decide(in)
		if len(cmds) != 0 || !strings.Contains(strings.Join(rep.Warnings, ";"), "no instance catalog") {
			t.Fatalf("commands %q warnings %q", summaries(cmds), rep.Warnings)
		}
		if err := Validate(Command{Method: MethodSingleNode, Candidates: []string{"nc-a"}}, in); err == nil {
			t.Errorf("Validate of a command whose candidate cannot move passed")
		}
	})
	t.Run("an unreadable minimum saving is reported once and leaves only deletions", func(t *testing.T) {
		w := newWorld()
		w.pools[0].Annotations = map[string]string{AnnotationMinSavingsPercent: "half"}
		for _, n := range []string{"a", "b", "c"} {
			w.node(n, "c8", od)
			w.pods(n, 1, "3")
		}
		cmds, rep := w.decide(t)
		var hits []string
		for _, x := range rep.Warnings {
			if strings.Contains(x, "metadata.annotations["+AnnotationMinSavingsPercent+"]") {
				hits = append(hits, x)
			}
		}
		// Merging the three into one cheaper node is refused at every
		// step of the binary search; one node still fits in another's room.
		if got := summaries(cmds); len(got) != 1 || got[0] != "single-node: a" || len(hits) != 1 {
			t.Fatalf("commands %q, annotation warnings %q", got, hits)
		}
	})
	t.Run("a static NodePool's nodes are left alone", func(t *testing.T) {
		w := newWorld()
		one := int64(1)
		w.pools[0].Spec.Replicas = &one
		w.emptyNodes("e", 1)
		cmds, rep := w.decide(t)
		if len(cmds) != 0 || !strings.Contains(rep.Skipped["ea"], "static") {
			t.Fatalf("commands %q skipped %q", summaries(cmds), rep.Skipped["ea"])
		}
	})
	// As Karpenter's, a static pool's nodes still expire and drift (its
	// static provisioning launches their successors).
	t.Run("a static NodePool's expired node goes", func(t *testing.T) {
		w := newWorld()
		one := int64(1)
		w.pools[0].Spec.Replicas = &one
		w.node("a", "c4", od, created(800*time.Hour))
		cmds, _ := w.decide(t)
		if got := summaries(cmds); len(got) != 1 || !strings.HasPrefix(got[0], "expiration: a") {
			t.Fatalf("commands %q, want a's expiration", got)
		}
	})
	t.Run("a static NodePool's drifted node goes", func(t *testing.T) {
		w := newWorld()
		one := int64(1)
		w.pools[0].Spec.Replicas = &one
		w.node("a", "c4", od)
		w.pools[0].Spec.Template.ObjectMeta.Labels = map[string]string{"team": "new"}
		cmds, _ := w.decide(t)
		if got := summaries(cmds); len(got) != 1 || !strings.HasPrefix(got[0], "drift: a") {
			t.Fatalf("commands %q, want a's drift", got)
		}
	})
}

// TestReportCountsCandidates: the report counts what could be disrupted
// and says why the rest cannot.
func TestReportCountsCandidates(t *testing.T) {
	w := newWorld()
	w.foreign("mng-1", "c4")
	w.emptyNodes("e", 2)
	w.node("guarded", "c2", od, annotated(apis.AnnotationDoNotDisrupt, "true"))
	_, rep := w.decide(t)
	if rep.Candidates != 2 || rep.Method != MethodEmptiness || len(rep.Skipped) != 2 {
		t.Fatalf("report %+v", rep)
	}
}

// TestCompactSolveMatchesFull: giving the solver nodes as their free room
// (when the pods to place have no inter-pod constraint) places pods
// exactly as giving it the nodes with all their pods.
func TestCompactSolveMatchesFull(t *testing.T) {
	w := newWorld()
	w.foreign("mng-1", "c4")
	w.pods("mng-1", 3, "900m")
	for i, n := range []string{"a", "b", "c", "d", "e", "f"} {
		w.node(n, []string{"c2", "c4", "c8"}[i%3], od)
		w.pods(n, i+1, "400m")
	}
	w.pods("c", 1, "100m", owner("DaemonSet"))
	w.pods("d", 1, "200m", antiAffinity("loner"))
	w.node("full", "c1", od)
	w.pods("full", 2, "450m")
	in := w.inputs()
	v := newView(&in)
	v.baseline()
	s := newSim(v)
	compacted, trimmed := 0, 0
	for _, c := range v.nodes {
		if c.rec == nil || len(c.moving) == 0 {
			continue
		}
		for _, types := range [][]*catalog.InstanceType{nil, v.typesByPrice} {
			skip := map[string]bool{c.name(): true}
			compact, _ := s.input(skip, c.moving, types)
			full := compact
			full.Nodes = nil
			for _, n := range v.nodes {
				if !skip[n.name()] {
					full.Nodes = append(full.Nodes, &scheduling.Node{Node: n.schedNode(), Pods: n.pods})
				}
			}
			for _, n := range compact.Nodes {
				if len(n.Pods) == 0 && !n.InFlight && v.byName[n.Node.Name] != nil && len(v.byName[n.Node.Name].pods) > 0 {
					compacted++
				}
			}
			if len(compact.Nodes) < len(full.Nodes) {
				trimmed++
			}
			a, err1 := scheduling.Solve(compact)
			b, err2 := scheduling.Solve(full)
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			if x, y := mustJSON(t, a.ExistingNodes)+mustJSON(t, a.NodeClaims)+mustJSON(t, a.Unschedulable),
				mustJSON(t, b.ExistingNodes)+mustJSON(t, b.NodeClaims)+mustJSON(t, b.Unschedulable); x != y {
				t.Errorf("candidate %s (%d types): compact\n%s\nfull\n%s", c.name(), len(types), x, y)
			}
		}
	}
	if compacted == 0 || trimmed == 0 {
		t.Errorf("no solve was compacted (%d) or trimmed (%d): the test proves nothing", compacted, trimmed)
	}
}

// TestReplacementRuledOutByRequests: a spot c8 ($0.16/h) whose five 1-CPU
// pods no other node has the room for, where every cheaper type costs
// $0.0399 a vCPU: new capacity for 5 CPUs costs at least $0.1995/h, more
// than the node, so single-node rejects it without a simulation (it used
// to solve once per such node, which at 5,000 packed nodes is most of a
// tick's work).
func TestReplacementRuledOutByRequests(t *testing.T) {
	w := newWorld()
	for k := 1; k < 8; k++ {
		w.spot[fmt.Sprintf("c%d", k)] = 0.0399 * float64(k)
	}
	w.node("a", "c8", apis.CapacityTypeSpot)
	w.pods("a", 5, "1")
	cmds, rep := w.decide(t)
	if len(cmds) != 0 {
		t.Fatalf("commands %q, want none", summaries(cmds))
	}
	if why := rep.Rejected["a"]; !strings.Contains(why, "costs at least $0.1995/h") || !strings.Contains(why, "no saving") {
		t.Errorf("a rejected because %q, want a replacement of at least $0.1995/h, no saving", why)
	}
	if rep.Solves != 0 {
		t.Errorf("%d solves, want none (the requests alone rule every replacement out)", rep.Solves)
	}
}
