package interruption

import (
	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/shared/trigger"
)

// reclaimed is the offering an interruption takes back, which the node's
// replacement must not land on (none unless the decision marks it
// unavailable: a spot instance's).
func reclaimed(kind trigger.Kind, d Decision, rec *state.NodeClaim) []state.Offering {
	if !d.MarkUnavailable || rec.InstanceType == "" {
		return nil
	}
	return []state.Offering{{InstanceType: rec.InstanceType, Zone: rec.Zone, CapacityType: rec.CapacityType, Code: string(kind)}}
}
