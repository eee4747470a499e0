package disruption

import (
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/scheduling"
)

// surplus is what a node of a burstable type bills above its instance's
// price in unlimited mode for the CPU its pods request above the type's
// baseline (catalog.Burst): part of what removing or replacing it saves,
// as the solve prices the replacements' (0 for other types).
func (v *view) surplus(ni *nodeInfo) float64 {
	if v.in.Catalog == nil {
		return 0
	}
	it, ok := v.in.Catalog.Get(ni.instanceType)
	if !ok {
		return 0
	}
	b, ok := it.Burstable()
	if !ok {
		return 0
	}
	var cpu int64
	for _, p := range ni.pods {
		req := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
		cpu += req.Cpu().MilliValue()
	}
	return b.SurplusPerHour(cpu)
}

// claimSurplus is what a planned replacement of type it bills above its
// instance's price for the CPU its pods and DaemonSets request
// (NodeClaim.Requests), as the solve priced it.
func claimSurplus(it *catalog.InstanceType, nc scheduling.NodeClaim) float64 {
	b, ok := it.Burstable()
	if !ok {
		return 0
	}
	return b.SurplusPerHour(nc.Requests.Cpu().MilliValue())
}
