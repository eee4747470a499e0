package fleet

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/smithy-go"

	"github.com/nodewright/nodewright/shared/apis"
)

// resolve looks the node class's selector terms up in the account.
func (l *Launcher) resolve(ctx context.Context, nc *apis.EC2NodeClass) (*NodeClass, error) {
	subnets, subnetIDs, err := l.subnets(ctx, nc.Spec.SubnetSelectorTerms)
	if err != nil {
		return nil, err
	}
	if len(subnets) == 0 {
		return nil, ErrNoSubnet
	}
	sgs, err := l.securityGroups(ctx, nc.Spec.SecurityGroupSelectorTerms)
	if err != nil {
		return nil, err
	}
	if len(sgs) == 0 {
		return nil, ErrNoSecurityGroup
	}
	amis, err := l.amis(ctx, nc)
	if err != nil {
		return nil, err
	}
	if len(amis) == 0 {
		return nil, ErrNoAMI
	}
	pg, err := l.placementGroup(ctx, nc.Spec.PlacementGroupSelector)
	if err != nil {
		return nil, err
	}
	reservations, err := l.reservations(ctx, nc.Spec.CapacityReservationSelectorTerms)
	if err != nil {
		return nil, err
	}
	return &NodeClass{Name: nc.Name, Subnets: subnets, SubnetIDs: subnetIDs, SecurityGroups: sgs, AMIs: amis, PlacementGroup: pg,
		Reservations: reservations, ResolvedAt: l.cfg.Now()}, nil
}

// tagFilters turns selector tags into EC2 filters: tag:<key>=<value>, or
// tag-key=<key> when the value is "*" (any value), sorted by key.
func tagFilters(tags map[string]string) []ec2types.Filter {
	keys := slices.Sorted(maps.Keys(tags))
	out := make([]ec2types.Filter, 0, len(keys))
	for _, k := range keys {
		if tags[k] == "*" {
			out = append(out, ec2types.Filter{Name: aws.String("tag-key"), Values: []string{k}})
			continue
		}
		out = append(out, ec2types.Filter{Name: aws.String("tag:" + k), Values: []string{tags[k]}})
	}
	return out
}

// subnetQueries is one DescribeSubnets per term (terms are ORed, a term's
// tags ANDed); terms that name IDs share one query.
func subnetQueries(terms []apis.SubnetSelectorTerm) []*ec2.DescribeSubnetsInput {
	var ids []string
	var out []*ec2.DescribeSubnetsInput
	for _, t := range terms {
		if t.ID != "" {
			ids = append(ids, t.ID)
			continue
		}
		if len(t.Tags) > 0 {
			out = append(out, &ec2.DescribeSubnetsInput{Filters: tagFilters(t.Tags)})
		}
	}
	if len(ids) > 0 {
		out = append([]*ec2.DescribeSubnetsInput{{Filters: []ec2types.Filter{{Name: aws.String("subnet-id"), Values: ids}}}}, out...)
	}
	return out
}

// subnets are the subnets the terms select: one per zone to launch into,
// and the IDs of all of them.
func (l *Launcher) subnets(ctx context.Context, terms []apis.SubnetSelectorTerm) ([]Subnet, []string, error) {
	var all []ec2types.Subnet
	for _, in := range subnetQueries(terms) {
		pages := ec2.NewDescribeSubnetsPaginator(l.cfg.EC2, in)
		for pages.HasMorePages() {
			out, err := pages.NextPage(ctx)
			if err != nil {
				return nil, nil, fmt.Errorf("describe subnets: %w", err)
			}
			all = append(all, out.Subnets...)
		}
	}
	return pickSubnets(all), subnetIDs(all), nil
}

// subnetIDs are the IDs of every subnet the terms select, sorted.
func subnetIDs(subnets []ec2types.Subnet) []string {
	ids := map[string]bool{}
	for _, s := range subnets {
		if id := aws.ToString(s.SubnetId); id != "" {
			ids[id] = true
		}
	}
	return slices.Sorted(maps.Keys(ids))
}

// pickSubnets keeps one available subnet per zone: the one with the most
// free addresses, then the lowest ID; the result is in zone order.
func pickSubnets(subnets []ec2types.Subnet) []Subnet {
	best := map[string]Subnet{}
	for _, s := range subnets {
		if s.State != "" && s.State != ec2types.SubnetStateAvailable {
			continue
		}
		c := Subnet{ID: aws.ToString(s.SubnetId), Zone: aws.ToString(s.AvailabilityZone), AvailableIPs: aws.ToInt32(s.AvailableIpAddressCount), MapsPublicIPv4: aws.ToBool(s.MapPublicIpOnLaunch)}
		if c.ID == "" || c.Zone == "" {
			continue
		}
		cur, ok := best[c.Zone]
		if !ok || c.AvailableIPs > cur.AvailableIPs || (c.AvailableIPs == cur.AvailableIPs && c.ID < cur.ID) {
			best[c.Zone] = c
		}
	}
	out := make([]Subnet, 0, len(best))
	for _, s := range best {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Zone < out[j].Zone })
	return out
}

// securityGroupQueries is one DescribeSecurityGroups per tag or name term;
// terms that name IDs share one query.
func securityGroupQueries(terms []apis.SecurityGroupSelectorTerm) []*ec2.DescribeSecurityGroupsInput {
	var ids []string
	var out []*ec2.DescribeSecurityGroupsInput
	for _, t := range terms {
		switch {
		case t.ID != "":
			ids = append(ids, t.ID)
		case t.Name != "":
			out = append(out, &ec2.DescribeSecurityGroupsInput{Filters: []ec2types.Filter{{Name: aws.String("group-name"), Values: []string{t.Name}}}})
		case len(t.Tags) > 0:
			out = append(out, &ec2.DescribeSecurityGroupsInput{Filters: tagFilters(t.Tags)})
		}
	}
	if len(ids) > 0 {
		out = append([]*ec2.DescribeSecurityGroupsInput{{Filters: []ec2types.Filter{{Name: aws.String("group-id"), Values: ids}}}}, out...)
	}
	return out
}

func (l *Launcher) securityGroups(ctx context.Context, terms []apis.SecurityGroupSelectorTerm) ([]string, error) {
	seen := map[string]bool{}
	for _, in := range securityGroupQueries(terms) {
		pages := ec2.NewDescribeSecurityGroupsPaginator(l.cfg.EC2, in)
		for pages.HasMorePages() {
			out, err := pages.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("describe security groups: %w", err)
			}
			for _, g := range out.SecurityGroups {
				if id := aws.ToString(g.GroupId); id != "" {
					seen[id] = true
				}
			}
		}
	}
	ids := make([]string, 0, len(seen))
	for id := range seen {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	return ids, nil
}

// amis resolves the AMI selector terms: an alias through the public SSM
// parameters of the cluster's Kubernetes version (one image per architecture
// and variant); other terms through DescribeImages (the newest image per
// architecture across the terms).
func (l *Launcher) amis(ctx context.Context, nc *apis.EC2NodeClass) ([]AMI, error) {
	if family, version, ok := nc.Alias(); ok {
		params, err := aliasParameters(family, l.cfg.Cluster.KubernetesVersion, version)
		if err != nil {
			return nil, fmt.Errorf("spec.amiSelectorTerms: %w", err)
		}
		return l.aliasAMIs(ctx, params)
	}
	var imgs []image
	var params []string
	for _, t := range nc.Spec.AMISelectorTerms {
		if t.SSMParameter != "" {
			params = append(params, t.SSMParameter)
			continue
		}
		found, err := l.describeImages(ctx, imageQuery(t))
		if err != nil {
			return nil, err
		}
		imgs = append(imgs, found...)
	}
	if len(params) > 0 {
		values, err := l.parameters(ctx, params)
		if err != nil {
			return nil, err
		}
		ids := make([]string, 0, len(values))
		for _, p := range params {
			if v, ok := values[p]; ok {
				ids = append(ids, v)
			}
		}
		found, err := l.describeImages(ctx, &ec2.DescribeImagesInput{ImageIds: ids})
		if err != nil {
			return nil, err
		}
		imgs = append(imgs, found...)
	}
	return newestPerArch(imgs), nil
}

// imageQuery is the DescribeImages call of one id, name, owner or tags term.
func imageQuery(t apis.AMISelectorTerm) *ec2.DescribeImagesInput {
	in := &ec2.DescribeImagesInput{Filters: tagFilters(t.Tags)}
	if t.ID != "" {
		in.ImageIds = []string{t.ID}
	}
	if t.Name != "" {
		in.Filters = append(in.Filters, ec2types.Filter{Name: aws.String("name"), Values: []string{t.Name}})
	}
	if t.Owner != "" {
		in.Owners = []string{t.Owner}
	}
	return in
}

func (l *Launcher) describeImages(ctx context.Context, in *ec2.DescribeImagesInput) ([]image, error) {
	var out []image
	pages := ec2.NewDescribeImagesPaginator(l.cfg.EC2, in)
	for pages.HasMorePages() {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describe images: %w", err)
		}
		for _, im := range page.Images {
			if im.State != "" && im.State != ec2types.ImageStateAvailable {
				continue
			}
			out = append(out, image{ID: aws.ToString(im.ImageId), Name: aws.ToString(im.Name),
				Arch: kubeArch(string(im.Architecture)), Created: aws.ToString(im.CreationDate)})
		}
	}
	return out, nil
}

// aliasAMIs reads the alias's parameters; a variant AWS does not publish
// for the version is skipped, as Karpenter skips it.
func (l *Launcher) aliasAMIs(ctx context.Context, params []aliasParameter) ([]AMI, error) {
	names := make([]string, 0, len(params))
	for _, p := range params {
		if !slices.Contains(names, p.Name) { // one image may serve several variants
			names = append(names, p.Name)
		}
	}
	values, err := l.parameters(ctx, names)
	if err != nil {
		return nil, err
	}
	var out []AMI
	for _, p := range params {
		if id, ok := values[p.Name]; ok && id != "" {
			out = append(out, AMI{ID: id, Arch: p.Arch, Variant: p.Variant})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: none of the AMI parameters of Kubernetes %s exists (%s, ...)", ErrNoAMI, l.cfg.Cluster.KubernetesVersion, names[0])
	}
	sortAMIs(out)
	return out, nil
}

// maxParametersPerCall is GetParameters' limit on names per request.
const maxParametersPerCall = 10

// parameters reads SSM parameters by name; missing ones are absent from the
// result.
func (l *Launcher) parameters(ctx context.Context, names []string) (map[string]string, error) {
	out := map[string]string{}
	for start := 0; start < len(names); start += maxParametersPerCall {
		chunk := names[start:min(start+maxParametersPerCall, len(names))]
		res, err := l.cfg.SSM.GetParameters(ctx, &ssm.GetParametersInput{Names: chunk})
		if err != nil {
			var ae smithy.APIError
			if errors.As(err, &ae) && ae.ErrorCode() == "AccessDeniedException" {
				return nil, fmt.Errorf("get SSM parameters %s: %w: the functions may read AWS's public parameters (/aws/service/...), "+
					"those the deployed EC2NodeClasses name in amiSelectorTerms[].ssmParameter, and those listed in the stack's "+
					"nodewright:ssmParameters context value: for an EC2NodeClass applied to the cluster, add its parameters there "+
					"(-c nodewright:ssmParameters=%s) and deploy the stack again", strings.Join(chunk, ", "), err, strings.Join(chunk, ","))
			}
			return nil, fmt.Errorf("get SSM parameters %s: %w", strings.Join(chunk, ", "), err)
		}
		for _, p := range res.Parameters {
			out[aws.ToString(p.Name)] = aws.ToString(p.Value)
		}
	}
	return out, nil
}
