package main

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/autoscaling"
	asgtypes "github.com/aws/aws-sdk-go-v2/service/autoscaling/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
)

// nodeGroupAPIs are the calls migrate reads node groups with.
type nodeGroupAPIs struct {
	EKS interface {
		ListNodegroups(ctx context.Context, in *eks.ListNodegroupsInput, opts ...func(*eks.Options)) (*eks.ListNodegroupsOutput, error)
		DescribeNodegroup(ctx context.Context, in *eks.DescribeNodegroupInput, opts ...func(*eks.Options)) (*eks.DescribeNodegroupOutput, error)
	}
	ASG interface {
		DescribeAutoScalingGroups(ctx context.Context, in *autoscaling.DescribeAutoScalingGroupsInput, opts ...func(*autoscaling.Options)) (*autoscaling.DescribeAutoScalingGroupsOutput, error)
	}
	EC2 interface {
		DescribeLaunchTemplateVersions(ctx context.Context, in *ec2.DescribeLaunchTemplateVersionsInput, opts ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplateVersionsOutput, error)
	}
	// Region is the AWS configuration's: the plan's zones are its a, b
	// and c.
	Region string
}

// readNodeGroups reads the cluster's EKS managed node groups and the Auto
// Scaling groups tagged for Cluster Autoscaler (k8s.io/cluster-autoscaler/
// enabled and k8s.io/cluster-autoscaler/<cluster>), leaving out the Auto
// Scaling groups of managed node groups (read as node groups). warnings
// say what could not be read into a group.
func readNodeGroups(ctx context.Context, api nodeGroupAPIs, cluster string) (groups []nodeGroup, warnings []string, err error) {
	var names []string
	for p := eks.NewListNodegroupsPaginator(api.EKS, &eks.ListNodegroupsInput{ClusterName: aws.String(cluster)}); p.HasMorePages(); {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("eks ListNodegroups %s: %w", cluster, err)
		}
		names = append(names, page.Nodegroups...)
	}
	for _, name := range names {
		out, err := api.EKS.DescribeNodegroup(ctx, &eks.DescribeNodegroupInput{ClusterName: aws.String(cluster), NodegroupName: aws.String(name)})
		if err != nil {
			return nil, nil, fmt.Errorf("eks DescribeNodegroup %s: %w", name, err)
		}
		g, warns, err := managedGroup(ctx, api, out.Nodegroup)
		if err != nil {
			return nil, nil, err
		}
		groups, warnings = append(groups, g), append(warnings, warns...)
	}
	in := &autoscaling.DescribeAutoScalingGroupsInput{Filters: []asgtypes.Filter{{Name: aws.String("tag-key"), Values: []string{caEnabledTag}}}}
	for p := autoscaling.NewDescribeAutoScalingGroupsPaginator(api.ASG, in); p.HasMorePages(); {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("autoscaling DescribeAutoScalingGroups: %w", err)
		}
		for _, a := range page.AutoScalingGroups {
			tags := map[string]string{}
			for _, t := range a.Tags {
				tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
			}
			if _, ok := tags[caClusterTag+cluster]; !ok {
				continue // another cluster's
			}
			if _, ok := tags["eks:nodegroup-name"]; ok {
				continue // a managed node group's: read above
			}
			g, warns, err := autoScalingGroup(ctx, api, a, tags)
			if err != nil {
				return nil, nil, err
			}
			groups, warnings = append(groups, g), append(warnings, warns...)
		}
	}
	return groups, warnings, nil
}

// managedGroup reads an EKS managed node group.
func managedGroup(ctx context.Context, api nodeGroupAPIs, ng *ekstypes.Nodegroup) (nodeGroup, []string, error) {
	g := nodeGroup{Name: aws.ToString(ng.NodegroupName), Source: "managed node group", InstanceTypes: ng.InstanceTypes,
		Labels: ng.Labels, Subnets: ng.Subnets}
	where := g.Source + " " + g.Name
	var warns []string
	switch ng.CapacityType {
	case ekstypes.CapacityTypesSpot:
		g.CapacityTypes = []string{apis.CapacityTypeSpot}
	case ekstypes.CapacityTypesOnDemand, "":
		g.CapacityTypes = []string{apis.CapacityTypeOnDemand}
	default:
		g.CapacityTypes = []string{apis.CapacityTypeOnDemand}
		warns = append(warns, fmt.Sprintf("%s: capacity type %s is not carried over: its NodePool launches on-demand", where, ng.CapacityType))
	}
	if ng.ScalingConfig != nil {
		g.MaxSize = aws.ToInt32(ng.ScalingConfig.MaxSize)
	}
	for _, t := range ng.Taints {
		effect, ok := eksTaintEffect(string(t.Effect))
		if !ok {
			warns = append(warns, fmt.Sprintf("%s: taint %s has effect %s: left out", where, aws.ToString(t.Key), t.Effect))
			continue
		}
		g.Taints = append(g.Taints, corev1.Taint{Key: aws.ToString(t.Key), Value: aws.ToString(t.Value), Effect: effect})
	}
	if a := string(ng.AmiType); a != "" && !strings.HasPrefix(a, "AL2023_") && !strings.HasPrefix(a, "AL2_") {
		warns = append(warns, fmt.Sprintf("%s: AMI type %s: its NodePool's class launches Amazon Linux 2023 (al2023@latest)", where, a))
	}
	if lt := ng.LaunchTemplate; lt != nil {
		data, err := launchTemplateData(ctx, api, lt.Id, lt.Name, lt.Version)
		if err != nil {
			return g, nil, fmt.Errorf("%s: %w", where, err)
		}
		if len(g.InstanceTypes) == 0 && data.InstanceType != "" {
			g.InstanceTypes = []string{string(data.InstanceType)}
		}
		g.SecurityGroups = templateSecurityGroups(data)
	}
	return g, warns, nil
}

// autoScalingGroup reads an Auto Scaling group Cluster Autoscaler scales:
// its types (a mixed instances policy's overrides, else its launch
// template's), capacity types, subnets, security groups, and the labels
// and taints of Cluster Autoscaler's node-template tags.
func autoScalingGroup(ctx context.Context, api nodeGroupAPIs, a asgtypes.AutoScalingGroup, tags map[string]string) (nodeGroup, []string, error) {
	g := nodeGroup{Name: aws.ToString(a.AutoScalingGroupName), Source: "Auto Scaling group", MaxSize: aws.ToInt32(a.MaxSize),
		CapacityTypes: []string{apis.CapacityTypeOnDemand}, Labels: map[string]string{}}
	where := g.Source + " " + g.Name
	var warns []string
	for _, s := range strings.Split(aws.ToString(a.VPCZoneIdentifier), ",") {
		if s = strings.TrimSpace(s); s != "" {
			g.Subnets = append(g.Subnets, s)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		switch {
		case strings.HasPrefix(k, caLabelTagPrefix):
			g.Labels[strings.TrimPrefix(k, caLabelTagPrefix)] = tags[k]
		case strings.HasPrefix(k, caTaintTagPrefix):
			t, err := caTaint(strings.TrimPrefix(k, caTaintTagPrefix), tags[k])
			if err != nil {
				warns = append(warns, fmt.Sprintf("%s: %v: left out", where, err))
				continue
			}
			g.Taints = append(g.Taints, t)
		}
	}
	var lt *asgtypes.LaunchTemplateSpecification
	switch {
	case a.MixedInstancesPolicy != nil && a.MixedInstancesPolicy.LaunchTemplate != nil:
		mip := a.MixedInstancesPolicy
		lt = mip.LaunchTemplate.LaunchTemplateSpecification
		for _, o := range mip.LaunchTemplate.Overrides {
			if t := aws.ToString(o.InstanceType); t != "" {
				g.InstanceTypes = append(g.InstanceTypes, t)
			}
		}
		if d := mip.InstancesDistribution; d != nil {
			onDemand := aws.ToInt32(d.OnDemandPercentageAboveBaseCapacity)
			if d.OnDemandPercentageAboveBaseCapacity == nil {
				onDemand = 100
			}
			switch {
			case onDemand == 0 && aws.ToInt32(d.OnDemandBaseCapacity) == 0:
				g.CapacityTypes = []string{apis.CapacityTypeSpot}
			case onDemand < 100:
				g.CapacityTypes = []string{apis.CapacityTypeOnDemand, apis.CapacityTypeSpot}
				warns = append(warns, fmt.Sprintf("%s: its on-demand share (%d%% above a base of %d) is not carried over: its NodePool allows spot and on-demand, and Nodewright picks the cheaper",
					where, onDemand, aws.ToInt32(d.OnDemandBaseCapacity)))
			}
		}
	case a.LaunchTemplate != nil:
		lt = a.LaunchTemplate
	case aws.ToString(a.LaunchConfigurationName) != "":
		warns = append(warns, fmt.Sprintf("%s: launch configurations are not read (AWS retired them): its security groups and instance type are not known", where))
	}
	if lt != nil {
		data, err := launchTemplateData(ctx, api, lt.LaunchTemplateId, lt.LaunchTemplateName, lt.Version)
		if err != nil {
			return g, nil, fmt.Errorf("%s: %w", where, err)
		}
		if len(g.InstanceTypes) == 0 && data.InstanceType != "" {
			g.InstanceTypes = []string{string(data.InstanceType)}
		}
		g.SecurityGroups = templateSecurityGroups(data)
	}
	return g, warns, nil
}

// launchTemplateData reads a launch template version ($Default when none
// is named).
func launchTemplateData(ctx context.Context, api nodeGroupAPIs, id, name, version *string) (*ec2types.ResponseLaunchTemplateData, error) {
	in := &ec2.DescribeLaunchTemplateVersionsInput{Versions: []string{"$Default"}}
	if v := aws.ToString(version); v != "" {
		in.Versions = []string{v}
	}
	if aws.ToString(id) != "" {
		in.LaunchTemplateId = id
	} else {
		in.LaunchTemplateName = name
	}
	out, err := api.EC2.DescribeLaunchTemplateVersions(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("ec2 DescribeLaunchTemplateVersions %s%s: %w", aws.ToString(id), aws.ToString(name), err)
	}
	if len(out.LaunchTemplateVersions) == 0 || out.LaunchTemplateVersions[0].LaunchTemplateData == nil {
		return nil, fmt.Errorf("launch template %s%s version %s not found", aws.ToString(id), aws.ToString(name), in.Versions[0])
	}
	return out.LaunchTemplateVersions[0].LaunchTemplateData, nil
}

// templateSecurityGroups are a launch template's security groups, from its
// own list or its network interfaces'.
func templateSecurityGroups(d *ec2types.ResponseLaunchTemplateData) []string {
	out := slices.Clone(d.SecurityGroupIds)
	for _, ni := range d.NetworkInterfaces {
		out = append(out, ni.Groups...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
