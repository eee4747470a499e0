package provision

import (
	"context"
	"time"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/scheduling"
	"github.com/nodewright/nodewright/shared/state"
)

// Reservations are the capacity reservations the resolved EC2NodeClasses
// select, as a solve takes them: each with its class and the room EC2
// reported, less the records launched into it since (a resolution is kept
// for minutes). One that ended, or a Capacity Block about to end, takes no
// launch.
func Reservations(resolved []fleet.Resolution, records []*state.NodeClaim, now time.Time) []scheduling.Reservation {
	var out []scheduling.Reservation
	for _, r := range resolved {
		if r.Err != nil || r.Class == nil {
			continue
		}
		for _, res := range r.Class.Reservations {
			if res.Ended || res.EndingAt(now) {
				continue
			}
			left := res.Available
			for _, rec := range records {
				if rec.Claim.CapacityReservationID == res.ID && !rec.CreatedAt.Before(r.Class.ResolvedAt) {
					left--
				}
			}
			out = append(out, scheduling.Reservation{
				ID: res.ID, NodeClass: r.Name, InstanceType: res.InstanceType, Zone: res.Zone, Type: res.Type, Available: max(left, 0),
			})
		}
	}
	return out
}

// demoteEnded moves the nodes of reservations that ended (EC2 runs their
// instances on-demand from then on) to capacity type on-demand, as
// Karpenter does: the record (priced on-demand from now, so consolidation
// weighs them as paid) and the Node's label; they are neither drained nor
// drifted. The Node first (its capacity type on-demand, its reservation
// labels removed), then the record: a crash or a failed write between
// them leaves the record reserved, and the next round does both again.
func (r *Reconciler) demoteEnded(ctx context.Context, w *world) {
	ended := map[string]bool{}
	for _, res := range w.resolved {
		if res.Err != nil || res.Class == nil {
			continue
		}
		for _, cr := range res.Class.Reservations {
			if cr.Ended {
				ended[cr.ID] = true
			}
		}
	}
	if len(ended) == 0 {
		return
	}
	for _, rec := range w.records {
		if rec.CapacityType != apis.CapacityTypeReserved || !ended[rec.Claim.CapacityReservationID] {
			continue
		}
		if rec.NodeName != "" && r.Nodes != nil {
			onDemand := apis.CapacityTypeOnDemand
			err := r.Nodes.Relabel(ctx, rec.NodeName, map[string]*string{apis.LabelCapacityType: &onDemand,
				apis.LabelCapacityReservationID: nil, apis.LabelCapacityReservationType: nil})
			if err != nil {
				r.Log.Warn("capacity reservation ended: node not relabelled; the next round tries again", "node", rec.NodeName, "error", err)
				continue
			}
		}
		rec.CapacityType = apis.CapacityTypeOnDemand
		if it, ok := r.Catalog.Get(rec.InstanceType); ok {
			rec.PricePerHour = it.OnDemandPrice
		}
		if err := r.Store.PutNodeClaim(ctx, rec); err != nil {
			r.Log.Warn("capacity reservation ended: record not moved to on-demand", "nodeClaim", rec.Name, "reservation", rec.Claim.CapacityReservationID, "error", err)
			continue
		}
		r.Log.Info("capacity reservation ended: node now on-demand", "nodeClaim", rec.Name, "node", rec.NodeName, "reservation", rec.Claim.CapacityReservationID)
	}
}
