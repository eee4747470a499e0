package provision

import (
	"strings"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/nodecost"
)

// PublicIPv4 says, by EC2NodeClass name, whether the subnets a class
// resolved to map public IPv4 addresses on launch (EC2's
// MapPublicIpOnLaunch): a node may launch in any of them, so one that maps
// is enough for its nodes to be priced with an address.
func PublicIPv4(resolved []fleet.Resolution) func(class string) bool {
	maps := map[string]bool{}
	for _, r := range resolved {
		if r.Class == nil {
			continue
		}
		for _, s := range r.Class.Subnets {
			if s.MapsPublicIPv4 {
				maps[r.Name] = true
			}
		}
	}
	return func(class string) bool { return maps[class] }
}

// NodeCostRates are the rates a node's extras are priced at in the region
// of zones (the shipped table's when it has none of its own).
func NodeCostRates(zones []string) *nodecost.Rates {
	region := ""
	if len(zones) > 0 {
		region = strings.TrimRight(zones[0], "abcdefghijklmnopqrstuvwxyz")
	}
	r, _ := nodecost.For(region)
	return &r
}

// NodeCosts are what a node of each NodePool costs beyond its instance, in
// $/h by NodePool name, at the rates of zones' region, with the public IPv4
// addresses the classes' resolved subnets map: what consolidation prices
// both its candidates and their replacements with, as provision's solve
// does.
func NodeCosts(pools []*apis.NodePool, classes []*apis.EC2NodeClass, zones []string, resolved []fleet.Resolution) (map[string]float64, error) {
	costs, err := nodecost.PerPool(pools, classes, PublicIPv4(resolved), *NodeCostRates(zones))
	if err != nil {
		return nil, err
	}
	return nodecost.PerHour(costs), nil
}
