package faults

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"
	"github.com/aws/smithy-go"

	"github.com/nodewright/nodewright/shared/fleet"
)

// instance is an EC2 instance of the fake.
type instance struct {
	ID, Type, Zone, Subnet, CapacityType, Image, DNS string
	State                                            string // pending, running, shutting-down, terminated
	Launched, Ended                                  time.Time
	Tags                                             map[string]string
	// By says who ended it: "nodewright" (TerminateInstances) or "reclaim"
	// (EC2 took a spot instance back).
	By string
	// Impaired is when its status check began to fail (zero: passing).
	Impaired time.Time
}

// offering is (instance type, zone, capacity type).
type offering struct{ Type, Zone, CapacityType string }

// EC2 is the fake EC2 at fleet.EC2API: subnets and a security group by
// tag, launch templates, instant fleets with ClientToken idempotency (the
// same token and request answer the first call's instances; the same token
// and another request answer IdempotentParameterMismatch), capacity per
// offering (ICE), the lowest price first, tags, DescribeInstances filters
// and TerminateInstances.
type EC2 struct {
	w         *World
	subnets   []ec2types.Subnet
	templates map[string]*template
	instances map[string]*instance
	tokens    map[string]fleetCall
	// noCapacity are offerings EC2 has no capacity in.
	noCapacity map[offering]bool
	// price of an offering (spot: the spot price table; on-demand: the
	// catalog's).
	price func(o offering) float64
	next  int
	// nextTemplate numbers launch templates' IDs.
	nextTemplate int
	// onLaunch sees every instance launched, and the token's request.
	onLaunch func(in *instance, token string)
}

// template is a launch template: its request, when it was made, its ID.
type template struct {
	in      *ec2.CreateLaunchTemplateInput
	created time.Time
	id      string
}

// tags are the template's own tags (its launch-template tag
// specification).
func (t *template) tags() []ec2types.Tag {
	var out []ec2types.Tag
	for _, ts := range t.in.TagSpecifications {
		if ts.ResourceType == ec2types.ResourceTypeLaunchTemplate {
			out = append(out, ts.Tags...)
		}
	}
	return out
}

type fleetCall struct {
	request string
	out     *ec2.CreateFleetOutput
}

var _ fleet.EC2API = (*EC2)(nil)

func newEC2(w *World, zones []string) *EC2 {
	e := &EC2{w: w, templates: map[string]*template{}, instances: map[string]*instance{},
		tokens: map[string]fleetCall{}, noCapacity: map[offering]bool{}}
	for i, z := range zones {
		e.subnets = append(e.subnets, ec2types.Subnet{
			SubnetId: aws.String(fmt.Sprintf("subnet-%d", i+1)), AvailabilityZone: aws.String(z), AvailableIpAddressCount: aws.Int32(1000),
			State: ec2types.SubnetStateAvailable, Tags: []ec2types.Tag{{Key: aws.String("karpenter.sh/discovery"), Value: aws.String(clusterName)}},
		})
	}
	return e
}

func apiErr(code, msg string) error { return &smithy.GenericAPIError{Code: code, Message: msg} }

var (
	ec2Throttled = fault{name: "RequestLimitExceeded", err: apiErr("RequestLimitExceeded", "Request limit exceeded.")}
	ec2Ambiguous = fault{name: "InternalError after effect", after: true, err: apiErr("InternalError", "An internal error has occurred")}
	// ec2ICE is answered by CreateFleet as EC2 does: no instance, an error
	// per override.
	ec2ICE = fault{name: "InsufficientInstanceCapacity", err: errICE}
	errICE = apiErr("InsufficientInstanceCapacity", "(fault) no capacity")
)

// tagMatch applies DescribeX tag filters.
func tagMatch(tags []ec2types.Tag, filters []ec2types.Filter) bool {
	m := map[string]string{}
	for _, t := range tags {
		m[aws.ToString(t.Key)] = aws.ToString(t.Value)
	}
	for _, f := range filters {
		name := aws.ToString(f.Name)
		switch {
		case strings.HasPrefix(name, "tag:"):
			if v, ok := m[strings.TrimPrefix(name, "tag:")]; !ok || !matches(f.Values, v) {
				return false
			}
		case name == "tag-key":
			ok := false
			for _, k := range f.Values {
				if _, has := m[k]; has {
					ok = true
				}
			}
			if !ok {
				return false
			}
		}
	}
	return true
}

// matches reports whether a filter's values match s (EC2 reads "*" as any
// value).
func matches(ss []string, s string) bool {
	for _, x := range ss {
		if x == s || x == "*" {
			return true
		}
	}
	return false
}

func (e *EC2) DescribeSubnets(ctx context.Context, in *ec2.DescribeSubnetsInput, _ ...func(*ec2.Options)) (*ec2.DescribeSubnetsOutput, error) {
	var out *ec2.DescribeSubnetsOutput
	err := e.w.call(ctx, "EC2", "DescribeSubnets", []fault{ec2Throttled}, func() error {
		out = &ec2.DescribeSubnetsOutput{}
		for _, s := range e.subnets {
			if tagMatch(s.Tags, in.Filters) && (len(in.SubnetIds) == 0 || matches(in.SubnetIds, aws.ToString(s.SubnetId))) {
				out.Subnets = append(out.Subnets, s)
			}
		}
		return nil
	})
	return out, err
}

// DescribeCapacityReservations answers that the account has none (the
// fault suite's classes select none).
func (e *EC2) DescribeCapacityReservations(ctx context.Context, _ *ec2.DescribeCapacityReservationsInput, _ ...func(*ec2.Options)) (*ec2.DescribeCapacityReservationsOutput, error) {
	var out *ec2.DescribeCapacityReservationsOutput
	err := e.w.call(ctx, "EC2", "DescribeCapacityReservations", []fault{ec2Throttled}, func() error {
		out = &ec2.DescribeCapacityReservationsOutput{}
		return nil
	})
	return out, err
}

func (e *EC2) DescribeSecurityGroups(ctx context.Context, in *ec2.DescribeSecurityGroupsInput, _ ...func(*ec2.Options)) (*ec2.DescribeSecurityGroupsOutput, error) {
	var out *ec2.DescribeSecurityGroupsOutput
	err := e.w.call(ctx, "EC2", "DescribeSecurityGroups", []fault{ec2Throttled}, func() error {
		out = &ec2.DescribeSecurityGroupsOutput{SecurityGroups: []ec2types.SecurityGroup{{GroupId: aws.String("sg-1")}}}
		return nil
	})
	return out, err
}

// DescribePlacementGroups knows no placement group (the suite's classes
// select none); it can be throttled like the other lookups.
func (e *EC2) DescribePlacementGroups(ctx context.Context, in *ec2.DescribePlacementGroupsInput, _ ...func(*ec2.Options)) (*ec2.DescribePlacementGroupsOutput, error) {
	var out *ec2.DescribePlacementGroupsOutput
	err := e.w.call(ctx, "EC2", "DescribePlacementGroups", []fault{ec2Throttled}, func() error {
		out = &ec2.DescribePlacementGroupsOutput{}
		return nil
	})
	return out, err
}

func (e *EC2) DescribeImages(ctx context.Context, in *ec2.DescribeImagesInput, _ ...func(*ec2.Options)) (*ec2.DescribeImagesOutput, error) {
	var out *ec2.DescribeImagesOutput
	err := e.w.call(ctx, "EC2", "DescribeImages", []fault{ec2Throttled}, func() error {
		out = &ec2.DescribeImagesOutput{}
		for _, id := range in.ImageIds {
			out.Images = append(out.Images, ec2types.Image{ImageId: aws.String(id), Architecture: ec2types.ArchitectureValuesX8664, State: ec2types.ImageStateAvailable, CreationDate: aws.String("2026-01-01T00:00:00.000Z")})
		}
		return nil
	})
	return out, err
}

// DescribeLaunchTemplates answers templates by name (NotFound when one is
// missing), else those its tag filters match, sorted by name, with their
// creation time; MaxResults pages them.
func (e *EC2) DescribeLaunchTemplates(ctx context.Context, in *ec2.DescribeLaunchTemplatesInput, _ ...func(*ec2.Options)) (*ec2.DescribeLaunchTemplatesOutput, error) {
	var out *ec2.DescribeLaunchTemplatesOutput
	err := e.w.call(ctx, "EC2", "DescribeLaunchTemplates", []fault{ec2Throttled}, func() error {
		out = &ec2.DescribeLaunchTemplatesOutput{}
		describe := func(n string) ec2types.LaunchTemplate {
			t := e.templates[n]
			return ec2types.LaunchTemplate{LaunchTemplateName: aws.String(n), LaunchTemplateId: aws.String(t.id), CreateTime: aws.Time(t.created), Tags: t.tags()}
		}
		if len(in.LaunchTemplateNames) > 0 {
			for _, n := range in.LaunchTemplateNames {
				if _, ok := e.templates[n]; !ok {
					return apiErr("InvalidLaunchTemplateName.NotFoundException", "At least one of the launch templates specified in the request does not exist.")
				}
				out.LaunchTemplates = append(out.LaunchTemplates, describe(n))
			}
			return nil
		}
		var all []ec2types.LaunchTemplate
		for _, n := range slices.Sorted(maps.Keys(e.templates)) {
			if tagMatch(e.templates[n].tags(), in.Filters) {
				all = append(all, describe(n))
			}
		}
		start := 0
		if tok := aws.ToString(in.NextToken); tok != "" {
			if _, err := fmt.Sscan(tok, &start); err != nil || start > len(all) {
				return apiErr("InvalidNextToken", "The specified token is invalid.")
			}
		}
		end := len(all)
		if m := int(aws.ToInt32(in.MaxResults)); m > 0 && start+m < end {
			end = start + m
			out.NextToken = aws.String(fmt.Sprint(end))
		}
		out.LaunchTemplates = all[start:end]
		return nil
	})
	return out, err
}

func (e *EC2) CreateLaunchTemplate(ctx context.Context, in *ec2.CreateLaunchTemplateInput, _ ...func(*ec2.Options)) (*ec2.CreateLaunchTemplateOutput, error) {
	err := e.w.call(ctx, "EC2", "CreateLaunchTemplate", []fault{ec2Throttled, ec2Ambiguous}, func() error {
		n := aws.ToString(in.LaunchTemplateName)
		if _, ok := e.templates[n]; ok {
			return apiErr("InvalidLaunchTemplateName.AlreadyExistsException", "Launch template name already in use.")
		}
		e.nextTemplate++
		e.templates[n] = &template{in: in, created: e.w.clock.Now(), id: fmt.Sprintf("lt-%017x", e.nextTemplate)}
		e.w.changed = true
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &ec2.CreateLaunchTemplateOutput{}, nil
}

// DeleteLaunchTemplate deletes a template by name or ID; one that does
// not exist is InvalidLaunchTemplateName.NotFoundException (by name) or
// InvalidLaunchTemplateId.NotFound (by ID), as EC2 answers.
func (e *EC2) DeleteLaunchTemplate(ctx context.Context, in *ec2.DeleteLaunchTemplateInput, _ ...func(*ec2.Options)) (*ec2.DeleteLaunchTemplateOutput, error) {
	err := e.w.call(ctx, "EC2", "DeleteLaunchTemplate", []fault{ec2Throttled, ec2Ambiguous}, func() error {
		if id := aws.ToString(in.LaunchTemplateId); id != "" {
			for n, t := range e.templates {
				if t.id == id {
					delete(e.templates, n)
					e.w.changed = true
					return nil
				}
			}
			return apiErr("InvalidLaunchTemplateId.NotFound", "The specified launch template, with template ID "+id+", does not exist.")
		}
		n := aws.ToString(in.LaunchTemplateName)
		if _, ok := e.templates[n]; !ok {
			return apiErr("InvalidLaunchTemplateName.NotFoundException", "The specified launch template, with template name "+n+", does not exist.")
		}
		delete(e.templates, n)
		e.w.changed = true
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &ec2.DeleteLaunchTemplateOutput{}, nil
}

// fingerprint is a CreateFleet request without its token: what EC2
// compares when a token comes again.
func fingerprint(in *ec2.CreateFleetInput) string {
	c := *in
	c.ClientToken = nil
	b, _ := json.Marshal(c)
	return string(b)
}

func (e *EC2) CreateFleet(ctx context.Context, in *ec2.CreateFleetInput, _ ...func(*ec2.Options)) (*ec2.CreateFleetOutput, error) {
	var out *ec2.CreateFleetOutput
	ice := false
	err := e.w.call(ctx, "EC2", "CreateFleet", []fault{ec2Throttled, ec2Ambiguous, ec2ICE}, func() error {
		token := aws.ToString(in.ClientToken)
		fp := fingerprint(in)
		if prev, ok := e.tokens[token]; ok && token != "" {
			if prev.request != fp {
				return apiErr("IdempotentParameterMismatch", "The client token you have provided is associated with a request that has different parameters.")
			}
			out = prev.out
			return nil
		}
		out = e.launch(in, token)
		if token != "" {
			e.tokens[token] = fleetCall{request: fp, out: out}
		}
		return nil
	})
	if err == errICE {
		ice, err = true, nil
	}
	if err != nil {
		return nil, err
	}
	if ice {
		out = &ec2.CreateFleetOutput{}
		for _, c := range in.LaunchTemplateConfigs {
			for _, o := range c.Overrides {
				out.Errors = append(out.Errors, ec2types.CreateFleetError{
					ErrorCode: aws.String("InsufficientInstanceCapacity"), ErrorMessage: aws.String("There is no Spot capacity available that matches your request."),
					LaunchTemplateAndOverrides: &ec2types.LaunchTemplateAndOverridesResponse{Overrides: &ec2types.FleetLaunchTemplateOverrides{InstanceType: o.InstanceType, SubnetId: o.SubnetId, AvailabilityZone: o.AvailabilityZone}},
				})
			}
		}
	}
	return out, nil
}

// launch carries out an instant fleet: the cheapest overrides with
// capacity, one instance each until the target is met.
func (e *EC2) launch(in *ec2.CreateFleetInput, token string) *ec2.CreateFleetOutput {
	out := &ec2.CreateFleetOutput{FleetId: aws.String(fmt.Sprintf("fleet-%d", e.next+1))}
	ct := "on-demand"
	target := 1
	if ts := in.TargetCapacitySpecification; ts != nil {
		ct = string(ts.DefaultTargetCapacityType)
		target = int(aws.ToInt32(ts.TotalTargetCapacity))
	}
	tags := map[string]string{}
	for _, ts := range in.TagSpecifications {
		if ts.ResourceType == ec2types.ResourceTypeInstance {
			for _, t := range ts.Tags {
				tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
			}
		}
	}
	type choice struct {
		o        offering
		subnet   string
		template string
		image    string
		ov       ec2types.FleetLaunchTemplateOverridesRequest
		price    float64
	}
	var choices []choice
	for _, c := range in.LaunchTemplateConfigs {
		name := aws.ToString(c.LaunchTemplateSpecification.LaunchTemplateName)
		lt, ok := e.templates[name]
		for _, ov := range c.Overrides {
			o := offering{string(ov.InstanceType), aws.ToString(ov.AvailabilityZone), ct}
			if !ok {
				out.Errors = append(out.Errors, ec2types.CreateFleetError{ErrorCode: aws.String("InvalidLaunchTemplateName.NotFoundException"), ErrorMessage: aws.String("launch template " + name + " does not exist"),
					LaunchTemplateAndOverrides: &ec2types.LaunchTemplateAndOverridesResponse{Overrides: &ec2types.FleetLaunchTemplateOverrides{InstanceType: ov.InstanceType, SubnetId: ov.SubnetId, AvailabilityZone: ov.AvailabilityZone}}})
				continue
			}
			if e.noCapacity[o] {
				out.Errors = append(out.Errors, ec2types.CreateFleetError{ErrorCode: aws.String("InsufficientInstanceCapacity"), ErrorMessage: aws.String("no capacity"), Lifecycle: ec2types.InstanceLifecycle(ct),
					LaunchTemplateAndOverrides: &ec2types.LaunchTemplateAndOverridesResponse{Overrides: &ec2types.FleetLaunchTemplateOverrides{InstanceType: ov.InstanceType, SubnetId: ov.SubnetId, AvailabilityZone: ov.AvailabilityZone}}})
				continue
			}
			choices = append(choices, choice{o: o, subnet: aws.ToString(ov.SubnetId), template: name, image: aws.ToString(lt.in.LaunchTemplateData.ImageId), ov: ov, price: e.price(o)})
		}
	}
	sort.SliceStable(choices, func(i, j int) bool { return choices[i].price < choices[j].price })
	if len(choices) == 0 {
		return out
	}
	best := choices[0]
	var ids []string
	for range target {
		e.next++
		in := &instance{ID: fmt.Sprintf("i-%017x", e.next), Type: best.o.Type, Zone: best.o.Zone, Subnet: best.subnet, CapacityType: ct, Image: best.image,
			DNS: fmt.Sprintf("ip-10-0-%d-%d.ec2.internal", e.next/250, e.next%250), State: "pending", Launched: e.w.clock.Now(), Tags: map[string]string{}}
		for k, v := range tags {
			in.Tags[k] = v
		}
		e.instances[in.ID] = in
		ids = append(ids, in.ID)
		if e.onLaunch != nil {
			e.onLaunch(in, token)
		}
	}
	e.w.changed = true
	out.Instances = []ec2types.CreateFleetInstance{{
		InstanceIds: ids, InstanceType: ec2types.InstanceType(best.o.Type), Lifecycle: ec2types.InstanceLifecycle(ct),
		LaunchTemplateAndOverrides: &ec2types.LaunchTemplateAndOverridesResponse{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecification{LaunchTemplateName: aws.String(best.template)},
			Overrides:                   &ec2types.FleetLaunchTemplateOverrides{InstanceType: best.ov.InstanceType, SubnetId: best.ov.SubnetId, AvailabilityZone: best.ov.AvailabilityZone},
		},
	}}
	return out
}

func (e *EC2) DescribeInstances(ctx context.Context, in *ec2.DescribeInstancesInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstancesOutput, error) {
	var out *ec2.DescribeInstancesOutput
	err := e.w.call(ctx, "EC2", "DescribeInstances", []fault{ec2Throttled}, func() error {
		out = &ec2.DescribeInstancesOutput{}
		ids := make([]string, 0, len(e.instances))
		for id := range e.instances {
			ids = append(ids, id)
		}
		sort.Strings(ids)
		var states []string
		var tagFilters []ec2types.Filter
		for _, f := range in.Filters {
			if aws.ToString(f.Name) == "instance-state-name" {
				states = f.Values
			} else {
				tagFilters = append(tagFilters, f)
			}
		}
		var res ec2types.Reservation
		for _, id := range ids {
			i := e.instances[id]
			if len(in.InstanceIds) > 0 && !matches(in.InstanceIds, id) {
				continue
			}
			if states != nil && !matches(states, i.State) {
				continue
			}
			var tags []ec2types.Tag
			keys := make([]string, 0, len(i.Tags))
			for k := range i.Tags {
				keys = append(keys, k)
			}
			sort.Strings(keys)
			for _, k := range keys {
				tags = append(tags, ec2types.Tag{Key: aws.String(k), Value: aws.String(i.Tags[k])})
			}
			if !tagMatch(tags, tagFilters) {
				continue
			}
			res.Instances = append(res.Instances, ec2types.Instance{
				InstanceId: aws.String(id), InstanceType: ec2types.InstanceType(i.Type), LaunchTime: aws.Time(i.Launched),
				Placement: &ec2types.Placement{AvailabilityZone: aws.String(i.Zone)}, State: &ec2types.InstanceState{Name: ec2types.InstanceStateName(i.State)},
				PrivateDnsName: aws.String(i.DNS), Tags: tags, InstanceLifecycle: lifecycleOf(i.CapacityType), ImageId: aws.String(i.Image),
			})
		}
		if len(res.Instances) > 0 {
			out.Reservations = []ec2types.Reservation{res}
		}
		return nil
	})
	return out, err
}

// DescribeInstanceStatus answers the running instances' status checks: an
// impaired instance fails its instance reachability check.
func (e *EC2) DescribeInstanceStatus(ctx context.Context, in *ec2.DescribeInstanceStatusInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstanceStatusOutput, error) {
	var out *ec2.DescribeInstanceStatusOutput
	err := e.w.call(ctx, "EC2", "DescribeInstanceStatus", []fault{ec2Throttled}, func() error {
		out = &ec2.DescribeInstanceStatusOutput{}
		for _, id := range in.InstanceIds {
			i := e.instances[id]
			if i == nil || i.State != "running" {
				continue
			}
			ok := &ec2types.InstanceStatusSummary{Status: ec2types.SummaryStatusOk}
			st := ec2types.InstanceStatus{InstanceId: aws.String(id), InstanceStatus: ok, SystemStatus: ok}
			if !i.Impaired.IsZero() {
				st.InstanceStatus = &ec2types.InstanceStatusSummary{Status: ec2types.SummaryStatusImpaired, Details: []ec2types.InstanceStatusDetails{
					{Name: ec2types.StatusNameReachability, Status: ec2types.StatusTypeFailed, ImpairedSince: aws.Time(i.Impaired)}}}
			}
			out.InstanceStatuses = append(out.InstanceStatuses, st)
		}
		return nil
	})
	return out, err
}

func lifecycleOf(ct string) ec2types.InstanceLifecycleType {
	if ct == "spot" {
		return ec2types.InstanceLifecycleTypeSpot
	}
	return ""
}

func (e *EC2) TerminateInstances(ctx context.Context, in *ec2.TerminateInstancesInput, _ ...func(*ec2.Options)) (*ec2.TerminateInstancesOutput, error) {
	err := e.w.call(ctx, "EC2", "TerminateInstances", []fault{ec2Throttled, ec2Ambiguous}, func() error {
		for _, id := range in.InstanceIds {
			if e.instances[id] == nil {
				return apiErr("InvalidInstanceID.NotFound", "The instance ID '"+id+"' does not exist")
			}
		}
		for _, id := range in.InstanceIds {
			e.w.end(e.instances[id], "nodewright")
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &ec2.TerminateInstancesOutput{}, nil
}

func (e *EC2) CreateTags(ctx context.Context, in *ec2.CreateTagsInput, _ ...func(*ec2.Options)) (*ec2.CreateTagsOutput, error) {
	err := e.w.call(ctx, "EC2", "CreateTags", []fault{ec2Throttled, ec2Ambiguous}, func() error {
		for _, id := range in.Resources {
			i := e.instances[id]
			if i == nil {
				return apiErr("InvalidInstanceID.NotFound", "The instance ID '"+id+"' does not exist")
			}
			for _, t := range in.Tags {
				i.Tags[aws.ToString(t.Key)] = aws.ToString(t.Value)
			}
			e.w.touch(id, "CreateTags")
		}
		e.w.changed = true
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &ec2.CreateTagsOutput{}, nil
}

// SSM answers the AMI alias parameters: every name has a value, the
// current AMI generation's (an AMI release changes it).
type SSM struct {
	w          *World
	generation int
}

var _ fleet.SSMAPI = (*SSM)(nil)

func (s *SSM) GetParameters(ctx context.Context, in *ssm.GetParametersInput, _ ...func(*ssm.Options)) (*ssm.GetParametersOutput, error) {
	var out *ssm.GetParametersOutput
	err := s.w.call(ctx, "SSM", "GetParameters", []fault{{name: "ThrottlingException", err: apiErr("ThrottlingException", "Rate exceeded")}}, func() error {
		out = &ssm.GetParametersOutput{}
		for _, n := range in.Names {
			out.Parameters = append(out.Parameters, ssmtypes.Parameter{Name: aws.String(n), Value: aws.String(fmt.Sprintf("ami-%08x%d", hash(n)&0xffffffff, s.generation))})
		}
		return nil
	})
	return out, err
}

func hash(s string) uint64 {
	var h uint64 = 14695981039346656037
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}
