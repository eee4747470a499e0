package orchestration

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/disruption"
	"github.com/nodewright/nodewright/shared/provision"
)

// EventConsolidationApproved is Karpenter's reason for a consolidation a
// Balanced NodePool's score approved.
const EventConsolidationApproved EventReason = "ConsolidationApproved"

// approvedEvents records, for a planned command Balanced NodePools scored,
// their approving scores as Karpenter records them: a one-node command on
// its Node and NodeClaim, a multi-node one on each scoring NodePool (the
// score is the move's, not one node's). A rejected move records nothing.
func (e *Executor) approvedEvents(ctx context.Context, cmd disruption.Command) {
	if len(cmd.Scores) == 0 {
		return
	}
	if len(cmd.Nodes) == 1 {
		msg := cmd.Scores[0].String()
		e.event(ctx, cmd.Nodes[0], corev1.EventTypeNormal, EventConsolidationApproved, msg)
		if len(cmd.Candidates) == 1 && cmd.Candidates[0] != "" {
			e.Events.Event(ctx, provision.NodeClaimRef(cmd.Candidates[0]), corev1.EventTypeNormal, string(EventConsolidationApproved), msg)
		}
		return
	}
	for _, s := range cmd.Scores {
		e.Events.Event(ctx, provision.Ref{APIVersion: apis.NodePoolAPIVersion, Kind: apis.NodePoolKind, Name: s.NodePool},
			corev1.EventTypeNormal, string(EventConsolidationApproved), s.String())
	}
}
