package fleet

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/names"
)

// CreateFleet's limits: launch template configs per request, and overrides
// across them (documented for request and maintain fleets; an instant fleet
// stays within it too).
const (
	MaxLaunchTemplateConfigs = 50
	MaxOverrides             = 300
	maxClientToken           = 64
)

// templateOverrides is one launch template of a fleet and the instance
// types (in the claim's price order) that launch with it. Priorities, when
// set, are the types' places in the claim's price order across every
// template (0: the cheapest), one per type.
type templateOverrides struct {
	Name       string
	Types      []string
	Priorities []float64
}

// capacityTypeOf is the capacity type a claim launches as: spot when it
// allows spot (the fleet falls back to nothing: the provision flow re-solves
// without the refused offerings, which brings on-demand), else on-demand.
func capacityTypeOf(capacityTypes []string) string {
	if slices.Contains(capacityTypes, apis.CapacityTypeSpot) {
		return apis.CapacityTypeSpot
	}
	return apis.CapacityTypeOnDemand
}

// fleetInput is the instant CreateFleet for one NodeClaim (or count
// identical ones): target count, the
// claim's capacity type, overrides = each template's types x one subnet per
// zone (types in price order, zones in order), cut to MaxOverrides by
// dropping the most expensive types, ClientToken = token (cut to EC2's
// limit),
// the tags on the instance, its volumes and the fleet, and the EC2NodeClass's
// spec.context (a reserved-capacity context) when set.
//
// On-demand fleets launch by the claim's own price order (the prioritized
// strategy, as Karpenter does under NodeOverlays) when every template has
// Priorities: that order holds what EC2's list prices do not, NodeOverlays
// and the node's other costs, and lowest-price would launch the type with
// the lowest list price instead. Spot keeps price-capacity-optimized, for
// the capacity pools' depth, unless the templates have Priorities (a
// NodeOverlay priced the types): then capacity-optimized-prioritized.
//
// skip (nil: none) leaves out the overrides of (type, zone) offerings that
// must not launch; a type all of whose zones are skipped takes no room
// under MaxOverrides.
func fleetInput(token string, count int, capacityType string, templates []templateOverrides, subnets []Subnet, tags map[string]string, fleetContext *string, skip func(typ, zone string) bool) (*ec2.CreateFleetInput, error) {
	if len(templates) > MaxLaunchTemplateConfigs {
		return nil, fmt.Errorf("%d launch templates: CreateFleet takes at most %d", len(templates), MaxLaunchTemplateConfigs)
	}
	if len(subnets) == 0 {
		return nil, fmt.Errorf("no subnet in the claim's zones")
	}
	keep := MaxOverrides / len(subnets)
	var configs []ec2types.FleetLaunchTemplateConfigRequest
	for _, t := range templates {
		var ovs []ec2types.FleetLaunchTemplateOverridesRequest
		for i, typ := range t.Types {
			if keep == 0 {
				break
			}
			added := false
			for _, sn := range subnets {
				if skip != nil && skip(typ, sn.Zone) {
					continue
				}
				added = true
				ov := ec2types.FleetLaunchTemplateOverridesRequest{
					InstanceType: ec2types.InstanceType(typ), SubnetId: aws.String(sn.ID), AvailabilityZone: aws.String(sn.Zone),
				}
				if len(t.Priorities) == len(t.Types) {
					ov.Priority = aws.Float64(t.Priorities[i])
				}
				ovs = append(ovs, ov)
			}
			if added {
				keep--
			}
		}
		if len(ovs) == 0 {
			continue
		}
		configs = append(configs, ec2types.FleetLaunchTemplateConfigRequest{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String(t.Name), Version: aws.String("$Latest")},
			Overrides:                   ovs,
		})
	}
	if len(configs) == 0 {
		return nil, fmt.Errorf("no instance type to launch")
	}
	et := ec2Tags(tags)
	in := &ec2.CreateFleetInput{
		Type:                  ec2types.FleetTypeInstant,
		ClientToken:           aws.String(ClientToken(token)),
		LaunchTemplateConfigs: configs,
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{
			TotalTargetCapacity: aws.Int32(int32(max(count, 1))), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityType(capacityType),
		},
		TagSpecifications: []ec2types.TagSpecification{
			{ResourceType: ec2types.ResourceTypeInstance, Tags: et},
			{ResourceType: ec2types.ResourceTypeVolume, Tags: et},
			{ResourceType: ec2types.ResourceTypeFleet, Tags: et},
		},
		Context: fleetContext,
	}
	if capacityType == apis.CapacityTypeSpot {
		in.SpotOptions = &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategyPriceCapacityOptimized}
		if prioritized(templates) {
			in.SpotOptions.AllocationStrategy = ec2types.SpotAllocationStrategyCapacityOptimizedPrioritized
		}
	} else {
		in.OnDemandOptions = &ec2types.OnDemandOptionsRequest{AllocationStrategy: ec2types.FleetOnDemandAllocationStrategyLowestPrice}
		if prioritized(templates) {
			in.OnDemandOptions.AllocationStrategy = ec2types.FleetOnDemandAllocationStrategyPrioritized
		}
	}
	return in, nil
}

// prioritized reports whether every template gives its types' priorities.
func prioritized(templates []templateOverrides) bool {
	for _, t := range templates {
		if len(t.Priorities) != len(t.Types) {
			return false
		}
	}
	return len(templates) > 0
}

// instanceTags are the tags of a NodeClaim's instance, volumes and fleet:
// the resource tags plus the NodeClaim and a Name (the EC2NodeClass's Name
// tag, if it sets one, wins).
func instanceTags(cluster, nodePool, nodeClaim string, nc *apis.EC2NodeClass) map[string]string {
	tags := resourceTags(cluster, nodePool, nc)
	tags[names.TagKeyNodeClaim] = nodeClaim
	tags[names.TagKeyManagedBy] = names.TagValueManagedBy
	if _, ok := tags[names.TagKeyName]; !ok {
		tags[names.TagKeyName] = nodePool + "/" + nodeClaim
	}
	return tags
}

// ClientToken is the fleet's idempotency token for a NodeClaim: its name,
// or (for a name longer than EC2's 64 characters) a prefix and a hash.
func ClientToken(nodeClaim string) string {
	if len(nodeClaim) <= maxClientToken {
		return nodeClaim
	}
	sum := sha256.Sum256([]byte(nodeClaim))
	h := hex.EncodeToString(sum[:])[:16]
	return nodeClaim[:maxClientToken-len(h)-1] + "-" + h
}
