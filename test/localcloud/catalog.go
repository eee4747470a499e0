package localcloud

import (
	"math"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/pricing"
	"github.com/nodewright/nodewright/test/localcloud/nodebridge"
)

// catalogAdapter serves the instance catalog and the spot price model to
// the node bridge and the AWS front, with the on-demand prices of the
// region (RegionPriceFactor).
type catalogAdapter struct {
	cat    *catalog.Catalog
	model  pricing.Model
	names  []string
	factor float64
}

// RegionPriceFactor is the local cloud's on-demand prices of a region
// relative to the shipped us-east-1 ones: its own figures for eu-west-1
// (12% dearer, about as AWS's are), which the AWS front serves from its
// Pricing API, so that a plan priced with us-east-1's figures shows.
// Other regions have the shipped figures.
func RegionPriceFactor(region string) float64 {
	if region == "eu-west-1" {
		return 1.12
	}
	return 1
}

func newCatalogAdapter(seed uint64, region string) *catalogAdapter {
	cat := catalog.Default()
	names := make([]string, 0, cat.Len())
	for _, it := range cat.Types() {
		names = append(names, it.Name)
	}
	return &catalogAdapter{cat: cat, model: pricing.Model{Catalog: cat, Seed: seed}, names: names, factor: RegionPriceFactor(region)}
}

// InstanceType implements nodebridge.Catalog.
func (a *catalogAdapter) InstanceType(name string, maxPods int32) (nodebridge.InstanceType, bool) {
	it, ok := a.cat.Get(name)
	if !ok {
		return nodebridge.InstanceType{}, false
	}
	var kubelet *apis.KubeletConfiguration
	if maxPods > 0 {
		kubelet = &apis.KubeletConfiguration{MaxPods: &maxPods}
	}
	capacity, alloc := it.Compute(catalog.NodeSettings{Kubelet: kubelet})
	return nodebridge.InstanceType{Labels: it.Labels(), Capacity: capacity.ResourceList(), Allocatable: alloc.ResourceList()}, true
}

// OnDemandPrice implements awsfront.PriceBook.
func (a *catalogAdapter) OnDemandPrice(name string) (float64, bool) {
	it, ok := a.cat.Get(name)
	if !ok || it.OnDemandPrice <= 0 {
		return 0, false
	}
	if a.factor == 1 {
		return it.OnDemandPrice, true
	}
	return math.Round(it.OnDemandPrice*a.factor*1e6) / 1e6, true
}

// windowsLicencePerVCPU is the local cloud's own Windows licence per
// vCPU-hour, other than the shipped estimate (nodecost.WindowsLicence), so
// that a plan shows which one priced it.
const windowsLicencePerVCPU = 0.05

// WindowsOnDemandPrice implements awsfront.WindowsPriceBook: the Linux
// price and the local cloud's licence per vCPU.
func (a *catalogAdapter) WindowsOnDemandPrice(name string) (float64, bool) {
	p, ok := a.OnDemandPrice(name)
	if !ok {
		return 0, false
	}
	it, _ := a.cat.Get(name)
	return math.Round((p+windowsLicencePerVCPU*float64(it.VCPU))*1e6) / 1e6, true
}

// SpotPrice implements awsfront.PriceBook with the shared spot price model.
func (a *catalogAdapter) SpotPrice(name, zone string) (float64, bool) {
	return a.model.SpotPrice(name, zone)
}

// TypeNames implements awsfront.PriceBook.
func (a *catalogAdapter) TypeNames() []string { return a.names }
