// Package nodecost prices what a node costs beyond its instance: the EBS
// volumes its EC2NodeClass gives every node, the public IPv4 address every
// node carries when its subnets map one on launch, and a NodePool's own
// per-node cost (licences, agents). On small pods these extras are a large
// share of a node's price, and they are per node: a plan of many small
// nodes pays them many times, so the solver, consolidation and `plan` must
// count them to tell which plan is really cheaper.
//
// Pricing is pure: an EC2NodeClass and a shipped table of rates in, dollars
// per hour out.
package nodecost

import (
	"fmt"
	"slices"
	"sort"

	"github.com/nodewright/nodewright/shared/apis"
)

// HoursPerMonth converts AWS's monthly EBS rates to hourly ones (AWS bills
// a month as 730 hours).
const HoursPerMonth = 730

// Volume types of EBS.
const (
	GP3 = "gp3"
	GP2 = "gp2"
	IO1 = "io1"
	IO2 = "io2"
	ST1 = "st1"
	SC1 = "sc1"
	// Standard is the previous-generation magnetic type.
	Standard = "standard"
)

// DefaultVolume is the volume a node gets when its class names none:
// Karpenter's default root volume for AL2023 (and Nodewright's launch
// template, shared/fleet), 20 GiB of gp3 at gp3's baseline.
var DefaultVolume = Volume{Type: GP3, GiB: 20}

// defaultVolumes are the volumes the launch template gives a node of
// class's AMI family when the class names none (Karpenter's defaults, as
// shared/fleet lays them out): Bottlerocket's 4 GiB OS and 20 GiB data
// volumes, Windows's 50 GiB root, else DefaultVolume (AL2023, AL2).
func defaultVolumes(class *apis.EC2NodeClass) []Volume {
	if class == nil {
		return []Volume{DefaultVolume}
	}
	switch f := class.AMIFamily(); {
	case f == apis.AMIFamilyBottlerocket:
		return slices.Clone(BottlerocketVolumes)
	case apis.IsWindowsFamily(f):
		return []Volume{{Type: GP3, GiB: 50}}
	}
	return []Volume{DefaultVolume}
}

// DefaultVolumeType is the type EC2 gives a block device mapping that names
// none (EC2's documented default).
const DefaultVolumeType = GP2

// VolumeRates are one EBS volume type's monthly rates; IOPS and throughput
// are charged above the free baseline only (gp3: 3,000 IOPS, 125 MiB/s; io1
// and io2: every provisioned IOPS).
type VolumeRates struct {
	PerGiBMonth   float64 `json:"perGiBMonth"`
	PerIOPSMonth  float64 `json:"perIOPSMonth,omitempty"`
	FreeIOPS      int64   `json:"freeIOPS,omitempty"`
	PerMiBpsMonth float64 `json:"perMiBpsMonth,omitempty"`
	FreeMiBps     int64   `json:"freeMiBps,omitempty"`
	chargesIOPS   bool
	chargesMiBps  bool
	defaultIOPS   int64
	defaultMiBps  int64
}

// Rates are one region's prices for a node's extras.
type Rates struct {
	Region string `json:"region"`
	// AsOf is when the rates were read from AWS's public price pages.
	AsOf string `json:"asOf"`
	// Volumes are the EBS rates by volume type.
	Volumes map[string]VolumeRates `json:"volumes"`
	// PublicIPv4PerHour is the hourly charge of one public IPv4 address
	// (charged on every address in use since February 2024).
	PublicIPv4PerHour float64 `json:"publicIPv4PerHour"`
}

// ShippedRegion is the region whose rates the table ships.
const ShippedRegion = "us-east-1"

// shipped are the public EBS and VPC prices of us-east-1 (aws.amazon.com/ebs/pricing,
// aws.amazon.com/vpc/pricing), read on AsOf. io2's IOPS are tiered (cheaper
// above 32,000): the first tier's rate is used, so very large io2 volumes
// are priced a little high.
var shipped = Rates{
	Region: ShippedRegion, AsOf: "2026-11-27",
	Volumes: map[string]VolumeRates{
		GP3: {PerGiBMonth: 0.08, PerIOPSMonth: 0.005, FreeIOPS: 3000, PerMiBpsMonth: 0.04, FreeMiBps: 125,
			chargesIOPS: true, chargesMiBps: true, defaultIOPS: 3000, defaultMiBps: 125},
		GP2:      {PerGiBMonth: 0.10},
		IO1:      {PerGiBMonth: 0.125, PerIOPSMonth: 0.065, chargesIOPS: true},
		IO2:      {PerGiBMonth: 0.125, PerIOPSMonth: 0.065, chargesIOPS: true},
		ST1:      {PerGiBMonth: 0.045},
		SC1:      {PerGiBMonth: 0.015},
		Standard: {PerGiBMonth: 0.05},
	},
	PublicIPv4PerHour: 0.005,
}

// For is the rates of region: its own when the table has them, else the
// shipped region's (exact reports which). EBS rates differ little between
// regions and the IPv4 charge not at all.
func For(region string) (r Rates, exact bool) {
	return shipped, region == shipped.Region
}

// Volume is one EBS volume of a node.
type Volume struct {
	Type  string `json:"type"`
	GiB   int64  `json:"gib"`
	IOPS  int64  `json:"iops,omitempty"`
	MiBps int64  `json:"mibps,omitempty"`
}

// Parts are a node's extras in dollars per hour.
type Parts struct {
	// VolumesPerHour is the node's EBS volumes.
	VolumesPerHour float64 `json:"volumesPerHour"`
	// PublicIPv4PerHour is the node's public IPv4 address (0: none).
	PublicIPv4PerHour float64 `json:"publicIPv4PerHour"`
	// FixedPerHour is the NodePool's own per-node cost (licences, per-node
	// agents: apis.AnnotationNodeCostPerHour).
	FixedPerHour float64 `json:"fixedPerHour,omitempty"`
}

// PerHour is the extras' total.
func (p Parts) PerHour() float64 { return p.VolumesPerHour + p.PublicIPv4PerHour + p.FixedPerHour }

// BottlerocketVolumes are the volumes a Bottlerocket node gets when its
// class names none (Karpenter's layout, and Nodewright's launch template):
// a 4 GiB gp3 OS volume and a 20 GiB gp3 data volume.
var BottlerocketVolumes = []Volume{{Type: GP3, GiB: 4}, {Type: GP3, GiB: 20}}

// Volumes are the EBS volumes every node of class gets: its block device
// mappings, or its AMI family's defaults when it names none.
func Volumes(class *apis.EC2NodeClass) []Volume {
	if class == nil || len(class.Spec.BlockDeviceMappings) == 0 {
		return defaultVolumes(class)
	}
	var out []Volume
	for _, b := range class.Spec.BlockDeviceMappings {
		if b == nil || b.EBS == nil {
			continue
		}
		v := Volume{Type: DefaultVolumeType}
		if b.EBS.VolumeType != nil && *b.EBS.VolumeType != "" {
			v.Type = *b.EBS.VolumeType
		}
		if b.EBS.VolumeSize != nil {
			const gi = 1 << 30
			v.GiB = (b.EBS.VolumeSize.Value() + gi - 1) / gi
		}
		if b.EBS.IOPS != nil {
			v.IOPS = *b.EBS.IOPS
		}
		if b.EBS.Throughput != nil {
			v.MiBps = *b.EBS.Throughput
		}
		out = append(out, v)
	}
	return out
}

// PublicIPv4 says whether class's nodes get a public IPv4 address: the
// class's associatePublicIPAddress when set, else whether its subnets map
// one on launch (subnetsMapPublic, from EC2's MapPublicIpOnLaunch).
func PublicIPv4(class *apis.EC2NodeClass, subnetsMapPublic bool) bool {
	if class != nil && class.Spec.AssociatePublicIPAddress != nil {
		return *class.Spec.AssociatePublicIPAddress
	}
	return subnetsMapPublic
}

// VolumePerHour is one volume's price per hour at r.
func (r Rates) VolumePerHour(v Volume) (float64, error) {
	vr, ok := r.Volumes[v.Type]
	if !ok {
		return 0, fmt.Errorf("nodecost: volume type %q has no rate (known: %v)", v.Type, r.types())
	}
	if v.GiB < 0 || v.IOPS < 0 || v.MiBps < 0 {
		return 0, fmt.Errorf("nodecost: %s volume of %d GiB, %d IOPS, %d MiB/s: negative", v.Type, v.GiB, v.IOPS, v.MiBps)
	}
	month := float64(v.GiB) * vr.PerGiBMonth
	if vr.chargesIOPS {
		iops := v.IOPS
		if iops == 0 {
			iops = vr.defaultIOPS
		}
		month += float64(max(iops-vr.FreeIOPS, 0)) * vr.PerIOPSMonth
	}
	if vr.chargesMiBps {
		mibps := v.MiBps
		if mibps == 0 {
			mibps = vr.defaultMiBps
		}
		month += float64(max(mibps-vr.FreeMiBps, 0)) * vr.PerMiBpsMonth
	}
	return month / HoursPerMonth, nil
}

func (r Rates) types() []string {
	var ts []string
	for t := range r.Volumes {
		ts = append(ts, t)
	}
	sort.Strings(ts)
	return ts
}

// Of is the extras of a node of class at r; subnetsMapPublic is whether
// the class's subnets map a public IPv4 address on launch.
func Of(class *apis.EC2NodeClass, subnetsMapPublic bool, r Rates) (Parts, error) {
	var p Parts
	for _, v := range Volumes(class) {
		h, err := r.VolumePerHour(v)
		if err != nil {
			if class != nil {
				return Parts{}, fmt.Errorf("EC2NodeClass %s: %w", class.Name, err)
			}
			return Parts{}, err
		}
		p.VolumesPerHour += h
	}
	if PublicIPv4(class, subnetsMapPublic) {
		p.PublicIPv4PerHour = r.PublicIPv4PerHour
	}
	return p, nil
}

// PerPool is each NodePool's extras per node, by NodePool name, from its
// EC2NodeClass (a pool whose class is missing gets the default volume) and
// its own per-node cost (apis.AnnotationNodeCostPerHour); mapsPublic says
// whether a class's subnets map public IPv4 addresses (nil: none do).
func PerPool(pools []*apis.NodePool, classes []*apis.EC2NodeClass, mapsPublic func(class string) bool, r Rates) (map[string]Parts, error) {
	byName := make(map[string]*apis.EC2NodeClass, len(classes))
	for _, c := range classes {
		if c != nil {
			byName[c.Name] = c
		}
	}
	out := make(map[string]Parts, len(pools))
	for _, np := range pools {
		if np == nil {
			continue
		}
		var class *apis.EC2NodeClass
		name := ""
		if ref := np.Spec.Template.Spec.NodeClassRef; ref != nil {
			name, class = ref.Name, byName[ref.Name]
		}
		p, err := Of(class, mapsPublic != nil && name != "" && mapsPublic(name), r)
		if err != nil {
			return nil, fmt.Errorf("NodePool %s: %w", np.Name, err)
		}
		if p.FixedPerHour, err = np.NodeCostPerHour(); err != nil {
			return nil, err
		}
		out[np.Name] = p
	}
	return out, nil
}

// PerHour is each pool's extras' total, the form a solve takes
// (scheduling.Input.NodeCosts).
func PerHour(parts map[string]Parts) map[string]float64 {
	out := make(map[string]float64, len(parts))
	for k, p := range parts {
		out[k] = p.PerHour()
	}
	return out
}
