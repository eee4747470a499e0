package termination

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/state"
)

// TestStepDrainsBeforeItTerminates: the node is tainted and cordoned and
// drained with the intent's deadline; only once drained is the record
// marked terminating, the instance terminated, the Node released and
// deleted and the record removed.
func TestStepDrainsBeforeItTerminates(t *testing.T) {
	r := newRig()
	rec := r.record("nc-a", "i-a")
	n := node("ip-a", "i-a")
	r.drainer.step = func(_ string, _ DrainOptions, pass int) DrainResult {
		if pass == 1 {
			return DrainResult{Blocked: []string{"default/web-0"}, Remaining: []string{"default/web-0"}}
		}
		return DrainResult{Done: true, Evicted: []string{"default/web-0"}}
	}
	dl := t0.Add(2 * time.Minute)
	intent := state.IntentFor(state.CauseInterruption, "interruption-i-a", "SpotInterruption", t0, dl)
	res := must[Result](t)(r.t.Step(context.Background(), Request{Node: n, Record: rec, Intent: intent}))
	if res.Done || res.Drained || len(r.fleet.terminated) != 0 || !slices.Equal(r.nodes.tainted, []string{"ip-a"}) {
		t.Fatalf("after a blocked pass: %+v, terminated %v, tainted %v; want draining, nothing terminated, the node tainted", res, r.fleet.terminated, r.nodes.tainted)
	}
	stored := r.store.rec("nc-a")
	if stored.Phase != state.Disrupting || stored.Disruption == nil || !stored.Disruption.Reschedule || !stored.Disruption.Deadline.Equal(dl) ||
		stored.Disruption.Cause != state.CauseInterruption {
		t.Fatalf("record %+v: want disrupting with the interruption's intent and deadline", stored)
	}
	if o := r.drainer.calls[0]; !o.Deadline.Equal(dl) || !o.Force || o.MaxGracePeriod == nil || *o.MaxGracePeriod != 2*time.Minute {
		t.Errorf("drain options %+v: want the intent's deadline, forced, grace capped at the 2 minutes left", o)
	}
	res = must[Result](t)(r.t.Step(context.Background(), Request{Node: n, Record: stored, Intent: intent}))
	if !res.Done || !slices.Equal(r.fleet.terminated, []string{"i-a"}) || !slices.Equal(r.nodes.released, []string{"ip-a"}) ||
		!slices.Equal(r.nodes.deleted, []string{"ip-a"}) || r.store.rec("nc-a") != nil {
		t.Errorf("after the drain: %+v, terminated %v, released %v, deleted %v, record %+v; want all done and the record gone",
			res, r.fleet.terminated, r.nodes.released, r.nodes.deleted, r.store.rec("nc-a"))
	}
}

// TestIntendRetriesAConflictAndKeepsTheEarlierDeadline: another invocation
// writes the record between the read and the write (registration, or a
// consolidation marking it): the intent is merged into what it wrote, not
// written over it.
func TestIntendRetriesAConflictAndKeepsTheEarlierDeadline(t *testing.T) {
	r := newRig()
	stale := r.record("nc-a", "i-a")
	consolidation := state.IntentFor(state.CauseConsolidation, "consolidation-single-node-1-abcd", "Underutilized", t0, t0.Add(time.Minute))
	once := false
	r.store.beforePut = func(name string) {
		if once {
			return
		}
		once = true
		c := r.store.rec(name)
		c.Disruption, c.Phase = &consolidation, state.Disrupting
		r.store.put(c)
	}
	spot := state.IntentFor(state.CauseInterruption, "interruption-i-a", "SpotInterruption", t0.Add(time.Second), t0.Add(2*time.Minute))
	got := must[*state.NodeClaim](t)(r.t.Intend(context.Background(), stale, spot))
	d := r.store.rec("nc-a").Disruption
	if d == nil || d.Action != spot.Action || !d.Deadline.Equal(consolidation.Deadline) || !d.Since.Equal(t0) || !d.Reschedule || got.Version != r.store.rec("nc-a").Version {
		t.Errorf("intent %+v: want the interruption owning it, the consolidation's earlier deadline and start kept, pods moving", d)
	}
}

// TestSweepCarriesOnRemovalsUnderWay: a deleted Node of ours is drained
// with its pool's grace as deadline and retired; an interruption's intent
// left by a dead invocation is resumed and the action's account kept; a
// consolidation's intent is left to consolidation; a node whose lease is
// held is left to its holder.
func TestSweepCarriesOnRemovalsUnderWay(t *testing.T) {
	r := newRig()
	r.record("nc-del", "i-del")
	spot := r.record("nc-spot", "i-spot")
	spot.Disruption = &state.Disruption{Action: "interruption-i-spot", Reason: "SpotInterruption", Since: t0, Reschedule: true, Deadline: t0.Add(time.Minute)}
	r.store.put(spot)
	r.store.actions["interruption-i-spot"] = &state.Action{ID: "interruption-i-spot", Step: state.StepDraining}
	cons := r.record("nc-cons", "i-cons")
	cons.Disruption = &state.Disruption{Action: "consolidation-single-node-1-abcd", Since: t0, Reschedule: true}
	r.store.put(cons)
	held := r.record("nc-held", "i-held")
	held.Disruption = &state.Disruption{Action: "interruption-i-held", Since: t0, Reschedule: true}
	r.store.put(held)
	r.store.leases[state.LeaseNode("nc-held")] = "interruption-invocation"
	pool := &apis.NodePool{}
	pool.Name = "default"
	pool.Spec.Template.Spec.TerminationGracePeriod = &metav1.Duration{Duration: 10 * time.Minute}
	recs := []*state.NodeClaim{r.store.rec("nc-cons"), r.store.rec("nc-del"), r.store.rec("nc-held"), r.store.rec("nc-spot")}
	rep := r.t.Sweep(context.Background(), Cluster{
		Nodes:     []*corev1.Node{deleted("ip-del", "i-del"), node("ip-spot", "i-spot"), node("ip-cons", "i-cons"), node("ip-held", "i-held")},
		Records:   recs,
		NodePools: []*apis.NodePool{pool},
	})
	if !slices.Equal(rep.Retired, []string{"ip-del", "ip-spot"}) || len(rep.Draining) != 0 {
		t.Errorf("report %+v: want ip-del and ip-spot retired", rep)
	}
	if !slices.Equal(r.fleet.terminated, []string{"i-del", "i-spot"}) || r.nodes.touched("ip-cons") || r.nodes.touched("ip-held") {
		t.Errorf("terminated %v, nodes %+v: want only the deleted and the interrupted node, consolidation's and the held one untouched", r.fleet.terminated, r.nodes)
	}
	if !slices.Equal(r.drainer.nodes, []string{"ip-del", "ip-spot"}) || !r.drainer.calls[0].Deadline.Equal(t0.Add(10*time.Minute)) ||
		r.drainer.calls[0].Force || !r.drainer.calls[1].Deadline.Equal(t0.Add(time.Minute)) || !r.drainer.calls[1].Force {
		t.Errorf("drains %v %+v: want ip-del with the pool's grace, unforced; ip-spot with its notice, forced", r.drainer.nodes, r.drainer.calls)
	}
	if a := r.store.actions["interruption-i-spot"]; a.Step != state.StepDone || a.Evicted != 0 {
		t.Errorf("interruption action %+v: want done", a)
	}
}

// TestSweepLeavesDeletedNodesThatAreNotOurs (defect 7): during a migration
// Karpenter's Nodes carry the same karpenter.sh/termination finalizer. A
// deleted Node with no record is Nodewright's only if its instance carries
// Nodewright's managed-by tag; any other is left alone (not drained, not
// terminated, its finalizer kept).
func TestSweepLeavesDeletedNodesThatAreNotOurs(t *testing.T) {
	r := newRig()
	rep := r.t.Sweep(context.Background(), Cluster{
		Nodes: []*corev1.Node{deleted("ip-karpenter", "i-karpenter"), deleted("ip-ours", "i-ours")},
		Instances: []fleet.Running{
			{InstanceID: "i-karpenter", State: "running", NodeClaim: "default-abcde", NodePool: "default"},
			{InstanceID: "i-ours", State: "running", NodeClaim: "default-fghij", NodePool: "default", ManagedBy: true},
		},
	})
	if r.nodes.touched("ip-karpenter") || slices.Contains(r.fleet.terminated, "i-karpenter") || slices.Contains(r.drainer.nodes, "ip-karpenter") {
		t.Errorf("Karpenter's node: tainted %v, released %v, deleted %v, terminated %v, drained %v: want it untouched",
			r.nodes.tainted, r.nodes.released, r.nodes.deleted, r.fleet.terminated, r.drainer.nodes)
	}
	if !slices.Equal(rep.Retired, []string{"ip-ours"}) || !slices.Equal(r.fleet.terminated, []string{"i-ours"}) || !slices.Equal(rep.NotOurs, []string{"ip-karpenter"}) {
		t.Errorf("report %+v, terminated %v: want only ip-ours retired, ip-karpenter reported as not ours", rep, r.fleet.terminated)
	}
}
