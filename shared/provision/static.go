package provision

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/podstate"
	"github.com/nodewright/nodewright/shared/scheduling"
	"github.com/nodewright/nodewright/shared/state"
)

// Static NodePools (spec.replicas) keep a fixed number of nodes whatever
// the pods, as Karpenter's static provisioning and deprovisioning
// controllers do: every round launches the nodes a static pool lacks
// (a node that was lost is no longer counted, so it is replaced), within
// limits.nodes, through the same launch path as a round's plan, and
// records a scale-down intent on the nodes a lowered count leaves over,
// which package termination carries out (drained, then terminated). Solves
// never plan new nodes into a static pool (package scheduling refuses it),
// but pods schedule onto its nodes as onto any other.

// ReasonStatic is the launch reason of a static pool's nodes.
const ReasonStatic = "static"

// StaticPlan is what a static NodePool needs now.
type StaticPlan struct {
	NodePool string
	// Replicas is the count asked for; Active the nodes counted toward it
	// (launching, launched, registered or initialized, and not going).
	Replicas, Active int
	// Launch is how many nodes to launch; Limited says limits.nodes held
	// some back.
	Launch  int
	Limited bool
	// Remove are the surplus nodes' records, in the order they go:
	// unregistered first, then empty ones, then those without
	// do-not-disrupt pods, fewer pods, dearer, newer (Karpenter takes
	// unresolved NodeClaims first, then empty nodes, then the cheapest to
	// disrupt).
	Remove []*state.NodeClaim
}

// DecideStatic decides, for a static pool, from the records and the
// cluster's Nodes and pods, how many nodes to launch and which to take
// out. A record whose node is going (its pods are being moved, or its
// Node is being deleted) does not count toward replicas, so its replacement launches at once, as
// Karpenter's static drift does; it still counts against limits.nodes
// until it is terminating. A node launching without an instance yet is
// counted but never chosen for removal (the next round takes a surplus
// out once it launched). Pure.
func DecideStatic(pool *apis.NodePool, records []*state.NodeClaim, nodes []*corev1.Node, pods []*corev1.Pod) StaticPlan {
	out := StaticPlan{NodePool: pool.Name}
	if pool.Spec.Replicas == nil {
		return out
	}
	out.Replicas = int(min(max(*pool.Spec.Replicas, 0), math.MaxInt32))
	nodeOf := map[string]*corev1.Node{}
	for _, n := range nodes {
		if id := InstanceIDOf(n.Spec.ProviderID); id != "" {
			nodeOf[id] = n
		}
	}
	type onNode struct{ pods, doNotDisrupt int }
	load := map[string]onNode{}
	for _, p := range pods {
		if p.Spec.NodeName == "" || !podstate.Active(p) || podstate.FollowsNode(p) {
			continue
		}
		l := load[p.Spec.NodeName]
		l.pods++
		if podstate.DoNotDisrupt(p) {
			l.doNotDisrupt++
		}
		load[p.Spec.NodeName] = l
	}
	counted := 0 // against limits.nodes
	type candidate struct {
		rec        *state.NodeClaim
		registered bool
		load       onNode
	}
	var removable []candidate
	for _, rec := range records {
		if rec.NodePool != pool.Name {
			continue
		}
		if rec.Phase != state.Terminating {
			counted++
		}
		n := nodeOf[rec.InstanceID]
		if !staticActive(rec) || (n != nil && n.DeletionTimestamp != nil) {
			continue // going: a deleted Node, as a deleted NodeClaim in Karpenter, no longer counts
		}
		out.Active++
		if rec.InstanceID == "" || rec.Disruption != nil {
			continue
		}
		c := candidate{rec: rec}
		if n != nil {
			c.registered, c.load = true, load[n.Name]
		}
		removable = append(removable, c)
	}
	if want := out.Replicas - out.Active; want > 0 {
		room := want
		if q, ok := pool.Spec.Limits["nodes"]; ok {
			room = max(int(min(q.Value(), math.MaxInt32))-counted, 0)
		}
		out.Launch = min(want, room)
		out.Limited = out.Launch < want
	}
	surplus := out.Active - out.Replicas
	if surplus <= 0 {
		return out
	}
	sort.SliceStable(removable, func(i, j int) bool {
		a, b := removable[i], removable[j]
		switch {
		case a.registered != b.registered:
			return !a.registered
		case (a.load.pods == 0) != (b.load.pods == 0):
			return a.load.pods == 0
		case (a.load.doNotDisrupt == 0) != (b.load.doNotDisrupt == 0):
			return a.load.doNotDisrupt == 0
		case a.load.pods != b.load.pods:
			return a.load.pods < b.load.pods
		case a.rec.PricePerHour != b.rec.PricePerHour:
			return a.rec.PricePerHour > b.rec.PricePerHour
		case !a.rec.CreatedAt.Equal(b.rec.CreatedAt):
			return a.rec.CreatedAt.After(b.rec.CreatedAt)
		}
		return a.rec.Name < b.rec.Name
	})
	for _, c := range removable[:min(surplus, len(removable))] {
		out.Remove = append(out.Remove, c.rec)
	}
	return out
}

// staticActive says whether a record counts toward its static pool's
// replicas: it is launching, launched, registered or initialized, and no
// action is moving its pods off it.
func staticActive(rec *state.NodeClaim) bool {
	switch rec.Phase {
	case state.Launching, state.Launched, state.Registered, state.Initialized:
	default:
		return false
	}
	return rec.Disruption == nil || !rec.Disruption.Reschedule
}

// Static reports whether a NodePool is static (spec.replicas set).
func Static(p *apis.NodePool) bool { return p != nil && p.Spec.Replicas != nil }

// keepStatic launches what the world's static pools lack and records a
// scale-down intent on their surplus nodes; what fails is logged and left
// to the next round. Pools that are not ready or are being deleted are
// left alone, as while Karpenter's controller runs.
func (r *Reconciler) keepStatic(ctx context.Context, lease *state.Lease, w *world, rep *Report) {
	if w.view.Karpenter != nil {
		return
	}
	broken := notReady(w.readiness)
	for _, p := range w.pools {
		if !Static(p) || p.DeletionTimestamp != nil {
			continue
		}
		if _, ok := broken[p.Name]; ok {
			continue
		}
		plan := DecideStatic(p, w.records, w.view.Nodes, w.view.Pods)
		if plan.Limited {
			r.Log.Info("static NodePool held at limits.nodes", "nodePool", p.Name, "replicas", plan.Replicas, "active", plan.Active, "launch", plan.Launch)
		}
		for _, rec := range plan.Remove {
			r.scaleDown(ctx, w, p, plan, rec)
		}
		if plan.Launch > 0 {
			r.launchStatic(ctx, lease, w, p, plan, rep)
		}
	}
}

// scaleDown records a scale-down intent on a surplus node of a static
// pool; the sweep's terminator drains and terminates it.
func (r *Reconciler) scaleDown(ctx context.Context, w *world, p *apis.NodePool, plan StaticPlan, rec *state.NodeClaim) {
	why := fmt.Sprintf("NodePool %s scaled to %d replicas (%d active)", p.Name, plan.Replicas, plan.Active)
	intent := state.IntentFor(state.CauseScaleDown, state.KindScaleDown+"-"+rec.Name, why, r.Now(), time.Time{})
	stored, err := r.Terminator().Intend(ctx, rec, intent)
	if err != nil {
		r.Log.Warn("record the scale-down of a static NodePool's node", "nodePool", p.Name, "nodeClaim", rec.Name, "error", err)
		return
	}
	r.Log.Info("static NodePool scaled down: node to go", "nodePool", p.Name, "nodeClaim", rec.Name, "instance", rec.InstanceID, "why", why)
	for i, cur := range w.records {
		if cur.Name == stored.Name {
			w.records[i] = stored
		}
	}
}

// launchStatic launches plan.Launch nodes of a static pool, each a
// NodeClaim of the pool's requirements and its daemonsets' room, with
// the cheapest options first, and no pods.
func (r *Reconciler) launchStatic(ctx context.Context, lease *state.Lease, w *world, p *apis.NodePool, plan StaticPlan, rep *Report) {
	claim, err := r.staticClaim(w, p, rep)
	if err != nil {
		r.Log.Warn("plan a static NodePool's node", "nodePool", p.Name, "error", err)
		rep.Warnings = append(rep.Warnings, err.Error())
		return
	}
	claims := make([]scheduling.NodeClaim, plan.Launch)
	for i := range claims {
		claims[i] = claim
	}
	r.Log.Info("launching nodes for a static NodePool", "nodePool", p.Name, "replicas", plan.Replicas, "active", plan.Active, "launch", plan.Launch)
	launched, _, _, err := r.launch(ctx, lease, w, &scheduling.Result{NodeClaims: claims}, ReasonStatic, rep)
	if err != nil {
		if errors.Is(err, state.ErrConflict) {
			r.Log.Info("another launcher launched since the records were read: the static NodePool waits for the next round", "nodePool", p.Name)
		} else {
			r.Log.Warn("launch a static NodePool's nodes", "nodePool", p.Name, "error", err)
		}
		return
	}
	w.records = append(w.records, launched...)
}

// staticClaim plans one node of a static pool: the solve of one pod that
// asks for nothing and tolerates everything, on the pool taken as dynamic
// and unlimited (DecideStatic already applied limits.nodes), so that the
// claim carries what a round's would: the pool's requirements, labels and
// taints, its daemonsets' requests, minValues, and its options cheapest
// first, without the offerings EC2 refused.
func (r *Reconciler) staticClaim(w *world, p *apis.NodePool, rep *Report) (scheduling.NodeClaim, error) {
	dyn := *p
	dyn.Spec.Replicas, dyn.Spec.Limits = nil, nil
	probe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "nodewright-static", Name: p.Name}}
	probe.Spec.Containers = []corev1.Container{{Name: "static"}}
	probe.Spec.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	unavailable := state.NewUnavailableSet(w.excluded())
	res, err := scheduling.Solve(scheduling.Input{
		Pods: []*corev1.Pod{probe}, NodePools: []*apis.NodePool{&dyn}, NodeClasses: w.classes, DaemonSets: w.view.DaemonSets,
		InstanceTypes: r.Catalog.Types(), Zones: w.zones, Spot: r.spot(rep), Unavailable: unavailable.Has,
		MaxInstanceTypes: r.Options.MaxInstanceTypes,
	})
	if err != nil {
		return scheduling.NodeClaim{}, fmt.Errorf("static NodePool %s: %w", p.Name, err)
	}
	if len(res.NodeClaims) != 1 {
		why := "no instance type fits"
		for _, u := range res.Unschedulable {
			why = u.Reason
		}
		return scheduling.NodeClaim{}, fmt.Errorf("static NodePool %s: no node can be planned: %s", p.Name, why)
	}
	c := res.NodeClaims[0]
	c.Pods = nil
	return c, nil
}
