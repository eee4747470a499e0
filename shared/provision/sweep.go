package provision

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/launch"
	"github.com/nodewright/nodewright/shared/metrics"
	"github.com/nodewright/nodewright/shared/state"
)

// Collection is what liveness and garbage collection decide.
type Collection struct {
	// Terminate are instances to terminate, with why.
	Terminate map[string]string
	// DeleteRecords are records to remove (their instances are gone or are
	// being terminated), DeleteNodes the Nodes of instances that are gone.
	DeleteRecords []*state.NodeClaim
	DeleteNodes   []string
}

// Liveness decides, from the records, the instances carrying the cluster's
// tag and the Nodes: a NodeClaim launched longer than timeout ago whose
// Node never registered is terminated and removed; a record whose instance
// is gone (and was launched more than grace ago, so DescribeInstances had
// time to list it) is removed with its Node; an instance launched by
// Nodewright that no record claims, older than grace, is terminated; a
// record left terminating is removed once its instance is gone; a record
// still launching without an instance longer than timeout (a launch that
// cannot complete) is removed, and no longer shields the instances tagged
// with its group from orphan cleanup. Pure.
func Liveness(records []*state.NodeClaim, instances []fleet.Running, nodes []*corev1.Node, now time.Time, timeout, grace time.Duration) Collection {
	c := Collection{Terminate: map[string]string{}}
	live := map[string]fleet.Running{}
	for _, in := range instances {
		if in.State != "shutting-down" {
			live[in.InstanceID] = in
		}
	}
	nodeOf := map[string]string{}
	for _, n := range nodes {
		if id := InstanceIDOf(n.Spec.ProviderID); id != "" {
			nodeOf[id] = n.Name
		}
	}
	claimed := map[string]bool{}
	launchingGroups := map[string]bool{}
	for _, rec := range records {
		if rec.InstanceID != "" {
			claimed[rec.InstanceID] = true
		}
		if rec.Phase == state.Launching && !launch.Phantom(rec, now, timeout) {
			launchingGroups[rec.Group] = true
			launchingGroups[rec.Name] = true
		}
	}
	for _, rec := range records {
		if rec.InstanceID == "" {
			if launch.Phantom(rec, now, timeout) {
				c.DeleteRecords = append(c.DeleteRecords, rec)
			}
			continue
		}
		_, alive := live[rec.InstanceID]
		switch {
		case rec.Phase == state.Launched && now.Sub(rec.LaunchedAt) > timeout && nodeOf[rec.InstanceID] == "":
			c.Terminate[rec.InstanceID] = fmt.Sprintf("nodeclaim %s did not register within %s", rec.Name, timeout)
			c.DeleteRecords = append(c.DeleteRecords, rec)
		case !alive && rec.Phase == state.Terminating:
			c.DeleteRecords = append(c.DeleteRecords, rec)
			if n := nodeOf[rec.InstanceID]; n != "" {
				c.DeleteNodes = append(c.DeleteNodes, n)
			}
		case !alive && rec.Phase != state.Launching && now.Sub(rec.LaunchedAt) > grace:
			c.DeleteRecords = append(c.DeleteRecords, rec)
			if n := nodeOf[rec.InstanceID]; n != "" {
				c.DeleteNodes = append(c.DeleteNodes, n)
			}
		}
	}
	for _, in := range instances {
		if !in.ManagedBy || claimed[in.InstanceID] || in.State == "shutting-down" || launchingGroups[in.NodeClaim] {
			continue
		}
		if now.Sub(in.LaunchTime) > grace {
			c.Terminate[in.InstanceID] = fmt.Sprintf("instance %s (nodeclaim tag %q) has no NodeClaim record", in.InstanceID, in.NodeClaim)
		}
	}
	sort.Slice(c.DeleteRecords, func(i, j int) bool { return c.DeleteRecords[i].Name < c.DeleteRecords[j].Name })
	sort.Strings(c.DeleteNodes)
	return c
}

// SweepReport is what a sweep did.
type SweepReport struct {
	Terminated     map[string]string `json:"terminated,omitempty"`
	RecordsRemoved []string          `json:"recordsRemoved,omitempty"`
	NodesDeleted   []string          `json:"nodesDeleted,omitempty"`
	// Retired are deleted Nodes fully drained and terminated; Draining
	// those still draining.
	Retired  []string `json:"retired,omitempty"`
	Draining []string `json:"draining,omitempty"`
}

// Sweep runs liveness and garbage collection and carries on the
// retirement of deleted Nodes (drain, terminate, release), each bounded by
// ctx: what it does not finish the next sweep continues.
func (r *Reconciler) Sweep(ctx context.Context) (*SweepReport, error) {
	if err := r.init(); err != nil {
		return nil, err
	}
	rep := &SweepReport{Terminated: map[string]string{}}
	view, err := r.Source.View(ctx)
	if err != nil {
		return rep, fmt.Errorf("sweep: %w", err)
	}
	records, err := r.Store.NodeClaims(ctx)
	if err != nil {
		return rep, fmt.Errorf("sweep: %w", err)
	}
	instances, err := r.Fleet.Instances(ctx)
	if err != nil {
		return rep, fmt.Errorf("sweep: %w", err)
	}
	c := Liveness(records, instances, view.Nodes, r.Now(), r.Options.RegistrationTimeout, r.Options.OrphanGrace)
	ids := sortedKeys(c.Terminate)
	if len(ids) > 0 {
		for _, id := range ids {
			r.Log.Warn("terminating instance", "instance", id, "why", c.Terminate[id])
		}
		if err := r.Fleet.Terminate(ctx, ids); err != nil {
			return rep, fmt.Errorf("sweep: %w", err)
		}
		rep.Terminated = c.Terminate
	}
	for _, n := range c.DeleteNodes {
		if r.Nodes == nil {
			break
		}
		if err := r.Nodes.RemoveFinalizer(ctx, n); err != nil {
			r.Log.Warn("release node of a gone instance", "node", n, "error", err)
		}
		if err := r.Nodes.DeleteNode(ctx, n); err != nil {
			r.Log.Warn("delete node of a gone instance", "node", n, "error", err)
			continue
		}
		rep.NodesDeleted = append(rep.NodesDeleted, n)
	}
	for _, rec := range c.DeleteRecords {
		if err := r.Store.DeleteNodeClaim(ctx, rec); err != nil {
			r.Log.Warn("remove record", "nodeClaim", rec.Name, "error", err)
			continue
		}
		rep.RecordsRemoved = append(rep.RecordsRemoved, rec.Name)
		r.Log.Info("nodeclaim record removed", "nodeClaim", rec.Name, "instance", rec.InstanceID, "phase", rec.Phase)
	}
	r.collectTemplates(ctx, records)
	r.retireDeleted(ctx, view, records, rep)
	r.resumeInterrupted(ctx, view, records, rep)
	return rep, nil
}

// resumeInterrupted carries on drains an interruption invocation left
// unfinished (it died, or its invocation ended before the deadline): under
// the node's lease, so it never races an invocation still at work.
func (r *Reconciler) resumeInterrupted(ctx context.Context, view *View, records []*state.NodeClaim, rep *SweepReport) {
	nodeOf := map[string]*corev1.Node{}
	for _, n := range view.Nodes {
		nodeOf[InstanceIDOf(n.Spec.ProviderID)] = n
	}
	for _, rec := range records {
		d := rec.Disruption
		if d == nil || !d.Reschedule || !strings.HasPrefix(d.Action, state.KindInterruption+"-") {
			continue
		}
		if n := nodeOf[rec.InstanceID]; n != nil && n.DeletionTimestamp != nil {
			continue // retireDeleted has it
		}
		lease, err := r.Store.Acquire(ctx, state.LeaseNode(rec.Name), "sweep-"+rec.Name, time.Minute)
		if err != nil {
			continue // held: an interruption invocation is at work
		}
		res, err := r.Retire(ctx, RetireRequest{Node: nodeOf[rec.InstanceID], Record: rec, Action: d.Action, Reason: d.Reason, Force: !d.Deadline.IsZero()})
		if _, rerr := r.Store.Release(ctx, lease); rerr != nil {
			r.Log.Warn("release node lease", "nodeClaim", rec.Name, "error", rerr)
		}
		if err != nil {
			r.Log.Warn("resume interrupted node", "nodeClaim", rec.Name, "error", err)
		}
		r.recordResumedDrain(ctx, d.Action, res, err == nil && res.Done)
		switch {
		case err != nil:
		case res.Done:
			rep.Retired = append(rep.Retired, rec.Name)
		default:
			rep.Draining = append(rep.Draining, rec.Name)
		}
	}
}

// recordResumedDrain puts one sweep pass of an interruption's drain on
// the action's record, as the interruption handler does for its own
// passes: pods evicted (counted and emitted), pods deleted past the
// deadline (stranded), and the action done once the node is retired.
func (r *Reconciler) recordResumedDrain(ctx context.Context, actionID string, res Retired, done bool) {
	moved := len(res.Drain.Evicted) + len(res.Drain.Deleted)
	if moved > 0 {
		_ = r.Metrics.Emit(metrics.PodsEvicted, float64(moved), metrics.Dims{metrics.DimReason: string(state.KindInterruption)})
	}
	if moved == 0 && !done {
		return
	}
	a, err := r.Store.GetAction(ctx, actionID)
	if err != nil || !a.Open() {
		return
	}
	a.Evicted += len(res.Drain.Evicted)
	a.Stranded = append(a.Stranded, res.Drain.Deleted...)
	if done {
		a.Step = state.StepDone
		if len(a.Stranded) > 0 {
			a.Cause = fmt.Sprintf("%d pods could not be moved before the deadline and were deleted", len(a.Stranded))
		}
	}
	if err := r.Store.PutAction(ctx, a); err != nil {
		r.Log.Warn("record resumed drain", "action", actionID, "error", err)
	}
}

// disrupted reports whether the node carries the disrupted taint and is
// cordoned.
func disrupted(n *corev1.Node) bool {
	return n.Spec.Unschedulable && slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool {
		return t.Key == apis.TaintKeyDisrupted && t.Effect == corev1.TaintEffectNoSchedule
	})
}

// retireDeleted carries on the retirement of every Node of ours that was
// deleted (it waits on Nodewright's finalizer): drain, terminate, release.
func (r *Reconciler) retireDeleted(ctx context.Context, view *View, records []*state.NodeClaim, rep *SweepReport) {
	byInstance := map[string]*state.NodeClaim{}
	for _, rec := range records {
		if rec.InstanceID != "" {
			byInstance[rec.InstanceID] = rec
		}
	}
	pools := map[string]*apis.NodePool{}
	for _, p := range r.NodePools {
		pools[p.Name] = p
	}
	for _, p := range view.NodePools {
		pools[p.Name] = p
	}
	for _, n := range view.Nodes {
		if n.DeletionTimestamp == nil || !hasFinalizer(n) {
			continue
		}
		rec := byInstance[InstanceIDOf(n.Spec.ProviderID)]
		var grace *time.Duration
		if rec != nil {
			if np := pools[rec.NodePool]; np != nil && np.Spec.Template.Spec.TerminationGracePeriod != nil {
				d := np.Spec.Template.Spec.TerminationGracePeriod.Duration
				grace = &d
			}
		}
		res, err := r.Retire(ctx, RetireRequest{Node: n, Record: rec, Action: "deletion-" + n.Name, Reason: "Deleted", Grace: grace})
		switch {
		case err != nil:
			r.Log.Warn("retire deleted node", "node", n.Name, "error", err)
		case res.Done:
			rep.Retired = append(rep.Retired, n.Name)
		default:
			rep.Draining = append(rep.Draining, n.Name)
		}
	}
}

func hasFinalizer(n *corev1.Node) bool {
	for _, f := range n.Finalizers {
		if f == apis.FinalizerTermination {
			return true
		}
	}
	return false
}

// RetireRequest is a node to take out of the cluster.
type RetireRequest struct {
	Node   *corev1.Node
	Record *state.NodeClaim // nil: a Node of ours whose record is gone
	// Action and Reason mark the record Disrupting if it is not yet.
	Action, Reason string
	// Deadline after which the pods left are deleted (zero: Grace after
	// the disruption began; neither: never).
	Deadline time.Time
	Grace    *time.Duration
	// Force and MaxGracePeriod: see DrainOptions.
	Force          bool
	MaxGracePeriod *time.Duration
}

// Retired is what a Retire call achieved.
type Retired struct {
	// Done: the instance is terminated, the Node and the record gone.
	Done  bool
	Drain DrainResult
}

// Retire takes a node out: marks its record disrupting (its pods then move
// in every solve), drains it (PDBs honoured; after the deadline the pods
// left are deleted), terminates its instance, releases the Node's finalizer
// and deletes it, and removes the record. It is resumable: each call
// carries on from what is true now and returns done once the node is
// gone; a call that runs out of ctx leaves the rest to the next.
func (r *Reconciler) Retire(ctx context.Context, req RetireRequest) (Retired, error) {
	var out Retired
	if err := r.init(); err != nil {
		return out, err
	}
	rec := req.Record
	now := r.Now()
	if rec != nil && (rec.Disruption == nil || !rec.Disruption.Reschedule) {
		if rec.Disruption == nil {
			rec.Disruption = &state.Disruption{Action: req.Action, Reason: req.Reason, Since: now, Deadline: req.Deadline}
		}
		rec.Disruption.Reschedule = true
		if rec.Phase != state.Terminating {
			rec.Phase = state.Disrupting
		}
		if err := r.Store.PutNodeClaim(ctx, rec); err != nil {
			return out, fmt.Errorf("retire %s: mark disrupting: %w", req.Node.Name, err)
		}
	}
	deadline := req.Deadline
	if deadline.IsZero() && rec != nil && rec.Disruption != nil {
		deadline = rec.Disruption.Deadline
	}
	if deadline.IsZero() && req.Grace != nil && rec != nil && rec.Disruption != nil {
		deadline = rec.Disruption.Since.Add(*req.Grace)
	}
	if rec == nil || rec.Phase != state.Terminating {
		if req.Node != nil && r.Nodes != nil && !disrupted(req.Node) {
			// No new pod may land on a node being drained (the
			// interruption and consolidation paths taint before they get
			// here; a kubectl-deleted node is tainted now).
			// A Node already gone (its instance ended outside Nodewright)
			// has nothing to keep pods off.
			if err := r.Nodes.Taint(ctx, req.Node.Name, apis.DisruptedTaint(), true); err != nil && !apierrors.IsNotFound(err) {
				return out, fmt.Errorf("retire %s: taint: %w", req.Node.Name, err)
			}
		}
		if r.Drainer != nil && req.Node != nil {
			res, err := r.Drainer.Drain(ctx, req.Node.Name, DrainOptions{Deadline: deadline, Force: req.Force, MaxGracePeriod: req.MaxGracePeriod})
			out.Drain = res
			if err != nil {
				return out, fmt.Errorf("retire %s: drain: %w", req.Node.Name, err)
			}
			if !res.Done {
				r.Log.Info("draining", "node", req.Node.Name, "evicted", len(res.Evicted), "blocked", len(res.Blocked), "remaining", len(res.Remaining))
				return out, nil
			}
		}
		if rec != nil {
			rec.Phase = state.Terminating
			if err := r.Store.PutNodeClaim(ctx, rec); err != nil {
				return out, fmt.Errorf("retire %s: mark terminating: %w", req.Node.Name, err)
			}
		}
	}
	id := ""
	if rec != nil {
		id = rec.InstanceID
	} else if req.Node != nil {
		id = InstanceIDOf(req.Node.Spec.ProviderID)
	}
	if id != "" {
		if err := r.Fleet.Terminate(ctx, []string{id}); err != nil {
			return out, fmt.Errorf("retire %s: %w", nodeName(req), err)
		}
	}
	if req.Node != nil && r.Nodes != nil {
		if err := r.Nodes.RemoveFinalizer(ctx, req.Node.Name); err != nil {
			return out, fmt.Errorf("retire %s: release: %w", req.Node.Name, err)
		}
		if err := r.Nodes.DeleteNode(ctx, req.Node.Name); err != nil {
			return out, fmt.Errorf("retire %s: delete node: %w", req.Node.Name, err)
		}
	}
	if rec != nil {
		if err := r.Store.DeleteNodeClaim(ctx, rec); err != nil && !errors.Is(err, state.ErrNotFound) {
			return out, fmt.Errorf("retire %s: remove record: %w", nodeName(req), err)
		}
	}
	if req.Node != nil {
		r.Events.Event(ctx, Ref{Kind: "Node", Name: req.Node.Name, UID: string(req.Node.UID)}, corev1.EventTypeNormal, "Terminated",
			fmt.Sprintf("%s: drained, instance %s terminated", req.Reason, id))
	}
	r.Log.Info("node retired", "node", nodeName(req), "instance", id, "reason", req.Reason)
	out.Done = true
	return out, nil
}

func nodeName(req RetireRequest) string {
	if req.Node != nil {
		return req.Node.Name
	}
	if req.Record != nil {
		return req.Record.Name
	}
	return "?"
}
