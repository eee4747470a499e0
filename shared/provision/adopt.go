package provision

import (
	"context"
	"errors"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/adoption"
	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/nodeclaim"
	"github.com/nodewright/nodewright/shared/state"
)

// Adoption's event reasons.
const (
	// EventAdopted is on the NodeClaim and Node of each node Karpenter
	// launched that a sweep adopted (package adoption).
	EventAdopted EventReason = "Adopted"
	// EventNotAdopted is on the NodeClaim of each node of Karpenter's
	// left alone, with why (its NodePool is not configured, say).
	EventNotAdopted EventReason = "NotAdopted"
)

// notAdoptedEvery is how often a node left alone is said to be again.
const notAdoptedEvery = time.Hour

// adoptKarpenters writes a record for each node Karpenter launched whose
// NodePool Nodewright is configured with, once Karpenter's controller is
// gone (never while it runs, or while its Lease cannot be read: package
// handover), and returns the records with them. Each record is a
// conditional create under the NodeClaim's name: a sweep racing this one
// for the same instance fails its write and leaves the other's. The
// NodeClaim objects become Nodewright's in the same sweep (syncObjects
// finds a record for each). No instance is tagged, launched or
// terminated here.
func (r *Reconciler) adoptKarpenters(ctx context.Context, view *View, objs []*nodeclaim.NodeClaim, records []*state.NodeClaim,
	instances []fleet.Running, pools map[string]*apis.NodePool, rep *SweepReport) []*state.NodeClaim {
	if view.Karpenter != nil || view.KarpenterUnknown {
		return records
	}
	classes := map[string]*apis.EC2NodeClass{}
	for _, c := range r.NodeClasses {
		classes[c.Name] = c
	}
	for _, c := range view.NodeClasses {
		classes[c.Name] = c
	}
	plan := adoption.Decide(adoption.Input{Records: records, Instances: instances, Nodes: view.Nodes, Objects: objs,
		Pools: pools, Classes: classes, Now: r.Now(), Price: r.offeringPrice})
	if len(plan.Adopt)+len(plan.Skip) == 0 {
		return records
	}
	uids := map[string]string{}
	for _, o := range objs {
		uids[o.Name] = string(o.UID)
	}
	nodes := map[string]*corev1.Node{}
	for _, n := range view.Nodes {
		nodes[n.Name] = n
	}
	now := r.Now()
	for _, rec := range plan.Adopt {
		if err := r.Store.PutNodeClaim(ctx, rec); err != nil {
			if errors.Is(err, state.ErrConflict) {
				r.Log.Info("Karpenter's node adopted by another invocation", "nodeClaim", rec.Name, "instance", rec.InstanceID)
			} else {
				r.Log.Warn("adopt Karpenter's node: the next sweep tries again", "nodeClaim", rec.Name, "instance", rec.InstanceID, "error", err)
			}
			continue
		}
		records = append(records, rec)
		rep.AdoptedFromKarpenter = append(rep.AdoptedFromKarpenter, rec.Name)
		r.Log.Info("Karpenter's node adopted", "nodeClaim", rec.Name, "nodePool", rec.NodePool, "instance", rec.InstanceID,
			"node", rec.NodeName, "phase", rec.Phase)
		msg := "Adopted from Karpenter: NodeClaim " + rec.Name + " (instance " + rec.InstanceID + ", NodePool " + rec.NodePool + ") is Nodewright's"
		ref := NodeClaimRef(rec.Name)
		ref.UID = uids[rec.Name]
		r.Events.Event(ctx, ref, corev1.EventTypeNormal, string(EventAdopted), msg)
		if n := nodes[rec.NodeName]; n != nil {
			NodeEvents{r.Events}.NodeEvent(ctx, n, corev1.EventTypeNormal, string(EventAdopted), msg)
		}
	}
	for _, s := range plan.Skip {
		rep.NotAdopted = append(rep.NotAdopted, s)
		if !r.adoptEvents.Fresh(s.Instance+"\x00"+string(s.Reason), now, notAdoptedEvery) {
			continue
		}
		r.Log.Info("Karpenter's node left alone", "nodeClaim", s.NodeClaim, "instance", s.Instance, "reason", s.Reason, "why", s.Message)
		ref := NodeClaimRef(s.NodeClaim)
		ref.UID = uids[s.NodeClaim]
		r.Events.Event(ctx, ref, corev1.EventTypeWarning, string(EventNotAdopted), string(s.Reason)+": "+s.Message)
	}
	return records
}

// offeringPrice is an offering's price per hour from the round's catalog
// and spot prices, as a launch records it (0: unknown).
func (r *Reconciler) offeringPrice(instanceType, zone, capacityType string) float64 {
	var spot catalog.SpotPricer
	if r.Spot != nil {
		spot = r.Spot
	}
	return fleet.OfferingPrice(r.Catalog, spot, instanceType, zone, capacityType)
}
