package fleet

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	"github.com/aws/smithy-go"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/scheduling"
)

// DefaultCacheTTL is how long a Launcher trusts a resolved EC2NodeClass
// and a launch template it has seen.
const DefaultCacheTTL = 5 * time.Minute

// Config configures a Launcher.
type Config struct {
	Cluster Cluster
	// InstanceProfile is the node role's instance profile (the stack's).
	InstanceProfile string
	EC2             EC2API
	SSM             SSMAPI
	// Catalog knows every instance type a claim may name.
	Catalog *catalog.Catalog
	// Spot prices spot launches in Instance.PricePerHour (nil: 0).
	Spot catalog.SpotPricer
	// CacheTTL bounds how long resolved node classes and launch templates
	// are reused (0: DefaultCacheTTL).
	CacheTTL time.Duration
	Now      func() time.Time
	Log      *slog.Logger
}

// Launcher launches NodeClaims. It is safe for concurrent use; it caches
// resolved EC2NodeClasses and the launch templates it made or found.
type Launcher struct {
	cfg       Config
	classes   memo[*NodeClass]
	templates memo[string]
	used      usage // when each template was last used (CollectTemplates)
	// regional is the region's catalog UseCatalog gave (nil: cfg.Catalog).
	regional atomic.Pointer[catalog.Catalog]
}

// UseCatalog makes the launcher price and look up types in c (the
// region's catalog, refreshed between rounds) instead of cfg.Catalog.
func (l *Launcher) UseCatalog(c *catalog.Catalog) { l.regional.Store(c) }

func (l *Launcher) catalog() *catalog.Catalog {
	if c := l.regional.Load(); c != nil {
		return c
	}
	return l.cfg.Catalog
}

// New checks cfg and returns a Launcher.
func New(cfg Config) (*Launcher, error) {
	var missing []string
	for _, f := range []struct {
		name string
		ok   bool
	}{
		{"Cluster.Name", cfg.Cluster.Name != ""}, {"Cluster.Endpoint", cfg.Cluster.Endpoint != ""},
		{"Cluster.CertificateAuthority", len(cfg.Cluster.CertificateAuthority) > 0},
		{"Cluster.KubernetesVersion", cfg.Cluster.KubernetesVersion != ""}, {"InstanceProfile", cfg.InstanceProfile != ""},
		{"EC2", cfg.EC2 != nil}, {"SSM", cfg.SSM != nil}, {"Catalog", cfg.Catalog != nil},
	} {
		if !f.ok {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("fleet: config needs %s", strings.Join(missing, ", "))
	}
	if cfg.CacheTTL <= 0 {
		cfg.CacheTTL = DefaultCacheTTL
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Launcher{cfg: cfg}, nil
}

// Resolve returns the EC2NodeClass resolved against the account: its
// subnets (one per zone), security groups and AMIs.
func (l *Launcher) Resolve(ctx context.Context, nc *apis.EC2NodeClass) (*NodeClass, error) {
	if nc == nil {
		return nil, errors.New("resolve: no EC2NodeClass")
	}
	r, err := l.classes.get(ctx, nc.Name+"/"+nc.Hash(), l.cfg.Now(), l.cfg.CacheTTL, func() (*NodeClass, error) {
		return l.resolve(ctx, nc)
	})
	if err != nil {
		return nil, fmt.Errorf("resolve EC2NodeClass %s: %w", nc.Name, err)
	}
	return r, nil
}

// Zones returns the zones the node classes have subnets in, sorted: the
// zones a solve may plan for.
func (l *Launcher) Zones(ctx context.Context, classes []*apis.EC2NodeClass) ([]string, error) {
	seen := map[string]bool{}
	var errs []error
	for _, nc := range classes {
		r, err := l.Resolve(ctx, nc)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, z := range r.Zones() {
			seen[z] = true
		}
	}
	zones := make([]string, 0, len(seen))
	for z := range seen {
		zones = append(zones, z)
	}
	slices.Sort(zones)
	return zones, errors.Join(errs...)
}

// Launch launches one instance for the NodeClaim with one instant
// CreateFleet call. When EC2 launches nothing the error is (wraps) a
// *LaunchError that lists the refused offerings; errors.Is(err,
// ErrUnavailableOffering) tells a capacity shortage from a bad request.
func (l *Launcher) Launch(ctx context.Context, req Request) (*Instance, error) {
	if req.Count > 1 {
		return nil, fmt.Errorf("launch nodeclaim %s: Launch takes one instance, not %d (LaunchGroup)", req.Name, req.Count)
	}
	insts, err := l.launch(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("launch nodeclaim %s: %w", req.Name, err)
	}
	return insts[0], nil
}

// LaunchGroup launches req.Count identical instances with one instant
// CreateFleet call (ClientToken req.Name): the instances EC2 launched,
// sorted by ID, each with the offerings the fleet refused; fewer than
// Count when EC2 ran short. When it launched none the error is a
// *LaunchError as for Launch.
func (l *Launcher) LaunchGroup(ctx context.Context, req Request) ([]*Instance, error) {
	insts, err := l.launch(ctx, req)
	if err != nil {
		return nil, fmt.Errorf("launch nodeclaims %s (%d): %w", req.Name, max(req.Count, 1), err)
	}
	return insts, nil
}

func (l *Launcher) launch(ctx context.Context, req Request) ([]*Instance, error) {
	p, err := l.Prepare(ctx, req)
	if err != nil {
		return nil, err
	}
	in, err := planInput(p)
	if err != nil {
		return nil, err
	}
	imageOf := map[string]string{}
	for _, t := range p.Templates {
		imageOf[t.Name] = t.ImageID
	}
	return l.createFleet(ctx, p, in, imageOf)
}

func validate(req Request) error {
	switch {
	case req.Name == "":
		return errors.New("request has no NodeClaim name")
	case req.NodeClass == nil:
		return fmt.Errorf("NodePool %s: no EC2NodeClass", req.Claim.NodePool)
	case req.Claim.NodeClass != "" && req.Claim.NodeClass != req.NodeClass.Name:
		return fmt.Errorf("claim of EC2NodeClass %s given EC2NodeClass %s", req.Claim.NodeClass, req.NodeClass.Name)
	case len(req.Claim.InstanceTypes) == 0:
		return errors.New("claim has no instance types")
	case len(req.Claim.Zones) == 0:
		return errors.New("claim has no zones")
	}
	for _, ct := range req.Claim.CapacityTypes {
		if ct == apis.CapacityTypeReserved && req.Claim.CapacityReservationID != "" && len(req.Claim.CapacityTypes) == 1 {
			continue
		}
		if ct != apis.CapacityTypeSpot && ct != apis.CapacityTypeOnDemand {
			return fmt.Errorf("capacity type %q: Nodewright launches spot and on-demand, and reserved into the one reservation a claim names", ct)
		}
	}
	return nil
}

// claimSubnets are the node class's subnets in the claim's zones.
func claimSubnets(nc *NodeClass, zones []string) []Subnet {
	var out []Subnet
	for _, z := range zones {
		if s, ok := nc.subnetIn(z); ok {
			out = append(out, s)
		}
	}
	return out
}

// groupByAMI splits the claim's types by the AMI that boots them, keeping
// price order within each group and ordering groups by their cheapest type.
// Types the catalog does not know or no AMI boots are left out.
func (l *Launcher) groupByAMI(nc *NodeClass, types []string) ([][]string, []AMI, error) {
	index := map[string]int{}
	var groups [][]string
	var images []AMI
	var skipped []string
	for _, name := range types {
		it, ok := l.catalog().Get(name)
		if !ok {
			skipped = append(skipped, name+" (not in the catalog)")
			continue
		}
		ami, ok := amiFor(nc.AMIs, it)
		if !ok {
			skipped = append(skipped, name+" (no "+it.Arch+" "+variantOf(it)+" AMI)")
			continue
		}
		i, ok := index[ami.ID]
		if !ok {
			i = len(groups)
			index[ami.ID] = i
			groups = append(groups, nil)
			images = append(images, ami)
		}
		groups[i] = append(groups[i], name)
	}
	if len(skipped) > 0 {
		l.cfg.Log.Warn("instance types left out of the fleet", "nodeClass", nc.Name, "types", skipped)
	}
	if len(groups) == 0 {
		return nil, nil, fmt.Errorf("no AMI of EC2NodeClass %s boots any of the claim's types: %s", nc.Name, strings.Join(skipped, ", "))
	}
	return groups, images, nil
}

// makeTemplates makes (or finds) one launch template per AMI.
func (l *Launcher) makeTemplates(ctx context.Context, req Request, nc *NodeClass, groups [][]string, images []AMI, rsv *Reservation) ([]templateOverrides, error) {
	partition := claimPartition(nc.PlacementGroup, req.Claim.Requirements)
	userData, err := l.userData(withLabels(req, placementLabels(nc.PlacementGroup, partition)))
	if err != nil {
		return nil, err
	}
	efa := efaOf(req, l.catalog())
	out := make([]templateOverrides, 0, len(groups))
	for i, types := range groups {
		in, err := launchTemplateInput(templateSpec{
			Cluster: l.cfg.Cluster, NodePool: req.Claim.NodePool, NodeClass: req.NodeClass, AMI: images[i],
			SecurityGroups: nc.SecurityGroups, InstanceProfile: l.cfg.InstanceProfile, UserData: userData, Reservation: rsv,
			Networking: templateNetworking{EFA: efa(types[0]), PlacementGroup: nc.PlacementGroup, Partition: partition},
			CPUCredits: catalog.CreditMode(types),
		})
		if err != nil {
			return nil, err
		}
		name, err := l.ensureTemplate(ctx, in)
		if err != nil {
			return nil, err
		}
		out = append(out, templateOverrides{Name: name, Types: types})
	}
	return out, nil
}

// userData is the node's user data for the EC2NodeClass's AMI family.
func (l *Launcher) userData(req Request) (string, error) {
	nc := req.NodeClass
	node := func() NodeSettings {
		return NodeSettings{
			Labels:              nodeLabels(req.Claim.Labels, req.Claim.NodePool, nc.Name),
			Taints:              append(append([]corev1.Taint(nil), req.Claim.Taints...), req.Claim.StartupTaints...),
			Kubelet:             nc.Spec.Kubelet,
			InstanceStorePolicy: nc.Spec.InstanceStorePolicy,
		}
	}
	switch family := nc.AMIFamily(); family {
	case apis.AMIFamilyAL2023:
		return AL2023UserData(l.cfg.Cluster, nc.Spec.UserData, node())
	case apis.AMIFamilyAL2:
		return AL2UserData(l.cfg.Cluster, nc.Spec.UserData, node())
	case apis.AMIFamilyBottlerocket:
		return BottlerocketUserData(l.cfg.Cluster, nc.Spec.UserData, node())
	case apis.AMIFamilyWindows2019, apis.AMIFamilyWindows2022, apis.AMIFamilyWindows2025:
		return WindowsUserData(l.cfg.Cluster, nc.Spec.UserData, node()), nil
	case apis.AMIFamilyCustom:
		return CustomUserData(nc.Spec.UserData), nil
	default:
		return "", fmt.Errorf("EC2NodeClass %s: AMI family %s is not supported yet (Nodewright launches AL2023, AL2, Bottlerocket, Windows and Custom)", nc.Name, family)
	}
}

// ensureTemplate returns the name of a launch template with in's content:
// the one that exists under its name, else a new one.
func (l *Launcher) ensureTemplate(ctx context.Context, in *ec2.CreateLaunchTemplateInput) (string, error) {
	name := aws.ToString(in.LaunchTemplateName)
	l.used.touch(name, l.cfg.Now())
	return l.templates.get(ctx, name, l.cfg.Now(), l.cfg.CacheTTL, func() (string, error) {
		out, err := l.cfg.EC2.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{LaunchTemplateNames: []string{name}})
		if err == nil && len(out.LaunchTemplates) > 0 {
			l.cfg.Log.Debug("launch template reused", "name", name)
			return name, nil
		}
		if err != nil && !hasCode(err, "InvalidLaunchTemplateName.NotFoundException") {
			return "", fmt.Errorf("describe launch template %s: %w", name, err)
		}
		if _, err := l.cfg.EC2.CreateLaunchTemplate(ctx, in); err != nil && !hasCode(err, "InvalidLaunchTemplateName.AlreadyExistsException") {
			return "", fmt.Errorf("create launch template %s: %w", name, err)
		}
		l.cfg.Log.Info("launch template created", "name", name, "image", aws.ToString(in.LaunchTemplateData.ImageId))
		return name, nil
	})
}

// createFleet calls CreateFleet and reads its answer. If the fleet failed
// because a cached launch template has gone, the cache is dropped so that
// the next launch (under a new NodeClaim name) makes it again.
func (l *Launcher) createFleet(ctx context.Context, p *Plan, in *ec2.CreateFleetInput, imageOf map[string]string) ([]*Instance, error) {
	ct := p.CapacityType
	out, err := l.cfg.EC2.CreateFleet(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("create fleet: %w", err)
	}
	zoneOf := map[string]string{}
	for _, s := range p.Subnets {
		zoneOf[s.ID] = s.Zone
	}
	got, ferrs := fleetOutcome(out, ct, zoneOf)
	if len(got) == 0 {
		if templateGone(ferrs) {
			l.templates.clear()
		}
		return nil, &LaunchError{Unavailable: unavailableOf(ferrs), Errors: ferrs}
	}
	refused := unavailableOf(ferrs)
	insts := make([]*Instance, 0, len(got))
	for _, g := range got {
		inst := &Instance{
			NodeClaim: p.NodeClaim, NodePool: p.NodePool, InstanceID: g.InstanceID, InstanceType: g.InstanceType,
			Zone: g.Zone, SubnetID: g.SubnetID, SecurityGroups: p.SecurityGroups, PlacementGroupID: p.PlacementGroup, CapacityType: g.CapacityType, ImageID: imageOf[g.TemplateName],
			FleetID: aws.ToString(out.FleetId), PricePerHour: l.price(g.InstanceType, g.Zone, g.CapacityType),
			Unavailable: refused,
		}
		l.cfg.Log.Info("nodeclaim launched", "nodeClaim", p.NodeClaim, "nodePool", p.NodePool, "instance", inst.InstanceID,
			"type", inst.InstanceType, "zone", inst.Zone, "capacityType", inst.CapacityType, "price", inst.PricePerHour,
			"refused", len(inst.Unavailable))
		insts = append(insts, inst)
	}
	return insts, nil
}

// templateGone reports whether the fleet failed because a launch template
// no longer exists (someone deleted it while it was cached).
func templateGone(errs []FleetError) bool {
	for _, e := range errs {
		if strings.Contains(e.Code, "LaunchTemplate") && strings.Contains(e.Code, "NotFound") {
			return true
		}
	}
	return false
}

func (l *Launcher) price(typ, zone, ct string) float64 {
	return OfferingPrice(l.catalog(), l.cfg.Spot, typ, zone, ct)
}

// OfferingPrice is the hourly price an offering's record carries: a
// reserved one's as already paid (scheduling.ReservedPrice), a spot one's
// from spot (nil: 0), an on-demand one's from the catalog; 0 when unknown.
func OfferingPrice(cat *catalog.Catalog, spot catalog.SpotPricer, typ, zone, capacityType string) float64 {
	if capacityType == apis.CapacityTypeReserved {
		if it, ok := cat.Get(typ); ok {
			return scheduling.ReservedPrice(it.OnDemandPrice)
		}
		return 0
	}
	if capacityType == apis.CapacityTypeSpot {
		if spot == nil {
			return 0
		}
		p, _ := spot.SpotPrice(typ, zone)
		return p
	}
	if it, ok := cat.Get(typ); ok {
		return it.OnDemandPrice
	}
	return 0
}

// templateImages maps each template's name to its AMI.
func templateImages(ts []templateOverrides, images []AMI) map[string]string {
	out := map[string]string{}
	for i, t := range ts {
		out[t.Name] = images[i].ID
	}
	return out
}

// hasCode reports whether err is an AWS API error with the code.
func hasCode(err error, code string) bool {
	var ae smithy.APIError
	return errors.As(err, &ae) && ae.ErrorCode() == code
}
