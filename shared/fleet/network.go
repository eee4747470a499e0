package fleet

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
)

// ErrNoPlacementGroup is why a class whose placementGroupSelector names no
// available placement group cannot launch (Karpenter's class is then not
// ready: PlacementGroupReady false).
var ErrNoPlacementGroup = errors.New("spec.placementGroupSelector: no available placement group matches")

// Placement group strategies (EC2's).
const (
	PlacementCluster   = string(ec2types.PlacementStrategyCluster)
	PlacementPartition = string(ec2types.PlacementStrategyPartition)
	PlacementSpread    = string(ec2types.PlacementStrategySpread)
)

// PlacementGroup is the placement group an EC2NodeClass selects.
type PlacementGroup struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	Strategy string `json:"strategy"`
	// Partitions is a partition group's partition count (0 otherwise).
	Partitions int32 `json:"partitions,omitempty"`
}

// placementGroup looks up the class's placementGroupSelector (nil when it
// has none): the available group of that ID or name. EC2 answers an
// unknown name or ID with an error; both mean no group.
func (l *Launcher) placementGroup(ctx context.Context, sel *apis.PlacementGroupSelector) (*PlacementGroup, error) {
	if sel == nil {
		return nil, nil
	}
	in := &ec2.DescribePlacementGroupsInput{Filters: []ec2types.Filter{{Name: aws.String("state"), Values: []string{string(ec2types.PlacementGroupStateAvailable)}}}}
	switch {
	case aws.ToString(sel.ID) != "":
		in.GroupIds = []string{*sel.ID}
	case aws.ToString(sel.Name) != "":
		in.GroupNames = []string{*sel.Name}
	default:
		return nil, ErrNoPlacementGroup
	}
	out, err := l.cfg.EC2.DescribePlacementGroups(ctx, in)
	if hasCode(err, "InvalidPlacementGroup.Unknown") || hasCode(err, "InvalidGroupId.Malformed") || hasCode(err, "InvalidPlacementGroupId.NotFound") {
		return nil, ErrNoPlacementGroup
	}
	if err != nil {
		return nil, fmt.Errorf("describe placement groups: %w", err)
	}
	for _, g := range out.PlacementGroups {
		if g.State != "" && g.State != ec2types.PlacementGroupStateAvailable {
			continue
		}
		return &PlacementGroup{ID: aws.ToString(g.GroupId), Name: aws.ToString(g.GroupName), Strategy: string(g.Strategy),
			Partitions: aws.ToInt32(g.PartitionCount)}, nil
	}
	return nil, ErrNoPlacementGroup
}

// efaOf returns, for each instance type, how many EFA interfaces its
// launch template attaches: as many as the type supports when the claim's
// pods ask for vpc.amazonaws.com/efa and the class defines no network
// interfaces of its own (those are attached as written), else none.
func efaOf(req Request, cat *catalog.Catalog) func(typ string) int {
	q, asks := req.Claim.Requests[apis.ResourceEFA]
	if !asks || q.IsZero() || len(req.NodeClass.Spec.NetworkInterfaces) > 0 {
		return func(string) int { return 0 }
	}
	return func(typ string) int {
		if it, ok := cat.Get(typ); ok {
			return it.EFA
		}
		return 0
	}
}

// splitByEFA splits each group of types (one AMI each) by the number of
// EFA interfaces its types get, as one launch template attaches one count:
// the sub-groups keep the types' order and take their group's place.
func splitByEFA(groups [][]string, images []AMI, efa func(string) int) ([][]string, []AMI) {
	var outGroups [][]string
	var outImages []AMI
	for i, g := range groups {
		index := map[int]int{}
		start := len(outGroups)
		for _, typ := range g {
			n := efa(typ)
			j, ok := index[n]
			if !ok {
				j = len(outGroups) - start
				index[n] = j
				outGroups = append(outGroups, nil)
				outImages = append(outImages, images[i])
			}
			outGroups[start+j] = append(outGroups[start+j], typ)
		}
	}
	return outGroups, outImages
}

// templateNetworking is what of a launch template the class's networking
// fields and the claim decide beyond the image and user data.
type templateNetworking struct {
	// EFA is how many EFA interfaces to attach (0: none).
	EFA int
	// PlacementGroup is the class's resolved group (nil: none), and
	// Partition the partition the claim targets (0: EC2 picks).
	PlacementGroup *PlacementGroup
	Partition      int32
}

// applyNetworking sets the template's network interfaces (or bare security
// groups), CPU options and placement, as Karpenter's launch template does:
// the class's networkInterfaces as written; else one EFA interface per
// network card when the pods ask for EFA; else a primary interface when
// the class sets what only an interface can carry (a public address, IP
// prefixes, connection tracking). connectionTracking, ipPrefixCount and
// associatePublicIPAddress go on every interface but EFA-only ones.
func applyNetworking(data *ec2types.RequestLaunchTemplateData, nc *apis.EC2NodeClass, sgs []string, n templateNetworking) {
	s := nc.Spec
	ct := connectionTracking(s.ConnectionTracking)
	switch {
	case len(s.NetworkInterfaces) > 0:
		for _, ni := range s.NetworkInterfaces {
			if ni == nil {
				continue
			}
			spec := ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{
				NetworkCardIndex: aws.Int32(ni.NetworkCardIndex), DeviceIndex: aws.Int32(ni.DeviceIndex),
				InterfaceType: aws.String(string(ni.InterfaceType)), Groups: sgs,
			}
			if ni.InterfaceType != apis.InterfaceTypeEFAOnly {
				spec.Ipv4PrefixCount, spec.AssociatePublicIpAddress, spec.ConnectionTrackingSpecification = s.IPPrefixCount, s.AssociatePublicIPAddress, ct
			}
			data.NetworkInterfaces = append(data.NetworkInterfaces, spec)
		}
	case n.EFA > 0:
		for i := range n.EFA {
			device := int32(1) // one card's interface (the first) ranks above the others'
			if i == 0 {
				device = 0
			}
			data.NetworkInterfaces = append(data.NetworkInterfaces, ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{
				NetworkCardIndex: aws.Int32(int32(i)), DeviceIndex: aws.Int32(device), InterfaceType: aws.String(string(ec2types.NetworkInterfaceTypeEfa)),
				Groups: sgs, Ipv4PrefixCount: s.IPPrefixCount, AssociatePublicIpAddress: s.AssociatePublicIPAddress, ConnectionTrackingSpecification: ct,
			})
		}
	case s.AssociatePublicIPAddress != nil || s.IPPrefixCount != nil || ct != nil:
		data.NetworkInterfaces = []ec2types.LaunchTemplateInstanceNetworkInterfaceSpecificationRequest{{
			DeviceIndex: aws.Int32(0), Groups: sgs, AssociatePublicIpAddress: s.AssociatePublicIPAddress,
			Ipv4PrefixCount: s.IPPrefixCount, ConnectionTrackingSpecification: ct,
		}}
	default:
		data.SecurityGroupIds = sgs
	}
	if o := s.CPUOptions; o != nil && o.NestedVirtualization != nil {
		data.CpuOptions = &ec2types.LaunchTemplateCpuOptionsRequest{NestedVirtualization: ec2types.NestedVirtualizationSpecification(*o.NestedVirtualization)}
	}
	if pg := n.PlacementGroup; pg != nil {
		data.Placement = &ec2types.LaunchTemplatePlacementRequest{GroupId: aws.String(pg.ID)}
		if n.Partition > 0 {
			data.Placement.PartitionNumber = aws.Int32(n.Partition)
		}
	}
}

func connectionTracking(ct *apis.ConnectionTracking) *ec2types.ConnectionTrackingSpecificationRequest {
	if ct == nil || (ct.TCPEstablishedTimeout == nil && ct.UDPStreamTimeout == nil && ct.UDPTimeout == nil) {
		return nil
	}
	return &ec2types.ConnectionTrackingSpecificationRequest{
		TcpEstablishedTimeout: ct.TCPEstablishedTimeout, UdpStreamTimeout: ct.UDPStreamTimeout, UdpTimeout: ct.UDPTimeout,
	}
}

// claimPartition is the partition of a partition placement group the claim
// targets: the lowest its requirements allow on
// karpenter.k8s.aws/placement-group-partition (0: none, EC2 picks).
func claimPartition(pg *PlacementGroup, reqs []corev1.NodeSelectorRequirement) int32 {
	if pg == nil || pg.Strategy != PlacementPartition {
		return 0
	}
	var best int64
	for _, r := range reqs {
		if r.Key != apis.LabelPlacementGroupPartition || r.Operator != corev1.NodeSelectorOpIn {
			continue
		}
		for _, v := range r.Values {
			if p, err := strconv.ParseInt(v, 10, 32); err == nil && p > 0 && (best == 0 || p < best) {
				best = p
			}
		}
	}
	return int32(best)
}

// placementLabels are the labels a node of a placement group carries: the
// group's ID, and for a partition group the targeted partition.
func placementLabels(pg *PlacementGroup, partition int32) map[string]string {
	if pg == nil {
		return nil
	}
	out := map[string]string{apis.LabelPlacementGroupID: pg.ID}
	if partition > 0 {
		out[apis.LabelPlacementGroupPartition] = strconv.Itoa(int(partition))
	}
	return out
}

// placeable leaves out the types the class's placement group cannot take
// (a cluster group takes no burstable, flex or Mac type), keeping order.
func (l *Launcher) placeable(nc *NodeClass, types []string) []string {
	pg := nc.PlacementGroup
	if pg == nil {
		return types
	}
	out := make([]string, 0, len(types))
	var left []string
	for _, typ := range types {
		if it, ok := l.catalog().Get(typ); ok && !it.SupportsPlacement(pg.Strategy) {
			left = append(left, typ)
			continue
		}
		out = append(out, typ)
	}
	if len(left) > 0 {
		l.cfg.Log.Warn("instance types left out of the fleet: the placement group does not take them", "nodeClass", nc.Name,
			"placementGroup", pg.ID, "strategy", pg.Strategy, "types", left)
	}
	return out
}

// withLabels is req with extra labels on its node (the claim's labels
// copied, not changed).
func withLabels(req Request, extra map[string]string) Request {
	if len(extra) == 0 {
		return req
	}
	labels := make(map[string]string, len(req.Claim.Labels)+len(extra))
	for k, v := range req.Claim.Labels {
		labels[k] = v
	}
	for k, v := range extra {
		labels[k] = v
	}
	req.Claim.Labels = labels
	return req
}
