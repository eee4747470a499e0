package provision

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/adoption"
	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/launch"
	"github.com/nodewright/nodewright/shared/nodeclaim"
	"github.com/nodewright/nodewright/shared/podstate"
	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/shared/termination"
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
	// Adopted are records written for orphans that run pods (drained
	// before they go).
	Adopted []string `json:"adopted,omitempty"`
	// AdoptedFromKarpenter are the records written for nodes Karpenter
	// launched (package adoption); NotAdopted those of its nodes left
	// alone, with why.
	AdoptedFromKarpenter []string        `json:"adoptedFromKarpenter,omitempty"`
	NotAdopted           []adoption.Skip `json:"notAdopted,omitempty"`
	// NodeClaims is what the sweep wrote of the NodeClaim objects (nil:
	// nothing).
	NodeClaims *nodeclaim.Report `json:"nodeClaims,omitempty"`
}

// Sweep runs liveness and garbage collection, and has the terminator carry
// on every removal under way (deleted Nodes, records whose intent says
// drain), each bounded by ctx: what it does not finish the next sweep
// continues.
func (r *Reconciler) Sweep(ctx context.Context) (*SweepReport, error) {
	if err := r.init(); err != nil {
		return nil, err
	}
	rep := &SweepReport{Terminated: map[string]string{}}
	if r.Regional != nil {
		r.Regional.Refresh(ctx) // in the background: the handler waits for it before it returns
	}
	view, err := r.Source.View(ctx)
	if err != nil {
		return rep, fmt.Errorf("sweep: %w", err)
	}
	objs, keepObjects := r.listObjects(ctx)
	// While Karpenter's controller runs it would manage NodeClaim objects
	// as its own: none is written (package handover).
	keepObjects = keepObjects && view.Karpenter == nil
	records, err := r.Store.NodeClaims(ctx)
	if err != nil {
		return rep, fmt.Errorf("sweep: %w", err)
	}
	instances, err := r.Fleet.Instances(ctx)
	if err != nil {
		return rep, fmt.Errorf("sweep: %w", err)
	}
	c := Liveness(records, instances, view.Nodes, r.Now(), r.Options.RegistrationTimeout, r.Options.OrphanGrace)
	orphans := drainFirst(c, records, instances, view)
	ids := slices.Sorted(maps.Keys(c.Terminate))
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
	pools := map[string]*apis.NodePool{}
	for _, p := range r.NodePools {
		pools[p.Name] = p
	}
	for _, p := range view.NodePools {
		pools[p.Name] = p
	}
	records = r.adoptKarpenters(ctx, view, objs, records, instances, pools, rep)
	if keepObjects {
		records = r.deletionRequested(ctx, objs, records, pools)
	}
	cl := termination.Cluster{Nodes: view.Nodes, Records: records, Instances: instances, Orphans: orphans}
	for _, name := range slices.Sorted(maps.Keys(pools)) {
		cl.NodePools = append(cl.NodePools, pools[name])
	}
	trep := r.Terminator().Sweep(ctx, cl)
	rep.Retired, rep.Draining, rep.Adopted = trep.Retired, trep.Draining, trep.Adopted
	if len(trep.NotOurs) > 0 {
		r.Log.Info("deleted Nodes that carry the termination finalizer but are not Nodewright's: left alone", "nodes", trep.NotOurs)
	}
	r.karpenterPodsStarted(view, records)
	if keepObjects {
		orep, err := r.syncObjects(ctx, objs, view, pools)
		rep.NodeClaims = orep
		if err != nil {
			r.Log.Warn("nodeclaim objects: the next sweep carries on", "error", err)
		}
	}
	return rep, nil
}

// drainFirst takes out of c.Terminate the orphans (instances of ours no
// record claims) whose Node registered and runs pods, and returns them:
// the terminator drains them before they go, rather than terminating the
// instance under its pods (an ambiguous CreateFleet error left them).
func drainFirst(c Collection, records []*state.NodeClaim, instances []fleet.Running, view *View) []fleet.Running {
	claimed := map[string]bool{}
	for _, rec := range records {
		if rec.InstanceID != "" {
			claimed[rec.InstanceID] = true
		}
	}
	nodeOf := map[string]string{}
	for _, n := range view.Nodes {
		if id := InstanceIDOf(n.Spec.ProviderID); id != "" {
			nodeOf[id] = n.Name
		}
	}
	runsPods := map[string]bool{}
	for _, p := range view.Pods {
		if p.Spec.NodeName != "" && podstate.Active(p) && !podstate.FollowsNode(p) {
			runsPods[p.Spec.NodeName] = true
		}
	}
	var out []fleet.Running
	for _, in := range instances {
		if _, ok := c.Terminate[in.InstanceID]; !ok || claimed[in.InstanceID] || !in.ManagedBy || !runsPods[nodeOf[in.InstanceID]] {
			continue
		}
		delete(c.Terminate, in.InstanceID)
		out = append(out, in)
	}
	return out
}
