package interruption

import (
	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/shared/trigger"
)

// reclaimed is the offering an interruption takes back, or warns it is at
// elevated risk of taking back, which the node's replacement must not land
// on: a spot or reserved instance's, when the decision marks it unavailable
// (EC2 or the reservation reclaims it) or on a rebalance recommendation (the spot warning often
// follows within minutes; the offering is avoided, not marked).
func reclaimed(kind trigger.Kind, d Decision, rec *state.NodeClaim) []state.Offering {
	atRisk := kind == trigger.KindRebalanceRecommendation && rec.CapacityType == apis.CapacityTypeSpot
	if (!d.MarkUnavailable && !atRisk) || rec.InstanceType == "" {
		return nil
	}
	return []state.Offering{{InstanceType: rec.InstanceType, Zone: rec.Zone, CapacityType: rec.CapacityType, Code: string(kind)}}
}
