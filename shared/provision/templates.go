package provision

import (
	"context"

	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/launch"
	"github.com/nodewright/nodewright/shared/state"
)

// templateCollector is a Fleet that deletes the launch templates no
// launch needs any more (*fleet.Launcher).
type templateCollector interface {
	CollectTemplates(ctx context.Context, keep map[string]bool, max int) ([]string, error)
}

// collectTemplates deletes, a bounded number per sweep, the launch
// templates no record's launch names and no launch used recently (the
// quota is 5,000 per region, and every change of a class, a pool or an AMI
// makes new ones). A Fleet that cannot collect is left alone.
func (r *Reconciler) collectTemplates(ctx context.Context, records []*state.NodeClaim) {
	tc, ok := r.Fleet.(templateCollector)
	if !ok {
		return
	}
	deleted, err := tc.CollectTemplates(ctx, launch.ReferencedTemplates(records), fleet.MaxTemplateDeletions)
	if err != nil {
		r.Log.Warn("delete launch templates no launch needs", "deleted", len(deleted), "error", err)
		return
	}
	if len(deleted) > 0 {
		r.Log.Info("launch templates deleted", "templates", deleted)
	}
}
