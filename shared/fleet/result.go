package fleet

import (
	"sort"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/nodewright/nodewright/shared/apis"
)

// launched is the instance an instant fleet launched.
type launched struct {
	InstanceID, InstanceType, Zone, SubnetID, CapacityType, TemplateName string
}

// fleetOutcome reads an instant fleet's answer: the instances it launched
// (sorted by ID; none when it launched nothing) and the errors it reported
// per override. Zones come from the override, else from the subnet; the
// capacity type from the instance's lifecycle, else the one requested.
func fleetOutcome(out *ec2.CreateFleetOutput, capacityType string, zoneOf map[string]string) (insts []launched, errs []FleetError) {
	for _, e := range out.Errors {
		fe := FleetError{Code: aws.ToString(e.ErrorCode), Message: aws.ToString(e.ErrorMessage), CapacityType: lifecycle(string(e.Lifecycle), capacityType)}
		if lo := e.LaunchTemplateAndOverrides; lo != nil && lo.Overrides != nil {
			fe.InstanceType = string(lo.Overrides.InstanceType)
			fe.SubnetID = aws.ToString(lo.Overrides.SubnetId)
			fe.Zone = zoneOfOverride(lo.Overrides, zoneOf)
		}
		errs = append(errs, fe)
	}
	for _, fi := range out.Instances {
		for _, id := range fi.InstanceIds {
			inst := launched{InstanceID: id, InstanceType: string(fi.InstanceType), CapacityType: lifecycle(string(fi.Lifecycle), capacityType)}
			if lo := fi.LaunchTemplateAndOverrides; lo != nil {
				if lo.Overrides != nil {
					if inst.InstanceType == "" {
						inst.InstanceType = string(lo.Overrides.InstanceType)
					}
					inst.SubnetID = aws.ToString(lo.Overrides.SubnetId)
					inst.Zone = zoneOfOverride(lo.Overrides, zoneOf)
				}
				if lo.LaunchTemplateSpecification != nil {
					inst.TemplateName = aws.ToString(lo.LaunchTemplateSpecification.LaunchTemplateName)
				}
			}
			insts = append(insts, inst)
		}
	}
	sort.Slice(insts, func(i, j int) bool { return insts[i].InstanceID < insts[j].InstanceID })
	return insts, errs
}

func zoneOfOverride(o *ec2types.FleetLaunchTemplateOverrides, zoneOf map[string]string) string {
	if z := aws.ToString(o.AvailabilityZone); z != "" {
		return z
	}
	return zoneOf[aws.ToString(o.SubnetId)]
}

// lifecycle maps a fleet lifecycle (spot, on-demand, or empty) to a
// capacity type, defaulting to the requested one.
func lifecycle(l, requested string) string {
	if requested == apis.CapacityTypeReserved {
		return requested // EC2 reports a reservation's instances as on-demand or capacity-block
	}
	switch l {
	case "spot", "on-demand":
		return l
	}
	return requested
}
