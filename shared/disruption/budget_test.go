package disruption

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/quantity"
)

// hugeCPU is the request: its millicores do not fit an int64, and
// MilliValue wraps it to about -9.2e18.
const hugeCPU = "9223372036854776"

// TestHugeAmountsSaturate: a request or an allocatable too large to count
// saturates instead of wrapping, so a pod asking for more than any node has
// fits on none (and the deletion is ruled out without a solve) and a node
// reporting a huge allocatable is not read as negative.
func TestHugeAmountsSaturate(t *testing.T) {
	w := newWorld()
	w.node("a", "c4", apis.CapacityTypeOnDemand)
	w.foreign("b", "c32")
	huge := w.pods("a", 1, "1")[0]
	huge.Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse(hugeCPU)
	w.pods("b", 1, "1")

	if r := podRoom(huge); r.cpu < quantity.Max {
		t.Errorf("the pod asks for %d millicores, want at least %d (saturated, not wrapped)", r.cpu, quantity.Max)
	}
	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(hugeCPU), corev1.ResourceMemory: resource.MustParse("9223372036854775807")}
	if r := roomOf(alloc); r.cpu < quantity.Max || r.mem < quantity.Max {
		t.Errorf("allocatable read as %d millicores and %d bytes, want both saturated", r.cpu, r.mem)
	}
	if !roomOf(alloc).holds(podRoom(w.podsOn("b")[0])) {
		t.Error("a node with a huge allocatable does not hold a 1-CPU pod")
	}

	in := w.inputs()
	v := newView(&in)
	out := newSim(v).simulate([]*nodeInfo{v.byName["a"]}, nil, true)
	if !strings.Contains(out.fail, "1 of its pods have no room on any other initialized node") || v.work.solves != 0 {
		t.Errorf("deleting a: %q after %d solves; want ruled out by the room check, with no solve", out.fail, v.work.solves)
	}
	cmds, rep := w.decide(t)
	for _, c := range cmds {
		if slices.Contains(c.Nodes, "a") {
			t.Errorf("command %s removes the node of the pod no other node can hold", summary(c))
		}
	}
	if why := rep.Rejected["a"]; !strings.Contains(why, "no room") && !strings.Contains(why, "no place") {
		t.Errorf("a rejected because %q, want no room for its pod", why)
	}
}

// TestBudgetStopsTheRun: on the 500-node packed cluster (every candidate
// is simulated and none can go), a budget of 20 solves stops the run after
// 20, deterministically, and the report names every candidate it did not
// reach; without it the run makes far more.
func TestBudgetStopsTheRun(t *testing.T) {
	in := benchCluster(t, true)
	_, all := Decide(in)
	if all.BudgetSpent != "" || all.Solves <= 20 || len(all.Unreached) != 0 {
		t.Fatalf("unbounded: spent %q after %d solves, %d unreached", all.BudgetSpent, all.Solves, len(all.Unreached))
	}
	in.Budget = Budget{MaxSolves: 20}
	cmds, rep := Decide(in)
	if len(cmds) != 0 || rep.BudgetSpent != "solves" || rep.Solves != 20 {
		t.Fatalf("budget of 20 solves: %d commands, spent %q after %d solves", len(cmds), rep.BudgetSpent, rep.Solves)
	}
	if len(rep.Unreached) == 0 || len(rep.Unreached)+len(rep.Rejected) != rep.Candidates {
		t.Errorf("%d unreached + %d rejected, want every one of the %d candidates accounted for, some unreached",
			len(rep.Unreached), len(rep.Rejected), rep.Candidates)
	}
	for _, n := range rep.Unreached {
		if _, ok := rep.Rejected[n]; ok {
			t.Errorf("%s is both rejected and unreached", n)
		}
	}
	if !slices.IsSorted(rep.Unreached) {
		t.Error("unreached not sorted")
	}
	_, again := Decide(in)
	if !slices.Equal(again.Unreached, rep.Unreached) || again.Solves != rep.Solves {
		t.Error("the same budget stops a second run elsewhere")
	}
	t.Logf("unbounded: %d solves; budget of 20: %d candidates rejected, %d unreached", all.Solves, len(rep.Rejected), len(rep.Unreached))
}

// TestBudgetKeepsACommandFound: a command whose simulation completed
// before the budget ran out stands.
func TestBudgetKeepsACommandFound(t *testing.T) {
	w := newWorld()
	for _, n := range []string{"a", "b", "c"} {
		w.node(n, "c8", apis.CapacityTypeOnDemand)
		w.pods(n, 1, "1")
	}
	in := w.inputs()
	_, all := Decide(in)
	in.Budget = Budget{MaxSolves: all.Solves - 1}
	cmds, rep := Decide(in)
	if len(cmds) == 0 || rep.BudgetSpent != "solves" {
		t.Fatalf("%d solves unbounded; with one fewer: %q, spent %q", all.Solves, summaries(cmds), rep.BudgetSpent)
	}
	for _, n := range cmds[0].Nodes {
		if slices.Contains(rep.Unreached, n) {
			t.Errorf("%s is in the command and unreached", n)
		}
	}
}

// TestBudgetBoundsEachSolve: a simulation that needs more group
// placements than MaxGroups fails, and says so; a deadline already past
// (on the injected clock) stops the run before any simulation.
func TestBudgetBoundsEachSolve(t *testing.T) {
	w := newWorld()
	w.node("a", "c8", apis.CapacityTypeOnDemand)
	w.pods("a", 1, "1")
	w.pods("a", 1, "2", labelled("app", "other"))
	w.foreign("b", "c32")
	in := w.inputs()
	in.Budget = Budget{MaxGroups: 1}
	_, rep := Decide(in)
	if why := rep.Rejected["a"]; !strings.Contains(why, "work budget (groups)") {
		t.Errorf("a rejected because %q, want its simulation's group budget", why)
	}
	if rep.BudgetSpent != "" {
		t.Errorf("spent %q: a solve's group bound fails that simulation only", rep.BudgetSpent)
	}

	in.Budget = Budget{Deadline: now, Now: func() time.Time { return now }}
	cmds, rep := Decide(in)
	if len(cmds) != 0 || rep.BudgetSpent != "deadline" || rep.Solves != 0 || len(rep.Unreached) != rep.Candidates {
		t.Errorf("past the deadline: %d commands, spent %q, %d solves, unreached %v of %d candidates", len(cmds), rep.BudgetSpent, rep.Solves, rep.Unreached, rep.Candidates)
	}
	if err := Validate(Command{Method: MethodSingleNode, Reason: ReasonUnderutilized, Candidates: []string{"nc-a"}, Nodes: []string{"a"}}, in); err == nil ||
		!strings.Contains(err.Error(), "work budget") {
		t.Errorf("validation past the deadline: %v, want the work budget named", err)
	}
}

// TestBudgetUnreachedAfterMultiNode: multi-node's batch takes only the
// candidates its copy of the budget allows (10% of the 500 nodes) and
// rejects the rest for that batch; single-node, which the budget allows
// every one of, then runs out of solves. The candidates it did not reach
// are unreached (the next tick's), not rejected for multi-node's batch:
// at 5,000 packed nodes the report said "0 unreached" after a tick the
// deadline stopped a third of the way through.
func TestBudgetUnreachedAfterMultiNode(t *testing.T) {
	in := benchCluster(t, true)
	in.Budget = Budget{MaxSolves: 20}
	_, rep := Decide(in)
	for n, why := range rep.Rejected {
		if strings.HasPrefix(why, "consolidation: budget") {
			t.Errorf("%s rejected for multi-node's batch (%q) though single-node, which the budget allows it, never reached it", n, why)
			break
		}
	}
	if len(rep.Unreached)+len(rep.Rejected) != rep.Candidates || len(rep.Unreached) < len(rep.Rejected) {
		t.Errorf("%d unreached, %d rejected of %d candidates after 20 solves; want most unreached, all accounted for",
			len(rep.Unreached), len(rep.Rejected), rep.Candidates)
	}
}

// TestBudgetReachesTheRestNextRun: a run given the candidates the last
// one did not reach (Inputs.ReachFirst) simulates those first, so a budget
// that stops every run at the same place does not leave the same nodes
// out every time (at 5,000 packed nodes the deadline stops single-node
// about two thirds of the way through).
func TestBudgetReachesTheRestNextRun(t *testing.T) {
	in := benchCluster(t, true)
	in.Budget = Budget{MaxSolves: 20}
	_, first := Decide(in)
	in.ReachFirst = first.Unreached
	_, next := Decide(in)
	reached := 0
	for n, why := range next.Rejected {
		if !strings.HasPrefix(why, "single-node:") {
			continue
		}
		reached++
		if !slices.Contains(first.Unreached, n) {
			t.Errorf("%s simulated again (%q) before the candidates the last run did not reach", n, first.Rejected[n])
		}
	}
	if reached == 0 || next.Solves != 20 {
		t.Errorf("the next run simulated %d candidates in %d solves, want some, in 20", reached, next.Solves)
	}
}
