package disruption

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/state"
)

// condition sets a node condition to status, last changed ago before now
// (the test's clock).
func condition(typ corev1.NodeConditionType, status corev1.ConditionStatus, ago time.Duration) nodeOpt {
	return func(n *corev1.Node, _ *state.NodeClaim) {
		c := corev1.NodeCondition{Type: typ, Status: status, LastTransitionTime: metav1.NewTime(now.Add(-ago))}
		for i := range n.Status.Conditions {
			if n.Status.Conditions[i].Type == typ {
				n.Status.Conditions[i] = c
				return
			}
		}
		n.Status.Conditions = append(n.Status.Conditions, c)
	}
}

func TestSafetyStopRoundsUp(t *testing.T) {
	// 20% of the pool's nodes, rounded up: one unhealthy node is allowed
	// in pools of 1 to 5 nodes, two in pools of 6 to 10.
	for _, tc := range []struct{ nodes, allowed int }{
		{0, 0}, {1, 1}, {2, 1}, {3, 1}, {5, 1}, {6, 2}, {10, 2}, {11, 3}, {100, 20},
	} {
		if got := Allowed(tc.nodes); got != tc.allowed {
			t.Errorf("pool of %d: %d unhealthy allowed, want %d", tc.nodes, got, tc.allowed)
		}
	}
}

func TestRepair(t *testing.T) {
	const ready = corev1.NodeReady
	cases := []struct {
		name  string
		setup func(w *world)
		// repaired are the nodes repair commands take, in order; held maps
		// a node left alone to words its Skipped reason holds.
		repaired []string
		cond     corev1.NodeConditionType
		held     map[string]string
		paused   string
	}{
		{name: "healthy", setup: func(w *world) { w.node("a", "c4", od) }},
		{name: "toleration not yet passed", setup: func(w *world) {
			w.node("a", "c4", od, condition(ready, corev1.ConditionFalse, 29*time.Minute))
		}, held: map[string]string{"a": "Ready False for 29m0s, repaired after 30m0s"}},
		{name: "Ready False past its toleration", setup: func(w *world) {
			w.node("a", "c4", od, condition(ready, corev1.ConditionFalse, 30*time.Minute))
		}, repaired: []string{"a"}, cond: ready},
		{name: "Ready Unknown past its toleration", setup: func(w *world) {
			w.node("a", "c4", od, condition(ready, corev1.ConditionUnknown, 31*time.Minute))
		}, repaired: []string{"a"}, cond: ready},
		{name: "flapping: the clock restarts at the last transition", setup: func(w *world) {
			// NotReady an hour ago, Ready again, NotReady again 5 minutes ago.
			w.node("a", "c4", od, condition(ready, corev1.ConditionFalse, 5*time.Minute))
		}, held: map[string]string{"a": "for 5m0s"}},
		{name: "no lastTransitionTime: not known since when", setup: func(w *world) {
			w.node("a", "c4", od, notReady())
		}},
		{name: "AcceleratedHardwareReady tolerated 10 minutes", setup: func(w *world) {
			w.node("a", "c4", od, condition("AcceleratedHardwareReady", corev1.ConditionFalse, 11*time.Minute))
			w.node("b", "c4", od, condition("StorageReady", corev1.ConditionFalse, 11*time.Minute))
			w.node("c", "c4", od)
			w.node("d", "c4", od)
			w.node("e", "c4", od)
			w.node("f", "c4", od)
		}, repaired: []string{"a"}, cond: "AcceleratedHardwareReady", held: map[string]string{"b": "StorageReady False for 11m0s, repaired after 30m0s"}},
		{name: "node monitoring agent conditions", setup: func(w *world) {
			for i, c := range []corev1.NodeConditionType{"StorageReady", "NetworkingReady", "KernelReady", "ContainerRuntimeReady"} {
				w.node(fmt.Sprintf("n%d", i), "c4", od, condition(c, corev1.ConditionFalse, time.Duration(40-i)*time.Minute))
			}
			for i := 0; i < 12; i++ {
				w.node(fmt.Sprintf("h%02d", i), "c4", od)
			}
		}, repaired: []string{"n0", "n1", "n2", "n3"}},
		{name: "a True agent condition is healthy", setup: func(w *world) {
			w.node("a", "c4", od, condition("KernelReady", corev1.ConditionTrue, time.Hour))
		}},
		{name: "EC2 status check failing past its toleration", setup: func(w *world) {
			w.node("a", "c4", od)
			w.checks = map[string]StatusCheck{"i-a": {Impaired: true, Since: now.Add(-31 * time.Minute), Detail: "instance reachability: failed"}}
		}, repaired: []string{"a"}, cond: apis.ConditionEC2StatusCheck},
		{name: "EC2 status check failing within its toleration", setup: func(w *world) {
			w.node("a", "c4", od)
			w.checks = map[string]StatusCheck{"i-a": {Impaired: true, Since: now.Add(-5 * time.Minute)}}
		}, held: map[string]string{"a": "EC2StatusCheck failing for 5m0s"}},
		{name: "per-pool toleration not passed", setup: func(w *world) {
			w.pools[0].Annotations = map[string]string{"nodewright.io/node-repair-toleration-ready": "45m"}
			w.node("a", "c4", od, condition(ready, corev1.ConditionFalse, 31*time.Minute))
		}, held: map[string]string{"a": "repaired after 45m0s"}},
		{name: "per-pool toleration passed", setup: func(w *world) {
			w.pools[0].Annotations = map[string]string{"nodewright.io/node-repair-toleration-ready": "1m"}
			w.node("a", "c4", od, condition(ready, corev1.ConditionFalse, 2*time.Minute))
		}, repaired: []string{"a"}, cond: ready},
		{name: "NodePool opted out", setup: func(w *world) {
			w.pools[0].Annotations = map[string]string{apis.AnnotationNodeRepair: "false"}
			w.node("a", "c4", od, condition(ready, corev1.ConditionFalse, time.Hour))
		}, held: map[string]string{"a": "NodePool default is annotated nodewright.io/node-repair=false"}},
		{name: "NodePool annotation invalid: no repair", setup: func(w *world) {
			w.pools[0].Annotations = map[string]string{apis.AnnotationNodeRepair: "maybe"}
			w.node("a", "c4", od, condition(ready, corev1.ConditionFalse, time.Hour))
		}, held: map[string]string{"a": "node repair is off"}},
		{name: "node opted out", setup: func(w *world) {
			w.node("a", "c4", od, condition(ready, corev1.ConditionFalse, time.Hour), annotated(apis.AnnotationNodeRepair, "false"))
		}, held: map[string]string{"a": "the node is annotated nodewright.io/node-repair=false"}},
		{name: "do-not-disrupt does not hold repair (as in Karpenter)", setup: func(w *world) {
			w.node("a", "c4", od, condition(ready, corev1.ConditionFalse, time.Hour), annotated(apis.AnnotationDoNotDisrupt, "true"))
			w.pods("a", 1, "100m", podAnnotated(apis.AnnotationDoNotDisrupt, "true"))
			w.pods("a", 1, "100m", labelled("app", "db"))
			w.pdb("db", "default", "db", 0)
		}, repaired: []string{"a"}, cond: ready},
		{name: "budget 0 does not hold repair (as in Karpenter v1.14.1)", setup: func(w *world) {
			w.pools[0].Spec.Disruption.Budgets = []apis.Budget{{Nodes: "0"}}
			w.node("a", "c4", od, condition(ready, corev1.ConditionFalse, time.Hour))
		}, repaired: []string{"a"}, cond: ready},
		{name: "not launched by Nodewright", setup: func(w *world) {
			n := w.foreign("mng", "c4")
			n.Status.Conditions[0] = corev1.NodeCondition{Type: ready, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}
		}, held: map[string]string{"mng": "not launched by Nodewright"}},
		{name: "registered, never Ready: repaired (as Karpenter's repair takes any NodeClaim with a Node)", setup: func(w *world) {
			w.node("a", "c4", od, phase(state.Registered), condition(ready, corev1.ConditionFalse, time.Hour))
		}, repaired: []string{"a"}, cond: ready},
		{name: "registered, within its toleration", setup: func(w *world) {
			w.node("a", "c4", od, phase(state.Registered), condition(ready, corev1.ConditionFalse, time.Minute))
		}, held: map[string]string{"a": "Ready False for 1m0s, repaired after 30m0s"}},
		{name: "still launching: no Node to judge", setup: func(w *world) {
			w.node("a", "c4", od, phase(state.Launched), condition(ready, corev1.ConditionFalse, time.Hour))
		}, held: map[string]string{"a": "not initialized"}},
		{name: "already being disrupted", setup: func(w *world) {
			w.node("a", "c4", od, condition(ready, corev1.ConditionFalse, time.Hour), disrupting("consolidation-single-node-1-x"))
		}, held: map[string]string{"a": "already being disrupted"}},
		{name: "pool of 1, its node unhealthy: repaired", setup: func(w *world) {
			w.node("a", "c4", od, condition(ready, corev1.ConditionFalse, time.Hour))
		}, repaired: []string{"a"}, cond: ready},
		{name: "pool of 2, 1 unhealthy: repaired", setup: func(w *world) {
			w.node("a", "c4", od, condition(ready, corev1.ConditionFalse, time.Hour))
			w.node("b", "c4", od)
		}, repaired: []string{"a"}, cond: ready},
		{name: "pool of 2, 2 unhealthy: paused", setup: func(w *world) {
			w.node("a", "c4", od, condition(ready, corev1.ConditionFalse, time.Hour))
			w.node("b", "c4", od, condition(ready, corev1.ConditionUnknown, time.Hour))
		}, held: map[string]string{"a": "2 of its 2 nodes are unhealthy, more than 20% (1 allowed)"},
			paused: "node repair paused for NodePool default: 2 of its 2 nodes are unhealthy, more than 20% (1 allowed)"},
		{name: "pool of 5, 2 unhealthy: paused", setup: func(w *world) {
			unhealthyPool(w, 5, 2, 0)
		}, held: map[string]string{"u0": "2 of its 5 nodes are unhealthy"}, paused: "2 of its 5 nodes are unhealthy"},
		{name: "pool of 10, 2 unhealthy: both repaired", setup: func(w *world) {
			unhealthyPool(w, 10, 2, 0)
		}, repaired: []string{"u0", "u1"}, cond: ready},
		{name: "pool of 10, 3 unhealthy: none repaired, and why", setup: func(w *world) {
			unhealthyPool(w, 10, 3, 0)
		}, held: map[string]string{"u0": "3 of its 10 nodes are unhealthy, more than 20% (2 allowed)", "u2": "more than 20%"},
			paused: "node repair paused for NodePool default: 3 of its 10 nodes are unhealthy, more than 20% (2 allowed)"},
		{name: "pool of 10: nodes still within their toleration count as unhealthy", setup: func(w *world) {
			unhealthyPool(w, 10, 2, 1)
		}, held: map[string]string{"u0": "3 of its 10 nodes"}, paused: "3 of its 10 nodes"},
		{name: "the share is per pool", setup: func(w *world) {
			w.pools = append(w.pools, w.pool("other"))
			unhealthyPool(w, 2, 2, 0)
			w.node("o1", "c4", od, inPool("other"), condition(ready, corev1.ConditionFalse, time.Hour))
			for i := 0; i < 4; i++ {
				w.node(fmt.Sprintf("o-ok%d", i), "c4", od, inPool("other"))
			}
		}, repaired: []string{"o1"}, cond: ready, held: map[string]string{"u0": "2 of its 2 nodes"}, paused: "2 of its 2 nodes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld()
			tc.setup(w)
			cmds, rep := w.decide(t)
			var got []string
			for _, c := range cmds {
				if c.Method != MethodRepair {
					continue
				}
				got = append(got, c.Nodes...)
				if c.Reason != ReasonUnhealthy || !c.Immediate || len(c.Replacements) != 0 {
					t.Errorf("command %s: reason %s, immediate %v, %d replacements; want Unhealthy, immediate, none", c.Explanation, c.Reason, c.Immediate, len(c.Replacements))
				}
				if !strings.HasPrefix(c.Explanation, "repair/Unhealthy: delete ") || strings.Contains(c.Explanation, "saves") {
					t.Errorf("explanation %q: want a repair/Unhealthy deletion with no saving claimed", c.Explanation)
				}
				if tc.cond != "" && c.Condition != tc.cond {
					t.Errorf("command %s: condition %q, want %q", c.Explanation, c.Condition, tc.cond)
				}
			}
			if !slices.Equal(got, tc.repaired) {
				t.Fatalf("repaired %v, want %v", got, tc.repaired)
			}
			for node, words := range tc.held {
				why := rep.RepairHeld[node]
				if why == "" {
					why = rep.Skipped[node]
				}
				if !strings.Contains(why, words) {
					t.Errorf("node %s left for %q, want it to say %q", node, why, words)
				}
			}
			pool := "default"
			if why := rep.RepairPaused[pool]; !strings.Contains(why, tc.paused) || (tc.paused == "") != (why == "") {
				t.Errorf("repair paused for %s: %q, want %q", pool, why, tc.paused)
			}
		})
	}
}

// unhealthyPool adds n nodes to the default pool: the first due are
// NotReady for an hour, the next recent for 5 minutes, the rest healthy.
func unhealthyPool(w *world, n, due, recent int) {
	for i := 0; i < n; i++ {
		switch {
		case i < due:
			w.node(fmt.Sprintf("u%d", i), "c4", od, condition(corev1.NodeReady, corev1.ConditionFalse, time.Hour))
		case i < due+recent:
			w.node(fmt.Sprintf("r%d", i), "c4", od, condition(corev1.NodeReady, corev1.ConditionFalse, 5*time.Minute))
		default:
			w.node(fmt.Sprintf("h%d", i), "c4", od)
		}
	}
}

// TestRepairCountsAgainstBudgets: a node being repaired takes its pool's
// budget from the methods after repair (as a deleting NodeClaim does in
// Karpenter), though repair itself is not bounded by it.
func TestRepairCountsAgainstBudgets(t *testing.T) {
	w := newWorld()
	w.pools[0].Spec.Disruption.Budgets = []apis.Budget{{Nodes: "1"}}
	w.node("sick", "c4", od, condition(corev1.NodeReady, corev1.ConditionFalse, time.Hour))
	w.pools[0].Spec.Template.Spec.ExpireAfter = apis.DurationOf(72 * time.Hour)
	w.node("old", "c4", od, created(96*time.Hour))
	w.node("drifted", "c4", od)
	w.rec("drifted").NodePoolHash = "old-hash"
	cmds, rep := w.decide(t)
	if len(cmds) == 0 || cmds[0].Method != MethodRepair || cmds[0].Nodes[0] != "sick" {
		t.Fatalf("commands %v: want the repair of sick first", summaries(cmds))
	}
	for _, c := range cmds {
		if c.Method == MethodDrift {
			t.Errorf("drift ran with the budget spent by repair: %s", c.Explanation)
		}
	}
	if why := rep.Rejected["drifted"]; !strings.Contains(why, "budget") {
		t.Errorf("drifted rejected for %q, want the budget", why)
	}
}

// TestRepairValidate: a repair is checked again after the validation wait;
// a node healthy again, opted out meanwhile, or a pool past the safety
// stop abandons it.
func TestRepairValidate(t *testing.T) {
	for _, tc := range []struct {
		name   string
		change func(w *world)
		want   string
	}{
		{"still unhealthy", func(*world) {}, ""},
		{"Ready again", func(w *world) {
			condition(corev1.NodeReady, corev1.ConditionTrue, 0)(w.nodes[0], w.recs[0])
		}, "healthy again"},
		{"node opted out", func(w *world) {
			annotated(apis.AnnotationNodeRepair, "false")(w.nodes[0], w.recs[0])
		}, "annotated nodewright.io/node-repair=false"},
		{"another node went NotReady", func(w *world) {
			condition(corev1.NodeReady, corev1.ConditionFalse, time.Minute)(w.nodes[1], w.recs[1])
		}, "node repair paused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld()
			w.node("a", "c4", od, condition(corev1.NodeReady, corev1.ConditionFalse, time.Hour))
			for i := 0; i < 4; i++ {
				w.node(fmt.Sprintf("h%d", i), "c4", od)
			}
			cmds, _ := w.decide(t)
			if len(cmds) != 1 || cmds[0].Method != MethodRepair {
				t.Fatalf("commands %v, want one repair", summaries(cmds))
			}
			tc.change(w)
			err := Validate(cmds[0], w.inputs())
			if tc.want == "" {
				if err != nil {
					t.Fatalf("validate: %v", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) || CauseOf(err) != CauseChanged {
				t.Fatalf("validate: %v (cause %s), want %q, cause Changed", err, CauseOf(err), tc.want)
			}
		})
	}
}
