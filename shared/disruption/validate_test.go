package disruption

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/state"
)

// TestValidate decides on a cluster, changes it as it might change during
// the validation wait, and validates the command on the changed cluster
// (the executor shows Validate the command's own candidates as not yet
// disrupted, so the world here leaves them unmarked).
func TestValidate(t *testing.T) {
	deleteOne := func(w *world) {
		w.foreign("mng-1", "c2")
		w.node("a", "c4", od)
		w.pods("a", 1, "500m")
	}
	replaceOne := func(w *world) {
		w.node("a", "c8", od)
		w.pods("a", 1, "500m")
	}
	cases := []struct {
		name   string
		ref    string
		build  func(w *world)
		method Method
		change func(w *world)
		// want is part of the error ("" for none).
		want string
	}{
		{"an unchanged delete is still valid", "validation.go ConsolidationValidator.Validate",
			deleteOne, MethodSingleNode, func(w *world) {}, ""},
		{"an unchanged replacement is still valid", "validation.go validation.validateCommand",
			replaceOne, MethodSingleNode, func(w *world) {}, ""},
		{"an unchanged multi-node replacement is still valid", "validation.go NewMultiConsolidationValidator",
			func(w *world) {
				for _, n := range []string{"a", "b", "c"} {
					w.node(n, "c4", od)
					w.pods(n, 1, "500m")
				}
			}, MethodMultiNode, func(w *world) {}, ""},
		{"an unchanged emptiness is still valid", "validation.go EmptinessValidator.Validate",
			func(w *world) { w.emptyNodes("e", 2) }, MethodEmptiness, func(w *world) {}, ""},
		{"an unchanged drift is still valid", "drift.go Drift.ComputeCommands",
			func(w *world) {
				replaceOne(w)
				w.images = map[string]map[string]bool{"default": {"ami-2": true}}
			}, MethodDrift, func(w *world) {}, ""},
		{"an unchanged expiration is still valid", "nodeclaim/expiration/controller.go Reconcile",
			func(w *world) {
				w.node("a", "c4", od, created(800*time.Hour))
			}, MethodExpiration, func(w *world) {}, ""},
		{"a do-not-disrupt pod that arrives cancels a replacement",
			"consolidation_test.go It(\"should not replace node if a pod schedules with karpenter.sh/do-not-disrupt during the TTL wait\")",
			replaceOne, MethodSingleNode, func(w *world) {
				w.pods("a", 1, "100m", podAnnotated(apis.AnnotationDoNotDisrupt, "true"))
			}, "node a: pod default/a-p1 is annotated karpenter.sh/do-not-disrupt"},
		{"a do-not-disrupt annotation on the node cancels a delete",
			"suite_test.go It(\"should not consider candidates that have do-not-disrupt on nodes\")",
			deleteOne, MethodSingleNode, func(w *world) {
				w.nodes[1].Annotations = map[string]string{apis.AnnotationDoNotDisrupt: "true"}
			}, "node a: node is annotated karpenter.sh/do-not-disrupt"},
		{"a PDB that now blocks cancels a delete",
			"consolidation_test.go It(\"should not delete node if pods schedule with a blocking PDB during the TTL wait\")",
			deleteOne, MethodSingleNode, func(w *world) {
				w.pdb("web", "default", "web", 0)
			}, "PodDisruptionBudget default/web allows no disruption now"},
		{"pods that no longer fit on the other nodes cancel a delete",
			"consolidation_test.go It(\"should not consolidate if the action becomes invalid during the node TTL wait\")",
			deleteOne, MethodSingleNode, func(w *world) {
				w.pods("mng-1", 1, "1500m")
			}, "pods no longer fit on the other nodes"},
		{"a pending pod that needs the room cancels a delete",
			"validation.go EmptinessValidator.validateCandidates (a candidate nominated during validation)",
			deleteOne, MethodSingleNode, func(w *world) {
				w.pending("late", "1500m")
			}, "node a: pending pods are to use its room"},
		{"a replacement no longer cheaper cancels",
			"consolidation_test.go It(\"should not consolidate if the action picks different instance types after the node TTL wait\")",
			replaceOne, MethodSingleNode, func(w *world) {
				for k := range w.spot {
					w.spot[k] = 1
				}
			}, "cheaper"},
		{"a replacement whose spot options EC2 refused cancels",
			"validation.go validation.validateCommand (the replacement's types must still be what scheduling asks for)",
			replaceOne, MethodSingleNode, func(w *world) {
				for _, it := range w.types {
					w.unavail[it.Name+"/*/"+spot] = true
					w.unavail[it.Name+"/"+zoneA+"/"+spot] = true
					w.unavail[it.Name+"/"+zoneB+"/"+spot] = true
				}
			}, "replacement 1"},
		{"pods that now fit without the replacement cancel it",
			"validation.go validation.validateCommand (\"scheduling simulation produced new results\")",
			replaceOne, MethodSingleNode, func(w *world) {
				w.foreign("mng-1", "c4")
			}, "without a replacement"},
		{"a pod landing on an empty node cancels its deletion",
			"validation.go EmptinessValidator.Validate (candidates that are no longer empty)",
			func(w *world) { w.emptyNodes("e", 1) }, MethodEmptiness, func(w *world) {
				w.pods("ea", 1, "100m")
			}, "node ea is no longer empty: default/ea-p0"},
		{"pod churn restarts consolidateAfter",
			"consolidation_test.go It(\"does not delete nodes with pod churn, deletes nodes without pod churn\")",
			func(w *world) {
				w.pools[0].Spec.Disruption.ConsolidateAfter = apis.DurationOf(10 * time.Minute)
				deleteOne(w)
			}, MethodSingleNode, func(w *world) {
				w.rec("a").PodsChangedAt = now
			}, "consolidateAfter 10m0s not elapsed"},
		{"a budget spent meanwhile cancels",
			"validation.go ConsolidationValidator.validateCandidates (BudgetValidationError)",
			func(w *world) {
				w.pools[0].Spec.Disruption.Budgets = []apis.Budget{budget("1")}
				deleteOne(w)
			}, MethodSingleNode, func(w *world) {
				w.node("b", "c2", od, disrupting("interruption-1"))
			}, "budget: NodePool default's budget allows 1 Underutilized disruptions of its 2 nodes and 1 are disrupting"},
		{"a candidate that is gone cancels",
			"validation.go mapCandidates (candidates no longer valid)",
			deleteOne, MethodSingleNode, func(w *world) {
				w.recs = nil
			}, "nodeclaim nc-a is gone"},
		{"a candidate whose Node is gone cancels",
			"suite_test.go It(\"should not consider candidate that has just a NodeClaim representation\")",
			deleteOne, MethodSingleNode, func(w *world) {
				w.nodes = w.nodes[:1]
			}, "nodeclaim nc-a no longer has a Node"},
		{"a drift that is undone cancels",
			"nodeclaim/disruption/drift_test.go It(\"should remove the status condition from the nodeClaim if the nodeClaim is no longer drifted\")",
			func(w *world) {
				replaceOne(w)
				w.images = map[string]map[string]bool{"default": {"ami-2": true}}
			}, MethodDrift, func(w *world) {
				w.images = map[string]map[string]bool{"default": {"ami-1": true, "ami-2": true}}
			}, "node a: no longer drifted"},
	}
	// causes are the typed causes the errors carry (the executor counts
	// abandoned actions by them); the other errors are CauseChanged.
	causes := map[string]Cause{
		"a do-not-disrupt pod that arrives cancels a replacement":    CauseDoNotDisrupt,
		"a do-not-disrupt annotation on the node cancels a delete":   CauseDoNotDisrupt,
		"a PDB that now blocks cancels a delete":                     CausePDB,
		"pods that no longer fit on the other nodes cancel a delete": CauseNoLongerFits,
		"a replacement no longer cheaper cancels":                    CauseNoLongerCheaper,
		"a replacement whose spot options EC2 refused cancels":       CauseNoLongerCheaper,
		"pods that now fit without the replacement cancel it":        CauseChanged,
		"a budget spent meanwhile cancels":                           CauseChanged,
		"a pending pod that needs the room cancels a delete":         CauseChanged,
	}
	names := map[string]bool{}
	for _, c := range cases {
		names[c.name] = true
	}
	for name := range causes {
		if !names[name] {
			t.Errorf("causes names no case %q", name)
		}
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld()
			tc.build(w)
			cmds, _ := w.decide(t)
			if len(cmds) == 0 || cmds[0].Method != tc.method {
				t.Fatalf("decided %q, want a %s command to validate", summaries(cmds), tc.method)
			}
			// The command travels as JSON in the action's plan.
			var cmd Command
			if err := json.Unmarshal([]byte(mustJSON(t, cmds[0])), &cmd); err != nil {
				t.Fatal(err)
			}
			tc.change(w)
			err := Validate(cmd, w.inputs())
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("Validate: %v, want nil (%s)", err, tc.ref)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("Validate: %v, want an error with %q (%s)", err, tc.want, tc.ref)
			}
			if want, ok := causes[tc.name]; ok || err != nil {
				if !ok {
					want = CauseChanged
				}
				if got := CauseOf(err); got != want {
					t.Errorf("CauseOf(%v) = %s, want %s", err, got, want)
				}
			}
		})
	}
}

func TestValidateRejectsBadCommands(t *testing.T) {
	w := newWorld()
	w.node("a", "c2", od)
	for _, tc := range []struct {
		cmd  Command
		want string
	}{
		{Command{Method: MethodEmptiness}, "no candidates"},
		{Command{Method: "teleport", Candidates: []string{"nc-a"}, Nodes: []string{"a"}}, `unknown method "teleport"`},
	} {
		if err := Validate(tc.cmd, w.inputs()); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Validate(%+v): %v, want %q", tc.cmd, err, tc.want)
		}
	}
}

// TestValidateAfterTheExecutorMarks checks the command against inputs as
// the executor shows them after marking (records reset by withoutAction):
// another action's disruption of a candidate still cancels.
func TestValidateAfterTheExecutorMarks(t *testing.T) {
	w := newWorld()
	w.emptyNodes("e", 2)
	cmds, _ := w.decide(t)
	if len(cmds) != 1 {
		t.Fatalf("commands %q", summaries(cmds))
	}
	w.rec("eb").Phase = state.Disrupting
	w.rec("eb").Disruption = &state.Disruption{Action: "interruption-9", Reason: "SpotInterruption", Since: now}
	err := Validate(cmds[0], w.inputs())
	if err == nil || !strings.Contains(err.Error(), "node eb: already being disrupted (interruption-9") {
		t.Fatalf("Validate: %v", err)
	}
	if !slices.Equal(cmds[0].Nodes, []string{"ea", "eb"}) {
		t.Errorf("nodes %v", cmds[0].Nodes)
	}
}
