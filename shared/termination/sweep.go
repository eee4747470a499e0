package termination

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/state"
)

// Leases take and give up a node's lease (*state.Store): the sweep carries
// a node on only while no other invocation does.
type Leases interface {
	Acquire(ctx context.Context, name, holder string, ttl time.Duration, asks ...string) (*state.Lease, error)
	Release(ctx context.Context, l *state.Lease) (rerun bool, err error)
}

// Actions keep the account of the action that owns an intent
// (*state.Store).
type Actions interface {
	GetAction(ctx context.Context, id string) (*state.Action, error)
	PutAction(ctx context.Context, a *state.Action) error
}

// sweepLeaseTTL is the node lease a sweep holds while it carries a node
// one pass on (seconds): short, as an interruption that finds it held by
// a sweep that died waits it out before it drains to a spot deadline.
const sweepLeaseTTL = 20 * time.Second

// Cluster is what a sweep read: the Nodes, the records, the instances
// carrying the cluster's tag, and the NodePools (merged configuration).
type Cluster struct {
	Nodes     []*corev1.Node
	Records   []*state.NodeClaim
	Instances []fleet.Running
	NodePools []*apis.NodePool
	// Orphans are instances of ours (managed-by tag) that no record claims
	// and whose Node registered: they are drained before they go.
	Orphans []fleet.Running
}

// SweepReport is what a sweep's termination pass did.
type SweepReport struct {
	// Retired are nodes fully drained and terminated; Draining those still
	// draining; Adopted the records written for orphans.
	Retired, Draining, Adopted []string
	// NotOurs are deleted Nodes that carry the termination finalizer but
	// are neither recorded nor tagged as Nodewright's (Karpenter's, during
	// a migration): left alone.
	NotOurs []string
}

// Sweep carries on every node whose removal is under way: deleted Nodes
// of ours (they wait on the termination finalizer), records whose intent
// is not consolidation's (consolidation carries its own on under its
// lease), and orphans that registered (a record is adopted for each, so
// that its intent is durable). Each node is carried one pass on under its
// lease; a node whose lease is held is left to its holder, which reads the
// record between passes.
func (t *Terminator) Sweep(ctx context.Context, c Cluster) SweepReport {
	var rep SweepReport
	byInstance := map[string]*state.NodeClaim{}
	for _, rec := range c.Records {
		if rec.InstanceID != "" {
			byInstance[rec.InstanceID] = rec
		}
	}
	managed := map[string]bool{}
	for _, in := range c.Instances {
		if in.ManagedBy {
			managed[in.InstanceID] = true
		}
	}
	nodeOf := map[string]*corev1.Node{}
	for _, n := range c.Nodes {
		if id := InstanceIDOf(n.Spec.ProviderID); id != "" {
			nodeOf[id] = n
		}
	}
	grace := func(pool string) *time.Duration {
		for _, p := range c.NodePools {
			if p.Name == pool && p.Spec.Template.Spec.TerminationGracePeriod != nil {
				d := p.Spec.Template.Spec.TerminationGracePeriod.Duration
				return &d
			}
		}
		return nil
	}
	done := map[string]bool{}
	for _, n := range c.Nodes {
		if n.DeletionTimestamp == nil || !hasFinalizer(n) {
			continue
		}
		id := InstanceIDOf(n.Spec.ProviderID)
		rec := byInstance[id]
		if rec == nil && !managed[id] {
			// Karpenter's nodes carry the same finalizer: a Node is ours
			// only if it has a record or its instance our tag.
			rep.NotOurs = append(rep.NotOurs, n.Name)
			continue
		}
		req := Request{Node: n, Record: rec, Intent: state.IntentFor(state.CauseDeletion, state.KindDeletion+"-"+n.Name, "Deleted", t.now(), time.Time{})}
		if rec != nil {
			req.Grace = grace(rec.NodePool)
			done[rec.Name] = true
		}
		t.carry(ctx, req, &rep)
	}
	for _, rec := range c.Records {
		d := rec.Disruption
		if done[rec.Name] || d == nil || !d.Reschedule || d.Normalize().Urgency <= state.UrgencyVoluntary {
			continue
		}
		t.carry(ctx, Request{Node: nodeOf[rec.InstanceID], Record: rec, Intent: *d}, &rep)
	}
	for _, in := range c.Orphans {
		n := nodeOf[in.InstanceID]
		if n == nil || !in.ManagedBy || byInstance[in.InstanceID] != nil {
			continue
		}
		rec, err := t.adopt(ctx, in, n, grace(in.NodePool))
		if err != nil {
			t.log().Warn("adopt an orphan instance that registered", "instance", in.InstanceID, "node", n.Name, "error", err)
			continue
		}
		rep.Adopted = append(rep.Adopted, rec.Name)
		t.carry(ctx, Request{Node: n, Record: rec, Intent: *rec.Disruption}, &rep)
	}
	return rep
}

// OrphanAction is the action ID that owns an orphan's intent.
func OrphanAction(instanceID string) string { return string(state.CauseOrphan) + "-" + instanceID }

// adopt writes a record for an orphan instance whose Node registered (an
// ambiguous CreateFleet error left it, or its record was lost), carrying
// the orphan's intent: from then on it is one of ours, drained before it
// goes and released like any other.
func (t *Terminator) adopt(ctx context.Context, in fleet.Running, n *corev1.Node, grace *time.Duration) (*state.NodeClaim, error) {
	now := t.now()
	intent := state.IntentFor(state.CauseOrphan, OrphanAction(in.InstanceID), "instance has no NodeClaim record", now, time.Time{})
	if grace != nil {
		intent.Deadline = now.Add(*grace)
	}
	intent.Reschedule = true
	rec := &state.NodeClaim{
		Name: OrphanAction(in.InstanceID), NodePool: in.NodePool, Phase: state.Disrupting,
		Reason:     fmt.Sprintf("adopted: orphan instance (nodeclaim tag %q) whose Node %s registered", in.NodeClaim, n.Name),
		InstanceID: in.InstanceID, InstanceType: in.InstanceType, Zone: in.Zone, ProviderID: n.Spec.ProviderID, NodeName: n.Name,
		CreatedAt: now, LaunchedAt: in.LaunchTime, Disruption: &intent,
	}
	if err := t.Store.PutNodeClaim(ctx, rec); err != nil {
		if errors.Is(err, state.ErrConflict) {
			return t.Store.GetNodeClaim(ctx, rec.Name) // adopted by a sweep meanwhile
		}
		return nil, err
	}
	return rec, nil
}

// carry takes one pass of req under the node's lease (a record-less node
// has none to take) and keeps the owning action's account.
func (t *Terminator) carry(ctx context.Context, req Request, rep *SweepReport) {
	if req.Record != nil && t.Leases != nil {
		lease, err := t.Leases.Acquire(ctx, state.LeaseNode(req.Record.Name), "sweep-"+req.Record.Name, sweepLeaseTTL)
		if err != nil {
			return // held: the holder reads the record between its passes
		}
		defer func() {
			if _, err := t.Leases.Release(context.WithoutCancel(ctx), lease); err != nil {
				t.log().Warn("release node lease", "nodeClaim", req.Record.Name, "error", err)
			}
		}()
	}
	res, err := t.Step(ctx, req)
	if err != nil {
		t.log().Warn("retire node", "node", req.name(), "error", err)
	}
	if !res.Done && MissesDeleteBy(t.now(), res.Drain.DeleteBy) {
		// The sweep makes one pass a minute: a pod a budget holds whose
		// DeleteBy comes first is deleted late, with less than its grace.
		t.log().Warn("a pod a budget holds is due for deletion before the next sweep: it may get less than its whole grace",
			"node", req.name(), "deleteBy", res.Drain.DeleteBy, "blocked", res.Drain.Blocked)
	}
	if req.Record != nil {
		owner := req.Intent.Action
		if res.Record != nil && res.Record.Disruption != nil {
			owner = res.Record.Disruption.Action
		}
		t.account(ctx, owner, res, err == nil && res.Done)
	}
	switch {
	case err != nil:
	case res.Done:
		rep.Retired = append(rep.Retired, req.name())
	default:
		rep.Draining = append(rep.Draining, req.name())
	}
}

// account puts one pass of a drain on the owning action's record (if it
// has one, as interruptions do): pods evicted, pods deleted at the
// deadline (stranded), and the action done once the node is retired.
func (t *Terminator) account(ctx context.Context, actionID string, res Result, done bool) {
	moved := len(res.Drain.Evicted) + len(res.Drain.Deleted)
	if t.Actions == nil || (moved == 0 && !done) {
		return
	}
	a, err := t.Actions.GetAction(ctx, actionID)
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
	if err := t.Actions.PutAction(ctx, a); err != nil {
		t.log().Warn("record resumed drain", "action", actionID, "error", err)
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
