// Package scheduling decides where pending pods go: onto existing nodes, onto
// launched NodeClaims that have not registered yet, or onto new NodeClaims it
// plans from the NodePools, choosing instance types so that the new capacity
// is as cheap as it can make it while honouring every scheduling constraint
// Kubernetes users rely on (requests, node selectors and affinity, taints and
// tolerations, pod (anti-)affinity, topology spread, host ports, daemonset
// overhead, NodePool limits and minValues).
//
// Solve is pure: it takes plain values and returns plain values, with no I/O,
// and the same input gives the same output byte for byte.
package scheduling

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
)

// DefaultMaxInstanceTypes is how many instance types a NodeClaim offers EC2
// CreateFleet at most (the fleet's override limit the design allows).
const DefaultMaxInstanceTypes = 60

// Input is the cluster as a solve sees it. Slices may come in any order.
type Input struct {
	// Pods are the pending pods to place (spec.nodeName empty).
	Pods []*corev1.Pod
	// Nodes are the existing nodes and the launched NodeClaims that have not
	// registered yet, with the pods bound to them (or their summary:
	// Summarise).
	Nodes       []*Node
	NodePools   []*apis.NodePool
	NodeClasses []*apis.EC2NodeClass
	DaemonSets  []*appsv1.DaemonSet
	// InstanceTypes is the catalog to choose from (the real one or a
	// synthetic one for tests and benchmarks).
	InstanceTypes []*catalog.InstanceType
	// Capacity is the extended resources a node of each instance type
	// offers beyond the catalog's, by type name (NodeOverlay capacity:
	// hugepages, device-plugin resources); nil: none.
	Capacity map[string]corev1.ResourceList
	// Zones are the zones the cluster has subnets in.
	Zones []string
	// Spot prices spot offerings; nil offers no spot capacity.
	Spot catalog.SpotPricer
	// Unavailable reports offerings EC2 refused recently (nil: none).
	Unavailable func(instanceType, zone, capacityType string) bool
	// Reservations are the capacity reservations the NodeClasses select
	// (nil: none): they offer capacity type reserved.
	Reservations []Reservation
	// MaxInstanceTypes caps each NodeClaim's instance types (0: 60).
	MaxInstanceTypes int
	// MinValuesPolicy is Strict ("" too) or BestEffort.
	MinValuesPolicy MinValuesPolicy
	// PreferencePolicy is Respect ("" too) or Ignore: whether pods'
	// preferences (preferred node and pod affinity and anti-affinity,
	// ScheduleAnyway spreads) are tried before they are relaxed, or
	// ignored, as Karpenter's --preference-policy.
	PreferencePolicy PreferencePolicy
	// Budget bounds the solve's work (the zero value: no bound).
	Budget Budget
	// NodeCosts are what a node of each NodePool costs beyond its
	// instance, in $/h by NodePool name (its EBS volumes and public IPv4
	// address: shared/nodecost), added to every offering of the pool, so
	// that a plan of many small nodes pays them per node. nil: instances
	// only.
	NodeCosts map[string]float64
	// Volumes are the cluster's PersistentVolumeClaims, PersistentVolumes
	// and StorageClasses: a pod's volumes then restrict the nodes it may
	// land on (see Volumes). nil: they were not read, and pods' volumes
	// restrict nothing.
	Volumes *Volumes
	// SkipLowerBound leaves Result.LowerBoundPricePerHour at 0 instead of
	// computing it (a linear-programming relaxation, a good part of a
	// small solve's work). The plan is the same either way. Consolidation's
	// simulations set it: they compare plans, never the bound; provision
	// and `nodewright plan` report it.
	SkipLowerBound bool
}

// MaxNodePools is the most NodePools a solve accepts (the configuration's
// own limit, apis.MaxNodePools): each costs memory and time in proportion to
// the catalog, so thousands would not fit a function's memory or timeout.
const MaxNodePools = apis.MaxNodePools

// Budget bounds one solve's work, so that a solve inside a Lambda
// invocation ends in time whatever the cluster holds. Pods with the same
// scheduling signature form a group; groups are placed one after another,
// the most constrained first, and retried in later rounds while others make
// room for their affinity. When the budget is spent no further group
// starts: the pods not placed yet come back in Result.Deferred (neither
// placed nor unschedulable) for the next solve. The group budget cuts at
// the same place on every run; the deadline is a backstop against the
// clock.
type Budget struct {
	// MaxGroups is the most group placements the solve makes, counting a
	// group once per round it is tried in (0: no bound).
	MaxGroups int
	// Deadline: no group starts at or after it (zero: none). A group that
	// has started finishes.
	Deadline time.Time
	// Now is the clock Deadline is read on (nil: time.Now).
	Now func() time.Time
}

// PreferencePolicy is Karpenter's --preference-policy.
type PreferencePolicy string

const (
	PreferencesRespect PreferencePolicy = "Respect"
	PreferencesIgnore  PreferencePolicy = "Ignore"
)

// Node is an existing node, or a launched NodeClaim not registered yet (then
// Node carries the labels, taints and allocatable it will register with).
type Node struct {
	Node *corev1.Node
	// Pods are the pods bound to the node.
	Pods []*corev1.Pod
	// Bound, when set, summarises the first Bound.Summarised() of Pods
	// (Summarise): the solve reads the summary instead of those pods.
	Bound *Bound
	// InFlight marks a launched NodeClaim that has not registered.
	InFlight bool
}

// Result is a solve's plan. Every slice is sorted; JSON field names are the
// `nodewright plan` output.
type Result struct {
	NodeClaims    []NodeClaim     `json:"nodeClaims"`
	ExistingNodes []NodePlacement `json:"existingNodes"`
	Unschedulable []Unschedulable `json:"unschedulable"`
	// PricePerHour is the expected price of the new NodeClaims.
	PricePerHour float64 `json:"pricePerHour"`
	// LowerBoundPricePerHour is a price no plan for the same pods on new
	// capacity can beat (a linear-programming relaxation); 0 when
	// Input.SkipLowerBound is set.
	LowerBoundPricePerHour float64 `json:"lowerBoundPricePerHour"`
	// Deferred are the pending pods the solve's budget did not reach
	// (Input.Budget): not placed and not unschedulable, they wait for the
	// next solve. Sorted.
	Deferred []string `json:"deferred,omitempty"`
	// BudgetSpent names the bound that stopped the solve ("groups" or
	// "deadline"), when one did.
	BudgetSpent string `json:"budgetSpent,omitempty"`
	// NoCompatibleInstanceTypes are the NodePools whose own requirements
	// leave no instance type with an available offering (Karpenter's
	// NoCompatibleInstanceTypes), sorted.
	NoCompatibleInstanceTypes []string `json:"noCompatibleInstanceTypes,omitempty"`
}

// NodeClaim is a node to launch: the pool it comes from, the instance types
// (cheapest first) and offerings it may use, and the pods it is for.
type NodeClaim struct {
	NodePool  string `json:"nodePool"`
	NodeClass string `json:"nodeClass,omitempty"`
	// InstanceTypes are the types that fit the pods, by expected price then
	// name, at most MaxInstanceTypes, keeping minValues.
	InstanceTypes []string `json:"instanceTypes"`
	// CapacityType and Zones describe the expected (cheapest) offering's
	// capacity type and every zone the claim may launch in.
	CapacityType  string   `json:"capacityType"`
	CapacityTypes []string `json:"capacityTypes"`
	Zones         []string `json:"zones"`
	// CapacityReservationID and CapacityReservationType name the
	// reservation a reserved claim launches into (its only type, zone and
	// capacity type are the reservation's).
	CapacityReservationID   string `json:"capacityReservationID,omitempty"`
	CapacityReservationType string `json:"capacityReservationType,omitempty"`
	// PricePerHour is the price of the cheapest offering of the cheapest type.
	PricePerHour float64 `json:"pricePerHour"`
	// NodeCostPerHour is the part of PricePerHour that is not the
	// instance's: the node's volumes and address (Input.NodeCosts).
	NodeCostPerHour float64 `json:"nodeCostPerHour,omitempty"`
	// CPUSurplusPerHour is the part of PricePerHour a burstable type bills
	// in unlimited mode for the CPU its pods request above its baseline
	// (catalog.Burst).
	CPUSurplusPerHour float64 `json:"cpuSurplusPerHour,omitempty"`
	// LicencePerHour is the part of PricePerHour that is the image's
	// operating system licence (Windows: per vCPU, nodecost.WindowsLicence).
	LicencePerHour float64  `json:"licencePerHour,omitempty"`
	Pods           []string `json:"pods"`
	// Requirements are what the launched node must satisfy (the pool's and
	// the pods', narrowed: zone, capacity type, arch, instance types).
	Requirements []corev1.NodeSelectorRequirement `json:"requirements"`
	// Labels, Taints and StartupTaints come from the pool template and the
	// single-valued requirements.
	Labels        map[string]string `json:"labels,omitempty"`
	Taints        []corev1.Taint    `json:"taints,omitempty"`
	StartupTaints []corev1.Taint    `json:"startupTaints,omitempty"`
	// Requests are the pods' requests plus the daemonsets' that will run
	// on the node.
	Requests corev1.ResourceList `json:"requests"`
	// MinValues are the NodePool's minValues the instance types keep, by
	// key; MinValuesRelaxed says that, under the BestEffort policy, some are
	// lower than the NodePool asks (Karpenter's min-values-relaxed).
	MinValues        map[string]int `json:"minValues,omitempty"`
	MinValuesRelaxed bool           `json:"minValuesRelaxed,omitempty"`
	// PriceOverlaid says a NodeOverlay priced one of InstanceTypes
	// (Karpenter's price-overlay-applied annotation): the fleet launches in
	// the order above, spot included.
	PriceOverlaid bool `json:"priceOverlaid,omitempty"`
}

// NodePlacement lists the pending pods that fit on an existing node or a
// launched NodeClaim.
type NodePlacement struct {
	Node     string   `json:"node"`
	InFlight bool     `json:"inFlight,omitempty"`
	Pods     []string `json:"pods"`
}

// Unschedulable is a pod no node can take, with a reason a person can act on.
type Unschedulable struct {
	Pod    string `json:"pod"`
	Reason string `json:"reason"`
}
