package fleet

import (
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// launched is the instance an instant fleet launched.
type launched struct {
	InstanceID, InstanceType, Zone, SubnetID, CapacityType, TemplateName string
}

// fleetOutcome reads an instant fleet's answer: the instance it launched
// (ok false when none) and the errors it reported per override. Zones come
// from the override, else from the subnet; the capacity type from the
// instance's lifecycle, else the one requested.
func fleetOutcome(out *ec2.CreateFleetOutput, capacityType string, zoneOf map[string]string) (inst launched, ok bool, errs []FleetError) {
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
		if len(fi.InstanceIds) == 0 {
			continue
		}
		inst = launched{InstanceID: fi.InstanceIds[0], InstanceType: string(fi.InstanceType), CapacityType: lifecycle(string(fi.Lifecycle), capacityType)}
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
		return inst, true, errs
	}
	return launched{}, false, errs
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
	switch l {
	case "spot", "on-demand":
		return l
	}
	return requested
}
