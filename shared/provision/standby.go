package provision

import (
	"context"
	"maps"
	"slices"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/handover"
	"github.com/nodewright/nodewright/shared/scheduling"
)

// standBy is what a launch does while Karpenter's controller runs: nothing,
// said once per round in the report and the log, and as a Warning event on
// each NodePool the plan would have launched into (Karpenter's garbage
// collector would terminate the instances, and Karpenter would manage the
// NodeClaims as its own; see package handover).
func (r *Reconciler) standBy(ctx context.Context, w *world, plan *scheduling.Result, reason string, rep *Report, c *handover.Controller) {
	rep.Standby = c.Message()
	pools := map[string]bool{}
	for _, nc := range plan.NodeClaims {
		pools[nc.NodePool] = true
	}
	r.Log.Warn("Karpenter's controller runs: launching nothing", "lease", c.Holding(), "until", c.Until, "nodeClaims", len(plan.NodeClaims),
		"for", reason)
	uids := map[string]string{}
	for _, p := range w.view.NodePools {
		uids[p.Name] = string(p.UID)
	}
	for _, p := range slices.Sorted(maps.Keys(pools)) {
		r.Events.Event(ctx, Ref{APIVersion: apis.NodePoolAPIVersion, Kind: apis.NodePoolKind, Name: p, UID: uids[p]},
			"Warning", string(EventKarpenterRunning), rep.Standby)
	}
}
