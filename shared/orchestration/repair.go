package orchestration

import (
	"context"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/disruption"
	"github.com/nodewright/nodewright/shared/provision"
	"github.com/nodewright/nodewright/shared/state"
)

// EventNodeRepairBlocked is the reason of the Warning event on a NodePool
// whose node repair the safety stop pauses (Karpenter's reason).
const EventNodeRepairBlocked EventReason = "NodeRepairBlocked"

// statusChecks polls the EC2 status checks of the records' instances for
// node repair. A failed poll is logged and leaves the checks unread (nil):
// the conditions still count, and the next tick polls again.
func (r *Run) statusChecks(ctx context.Context, records []*state.NodeClaim) map[string]disruption.StatusCheck {
	if r.StatusChecks == nil {
		return nil
	}
	var ids []string
	for _, rec := range records {
		if rec.InstanceID != "" && (rec.Phase == state.Initialized || rec.Phase == state.Disrupting) {
			ids = append(ids, rec.InstanceID)
		}
	}
	if len(ids) == 0 {
		return nil
	}
	imp, err := r.StatusChecks(ctx, ids)
	if err != nil {
		r.Exec.Log.Warn("EC2 status checks not read: node repair sees only the node conditions this tick", "error", err)
		return nil
	}
	out := make(map[string]disruption.StatusCheck, len(imp))
	for id, i := range imp {
		out[id] = disruption.StatusCheck{Impaired: true, Since: i.Since, Detail: i.Detail}
	}
	return out
}

// repairNotes says, on each NodePool whose repair the safety stop pauses,
// why (a Warning event, NodeRepairBlocked), and logs the unhealthy nodes
// repair leaves alone.
func (r *Run) repairNotes(ctx context.Context, in disruption.Inputs, rep disruption.Report) {
	e := r.Exec
	uids := map[string]string{}
	for _, p := range in.NodePools {
		if p != nil {
			uids[p.Name] = string(p.UID)
		}
	}
	for _, pool := range slices.Sorted(maps.Keys(rep.RepairPaused)) {
		why := rep.RepairPaused[pool]
		e.Log.Warn("node repair paused", "nodePool", pool, "why", why)
		e.Events.Event(ctx, provision.Ref{APIVersion: apis.NodePoolAPIVersion, Kind: apis.NodePoolKind, Name: pool, UID: uids[pool]},
			corev1.EventTypeWarning, string(EventNodeRepairBlocked), why)
	}
	if len(rep.RepairHeld) > 0 {
		e.Log.Info("unhealthy nodes left alone by node repair", "nodes", summarize(rep.RepairHeld))
	}
}
