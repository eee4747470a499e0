package fleet

import (
	"time"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/scheduling"
)

// Cluster is what a node needs to join the cluster, as EKS DescribeCluster
// reports it.
type Cluster struct {
	Name string
	// Endpoint is the API server's URL (https://...).
	Endpoint string
	// CertificateAuthority is the cluster CA in PEM.
	CertificateAuthority []byte
	// ServiceCIDR is the Kubernetes service network (nodeadm derives the
	// cluster DNS address from it).
	ServiceCIDR string
	// KubernetesVersion is the control plane's minor version ("1.35"); the
	// al2023 alias resolves through the AMI parameters of this version.
	KubernetesVersion string
}

// Request is one NodeClaim to launch.
type Request struct {
	// Name is the NodeClaim's name: the fleet's ClientToken (so a retried
	// call cannot launch twice) and the karpenter.sh/nodeclaim tag. A new
	// attempt after a failed launch needs a new name: EC2 answers a reused
	// ClientToken with the first call's result.
	Name string
	// Claim is the planned NodeClaim.
	Claim scheduling.NodeClaim
	// NodeClass is the EC2NodeClass the claim's NodePool references.
	NodeClass *apis.EC2NodeClass
	// Token is the fleet's ClientToken ("": the name, as ClientToken
	// makes it): unique per launch (LaunchToken).
	Token string
	// Exclude are offerings the fleet must not launch (see Plan.Exclude).
	Exclude []UnavailableOffering
	// Count is how many identical instances to launch in one fleet (0 or
	// 1: one). A group's instances are tagged with Name at launch; the
	// caller assigns them to its NodeClaims and tags each with its own
	// name (TagNodeClaim).
	Count int
}

// Instance is a launched NodeClaim.
type Instance struct {
	NodeClaim    string `json:"nodeClaim"`
	NodePool     string `json:"nodePool"`
	InstanceID   string `json:"instanceID"`
	InstanceType string `json:"instanceType"`
	Zone         string `json:"zone"`
	SubnetID     string `json:"subnetID"`
	// SecurityGroups are the instance's security group IDs (nil: unknown).
	SecurityGroups []string `json:"securityGroups,omitempty"`
	CapacityType   string   `json:"capacityType"`
	ImageID        string   `json:"imageID"`
	FleetID        string   `json:"fleetID,omitempty"`
	PricePerHour   float64  `json:"pricePerHour"`
	// Unavailable are offerings the fleet reported without capacity before
	// it launched this instance: worth caching like those of a failed launch.
	Unavailable []UnavailableOffering `json:"unavailable,omitempty"`
	// PlacementGroupID is the placement group it launched into ("": none).
	PlacementGroupID string `json:"placementGroupID,omitempty"`
}

// Subnet is a subnet an EC2NodeClass selects.
type Subnet struct {
	ID           string
	Zone         string
	AvailableIPs int32
	// MapsPublicIPv4 is EC2's MapPublicIpOnLaunch: its instances get a
	// public IPv4 address (charged per hour) unless the class says not.
	MapsPublicIPv4 bool
}

// AMI is an image an EC2NodeClass selects, with the instance types it
// serves: an architecture (amd64, arm64) and, for the EKS-optimized AL2023
// images, a variant (standard, nvidia, neuron); Variant "" serves any type
// of its architecture.
type AMI struct {
	ID      string
	Name    string
	Arch    string
	Variant string
}

// NodeClass is an EC2NodeClass resolved against the account.
type NodeClass struct {
	Name string
	// Subnets has one subnet per zone (the one with the most free
	// addresses, then the lowest ID), in zone order.
	Subnets []Subnet
	// SecurityGroups are IDs, sorted.
	SecurityGroups []string
	// SubnetIDs are every subnet the class selects (Subnets keeps one per
	// zone), sorted: a node in any of them has not drifted.
	SubnetIDs []string
	// AMIs are sorted by architecture, variant and ID.
	AMIs []AMI
	// PlacementGroup is the group placementGroupSelector names (nil: none).
	PlacementGroup *PlacementGroup `json:",omitempty"`
	// Reservations are the capacity reservations the class's
	// capacityReservationSelectorTerms select, sorted by ID, and
	// ResolvedAt when EC2 reported their room (launches since took some).
	Reservations []Reservation
	ResolvedAt   time.Time
}

// Zones returns the zones of the node class's subnets, sorted.
func (nc *NodeClass) Zones() []string {
	zones := make([]string, 0, len(nc.Subnets))
	for _, s := range nc.Subnets {
		zones = append(zones, s.Zone)
	}
	return zones
}

// subnetIn returns the subnet of zone.
func (nc *NodeClass) subnetIn(zone string) (Subnet, bool) {
	for _, s := range nc.Subnets {
		if s.Zone == zone {
			return s, true
		}
	}
	return Subnet{}, false
}
