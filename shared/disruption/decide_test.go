package disruption

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/apis"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
	"github.com/nodewright/nodewright/shared/state"
)

const (
	od   = apis.CapacityTypeOnDemand
	spot = apis.CapacityTypeSpot
)

// onDemandOnly limits a pool to on-demand capacity.
func onDemandOnly(np *apis.NodePool) {
	np.Spec.Template.Spec.Requirements = []apis.NodeSelectorRequirementWithMinValues{
		st.PoolReq(apis.LabelCapacityType, corev1.NodeSelectorOpIn, od),
	}
}

func budget(nodes string, reasons ...apis.DisruptionReason) apis.Budget {
	return apis.Budget{Nodes: nodes, Reasons: reasons}
}

func window(nodes, schedule string, d time.Duration) apis.Budget {
	return apis.Budget{Nodes: nodes, Schedule: &schedule, Duration: &metav1.Duration{Duration: d}}
}

// emptyNodes adds n empty c2 on-demand nodes named <prefix>0..<prefix>n-1.
func (w *world) emptyNodes(prefix string, n int, opts ...nodeOpt) {
	for i := 0; i < n; i++ {
		w.node(prefix+string(rune('a'+i)), "c2", od, opts...)
	}
}

// TestDecide runs Decide over small clusters; each case says which
// behaviour of Karpenter it follows (suite file and It, or source file and
// function, in kubernetes-sigs/karpenter v1.9.1 unless said otherwise).
func TestDecide(t *testing.T) {
	cases := []struct {
		name  string
		ref   string
		build func(w *world)
		// want are the commands' summaries ("method: nodes -> first
		// type/capacity type").
		want  []string
		check func(t *testing.T, w *world, cmds []Command, rep Report)
	}{
		// --- candidates ---
		{
			name: "a node Nodewright did not launch is never a candidate but its room takes pods",
			ref:  "consolidation_test.go It(\"can delete nodes, when non-Karpenter capacity can fit pods\")",
			build: func(w *world) {
				w.foreign("mng-1", "c4")
				w.node("a", "c4", od)
				w.pods("a", 2, "500m")
			},
			want: []string{"single-node: a"},
			check: func(t *testing.T, w *world, cmds []Command, rep Report) {
				if !strings.Contains(rep.Skipped["mng-1"], "not launched by Nodewright") {
					t.Errorf("foreign node skipped as %q", rep.Skipped["mng-1"])
				}
				if rep.Candidates != 1 {
					t.Errorf("candidates %d, want 1", rep.Candidates)
				}
			},
		},
		{
			name: "an empty foreign node is not deleted",
			ref:  "suite_test.go It(\"should not consider candidates that has just a Node representation\")",
			build: func(w *world) {
				w.foreign("mng-1", "c4")
			},
			want: []string{},
		},
		{
			name: "do-not-disrupt on the node keeps it",
			ref:  "suite_test.go It(\"should not consider candidates that have do-not-disrupt on nodes\")",
			build: func(w *world) {
				w.node("a", "c2", od, annotated(apis.AnnotationDoNotDisrupt, "true"))
			},
			want:  []string{},
			check: blockedWith("a", "node is annotated karpenter.sh/do-not-disrupt"),
		},
		{
			name: "do-not-disrupt set to false does not protect",
			ref:  "emptiness_test.go It(\"should delete nodes with the karpenter.sh/do-not-disrupt annotation set to false\")",
			build: func(w *world) {
				w.node("a", "c2", od, annotated(apis.AnnotationDoNotDisrupt, "false"))
			},
			want: []string{"emptiness: a"},
		},
		{
			name: "a do-not-disrupt pod keeps its node",
			ref:  "suite_test.go It(\"should not consider candidates that have do-not-disrupt pods scheduled and no terminationGracePeriod\")",
			build: func(w *world) {
				w.foreign("mng-1", "c8")
				w.node("a", "c4", od)
				w.pods("a", 1, "500m", podAnnotated(apis.AnnotationDoNotDisrupt, "true"))
			},
			want:  []string{},
			check: blockedWith("a", "pod default/a-p0 is annotated karpenter.sh/do-not-disrupt"),
		},
		{
			name: "a do-not-disrupt pod that has finished does not protect",
			ref:  "suite_test.go It(\"should consider candidates that have do-not-disrupt terminal pods\")",
			build: func(w *world) {
				w.node("a", "c2", od)
				w.pods("a", 1, "500m", podAnnotated(apis.AnnotationDoNotDisrupt, "true"), podPhase(corev1.PodSucceeded))
			},
			want: []string{"emptiness: a"},
		},
		{
			name: "a do-not-disrupt DaemonSet pod keeps its node",
			ref:  "suite_test.go It(\"should not consider candidates that have do-not-disrupt daemonset pods scheduled\")",
			build: func(w *world) {
				w.node("a", "c2", od)
				w.pods("a", 1, "100m", owner("DaemonSet"), podAnnotated(apis.AnnotationDoNotDisrupt, "true"))
			},
			want:  []string{},
			check: blockedWith("a", "annotated karpenter.sh/do-not-disrupt"),
		},
		{
			name: "a PDB that allows no disruption keeps the node",
			ref:  "consolidation_test.go It(\"can delete nodes, considers PDB\")",
			build: func(w *world) {
				w.foreign("mng-1", "c8")
				w.node("a", "c4", od)
				w.pods("a", 1, "500m")
				w.pdb("web", "default", "web", 0)
			},
			want:  []string{},
			check: blockedWith("a", "PodDisruptionBudget default/web allows no disruption now"),
		},
		{
			name: "a PDB that allows a disruption lets the node go",
			ref:  "consolidation_test.go It(\"can delete nodes, considers PDB\") (the allowed half)",
			build: func(w *world) {
				w.foreign("mng-1", "c8")
				w.node("a", "c4", od)
				w.pods("a", 3, "500m")
				w.pdb("web", "default", "web", 1)
			},
			want: []string{"single-node: a"},
		},
		{
			name: "a PDB in another namespace does not apply",
			ref:  "consolidation_test.go DescribeTable(\"can replace nodes, PDB namespace must match\")",
			build: func(w *world) {
				w.foreign("mng-1", "c8")
				w.node("a", "c4", od)
				w.pods("a", 1, "500m")
				w.pdb("web", "other", "web", 0)
			},
			want: []string{"single-node: a"},
		},
		{
			name: "a pod under two PDBs cannot be evicted",
			ref:  "suite_test.go It(\"should not consider candidates that have multiple PDBs on the same pod\")",
			build: func(w *world) {
				w.foreign("mng-1", "c8")
				w.node("a", "c4", od)
				w.pods("a", 1, "500m")
				w.pdb("web", "default", "web", 1)
				w.pdb("web-2", "default", "web", 1)
			},
			want:  []string{},
			check: blockedWith("a", "several PodDisruptionBudgets (default/web, default/web-2)"),
		},
		{
			name: "an unready pod under an AlwaysAllow PDB can be evicted",
			ref:  "consolidation_test.go DescribeTable(\"can replace nodes, considers PDB policy\")",
			build: func(w *world) {
				w.foreign("mng-1", "c8")
				w.node("a", "c4", od)
				w.pods("a", 1, "500m", unready())
				b := w.pdb("web", "default", "web", 0)
				always := policyAlwaysAllow()
				b.Spec.UnhealthyPodEvictionPolicy = &always
			},
			want: []string{"single-node: a"},
		},
		{
			name: "a node not initialized yet is no candidate",
			ref:  "suite_test.go It(\"should not consider candidates that aren't yet initialized\")",
			build: func(w *world) {
				w.node("a", "c2", od, phase(state.Registered))
			},
			want:  []string{},
			check: skippedWith("a", "not initialized"),
		},
		{
			name: "a node another action disrupts is no candidate",
			ref:  "suite_test.go It(\"should not consider candidates that are actively being processed in the queue\")",
			build: func(w *world) {
				w.node("a", "c2", od, disrupting("consolidation-x"))
			},
			want:  []string{},
			check: skippedWith("a", "already being disrupted (consolidation-x"),
		},
		{
			name: "a node being deleted is no candidate",
			ref:  "suite_test.go It(\"should not consider candidates that are deleting\")",
			build: func(w *world) {
				w.node("a", "c2", od, deleting())
			},
			want:  []string{},
			check: skippedWith("a", "being deleted"),
		},
		{
			name: "a node whose NodePool is gone is no candidate",
			ref:  "suite_test.go It(\"should not consider candidates that are have a non-existent NodePool\")",
			build: func(w *world) {
				w.node("a", "c2", od, inPool("gone"))
			},
			want:  []string{},
			check: skippedWith("a", `NodePool "gone" not found`),
		},
		// --- pending pods keep their room ---
		{
			name: "an empty node a pending pod would land on is kept",
			ref:  "emptiness_test.go It(\"considers pending pods when consolidating\"); suite_test.go It(\"should not consider candidates that are nominated\")",
			build: func(w *world) {
				w.node("a", "c2", od)
				w.pending("waiting", "500m")
			},
			want:  []string{},
			check: skippedWith("a", "pending pods are to use its room"),
		},
		{
			name: "without the pending pod the empty node goes",
			ref:  "emptiness_test.go It(\"can delete empty nodes\")",
			build: func(w *world) {
				w.node("a", "c2", od)
			},
			want: []string{"emptiness: a"},
		},
		{
			name: "a pending pod keeps the room a node's pods would move to",
			ref:  "consolidation_test.go It(\"should not schedule an additional node when receiving pending pods while consolidating\")",
			build: func(w *world) {
				w.pools[0].Spec.Template.Spec.Requirements = nil
				onDemandOnly(w.pools[0])
				w.foreign("mng-1", "c2")
				w.node("a", "c1", od)
				w.pods("a", 1, "500m")
				w.pending("waiting", "1500m")
			},
			want: []string{},
			check: func(t *testing.T, w *world, cmds []Command, rep Report) {
				if !strings.Contains(rep.Rejected["a"], "single-node") {
					t.Errorf("a rejected as %q, want a single-node rejection", rep.Rejected["a"])
				}
			},
		},
		{
			name: "the same node goes when nothing waits for that room",
			ref:  "consolidation_test.go It(\"can delete nodes, when non-Karpenter capacity can fit pods\")",
			build: func(w *world) {
				onDemandOnly(w.pools[0])
				w.foreign("mng-1", "c2")
				w.node("a", "c1", od)
				w.pods("a", 1, "500m")
			},
			want: []string{"single-node: a"},
		},
		// --- consolidateAfter and policy ---
		{
			name: "consolidateAfter not elapsed since the pods last changed",
			ref:  "nodeclaim/disruption/consolidation_test.go It(\"should remove the status condition from the nodeClaim when lastPodEvent is too recent\")",
			build: func(w *world) {
				w.pools[0].Spec.Disruption.ConsolidateAfter = apis.DurationOf(2 * time.Hour)
				w.node("a", "c2", od, podsChanged(time.Hour))
			},
			want:  []string{},
			check: skippedWith("a", "consolidateAfter 2h0m0s not elapsed"),
		},
		{
			name: "consolidateAfter elapsed",
			ref:  "nodeclaim/disruption/consolidation_test.go It(\"should mark NodeClaims as consolidatable\")",
			build: func(w *world) {
				w.pools[0].Spec.Disruption.ConsolidateAfter = apis.DurationOf(30 * time.Minute)
				w.node("a", "c2", od, podsChanged(time.Hour))
			},
			want: []string{"emptiness: a"},
		},
		{
			name: "consolidateAfter counts from initialization when the pods never changed",
			ref:  "nodeclaim/disruption/consolidation_test.go It(\"should mark NodeClaims as consolidatable based on the nodeclaim initialized time\")",
			build: func(w *world) {
				w.pools[0].Spec.Disruption.ConsolidateAfter = apis.DurationOf(2 * time.Hour)
				w.node("a", "c2", od)
				w.rec("a").PodsChangedAt = time.Time{}
			},
			want: []string{"emptiness: a"},
		},
		{
			name: "consolidateAfter Never disables consolidation",
			ref:  "nodeclaim/disruption/consolidation_test.go It(\"should remove the status condition from the nodeClaim when consolidateAfter is never\")",
			build: func(w *world) {
				w.pools[0].Spec.Disruption.ConsolidateAfter = apis.NillableDuration{Raw: apis.Never}
				w.node("a", "c2", od)
			},
			want:  []string{},
			check: skippedWith("a", "consolidation disabled"),
		},
		{
			name: "WhenEmpty removes the empty node and leaves the busy one",
			ref:  "consolidation_test.go It(\"should fire an event for ConsolidationDisabled when the NodePool has consolidation set to WhenEmpty\")",
			build: func(w *world) {
				w.pools[0].Spec.Disruption.ConsolidationPolicy = apis.ConsolidationPolicyWhenEmpty
				w.foreign("mng-1", "c8")
				w.node("busy", "c4", od)
				w.pods("busy", 1, "500m")
				w.node("empty", "c4", od)
			},
			want:  []string{"emptiness: empty"},
			check: skippedWith("busy", "consolidates WhenEmpty and the node has 1 pods"),
		},
		{
			name: "WhenEmpty never replaces a busy node",
			ref:  "consolidation.go consolidation.ShouldDisrupt (WhenEmpty pools only allow empty-node deletions)",
			build: func(w *world) {
				w.pools[0].Spec.Disruption.ConsolidationPolicy = apis.ConsolidationPolicyWhenEmpty
				w.node("busy", "c16", od)
				w.pods("busy", 1, "500m")
			},
			want: []string{},
		},
		// --- emptiness ---
		{
			name: "every empty node at once",
			ref:  "emptiness_test.go It(\"can delete multiple empty nodes\")",
			build: func(w *world) {
				w.emptyNodes("e", 3)
			},
			want: []string{"emptiness: ea,eb,ec"},
			check: func(t *testing.T, w *world, cmds []Command, rep Report) {
				if cmds[0].Reason != ReasonEmpty || cmds[0].PriceBefore != 0.24 || cmds[0].PriceAfter != 0 {
					t.Errorf("reason %s, prices %v -> %v; want Empty, 0.24 -> 0", cmds[0].Reason, cmds[0].PriceBefore, cmds[0].PriceAfter)
				}
			},
		},
		{
			name: "a node with only a DaemonSet pod is empty",
			ref:  "emptiness_test.go It(\"will consider a node with a DaemonSet pod as empty\")",
			build: func(w *world) {
				w.node("a", "c2", od)
				w.pods("a", 1, "100m", owner("DaemonSet"))
			},
			want: []string{"emptiness: a"},
		},
		{
			name: "a node with only terminating Deployment pods is empty",
			ref:  "emptiness_test.go It(\"will consider a node with terminating Deployment pods as empty\")",
			build: func(w *world) {
				w.node("a", "c2", od)
				w.pods("a", 1, "500m", terminating())
			},
			want: []string{"emptiness: a"},
		},
		{
			name: "a node with a terminating StatefulSet pod is not empty",
			ref:  "emptiness_test.go It(\"will not consider a node with a terminating StatefulSet pod as empty\")",
			build: func(w *world) {
				onDemandOnly(w.pools[0])
				w.node("a", "c1", od)
				w.pods("a", 1, "500m", terminating(), owner("StatefulSet"))
			},
			want: []string{},
		},
		// --- budgets ---
		{
			name: "a count budget lets 3 of 10 empty nodes go",
			ref:  "consolidation_test.go It(\"should only allow 3 empty nodes to be disrupted\")",
			build: func(w *world) {
				w.pools[0].Spec.Disruption.Budgets = []apis.Budget{budget("3")}
				w.emptyNodes("e", 10)
			},
			want: []string{"emptiness: ea,eb,ec"},
			check: func(t *testing.T, w *world, cmds []Command, rep Report) {
				if !strings.Contains(rep.Rejected["ed"], "budget") {
					t.Errorf("ed rejected as %q, want a budget", rep.Rejected["ed"])
				}
			},
		},
		{
			name: "a percentage budget rounds up (10% of 11 nodes is 2)",
			ref:  "pkg/apis/v1/nodepool_budgets_test.go It(\"should return the string value when a budget is active\"); nodepool.go GetAllowedDisruptionsByReason (ceil)",
			build: func(w *world) {
				w.pools[0].Spec.Disruption.Budgets = []apis.Budget{budget("10%")}
				w.emptyNodes("e", 11)
			},
			want: []string{"emptiness: ea,eb"},
		},
		{
			name: "a budget of zero for Empty blocks emptiness",
			ref:  "consolidation_test.go It(\"should allow no empty nodes to be disrupted\")",
			build: func(w *world) {
				w.pools[0].Spec.Disruption.Budgets = []apis.Budget{budget("100%"), budget("0", apis.DisruptionReasonEmpty)}
				w.emptyNodes("e", 2)
			},
			want: []string{},
		},
		{
			name: "a budget for another reason does not limit emptiness",
			ref:  "pkg/apis/v1/nodepool_budgets_test.go It(\"should get the minimum budget for each reason\")",
			build: func(w *world) {
				w.pools[0].Spec.Disruption.Budgets = []apis.Budget{budget("0", apis.DisruptionReasonUnderutilized, apis.DisruptionReasonDrifted)}
				w.emptyNodes("e", 2)
			},
			want: []string{"emptiness: ea,eb"},
		},
		{
			name: "the most restrictive active budget wins",
			ref:  "pkg/apis/v1/nodepool_budgets_test.go It(\"should get the minimum budget for each reason\")",
			build: func(w *world) {
				w.pools[0].Spec.Disruption.Budgets = []apis.Budget{budget("50%"), budget("1", apis.DisruptionReasonEmpty), budget("3")}
				w.emptyNodes("e", 4)
			},
			want: []string{"emptiness: ea"},
		},
		{
			name: "a budget whose schedule window is not active does not apply",
			ref:  "pkg/apis/v1/nodepool_budgets_test.go It(\"should return MaxInt32 when a budget is inactive\")",
			build: func(w *world) {
				w.pools[0].Spec.Disruption.Budgets = []apis.Budget{window("0", "0 9 * * *", time.Hour)}
				w.emptyNodes("e", 2)
			},
			want: []string{"emptiness: ea,eb"},
		},
		{
			name: "a budget whose schedule window is active blocks",
			ref:  "pkg/apis/v1/nodepool_budgets_test.go It(\"should return that a schedule is active when the schedule hit is in the middle of the duration\")",
			build: func(w *world) {
				w.pools[0].Spec.Disruption.Budgets = []apis.Budget{window("0", "0 11 * * *", 2*time.Hour)}
				w.emptyNodes("e", 2)
			},
			want: []string{},
		},
		{
			name: "nodes already disrupting count against the budget",
			ref:  "drift_test.go It(\"should disrupt 3 nodes, taking into account commands in progress\"); suite_test.go It(\"should consider nodes with a deletion timestamp set and MarkedForDeletion to the disruption count\")",
			build: func(w *world) {
				w.pools[0].Spec.Disruption.Budgets = []apis.Budget{budget("3")}
				w.emptyNodes("e", 4)
				w.node("x", "c2", od, disrupting("consolidation-1"))
				w.node("y", "c2", od, deleting())
			},
			want: []string{"emptiness: ea"},
		},
		{
			name: "a NotReady node counts against the budget",
			ref:  "suite_test.go It(\"should consider not ready nodes to the disruption count\")",
			build: func(w *world) {
				w.pools[0].Spec.Disruption.Budgets = []apis.Budget{budget("2")}
				w.emptyNodes("e", 3)
				w.node("sick", "c2", od, notReady())
				w.pods("sick", 1, "100m", podAnnotated(apis.AnnotationDoNotDisrupt, "true"))
			},
			want: []string{"emptiness: ea"},
		},
		{
			name: "a node of an open action counts against the budget",
			ref:  "helpers.go BuildDisruptionBudgetMapping (nodes MarkedForDeletion count as disrupting)",
			build: func(w *world) {
				w.pools[0].Spec.Disruption.Budgets = []apis.Budget{budget("2")}
				w.emptyNodes("e", 3)
				w.actions = []*state.Action{{ID: "interruption-1", Kind: state.KindInterruption, Step: state.StepDraining, NodeClaims: []string{"nc-ec"}}}
			},
			want: []string{"emptiness: ea"},
		},
		{
			name: "nodes not initialized are not counted in the percentage",
			ref:  "suite_test.go It(\"should not consider nodes that are not initialized as part of disruption count\")",
			build: func(w *world) {
				w.pools[0].Spec.Disruption.Budgets = []apis.Budget{budget("50%")}
				w.emptyNodes("e", 2)
				w.node("new1", "c2", od, phase(state.Registered))
				w.node("new2", "c2", od, phase(state.Registered))
			},
			want: []string{"emptiness: ea"},
		},
		{
			name: "each NodePool has its own budget",
			ref:  "consolidation_test.go It(\"should allow 2 nodes from each nodePool to be deleted\")",
			build: func(w *world) {
				w.pools[0].Spec.Disruption.Budgets = []apis.Budget{budget("2")}
				other := w.pool("other")
				other.Spec.Disruption.Budgets = []apis.Budget{budget("2")}
				w.pools = append(w.pools, other)
				w.emptyNodes("d", 3)
				w.emptyNodes("o", 3, inPool("other"))
			},
			want: []string{"emptiness: da,db,oa,ob"},
		},
		{
			name: "multi-node takes only what the budget allows",
			ref:  "consolidation_test.go It(\"should only allow 3 nodes to be deleted in multi node consolidation delete\")",
			build: func(w *world) {
				w.pools[0].Spec.Disruption.Budgets = []apis.Budget{budget("3")}
				w.foreign("mng-1", "c16")
				for _, n := range []string{"a", "b", "c", "d", "e"} {
					w.node(n, "c4", od)
					w.pods(n, 1, "500m")
				}
			},
			want: []string{"multi-node: a,b,c"},
		},
		// --- multi-node ---
		{
			name: "three nodes merge into one cheaper node",
			ref:  "consolidation_test.go DescribeTable(\"can merge 3 nodes into 1\")",
			build: func(w *world) {
				for _, n := range []string{"a", "b", "c"} {
					w.node(n, "c4", od)
					w.pods(n, 1, "500m")
				}
			},
			want: []string{"multi-node: a,b,c -> c2/spot"},
			check: func(t *testing.T, w *world, cmds []Command, rep Report) {
				c := cmds[0]
				if c.PriceBefore != 0.48 || c.PriceAfter != 0.04 || c.Reason != ReasonUnderutilized {
					t.Errorf("prices %v -> %v reason %s; want 0.48 -> 0.04 Underutilized", c.PriceBefore, c.PriceAfter, c.Reason)
				}
				r := c.Replacements[0]
				if !slices.Equal(r.CapacityTypes, []string{spot}) || len(r.Pods) != 3 {
					t.Errorf("replacement capacity types %v pods %v", r.CapacityTypes, r.Pods)
				}
				for _, typ := range r.InstanceTypes {
					if typ == "c4" {
						t.Errorf("replacement offers the candidates' type c4: %v", r.InstanceTypes)
					}
				}
			},
		},
		{
			name: "spot and on-demand candidates merge into one spot node",
			ref:  "consolidation_test.go It(\"can merge 3 nodes into 1 if the candidates have both spot and on-demand\")",
			build: func(w *world) {
				w.node("a", "c4", od)
				w.node("b", "c4", spot)
				w.node("c", "c4", od)
				for _, n := range []string{"a", "b", "c"} {
					w.pods(n, 1, "500m")
				}
			},
			want: []string{"multi-node: a,c,b -> c2/spot"},
		},
		{
			name: "binary search finds the largest prefix that can go",
			ref:  "multinodeconsolidation.go MultiNodeConsolidation.firstNConsolidationOption",
			build: func(w *world) {
				onDemandOnly(w.pools[0])
				for i, n := range []string{"n1", "n2", "n3", "n4"} {
					w.node(n, "c8", od)
					w.pods(n, i+1, "500m")
				}
				// n5's pods can run nowhere else, and it costs the most to
				// disrupt: the prefix of all five fails, the first four fit
				// in its free room.
				w.node("n5", "c8", od)
				w.pods("n5", 5, "500m", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{apis.LabelHostname: "n5"} })
			},
			want: []string{"multi-node: n1,n2,n3,n4"},
			check: func(t *testing.T, w *world, cmds []Command, rep Report) {
				if cmds[0].PriceBefore != 1.28 || cmds[0].PriceAfter != 0 {
					t.Errorf("prices %v -> %v, want 1.28 -> 0", cmds[0].PriceBefore, cmds[0].PriceAfter)
				}
			},
		},
		{
			name: "multi-node refuses a replacement as dear as a candidate of its type",
			ref:  "multinodeconsolidation.go filterOutSameInstanceType (\"NodeClaims=[t3a.2xlarge, t3a.2xlarge, t3a.small] -> 1 of t3a.small, t3a.xlarge, t3a.2xlarge\")",
			build: func(w *world) {
				onDemandOnly(w.pools[0])
				for _, n := range []string{"a", "b", "c"} {
					w.node(n, "c4", od)
					w.pods(n, 2, "500m")
				}
			},
			// All three would need one c4 (their own type) or a c5 (dearer
			// than a c4): refused. Two of them fit in the third's room.
			want: []string{"multi-node: a,b"},
		},
		{
			name: "never replace two nodes by one of their own type",
			ref:  "consolidation_test.go DescribeTable(\"won't merge 2 nodes into 1 of the same type\"); multinodeconsolidation.go filterOutSameInstanceType",
			build: func(w *world) {
				onDemandOnly(w.pools[0])
				w.node("a", "c2", od)
				w.pods("a", 1, "500m")
				w.node("b", "c2", od)
				w.pods("b", 2, "500m")
			},
			// Multi-node would launch a c2 for both: refused. Single-node
			// deletes the node with the fewest pods instead.
			want: []string{"single-node: a"},
		},
		// --- disruption cost ---
		{
			name: "single-node takes the cheapest to disrupt first (priority)",
			ref:  "singlenodeconsolidation_test.go It(\"should sort candidates by disruption cost\"); suite_test.go It(\"should have a lower disruptionCost for a pod with a lower priority\")",
			build: func(w *world) {
				onDemandOnly(w.pools[0])
				w.foreign("mng-1", "c1")
				w.pods("mng-1", 1, "440m")
				w.node("a", "c1", od)
				w.pods("a", 1, "400m")
				w.node("b", "c1", od)
				w.pods("b", 1, "400m", priority(-1000000))
			},
			want: []string{"single-node: b"},
		},
		{
			name: "single-node takes the node closest to expiry first",
			ref:  "consolidation_test.go It(\"should consider node lifetime remaining when calculating disruption cost\")",
			build: func(w *world) {
				onDemandOnly(w.pools[0])
				w.foreign("mng-1", "c1")
				w.pods("mng-1", 1, "440m")
				w.node("a", "c1", od)
				w.pods("a", 1, "400m")
				w.node("b", "c1", od, created(700*time.Hour))
				w.pods("b", 1, "400m")
			},
			want: []string{"single-node: b"},
		},
		// --- single-node ---
		{
			name: "an on-demand node is replaced by a strictly cheaper spot node",
			ref:  "consolidation_test.go DescribeTable(\"can replace node\") Entry(\"if the candidate is on-demand node\"); consolidation.go computeConsolidation (OD -> [OD, spot] keeps spot only)",
			build: func(w *world) {
				w.node("a", "c8", od)
				w.pods("a", 1, "500m")
			},
			want: []string{"single-node: a -> c1/spot"},
			check: func(t *testing.T, w *world, cmds []Command, rep Report) {
				r := cmds[0].Replacements[0]
				var ct []string
				for _, q := range r.Requirements {
					if q.Key == apis.LabelCapacityType {
						ct = q.Values
					}
				}
				if !slices.Equal(ct, []string{spot}) || r.Labels[apis.LabelCapacityType] != spot {
					t.Errorf("capacity-type requirement %v label %q, want spot only", ct, r.Labels[apis.LabelCapacityType])
				}
				if r.InstanceTypes[len(r.InstanceTypes)-1] == "c16" || len(r.InstanceTypes) != 15 {
					t.Errorf("options %v: want the 15 types cheaper than $0.32 spot (c1..c15)", r.InstanceTypes)
				}
			},
		},
		{
			name: "an on-demand node is replaced by a cheaper on-demand node",
			ref:  "consolidation_test.go DescribeTable(\"can replace node\") Entry(\"if the candidate is on-demand node\")",
			build: func(w *world) {
				onDemandOnly(w.pools[0])
				w.node("a", "c8", od)
				w.pods("a", 1, "1500m")
			},
			want: []string{"single-node: a -> c2/on-demand"},
			check: func(t *testing.T, w *world, cmds []Command, rep Report) {
				r := cmds[0].Replacements[0]
				if !slices.Equal(r.InstanceTypes, []string{"c2", "c3", "c4", "c5", "c6", "c7"}) {
					t.Errorf("options %v, want c2..c7 (cheaper than the c8)", r.InstanceTypes)
				}
				if cmds[0].PriceBefore != 0.32 || cmds[0].PriceAfter != 0.08 {
					t.Errorf("prices %v -> %v", cmds[0].PriceBefore, cmds[0].PriceAfter)
				}
			},
		},
		// --- NodePools that are not ready (their class is missing or
		// resolves no subnet, security group or AMI): provision leaves
		// them out of its solves, and so do replacements ---
		{
			name: "no replacement is planned into a NodePool that is not ready",
			ref:  "Nodewright: provision's pool readiness (shared/provision/readiness.go); Karpenter's NodePool Ready condition keeps a pool out of scheduling",
			build: func(w *world) {
				onDemandOnly(w.pools[0])
				w.notReady = map[string]bool{"default": true}
				w.node("a", "c8", od)
				w.pods("a", 1, "1500m")
			},
			want: []string{},
		},
		{
			name: "a replacement goes to a ready NodePool when the node's own is not ready",
			ref:  "Nodewright: provision's pool readiness (shared/provision/readiness.go)",
			build: func(w *world) {
				onDemandOnly(w.pools[0])
				other := w.pool("other")
				onDemandOnly(other)
				w.pools = append(w.pools, other)
				w.notReady = map[string]bool{"default": true}
				w.node("a", "c8", od)
				w.pods("a", 1, "1500m")
			},
			want: []string{"single-node: a -> c2/on-demand"},
			check: func(t *testing.T, w *world, cmds []Command, rep Report) {
				if p := cmds[0].Replacements[0].NodePool; p != "other" {
					t.Errorf("replacement planned into NodePool %q, want other (default is not ready)", p)
				}
			},
		},
		{
			name: "an empty node of a NodePool that is not ready is still deleted",
			ref:  "Nodewright: a pool that is not ready keeps its budgets and policy; only launches into it stop",
			build: func(w *world) {
				w.notReady = map[string]bool{"default": true}
				w.node("a", "c2", od)
			},
			want: []string{"emptiness: a"},
		},
		{
			name: "a node of a NodePool that is not ready is deleted when its pods fit elsewhere",
			ref:  "Nodewright: a pool that is not ready keeps its budgets and policy; only launches into it stop",
			build: func(w *world) {
				w.notReady = map[string]bool{"default": true}
				w.foreign("mng-1", "c8")
				w.node("a", "c4", od)
				w.pods("a", 2, "500m")
			},
			want: []string{"single-node: a"},
		},
		{
			name: "no replacement that is not strictly cheaper",
			ref:  "consolidation_test.go It(\"won't replace on-demand node if on-demand replacement is more expensive\")",
			build: func(w *world) {
				onDemandOnly(w.pools[0])
				w.node("a", "c1", od)
				w.pods("a", 1, "800m")
			},
			want:  []string{},
			check: unconsolidatable("a"),
		},
		{
			name: "one node may be replaced by two smaller ones when cheaper",
			ref:  "consolidation.go computeConsolidation (Karpenter never turns one node into several; Nodewright does when strictly cheaper)",
			build: func(w *world) {
				onDemandOnly(w.pools[0])
				w.node("a", "c8", od)
				w.pods("a", 2, "500m", antiAffinity("solo"))
			},
			want: []string{"single-node: a -> c1/on-demand,c1/on-demand"},
			check: func(t *testing.T, w *world, cmds []Command, rep Report) {
				worst := 0.0
				for _, r := range cmds[0].Replacements {
					worst += w.typ(r.InstanceTypes[len(r.InstanceTypes)-1]).OnDemandPrice
				}
				if worst >= cmds[0].PriceBefore {
					t.Errorf("the dearest options together cost %v, not less than %v", worst, cmds[0].PriceBefore)
				}
			},
		},
		{
			name: "never three replacements for one node",
			ref:  "consolidation.go computeConsolidation (\"Can't remove without creating %d candidates\")",
			build: func(w *world) {
				onDemandOnly(w.pools[0])
				w.node("a", "c8", od)
				w.pods("a", 3, "500m", antiAffinity("solo"))
			},
			want:  []string{},
			check: rejectedWith("a", "its pods need 3 new nodes (at most 2)"),
		},
		{
			name: "no deletion that breaks pod anti-affinity",
			ref:  "consolidation_test.go It(\"won't delete node if it would violate pod anti-affinity\")",
			build: func(w *world) {
				onDemandOnly(w.pools[0])
				w.node("a", "c1", od)
				w.pods("a", 1, "300m", antiAffinity("solo"))
				w.node("b", "c1", od)
				w.pods("b", 1, "300m", antiAffinity("solo"))
			},
			want: []string{},
		},
		{
			name: "no deletion that relies on a node not initialized",
			ref:  "consolidation_test.go It(\"won't delete node if it would require pods to schedule on an uninitialized node\")",
			build: func(w *world) {
				w.node("a", "c4", od)
				w.pods("a", 1, "500m")
				w.node("b", "c4", od, phase(state.Registered))
			},
			want:  []string{},
			check: rejectedWith("a", "not initialized yet"),
		},
		{
			name: "no deletion that relies on capacity still launching",
			ref:  "helpers.go SimulateScheduling (UninitializedNodeError)",
			build: func(w *world) {
				w.node("a", "c4", od)
				w.pods("a", 1, "500m")
				w.recs = append(w.recs, &state.NodeClaim{Name: "nc-launching", NodePool: "default", NodeClass: "default", Phase: state.Launched,
					InstanceID: "i-launching", InstanceType: "c4", Zone: zoneA, CapacityType: od, CreatedAt: now.Add(-time.Minute)})
			},
			want:  []string{},
			check: rejectedWith("a", "launched but not registered"),
		},
		{
			name: "initialized nodes take pods before nodes still coming up",
			ref:  "consolidation_test.go It(\"should consider initialized nodes before uninitialized nodes\")",
			build: func(w *world) {
				w.node("a0", "c4", od, phase(state.Registered))
				w.node("b", "c4", od)
				w.pods("b", 1, "500m")
				w.foreign("mng-1", "c4")
			},
			want: []string{"single-node: b"},
		},
		{
			name: "a node under another action takes no pods",
			ref:  "helpers.go SimulateScheduling (nodes marked for deletion are no place for pods)",
			build: func(w *world) {
				w.node("a", "c8", od)
				w.pods("a", 1, "500m")
				w.node("x", "c8", od, disrupting("consolidation-1"))
			},
			want: []string{"single-node: a -> c1/spot"},
		},
		// --- spot to spot ---
		{
			name: "spot to spot is off when SpotToSpot is",
			ref:  "consolidation_test.go It(\"cannot replace spot with spot if the spotToSpotConsolidation is disabled\")",
			build: func(w *world) {
				w.s2s = false
				w.node("a", "c32", spot)
				w.pods("a", 1, "500m")
			},
			want:  []string{},
			check: rejectedWith("a", "replacing spot with spot is off"),
		},
		{
			name: "spot to spot needs 15 cheaper spot options",
			ref:  "consolidation_test.go It(\"cannot replace spot with spot if less than minimum InstanceTypes flexibility\")",
			build: func(w *world) {
				w.node("a", "c8", spot)
				w.pods("a", 1, "500m")
			},
			want:  []string{},
			check: rejectedWith("a", "spot-to-spot needs 15 cheaper spot options, there are 7"),
		},
		{
			name: "spot to spot is not made when the node is among the 15 cheapest",
			ref:  "consolidation_test.go It(\"cannot replace spot with spot if it is part of the 15 cheapest instance types.\")",
			build: func(w *world) {
				w.node("a", "c15", spot)
				w.pods("a", 1, "500m")
			},
			want:  []string{},
			check: rejectedWith("a", "there are 14"),
		},
		{
			name: "spot to spot launches with only the 15 cheapest options",
			ref:  "consolidation_test.go It(\"spot to spot consolidation should order the instance types by price before enforcing minimum flexibility.\")",
			build: func(w *world) {
				w.spot["c9"] = 0.001 // the cheapest spot type despite its size
				w.node("a", "c32", spot)
				w.pods("a", 1, "500m")
			},
			want: []string{"single-node: a -> c9/spot"},
			check: func(t *testing.T, w *world, cmds []Command, rep Report) {
				got := cmds[0].Replacements[0].InstanceTypes
				want := []string{"c9", "c1", "c2", "c3", "c4", "c5", "c6", "c7", "c8", "c10", "c11", "c12", "c13", "c14", "c15"}
				if !slices.Equal(got, want) {
					t.Errorf("options %v, want %v", got, want)
				}
			},
		},
		{
			name: "spot to spot keeps enough options for minValues",
			ref:  "consolidation_test.go It(\"spot to spot consolidation should consider the max of default and minimum number of instanceTypeOptions from minValues in requirement for truncation if minimum number of instanceTypeOptions from minValues in requirement is greater than 15.\")",
			build: func(w *world) {
				w.pools[0].Spec.Template.Spec.Requirements = append(w.pools[0].Spec.Template.Spec.Requirements,
					st.PoolReqMin(20, apis.LabelInstanceType, corev1.NodeSelectorOpExists))
				w.node("a", "c32", spot)
				w.rec("a").NodePoolHash = w.pools[0].Hash()
				w.pods("a", 1, "500m")
			},
			want: []string{"single-node: a -> c1/spot"},
			check: func(t *testing.T, w *world, cmds []Command, rep Report) {
				if n := len(cmds[0].Replacements[0].InstanceTypes); n != 20 {
					t.Errorf("%d options, want 20 (minValues)", n)
				}
			},
		},
		{
			name: "spot candidates merged by multi-node need 15 cheaper options too",
			ref:  "consolidation.go computeSpotToSpotConsolidation (Karpenter checks the 15 only for single-node; Nodewright for every spot-to-spot replacement)",
			build: func(w *world) {
				w.node("a", "c4", spot)
				w.node("b", "c4", spot)
				w.pods("a", 1, "3")
				w.pods("b", 1, "3")
			},
			// One c7 ($0.14 spot) would replace both ($0.16): one option.
			want: []string{},
		},
		{
			name: "the same on-demand candidates merge into one spot node",
			ref:  "consolidation_test.go DescribeTable(\"can merge 3 nodes into 1\") Entry(\"if the candidate is on-demand node\")",
			build: func(w *world) {
				w.node("a", "c4", od)
				w.node("b", "c4", od)
				w.pods("a", 1, "3")
				w.pods("b", 1, "3")
			},
			want: []string{"multi-node: a,b -> c7/spot"},
		},
		// --- minimum savings ---
		{
			name: "a replacement that saves less than the absolute minimum is not made",
			ref:  "Nodewright: AnnotationMinSavings (Karpenter has no minimum; its consolidation.go filterByPrice only asks for strictly cheaper)",
			build: func(w *world) {
				w.pools[0].Annotations = map[string]string{AnnotationMinSavings: "0.5"}
				w.node("a", "c8", od)
				w.pods("a", 1, "500m")
			},
			want:  []string{},
			check: rejectedWith("a", "minimum saving of $0.5000/h"),
		},
		{
			name: "a replacement that saves more than the absolute minimum is made",
			ref:  "Nodewright: AnnotationMinSavings",
			build: func(w *world) {
				w.pools[0].Annotations = map[string]string{AnnotationMinSavings: "0.1"}
				onDemandOnly(w.pools[0])
				w.node("a", "c8", od)
				w.pods("a", 1, "1500m")
			},
			want: []string{"single-node: a -> c2/on-demand"},
			check: func(t *testing.T, w *world, cmds []Command, rep Report) {
				// $0.32 - 0.1 = 0.22: c2..c5 ($0.08..$0.20) qualify, c6 ($0.24) does not.
				if got := cmds[0].Replacements[0].InstanceTypes; !slices.Equal(got, []string{"c2", "c3", "c4", "c5"}) {
					t.Errorf("options %v, want c2..c5", got)
				}
			},
		},
		{
			name: "a replacement that saves less than the relative minimum is not made",
			ref:  "Nodewright: AnnotationMinSavingsPercent",
			build: func(w *world) {
				w.pools[0].Annotations = map[string]string{AnnotationMinSavingsPercent: "80%"}
				onDemandOnly(w.pools[0])
				w.node("a", "c8", od)
				w.pods("a", 1, "1500m")
			},
			want:  []string{},
			check: rejectedWith("a", "single-node"),
		},
		{
			name: "an unreadable minimum saving turns replacements off but not deletions",
			ref:  "Nodewright: AnnotationMinSavings (fail closed)",
			build: func(w *world) {
				w.pools[0].Annotations = map[string]string{AnnotationMinSavings: "lots"}
				w.foreign("mng-1", "c2")
				w.node("a", "c8", od)
				w.pods("a", 1, "500m")
			},
			want: []string{"single-node: a"},
		},
		// --- expiration ---
		{
			name: "an expired node is replaced whatever blocks it and without budget",
			ref:  "nodeclaim/expiration/suite_test.go It(\"should delete NodeClaims if the nodeClaim is expired but the node isn't\") (v1: expiration is forceful)",
			build: func(w *world) {
				w.pools[0].Spec.Disruption.Budgets = []apis.Budget{budget("0")}
				w.node("a", "c4", od, created(721*time.Hour))
				w.pods("a", 1, "500m", podAnnotated(apis.AnnotationDoNotDisrupt, "true"))
			},
			want: []string{"expiration: a -> c1/spot"},
			check: func(t *testing.T, w *world, cmds []Command, rep Report) {
				if cmds[0].Reason != ReasonExpired || !strings.Contains(cmds[0].Explanation, "expireAfter 720h0m0s") {
					t.Errorf("reason %s, explanation %q", cmds[0].Reason, cmds[0].Explanation)
				}
			},
		},
		{
			name: "a node younger than expireAfter is not expired",
			ref:  "nodeclaim/expiration/suite_test.go It(\"should not remove non-expired NodeClaims\")",
			build: func(w *world) {
				w.pools[0].Spec.Disruption.ConsolidateAfter = apis.NillableDuration{Raw: apis.Never}
				w.node("a", "c4", od, created(719*time.Hour))
			},
			want: []string{},
		},
		{
			name: "expireAfter Never never expires",
			ref:  "nodeclaim/expiration/suite_test.go It(\"should not remove the NodeClaims when expiration is disabled\")",
			build: func(w *world) {
				w.pools[0].Spec.Disruption.ConsolidateAfter = apis.NillableDuration{Raw: apis.Never}
				w.pools[0].Spec.Template.Spec.ExpireAfter = apis.NillableDuration{Raw: apis.Never}
				w.node("a", "c4", od, created(10000*time.Hour))
			},
			want: []string{},
		},
		{
			name: "every expired node is replaced in one run, each simulated after the last",
			ref:  "nodeclaim/expiration/controller.go Reconcile (each expired NodeClaim is deleted, unbudgeted)",
			build: func(w *world) {
				w.node("a", "c4", od, created(800*time.Hour))
				w.node("b", "c4", od, created(750*time.Hour))
				w.pods("a", 1, "500m")
				w.pods("b", 1, "500m")
			},
			// Neither takes the other's pod: both go.
			want: []string{"expiration: a -> c1/spot", "expiration: b -> c1/spot"},
		},
		// --- drift ---
		{
			name: "a node launched from an older NodePool template is replaced",
			ref:  "drift_test.go It(\"should replace drifted nodes\"); nodeclaim/disruption/drift_test.go It(\"should return drifted only on NodeClaims that are drifted from an updated nodePool\")",
			build: func(w *world) {
				w.node("a", "c4", od)
				w.pods("a", 1, "500m")
				w.pools[0].Spec.Template.ObjectMeta.Labels = map[string]string{"team": "new"}
			},
			want: []string{"drift: a -> c1/spot"},
			check: func(t *testing.T, w *world, cmds []Command, rep Report) {
				if cmds[0].Reason != ReasonDrifted || !strings.Contains(cmds[0].Explanation, "NodePool default template changed") {
					t.Errorf("reason %s explanation %q", cmds[0].Reason, cmds[0].Explanation)
				}
			},
		},
		{
			name: "a node whose EC2NodeClass changed is replaced",
			ref:  "designs/drift.md (static drift of the node class); nodeclaim/disruption/drift_test.go It(\"should detect static drift before cloud provider drift\")",
			build: func(w *world) {
				w.node("a", "c4", od)
				w.pods("a", 1, "500m")
				w.classes[0].Spec.Tags = map[string]string{"cost-center": "42"}
			},
			want:  []string{"drift: a -> c1/spot"},
			check: explained(0, "EC2NodeClass default changed"),
		},
		{
			name: "a node whose AMI is no longer selected is replaced",
			ref:  "aws/karpenter-provider-aws pkg/cloudprovider/drift.go (AMI drift: the instance's image is not among the node class's AMIs)",
			build: func(w *world) {
				w.node("a", "c4", od)
				w.pods("a", 1, "500m")
				w.images = map[string]map[string]bool{"default": {"ami-2": true}}
			},
			want:  []string{"drift: a -> c1/spot"},
			check: explained(0, "AMI ami-1 is no longer selected by EC2NodeClass default (now ami-2)"),
		},
		{
			name: "without an AMI resolution there is no AMI drift",
			ref:  "aws/karpenter-provider-aws pkg/cloudprovider/drift.go (no AMIs resolved: not drifted)",
			build: func(w *world) {
				w.pools[0].Spec.Disruption.ConsolidateAfter = apis.NillableDuration{Raw: apis.Never}
				w.node("a", "c4", od)
				w.pods("a", 1, "500m")
				w.images = map[string]map[string]bool{"other": {"ami-2": true}}
			},
			want: []string{},
		},
		{
			name: "a node its pool's requirements no longer allow drifts",
			ref:  "nodeclaim/disruption/drift_test.go It(\"should detect node requirement drift before cloud provider drift\")",
			build: func(w *world) {
				w.node("a", "c4", spot)
				w.pods("a", 1, "500m")
				onDemandOnly(w.pools[0])
			},
			want:  []string{"drift: a -> c1/on-demand"},
			check: explained(0, "NodePool default no longer allows karpenter.sh/capacity-type=spot"),
		},
		{
			name: "an empty drifted node is deleted, even with consolidation off",
			ref:  "drift_test.go It(\"should delete drifted nodes when they are empty and consolidation is disabled\")",
			build: func(w *world) {
				w.pools[0].Spec.Disruption.ConsolidateAfter = apis.NillableDuration{Raw: apis.Never}
				w.node("a", "c4", od)
				w.images = map[string]map[string]bool{"default": {"ami-2": true}}
			},
			want: []string{"drift: a"},
		},
		{
			name: "drift goes one budget at a time, empty nodes first",
			ref:  "drift_test.go It(\"should drift empty nodes before non-empty nodes\"); It(\"should only consider 3 nodes allowed to be disrupted because of budgets\")",
			build: func(w *world) {
				w.pools[0].Spec.Disruption.Budgets = []apis.Budget{budget("1")}
				w.node("a", "c4", od, created(30*time.Hour))
				w.pods("a", 1, "500m")
				w.node("b", "c4", od)
				w.node("c", "c4", od)
				w.pods("c", 1, "500m")
				w.images = map[string]map[string]bool{"default": {"ami-2": true}}
			},
			want:  []string{"drift: b"},
			check: rejectedWith("a", "drift: budget"),
		},
		{
			name: "drift takes every node its budget allows, oldest first",
			ref:  "drift_test.go It(\"should drift one non-empty node at a time, starting with the earliest drift\") (Nodewright: up to the budget per run)",
			build: func(w *world) {
				w.pools[0].Spec.Disruption.Budgets = []apis.Budget{budget("2")}
				w.node("a", "c4", od)
				w.node("b", "c4", od, created(48*time.Hour))
				w.node("c", "c4", od, created(36*time.Hour))
				for _, n := range []string{"a", "b", "c"} {
					w.pods(n, 1, "500m")
				}
				w.images = map[string]map[string]bool{"default": {"ami-2": true}}
			},
			// b's pod moves to a (drifted too, but kept by the budget),
			// then c's, with room to spare: both are deleted.
			want: []string{"drift: b", "drift: c"},
		},
		{
			name: "a do-not-disrupt pod keeps a drifted node",
			ref:  "drift_test.go It(\"should not create replacements for drifted nodes that have pods with the karpenter.sh/do-not-disrupt annotation\")",
			build: func(w *world) {
				w.node("a", "c4", od)
				w.pods("a", 1, "500m", podAnnotated(apis.AnnotationDoNotDisrupt, "true"))
				w.images = map[string]map[string]bool{"default": {"ami-2": true}}
			},
			want:  []string{},
			check: blockedWith("a", "do-not-disrupt"),
		},
		{
			name: "with terminationGracePeriod a do-not-disrupt pod does not keep a drifted node",
			ref:  "suite_test.go It(\"should consider candidates that have do-not-disrupt pods scheduled with a terminationGracePeriod set for eventual disruption\")",
			build: func(w *world) {
				w.pools[0].Spec.Template.Spec.TerminationGracePeriod = &metav1.Duration{Duration: time.Hour}
				w.node("a", "c4", od)
				w.pods("a", 1, "500m", podAnnotated(apis.AnnotationDoNotDisrupt, "true"))
				w.images = map[string]map[string]bool{"default": {"ami-2": true}}
			},
			want: []string{"drift: a -> c1/spot"},
		},
		{
			name: "drift moves on to the next node when one's pods cannot move",
			ref:  "drift_test.go It(\"should continue to the next drifted node if the first cannot reschedule all pods\")",
			build: func(w *world) {
				w.node("a", "c4", od, created(48*time.Hour))
				w.pods("a", 1, "500m", func(p *corev1.Pod) { p.Spec.NodeSelector = map[string]string{apis.LabelHostname: "a"} })
				w.node("b", "c4", od)
				w.pods("b", 1, "500m")
				w.images = map[string]map[string]bool{"default": {"ami-2": true}}
			},
			want:  []string{"drift: b"},
			check: rejectedWith("a", "would have no place"),
		},
		{
			name: "methods run in order: drift wins over emptiness",
			ref:  "controller.go NewMethods (drift before emptiness and consolidation)",
			build: func(w *world) {
				w.node("a", "c4", od)
				w.node("b", "c4", od, created(48*time.Hour))
				w.rec("b").ImageID = "ami-0"
				w.images = map[string]map[string]bool{"default": {"ami-1": true}}
			},
			want: []string{"drift: b"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld()
			tc.build(w)
			cmds, rep := w.decide(t)
			if got := summaries(cmds); !slices.Equal(got, tc.want) {
				t.Fatalf("commands %q, want %q (%s)", got, tc.want, tc.ref)
			}
			for _, c := range cmds {
				if c.Explanation == "" || strings.Contains(c.Explanation, "\n") {
					t.Errorf("explanation %q is not one line", c.Explanation)
				}
				if len(c.Candidates) != len(c.Nodes) {
					t.Errorf("%d candidates for %d nodes", len(c.Candidates), len(c.Nodes))
				}
			}
			if tc.check != nil {
				tc.check(t, w, cmds, rep)
			}
		})
	}
}

func skippedWith(node, want string) func(t *testing.T, w *world, cmds []Command, rep Report) {
	return func(t *testing.T, _ *world, _ []Command, rep Report) {
		t.Helper()
		if !strings.Contains(rep.Skipped[node], want) {
			t.Errorf("%s skipped as %q, want %q", node, rep.Skipped[node], want)
		}
		if why, ok := rep.Blocked[node]; ok {
			t.Errorf("%s reported blocked (%q): only a do-not-disrupt annotation or a PDB blocks (Karpenter's DisruptionBlocked)", node, why)
		}
	}
}

// blockedWith is skippedWith for a node a do-not-disrupt annotation or a
// PDB holds: it is also Blocked, with the same reason.
func blockedWith(node, want string) func(t *testing.T, w *world, cmds []Command, rep Report) {
	return func(t *testing.T, _ *world, _ []Command, rep Report) {
		t.Helper()
		if !strings.Contains(rep.Skipped[node], want) || rep.Blocked[node] != rep.Skipped[node] {
			t.Errorf("%s skipped as %q, blocked as %q, want both %q", node, rep.Skipped[node], rep.Blocked[node], want)
		}
	}
}

// unconsolidatable: single-node consolidation considered the node and
// found no deletion nor cheaper replacement (Karpenter's Unconsolidatable).
func unconsolidatable(node string) func(t *testing.T, w *world, cmds []Command, rep Report) {
	return func(t *testing.T, _ *world, _ []Command, rep Report) {
		t.Helper()
		why, ok := rep.Unconsolidatable[node]
		if !ok || why == "" || rep.Rejected[node] != "single-node: "+why {
			t.Errorf("%s unconsolidatable as %q (%v), rejected as %q", node, why, ok, rep.Rejected[node])
		}
	}
}

func rejectedWith(node, want string) func(t *testing.T, w *world, cmds []Command, rep Report) {
	return func(t *testing.T, _ *world, _ []Command, rep Report) {
		t.Helper()
		if !strings.Contains(rep.Rejected[node], want) {
			t.Errorf("%s rejected as %q, want %q", node, rep.Rejected[node], want)
		}
	}
}

func explained(i int, want string) func(t *testing.T, w *world, cmds []Command, rep Report) {
	return func(t *testing.T, _ *world, cmds []Command, _ Report) {
		t.Helper()
		if !strings.Contains(cmds[i].Explanation, want) {
			t.Errorf("explanation %q, want %q", cmds[i].Explanation, want)
		}
	}
}
