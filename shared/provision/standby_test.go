package provision

import (
	"context"
	"strings"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/handover"
	"github.com/nodewright/nodewright/shared/metrics"
)

// TestNoLaunchWhileKarpenterRuns: while Karpenter's controller holds its
// Lease, a round and a replacement plan but make no CreateFleet and write
// no record; they say why in the report, the log's event on the pool and
// the KarpenterRunning metric, and the state item status reads. Once the
// Lease is gone, the next round launches.
func TestNoLaunchWhileKarpenterRuns(t *testing.T) {
	clock := testingclock.NewFakeClock(t0)
	pods := bigPods(2, t0)
	var clusterPools []*apis.NodePool
	running := &handover.Controller{Namespace: "kube-system", Holder: "karpenter-7d9f_1", Until: t0.Add(15 * time.Second)}
	karpenter := running
	r, fl, m, _ := testReconciler(t, clock, func(time.Time) (*View, error) {
		return &View{Pods: pods, Karpenter: karpenter, NodePools: clusterPools}, nil
	})
	clusterPools = r.NodePools // the same pools, as applied to the cluster: their status is written
	ev := &fakeEvents{}
	r.Events = ev
	status := &countingStatus{}
	r.Status = status
	ctx := context.Background()

	rep, err := r.Round(ctx, testLease(clock))
	if err != nil {
		t.Fatal(err)
	}
	if calls := fl.Calls(); len(calls) != 0 {
		t.Fatalf("%d CreateFleet calls while Karpenter runs", len(calls))
	}
	if rep.Plan == nil || len(rep.Plan.NodeClaims) == 0 || !strings.Contains(rep.Standby, "kube-system/karpenter-leader-election") {
		t.Errorf("report: plan %v, standby %q: want the plan kept and the reason given", rep.Plan, rep.Standby)
	}
	recs, _ := r.Store.NodeClaims(ctx)
	if len(recs) != 0 {
		t.Errorf("%d records written while Karpenter runs", len(recs))
	}
	var found bool
	for _, e := range ev.All() {
		if strings.HasPrefix(e, "NodePool//default Warning KarpenterRunning: Karpenter's controller holds Lease kube-system/karpenter-leader-election") {
			found = true
		}
		if strings.Contains(e, " Launched: ") || strings.Contains(e, " Nominated: ") {
			t.Errorf("event %q while nothing launched", e)
		}
	}
	if !found {
		t.Errorf("events %v: want KarpenterRunning on NodePool default", ev.All())
	}
	if v := m.Values(metrics.KarpenterRunning); len(v) == 0 || v[len(v)-1] != 1 {
		t.Errorf("KarpenterRunning %v, want 1", v)
	}
	pr, err := r.Store.PoolReadiness(ctx)
	if err != nil || pr.Karpenter != "kube-system/karpenter-7d9f_1" {
		t.Errorf("status item %+v (%v): want the running controller named", pr, err)
	}

	if status.pools != 0 {
		t.Errorf("%d NodePool status writes while Karpenter runs: the status is its to write", status.pools)
	}

	rrep, err := r.Replace(ctx, testLease(clock), []string{pods[0].Namespace + "/" + pods[0].Name}, "replacement for x: spot interruption")
	if err != nil || len(fl.Calls()) != 0 || rrep.Standby == "" || len(rrep.Launched()) != 0 {
		t.Errorf("replacement while Karpenter runs: err %v, %d fleet calls, standby %q", err, len(fl.Calls()), rrep.Standby)
	}

	karpenter = nil
	clock.Step(time.Minute)
	rep, err = r.Round(ctx, testLease(clock))
	if err != nil {
		t.Fatal(err)
	}
	if len(fl.Calls()) == 0 || rep.Standby != "" {
		t.Fatalf("after Karpenter left: %d fleet calls, standby %q", len(fl.Calls()), rep.Standby)
	}
	if v := m.Values(metrics.KarpenterRunning); v[len(v)-1] != 0 {
		t.Errorf("KarpenterRunning %v, want 0 last", v)
	}
	if status.pools == 0 {
		t.Error("no NodePool status written once Karpenter left")
	}
	if pr, _ := r.Store.PoolReadiness(ctx); pr.Karpenter != "" {
		t.Errorf("status item still names %q", pr.Karpenter)
	}
}

// countingStatus counts status patches.
type countingStatus struct{ pools, classes int }

func (c *countingStatus) PatchNodePoolStatus(context.Context, string, []byte) error {
	c.pools++
	return nil
}

func (c *countingStatus) PatchNodeClassStatus(context.Context, string, []byte) error {
	c.classes++
	return nil
}
