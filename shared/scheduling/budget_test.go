package scheduling_test

import (
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/scheduling"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
)

// tickingClock is a clock that moves one second each time it is read: a
// solve's deadline then falls after a known number of group placements,
// with no wall clock involved.
type tickingClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *tickingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

var epoch = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

func solveOK(t *testing.T, in scheduling.Input) *scheduling.Result {
	t.Helper()
	r, err := scheduling.Solve(in)
	if err != nil {
		t.Fatal(err)
	}
	checkInvariants(t, in, r)
	return r
}

func placedCount(r *scheduling.Result) int {
	n := 0
	for _, nc := range r.NodeClaims {
		n += len(nc.Pods)
	}
	for _, e := range r.ExistingNodes {
		n += len(e.Pods)
	}
	return n
}

func TestBudgetGroups(t *testing.T) {
	in := input(podList(st.DistinctPods(10, 1)))
	in.Budget = scheduling.Budget{MaxGroups: 3}
	r := solveOK(t, in)
	if placedCount(r) != 3 || len(r.Deferred) != 7 || len(r.Unschedulable) != 0 || r.BudgetSpent != "groups" {
		t.Fatalf("placed %d, deferred %v, unschedulable %d, spent %q; want 3 placed, 7 deferred by the group budget",
			placedCount(r), r.Deferred, len(r.Unschedulable), r.BudgetSpent)
	}
	// The cut falls at the same place every time.
	if again := solveOK(t, in); !reflect.DeepEqual(again.Deferred, r.Deferred) || again.PricePerHour != r.PricePerHour {
		t.Fatalf("second solve deferred %v at $%v, first %v at $%v", again.Deferred, again.PricePerHour, r.Deferred, r.PricePerHour)
	}
	// With room for every group, nothing is deferred.
	in.Budget.MaxGroups = 10
	if r := solveOK(t, in); len(r.Deferred) != 0 || r.BudgetSpent != "" || placedCount(r) != 10 {
		t.Fatalf("budget of 10 groups for 10: deferred %v, spent %q", r.Deferred, r.BudgetSpent)
	}
}

func TestBudgetDeadline(t *testing.T) {
	clock := &tickingClock{t: epoch}
	in := input(podList(st.DistinctPods(10, 1)))
	// The clock reads epoch+1s before the first group, +2s before the
	// second, ...: with the deadline at +5s, four groups start.
	in.Budget = scheduling.Budget{Deadline: epoch.Add(5 * time.Second), Now: clock.Now}
	r := solveOK(t, in)
	if placedCount(r) != 4 || len(r.Deferred) != 6 || r.BudgetSpent != "deadline" {
		t.Fatalf("placed %d, deferred %d, spent %q; want 4 and 6 by the deadline", placedCount(r), len(r.Deferred), r.BudgetSpent)
	}
	// A deadline already past defers every pod and plans nothing.
	in.Budget = scheduling.Budget{Deadline: epoch, Now: (&tickingClock{t: epoch}).Now}
	r = solveOK(t, in)
	if len(r.Deferred) != 10 || len(r.NodeClaims) != 0 || r.LowerBoundPricePerHour != 0 {
		t.Fatalf("past deadline: deferred %d, claims %d, bound %v", len(r.Deferred), len(r.NodeClaims), r.LowerBoundPricePerHour)
	}
}

// A pod no node can take is unschedulable whatever the budget: it is not
// deferred to a solve that cannot place it either.
func TestBudgetKeepsHopelessPodsUnschedulable(t *testing.T) {
	in := input(pods(pod(po{Name: "huge", CPU: "9223372036854776"})), podList(st.DistinctPods(3, 1)))
	in.Budget = scheduling.Budget{MaxGroups: 1}
	r := solveOK(t, in)
	if len(r.Unschedulable) != 1 || r.Unschedulable[0].Pod != "default/huge" || len(r.Deferred) != 2 || placedCount(r) != 1 {
		t.Fatalf("unschedulable %v, deferred %v, placed %d", r.Unschedulable, r.Deferred, placedCount(r))
	}
}

// A group waiting for another round (its affinity needs pods placed later)
// is deferred, not called unschedulable, when the budget ends the run.
func TestBudgetDefersGroupsWaitingForAnotherRound(t *testing.T) {
	web := map[string]string{"app": "web"}
	follower := pod(po{Name: "follower", CPU: "100m", Labels: map[string]string{"app": "follower"},
		Affinity: []corev1.PodAffinityTerm{st.Term(apis.LabelHostname, web)}})
	leaders := podsN(2, po{Name: "web", CPU: "100m", Labels: web})
	in := input(pods(follower), podList(leaders))
	// Unbudgeted, the follower waits a round and joins a web pod.
	if r := solveOK(t, in); len(r.Unschedulable) != 0 || len(r.Deferred) != 0 {
		t.Fatalf("unbudgeted: unschedulable %v deferred %v", r.Unschedulable, r.Deferred)
	}
	in.Budget = scheduling.Budget{MaxGroups: 2}
	r := solveOK(t, in)
	if len(r.Unschedulable) != 0 || r.BudgetSpent != "groups" || strings.Join(r.Deferred, ",") != "default/follower" {
		t.Fatalf("budget of 2: unschedulable %v, deferred %v, spent %q", r.Unschedulable, r.Deferred, r.BudgetSpent)
	}
}

func TestTooManyNodePools(t *testing.T) {
	var ps []*apis.NodePool
	for i := 0; i <= scheduling.MaxNodePools; i++ {
		ps = append(ps, poolWith(st.NodePoolOptions{Name: fmt.Sprintf("p%d", i)}))
	}
	_, err := scheduling.Solve(input(pools(ps...), pods(pod(po{Name: "web", CPU: "1"}))))
	if err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%d NodePools, more than the %d", scheduling.MaxNodePools+1, scheduling.MaxNodePools)) {
		t.Fatalf("err %v", err)
	}
}
