package provision

import (
	"strings"

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
