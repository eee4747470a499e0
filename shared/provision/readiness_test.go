package provision

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/metrics"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
)

// brokenPool is a copy of pool, weight 100, named name, whose nodeClassRef
// names class.
func brokenPool(pool *apis.NodePool, name, class string) *apis.NodePool {
	b := *pool
	b.Name = name
	w := int32(100)
	b.Spec.Weight = &w
	ref := *pool.Spec.Template.Spec.NodeClassRef
	ref.Name = class
	b.Spec.Template.Spec.NodeClassRef = &ref
	return &b
}

// Defect 9: a NodePool of weight 100 whose EC2NodeClass does not exist
// next to a valid pool of weight 10. Every round planned on the broken
// pool, its launch failed ("NodePool's EC2NodeClass is not configured")
// and ten pods stayed pending. The broken pool is left out of the solve;
// the valid pool takes the pods.
func TestBrokenNodePoolDoesNotStopProvisioning(t *testing.T) {
	clock := testingclock.NewFakeClock(t0)
	var pods []*corev1.Pod
	for i := range 10 {
		pods = append(pods, unschedulableAt("web-"+string(rune('a'+i)), t0.Add(-time.Minute), t0.Add(-time.Minute)))
	}
	r, fl, _, _ := testReconciler(t, clock, func(time.Time) (*View, error) { return &View{Pods: pods}, nil })
	r.NodePools = append(r.NodePools, brokenPool(r.NodePools[0], "broken", "missing"))
	rep, err := r.Round(context.Background(), testLease(clock))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Plan == nil {
		t.Fatal("no plan: want the ten pods planned on the valid pool")
	}
	for _, c := range rep.Plan.NodeClaims {
		if c.NodePool != "default" {
			t.Errorf("planned NodeClaim on pool %s (class %s): want only the valid pool default", c.NodePool, c.NodeClass)
		}
	}
	covered := map[string]bool{}
	for _, call := range fl.Calls() {
		if call.NodePool != "default" {
			t.Errorf("launched on pool %s: want only default", call.NodePool)
		}
	}
	for _, l := range rep.Launches {
		if l.Instance == nil {
			continue
		}
		for _, p := range l.Claim.Pods {
			covered[p] = true
		}
	}
	if len(covered) != len(pods) {
		t.Errorf("launches cover %d pods, want all %d (launches: %d, plan: %s)", len(covered), len(pods), len(fl.Calls()), planPools(rep))
	}
}

func planPools(rep *Report) string {
	var out []string
	if rep.Plan != nil {
		for _, c := range rep.Plan.NodeClaims {
			out = append(out, c.NodePool+"/"+c.NodeClass)
		}
	}
	return strings.Join(out, ", ")
}

// Readiness: a pool is ready when its class exists and resolved whole; the
// reason is the first thing missing, and a lookup failure is its own
// reason (not taken for a class that selects nothing).
func TestReadiness(t *testing.T) {
	pools, classes, err := st.ProductionPool()
	if err != nil {
		t.Fatal(err)
	}
	whole := func(name string) fleet.Resolution {
		return fleet.Resolution{Name: name, Class: &fleet.NodeClass{Name: name,
			Subnets: []fleet.Subnet{{ID: "subnet-1", Zone: "us-east-1a"}}, SecurityGroups: []string{"sg-1"}, AMIs: []fleet.AMI{{ID: "ami-1", Arch: "amd64"}}}}
	}
	failed := func(err error) []fleet.Resolution {
		return []fleet.Resolution{{Name: "default", Err: fmt.Errorf("resolve EC2NodeClass default: %w", err)}}
	}
	noRef := brokenPool(pools[0], "noref", "")
	noRef.Spec.Template.Spec.NodeClassRef = nil
	for _, tc := range []struct {
		name     string
		pools    []*apis.NodePool
		resolved []fleet.Resolution
		want     map[string]PoolReason // pool -> reason ("": ready)
	}{
		{name: "healthy", pools: pools, resolved: []fleet.Resolution{whole("default")}, want: map[string]PoolReason{"default": ""}},
		{name: "missing class", pools: append([]*apis.NodePool{brokenPool(pools[0], "broken", "missing")}, pools...),
			resolved: []fleet.Resolution{whole("default")}, want: map[string]PoolReason{"broken": NodeClassNotFound, "default": ""}},
		{name: "no nodeClassRef", pools: []*apis.NodePool{noRef}, resolved: []fleet.Resolution{whole("default")},
			want: map[string]PoolReason{"noref": NodeClassNotFound}},
		{name: "no subnet", pools: pools, resolved: failed(fleet.ErrNoSubnet), want: map[string]PoolReason{"default": SubnetsNotFound}},
		{name: "no security group", pools: pools, resolved: failed(fleet.ErrNoSecurityGroup), want: map[string]PoolReason{"default": SecurityGroupsNotFound}},
		{name: "no placement group", pools: pools, resolved: failed(fleet.ErrNoPlacementGroup), want: map[string]PoolReason{"default": PlacementGroupNotFound}},
		{name: "no AMI", pools: pools, resolved: failed(fmt.Errorf("%w: none of the AMI parameters exists", fleet.ErrNoAMI)),
			want: map[string]PoolReason{"default": AMINotFound}},
		{name: "resolved empty", pools: pools, resolved: []fleet.Resolution{{Name: "default", Class: &fleet.NodeClass{Name: "default",
			Subnets: []fleet.Subnet{{ID: "subnet-1", Zone: "us-east-1a"}}, SecurityGroups: []string{"sg-1"}}}},
			want: map[string]PoolReason{"default": AMINotFound}},
		{name: "lookup failed", pools: pools, resolved: failed(errors.New("describe subnets: RequestLimitExceeded")),
			want: map[string]PoolReason{"default": NodeClassNotResolved}},
		{name: "not looked up", pools: pools, want: map[string]PoolReason{"default": NodeClassNotResolved}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Readiness(tc.pools, classes, tc.resolved)
			if len(got) != len(tc.want) {
				t.Fatalf("statuses %+v: want %d", got, len(tc.want))
			}
			for i, s := range got {
				want, ok := tc.want[s.NodePool]
				if !ok || s.Reason != want || s.Ready() != (want == "") {
					t.Errorf("%s: reason %q (ready %v), want %q", s.NodePool, s.Reason, s.Ready(), want)
				}
				if !s.Ready() && s.Message == "" {
					t.Errorf("%s: not ready without a message", s.NodePool)
				}
				if i > 0 && got[i-1].NodePool >= s.NodePool {
					t.Errorf("statuses not sorted by pool: %+v", got)
				}
			}
		})
	}
}

// Prepare leaves the pools that are not ready out of the solve's input.
func TestPrepareLeavesNotReadyPoolsOut(t *testing.T) {
	pools, _, err := st.ProductionPool()
	if err != nil {
		t.Fatal(err)
	}
	all := append([]*apis.NodePool{brokenPool(pools[0], "broken", "missing")}, pools...)
	prep := Prepare(Inputs{View: &View{}, NodePools: all, Catalog: cat, Readiness: []PoolStatus{
		{NodePool: "broken", NodeClass: "missing", Reason: NodeClassNotFound, Message: "EC2NodeClass missing does not exist"},
		{NodePool: "default", NodeClass: "default"},
	}})
	if len(prep.Input.NodePools) != 1 || prep.Input.NodePools[0].Name != "default" {
		t.Errorf("solve's pools %v: want default only", poolNames(prep.Input.NodePools))
	}
	if len(all) != 2 || all[0].Name != "broken" {
		t.Error("Prepare modified the pools it was given")
	}
}

func poolNames(pools []*apis.NodePool) []string {
	var out []string
	for _, p := range pools {
		out = append(out, p.Name)
	}
	return out
}

// A broken pool is reported (a warning, a Warning event on the NodePool,
// NodePoolNotReady at 1, the state item status shows) and comes back by
// itself: once its class is applied, the next round plans on it (weight
// 100 first), the metric drops to 0 and the state item empties.
func TestBrokenNodePoolComesBackOnceFixed(t *testing.T) {
	clock := testingclock.NewFakeClock(t0)
	var pods []*corev1.Pod
	var classes []*apis.EC2NodeClass // applied to the cluster
	r, fl, m, _ := testReconciler(t, clock, func(time.Time) (*View, error) {
		return &View{Pods: pods, NodeClasses: classes}, nil
	})
	ev := &fakeEvents{}
	r.Events = ev
	r.NodePools = append(r.NodePools, brokenPool(r.NodePools[0], "broken", "missing"))
	ctx := context.Background()

	pods = []*corev1.Pod{unschedulableAt("first", t0.Add(-time.Minute), t0.Add(-time.Minute))}
	rep, err := r.Round(ctx, testLease(clock))
	if err != nil {
		t.Fatal(err)
	}
	if calls := fl.Calls(); len(calls) != 1 || calls[0].NodePool != "default" {
		t.Fatalf("launches %+v: want one on default", calls)
	}
	if !slices.ContainsFunc(rep.Warnings, func(w string) bool { return strings.HasPrefix(w, "NodePool broken is not ready (NodeClassNotFound") }) {
		t.Errorf("warnings %v: want broken's", rep.Warnings)
	}
	if want := "NodePool//broken Warning NodeClassNotFound: NodePool left out of provisioning until fixed: EC2NodeClass missing does not exist"; !slices.Contains(ev.All(), want) {
		t.Errorf("events %v: want %q", ev.All(), want)
	}
	if got := notReadyMetric(m); got["broken"] != 1 || got["default"] != 0 {
		t.Errorf("NodePoolNotReady %v: want broken 1, default 0", got)
	}
	pr, err := r.Store.PoolReadiness(ctx)
	if err != nil || len(pr.NotReady) != 1 || pr.NotReady[0].NodePool != "broken" || pr.NotReady[0].Reason != string(NodeClassNotFound) {
		t.Errorf("stored readiness %+v, %v: want broken, NodeClassNotFound", pr, err)
	}

	// The class is applied: the next round plans on the weight-100 pool.
	fixed := *r.NodeClasses[0]
	fixed.Name = "missing"
	classes = []*apis.EC2NodeClass{&fixed}
	pods = bigPods(1, t0) // no room on the first round's NodeClaim
	clock.Step(15 * time.Second)
	m.values = nil
	if _, err := r.Round(ctx, testLease(clock)); err != nil {
		t.Fatal(err)
	}
	if calls := fl.Calls(); len(calls) != 2 || calls[1].NodePool != "broken" {
		t.Errorf("%d launches (last on %s): want the second on broken (weight 100), ready again", len(calls), calls[len(calls)-1].NodePool)
	}
	if got := notReadyMetric(m); got["broken"] != 0 || got["default"] != 0 {
		t.Errorf("NodePoolNotReady %v: want 0 for both", got)
	}
	if pr, err := r.Store.PoolReadiness(ctx); err != nil || len(pr.NotReady) != 0 {
		t.Errorf("stored readiness %+v, %v: want no pool left out", pr, err)
	}
}

// notReadyMetric is the last NodePoolNotReady value emitted for each pool.
func notReadyMetric(m *fakeMetrics) map[string]float64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]float64{}
	for i, v := range m.values[metrics.NodePoolNotReady] {
		out[m.dims[metrics.NodePoolNotReady][i][metrics.DimNodePool]] = v
	}
	return out
}

// A class that selects no security group leaves its pool out and the
// round goes on (nothing to launch, the reason reported); a class that
// could not be looked up at all, when no other class resolved, fails the
// read as before (the round has no zone to plan for).
func TestRoundWithClassesThatDoNotResolve(t *testing.T) {
	for _, tc := range []struct {
		name    string
		err     error
		wantErr bool
		reason  PoolReason
	}{
		{name: "no security group", err: fmt.Errorf("resolve EC2NodeClass default: %w", fleet.ErrNoSecurityGroup), reason: SecurityGroupsNotFound},
		{name: "lookup failed", err: errors.New("resolve EC2NodeClass default: describe subnets: RequestLimitExceeded"), wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := testingclock.NewFakeClock(t0)
			pods := []*corev1.Pod{unschedulableAt("web", t0.Add(-time.Minute), t0.Add(-time.Minute))}
			r, fl, m, _ := testReconciler(t, clock, func(time.Time) (*View, error) { return &View{Pods: pods}, nil })
			fl.unresolved = map[string]error{"default": tc.err}
			rep, err := r.Round(context.Background(), testLease(clock))
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), "RequestLimitExceeded") {
					t.Errorf("round error %v: want the lookup's", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(fl.Calls()) != 0 {
				t.Errorf("%d launches: want none (the only pool is not ready)", len(fl.Calls()))
			}
			if !slices.ContainsFunc(rep.Warnings, func(w string) bool { return strings.Contains(w, "NodePool default is not ready ("+string(tc.reason)) }) {
				t.Errorf("warnings %v: want default not ready, %s", rep.Warnings, tc.reason)
			}
			if got := notReadyMetric(m); got["default"] != 1 {
				t.Errorf("NodePoolNotReady %v: want default 1", got)
			}
		})
	}
}
