package disruption

import (
	"fmt"
	"slices"
	"time"
)

// typeCheckAfter is how old a node must be before its instance type is
// checked against the region's offerings (Karpenter's: an hour, so that a
// transient gap in the offerings does not drift a node just launched).
const typeCheckAfter = time.Hour

// typeNotFound says why the node's instance type is no longer offered where
// it runs ("" when it is, or cannot be known): the region's catalog no
// longer has the type, or no longer offers it in the node's zone, as
// Karpenter's InstanceTypeNotFound drift.
func (v *view) typeNotFound(n *nodeInfo) string {
	if v.in.Catalog == nil || n.instanceType == "" || n.rec == nil || v.now.Sub(n.rec.CreatedAt) <= typeCheckAfter {
		return ""
	}
	it, ok := v.in.Catalog.Get(n.instanceType)
	if !ok {
		return fmt.Sprintf("instance type %s is no longer offered in the region", n.instanceType)
	}
	if n.zone != "" && it.Zones != nil && !slices.Contains(it.Zones, n.zone) {
		return fmt.Sprintf("instance type %s is no longer offered in %s", n.instanceType, n.zone)
	}
	return ""
}

// placementDrifted says how the node's placement group differs from the one
// its class's placementGroupSelector resolves to now (Karpenter's
// PlacementGroupDrift): a group added, removed or replaced under the same
// name. A class not resolved is not checked.
func (v *view) placementDrifted(n *nodeInfo) (DriftReason, string) {
	r := n.rec
	want, ok := v.in.CurrentPlacementGroups[r.NodeClass]
	if !ok || want == r.PlacementGroupID {
		return "", ""
	}
	switch {
	case want == "":
		return DriftPlacementGroup, fmt.Sprintf("placement group %s is no longer selected by EC2NodeClass %s (it selects none)", r.PlacementGroupID, r.NodeClass)
	case r.PlacementGroupID == "":
		return DriftPlacementGroup, fmt.Sprintf("EC2NodeClass %s now places its nodes in placement group %s", r.NodeClass, want)
	}
	return DriftPlacementGroup, fmt.Sprintf("placement group %s is no longer the one EC2NodeClass %s selects (now %s)", r.PlacementGroupID, r.NodeClass, want)
}
