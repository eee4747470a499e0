package provision

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/configstatus"
	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/nodeclaim"
	"github.com/nodewright/nodewright/shared/state"
)

// NodeClaimObjects keeps the cluster's NodeClaim objects
// (*nodeclaim.Objects): one per record, derived from it.
type NodeClaimObjects interface {
	// List returns the cluster's NodeClaims (nodeclaim.ErrNotInstalled
	// when it serves none).
	List(ctx context.Context) ([]*nodeclaim.NodeClaim, error)
	// Ensure creates a NodeClaim unless it exists, and returns its UID.
	Ensure(ctx context.Context, nc *nodeclaim.NodeClaim) (types.UID, error)
	// Apply carries out a plan made from current.
	Apply(ctx context.Context, p nodeclaim.Plan, current []*nodeclaim.NodeClaim) (nodeclaim.Report, error)
}

// listObjects lists the NodeClaim objects for a sweep, before it reads the
// records: an object without a record then really has none (a launch
// writes its record before its object). ok is false when there is nothing
// to keep in step (no NodeClaims kept, no CRD, or the list failed).
func (r *Reconciler) listObjects(ctx context.Context) (objs []*nodeclaim.NodeClaim, ok bool) {
	if r.NodeClaims == nil {
		return nil, false
	}
	objs, err := r.NodeClaims.List(ctx)
	if errors.Is(err, nodeclaim.ErrNotInstalled) {
		return nil, false
	}
	if err != nil {
		r.Log.Warn("list nodeclaim objects: they are kept in step next sweep", "error", err)
		return nil, false
	}
	return objs, true
}

// deletionRequested records a deletion intent on the record of each
// NodeClaim being deleted (`kubectl delete nodeclaim`), so that the
// termination path drains the node and terminates the instance, with the
// NodePool's terminationGracePeriod as its deadline. It returns the
// records with those written.
func (r *Reconciler) deletionRequested(ctx context.Context, objs []*nodeclaim.NodeClaim, records []*state.NodeClaim, pools map[string]*apis.NodePool) []*state.NodeClaim {
	deleted := map[string]bool{}
	for _, name := range nodeclaim.Deleted(objs) {
		deleted[name] = true
	}
	out := make([]*state.NodeClaim, 0, len(records))
	for _, rec := range records {
		if deleted[rec.Name] && (rec.Disruption == nil || rec.Disruption.Normalize().Cause != state.CauseDeletion) {
			now := r.Now()
			var deadline time.Time
			if p := pools[rec.NodePool]; p != nil && p.Spec.Template.Spec.TerminationGracePeriod != nil {
				deadline = now.Add(p.Spec.Template.Spec.TerminationGracePeriod.Duration)
			}
			intent := state.IntentFor(state.CauseDeletion, state.KindDeletion+"-"+rec.Name, "NodeClaimDeleted", now, deadline)
			got, err := r.Terminator().Intend(ctx, rec, intent)
			if err != nil {
				r.Log.Warn("record the deletion of a nodeclaim object", "nodeClaim", rec.Name, "error", err)
			} else {
				r.Log.Info("nodeclaim object deleted: draining and terminating its node", "nodeClaim", rec.Name)
				rec = got
			}
		}
		out = append(out, rec)
	}
	return out
}

// syncObjects brings the NodeClaim objects in step with the records as
// they are after the sweep (read again: the sweep removed some).
func (r *Reconciler) syncObjects(ctx context.Context, objs []*nodeclaim.NodeClaim, view *View, pools map[string]*apis.NodePool) (*nodeclaim.Report, error) {
	records, err := r.Store.NodeClaims(ctx)
	if err != nil {
		return nil, fmt.Errorf("nodeclaim objects: %w", err)
	}
	// The Consolidatable condition counts from when the node's pods last
	// changed, which consolidation keeps in the pods summary.
	sums, err := r.Store.PodSums(ctx)
	if err != nil {
		return nil, fmt.Errorf("nodeclaim objects: %w", err)
	}
	sums.Apply(records)
	classes := map[string]*apis.EC2NodeClass{}
	for _, c := range r.NodeClasses {
		classes[c.Name] = c
	}
	for _, c := range view.NodeClasses {
		classes[c.Name] = c
	}
	nodeOf := map[string]*corev1.Node{}
	for _, n := range view.Nodes {
		if id := InstanceIDOf(n.Spec.ProviderID); id != "" {
			nodeOf[id] = n
		}
	}
	now := r.Now()
	desired := make([]*nodeclaim.NodeClaim, 0, len(records))
	for _, rec := range records {
		var node *corev1.Node
		if rec.InstanceID != "" {
			node = nodeOf[rec.InstanceID]
		}
		desired = append(desired, nodeclaim.Desired(nodeclaim.Input{Record: rec, Node: node, Pool: pools[rec.NodePool], Class: classes[rec.NodeClass], Now: now}))
	}
	plan := nodeclaim.PlanSync(desired, objs)
	if plan.Empty() {
		return nil, nil
	}
	rep, err := r.NodeClaims.Apply(ctx, plan, objs)
	return &rep, err
}

// NodeClaimEventRef is the event reference of a record's NodeClaim (see
// nodeClaimRef), for the flows that record events about NodeClaims the
// reconciler launched (orchestration.NodeClaimRefs).
func (r *Reconciler) NodeClaimEventRef(ctx context.Context, rec *state.NodeClaim) Ref {
	return r.nodeClaimRef(ctx, rec)
}

// nodeClaimRef is the event reference of a record's NodeClaim: the object
// itself (created now if the sweep has not yet) when NodeClaims are kept.
func (r *Reconciler) nodeClaimRef(ctx context.Context, rec *state.NodeClaim) Ref {
	ref := NodeClaimRef(rec.Name)
	if r.NodeClaims == nil {
		return ref
	}
	in := nodeclaim.Input{Record: rec, Now: r.Now()}
	for _, p := range r.NodePools {
		if p.Name == rec.NodePool {
			in.Pool = p
		}
	}
	uid, err := r.NodeClaims.Ensure(ctx, nodeclaim.Desired(in))
	if err != nil && !errors.Is(err, nodeclaim.ErrNotInstalled) {
		r.Log.Warn("create the nodeclaim object: the sweep does", "nodeClaim", rec.Name, "error", err)
	}
	ref.UID = string(uid)
	return ref
}

// StatusWriter writes the status subresource of NodePools and
// EC2NodeClasses (*kube.Client).
type StatusWriter interface {
	PatchNodePoolStatus(ctx context.Context, name string, patch []byte) error
	PatchNodeClassStatus(ctx context.Context, name string, patch []byte) error
}

// writeStatus writes the status of each NodePool and EC2NodeClass of the
// cluster (the deployed configuration's have no object to write to) that
// differs from what the round read (package configstatus). A failed write
// is logged; the next round writes again.
func (r *Reconciler) writeStatus(ctx context.Context, w *world) {
	if r.Status == nil || w.view.Karpenter != nil {
		// While Karpenter's controller runs, the status is its to write
		// (package handover).
		return
	}
	why := map[string]PoolStatus{}
	for _, s := range w.readiness {
		why[s.NodePool] = s
	}
	classes := map[string]*apis.EC2NodeClass{}
	for _, c := range w.view.NodeClasses {
		classes[c.Name] = c
	}
	write := func(kind, name string, st any, patchFn func(context.Context, string, []byte) error) {
		patch, err := json.Marshal(map[string]any{"status": st})
		if err == nil {
			err = patchFn(ctx, name, patch)
		}
		if err != nil {
			r.Log.Warn("write the status: the next round writes it", "kind", kind, "name", name, "error", err)
		}
	}
	for _, p := range w.view.NodePools {
		in := configstatus.Input{Pool: p, Records: w.records, Now: r.Now(), NotReady: string(why[p.Name].Reason), Message: why[p.Name].Message}
		if ref := p.Spec.Template.Spec.NodeClassRef; ref != nil {
			in.Class = classes[ref.Name]
		}
		if st, changed := configstatus.Change(configstatus.Desired(in), p.Status); changed {
			write(apis.NodePoolKind, p.Name, st, r.Status.PatchNodePoolStatus)
		}
	}
	resolved := map[string]*fleet.Resolution{}
	for i := range w.resolved {
		resolved[w.resolved[i].Name] = &w.resolved[i]
	}
	for _, c := range w.view.NodeClasses {
		in := configstatus.NodeClassInput{Class: c, Resolution: resolved[c.Name], Now: r.Now()}
		if st, changed := configstatus.NodeClassChange(configstatus.NodeClass(in), c.Status); changed {
			write(apis.EC2NodeClassKind, c.Name, st, r.Status.PatchNodeClassStatus)
		}
	}
}
