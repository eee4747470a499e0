package fleet

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/nodewright/nodewright/shared/apis"
)

// Plan is a fleet request resolved against the account: everything the
// CreateFleet call is built from (its ClientToken, launch templates and
// their AMIs, instance types, subnets, capacity type, tags). The launcher
// stores it in the NodeClaim records before it calls CreateFleet, so a
// re-drive of the launch sends the very same request: EC2 then answers
// with the first call's instances, whatever changed in the EC2NodeClass
// since (an AMI released, a subnet added).
type Plan struct {
	// Token is the fleet's ClientToken (see LaunchToken).
	Token string `json:"token"`
	// NodeClaim is the name the instances are tagged with (the group's
	// first NodeClaim); NodePool the pool's.
	NodeClaim string `json:"nodeClaim"`
	NodePool  string `json:"nodePool"`
	// Count is how many identical instances the fleet launches.
	Count        int    `json:"count"`
	CapacityType string `json:"capacityType"`
	// Templates are the launch templates (one per AMI) with the instance
	// types that launch with each, in price order.
	Templates []PlannedTemplate `json:"templates"`
	// Subnets are the subnets in the claim's zones, in zone order.
	Subnets []Subnet `json:"subnets"`
	// Exclude are offerings (type and zone, for the plan's capacity type)
	// left out of the fleet's overrides: those refused recently, and the
	// one being reclaimed that the launch replaces.
	Exclude []UnavailableOffering `json:"exclude,omitempty"`
	// Tags go on the instances, their volumes and the fleet.
	Tags map[string]string `json:"tags"`
	// Context is the EC2NodeClass's spec.context (reserved capacity).
	Context *string `json:"context,omitempty"`
	// SecurityGroups are the security groups the launch templates attach
	// (recorded on the NodeClaims for security group drift).
	SecurityGroups []string `json:"securityGroups,omitempty"`
	// Order is the claim's instance types in the order the solve priced
	// them (NodeOverlays and node costs included): an on-demand fleet
	// launches by it. Empty in plans stored before it was kept: EC2's
	// lowest-price.
	Order []string `json:"order,omitempty"`
	// PriceOverlaid: a NodeOverlay priced one of the types, so a spot
	// fleet launches by Order too (capacity-optimized-prioritized, as
	// Karpenter does).
	PriceOverlaid bool `json:"priceOverlaid,omitempty"`
	// PlacementGroup is the ID of the placement group the templates launch
	// into ("": none; recorded for placement group drift).
	PlacementGroup string `json:"placementGroup,omitempty"`
	// Reservation is the capacity reservation the fleet launches into
	// (CapacityType reserved), nil for on-demand and spot.
	Reservation *Reservation `json:"reservation,omitempty"`
}

// PlannedTemplate is one launch template of a plan.
type PlannedTemplate struct {
	Name    string   `json:"name"`
	ImageID string   `json:"imageId"`
	Types   []string `json:"types"`
}

// TemplateNames returns the names of the launch templates the plan uses.
func (p *Plan) TemplateNames() []string {
	out := make([]string, 0, len(p.Templates))
	for _, t := range p.Templates {
		out = append(out, t.Name)
	}
	return out
}

// LaunchToken is the ClientToken of one launch: a hash of the cluster, the
// launch's (group's) name and a random nonce drawn for the launch, so that
// no two clusters of an account and region, and no two launches of one
// cluster, ever share a token (a bare NodeClaim name has 27^5 values per
// pool name). A re-drive reuses the token stored in the records.
func LaunchToken(cluster, name, nonce string) string {
	sum := sha256.Sum256([]byte(cluster + "\x00" + name + "\x00" + nonce))
	return "nw-" + hex.EncodeToString(sum[:])[:40]
}

// Prepare resolves a request into the plan of its fleet: the EC2NodeClass
// (subnets in the claim's zones, the AMIs that boot its types), the launch
// templates (made now when missing), the overrides. Nothing is launched.
func (l *Launcher) Prepare(ctx context.Context, req Request) (*Plan, error) {
	if err := validate(req); err != nil {
		return nil, err
	}
	nc, err := l.Resolve(ctx, req.NodeClass)
	if err != nil {
		return nil, err
	}
	rsv, err := claimReservation(nc, req.Claim, l.cfg.Now())
	if err != nil {
		return nil, err
	}
	subnets := claimSubnets(nc, req.Claim.Zones)
	if len(subnets) == 0 {
		return nil, fmt.Errorf("EC2NodeClass %s has no subnet in the claim's zones %v (it has %v)", nc.Name, req.Claim.Zones, nc.Zones())
	}
	groups, images, err := l.groupByAMI(nc, l.placeable(nc, req.Claim.InstanceTypes))
	if err != nil {
		return nil, err
	}
	groups, images = splitByEFA(groups, images, efaOf(req, l.catalog()))
	templates, err := l.makeTemplates(ctx, req, nc, groups, images, rsv)
	if err != nil {
		return nil, err
	}
	token := req.Token
	if token == "" {
		token = ClientToken(req.Name)
	}
	p := &Plan{
		Token: token, NodeClaim: req.Name, NodePool: req.Claim.NodePool, Count: max(req.Count, 1),
		CapacityType: capacityTypeOf(req.Claim.CapacityTypes), Subnets: subnets, Exclude: req.Exclude,
		Tags: instanceTags(l.cfg.Cluster.Name, req.Claim.NodePool, req.Name, req.NodeClass), Context: req.NodeClass.Spec.Context,
		SecurityGroups: nc.SecurityGroups, Order: req.Claim.InstanceTypes,
		PriceOverlaid: req.Claim.PriceOverlaid, Reservation: rsv,
	}
	if nc.PlacementGroup != nil {
		p.PlacementGroup = nc.PlacementGroup.ID
	}
	if rsv != nil {
		p.CapacityType = apis.CapacityTypeReserved
	}
	for i, t := range templates {
		p.Templates = append(p.Templates, PlannedTemplate{Name: t.Name, ImageID: images[i].ID, Types: t.Types})
	}
	if _, err := planInput(p); err != nil {
		return nil, err
	}
	return p, nil
}

// LaunchPlan calls CreateFleet with the plan's request and reads its
// answer, as LaunchGroup does.
func (l *Launcher) LaunchPlan(ctx context.Context, p *Plan) ([]*Instance, error) {
	if p == nil || p.Token == "" || len(p.Templates) == 0 {
		return nil, fmt.Errorf("launch: an incomplete fleet plan")
	}
	in, err := planInput(p)
	if err != nil {
		return nil, fmt.Errorf("launch nodeclaims %s (%d): %w", p.NodeClaim, p.Count, err)
	}
	imageOf := map[string]string{}
	for _, t := range p.Templates {
		imageOf[t.Name] = t.ImageID
	}
	insts, err := l.createFleet(ctx, p, in, imageOf)
	if err != nil {
		return nil, fmt.Errorf("launch nodeclaims %s (%d): %w", p.NodeClaim, p.Count, err)
	}
	return insts, nil
}

// planInput is the CreateFleet request of a plan.
func planInput(p *Plan) (*ec2.CreateFleetInput, error) {
	rank := make(map[string]float64, len(p.Order))
	for i, typ := range p.Order {
		if p.CapacityType != apis.CapacityTypeSpot || p.PriceOverlaid {
			rank[typ] = float64(i)
		}
	}
	ts := make([]templateOverrides, 0, len(p.Templates))
	for _, t := range p.Templates {
		to := templateOverrides{Name: t.Name, Types: t.Types}
		for _, typ := range t.Types {
			r, ok := rank[typ]
			if !ok {
				to.Priorities = nil
				break
			}
			to.Priorities = append(to.Priorities, r)
		}
		ts = append(ts, to)
	}
	var skip func(typ, zone string) bool
	if len(p.Exclude) > 0 {
		out := map[[2]string]bool{}
		for _, o := range p.Exclude {
			if o.CapacityType == "" || o.CapacityType == p.CapacityType {
				out[[2]string{o.InstanceType, o.Zone}] = true
			}
		}
		skip = func(typ, zone string) bool { return out[[2]string{typ, zone}] }
	}
	if p.Reservation == nil {
		return fleetInput(p.Token, p.Count, p.CapacityType, ts, p.Subnets, p.Tags, p.Context, skip)
	}
	in, err := fleetInput(p.Token, p.Count, apis.CapacityTypeOnDemand, ts, p.Subnets, p.Tags, p.Context, skip)
	if err == nil && p.Reservation.IsBlock() {
		// A Capacity Block is its own market: the fleet asks for
		// capacity-block capacity, with no on-demand options.
		in.TargetCapacitySpecification.DefaultTargetCapacityType = ec2types.DefaultTargetCapacityTypeCapacityBlock
		in.OnDemandOptions = nil
	}
	return in, err
}
