// Package disruption decides which of Nodewright's nodes to disrupt, by
// which method and why: repair, expiration, drift, emptiness, multi-node and
// single-node consolidation (methods.go lists them in the order they are
// tried), so that the cluster runs on fewer or cheaper nodes without
// hurting workloads. It honours each NodePool's consolidation policy,
// consolidateAfter, disruption budgets, expireAfter and drift, and never
// touches a node a do-not-disrupt annotation or a PodDisruptionBudget
// protects. It reuses the scheduler's simulation (the same constraints,
// daemonset overhead, topology and limits) to check that the candidates'
// pods fit elsewhere.
//
// It is pure: Decide and Validate take plain values and return plain
// values, with no I/O; package orchestration carries the commands out
// (taint, validate, replace, drain, terminate) as state machines in the
// state table. The consolidation function runs both.
package disruption

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/scheduling"
	"github.com/nodewright/nodewright/shared/state"
)

// Method names a disruption method (methods.go lists them, in order).
type Method string

// Reason is why a command disrupts its nodes, in its events and metrics:
// the NodePool disruption reason whose budgets it is under, or Expired
// (not budgeted, as in Karpenter v1).
type Reason string

const (
	ReasonExpired       Reason = "Expired"
	ReasonDrifted              = Reason(apis.DisruptionReasonDrifted)
	ReasonEmpty                = Reason(apis.DisruptionReasonEmpty)
	ReasonUnderutilized        = Reason(apis.DisruptionReasonUnderutilized)
	// ReasonUnhealthy: a node condition (or the EC2 status check) has been
	// bad for longer than its repair toleration (not budgeted, as Karpenter
	// v1.14.1's node repair).
	ReasonUnhealthy Reason = "Unhealthy"
)

// NodePool annotations that set a minimum saving before any replacement
// (default off): an absolute price per hour and a percentage of the
// candidates' price.
const (
	AnnotationMinSavings        = "nodewright.io/consolidation-min-savings-per-hour"
	AnnotationMinSavingsPercent = "nodewright.io/consolidation-min-savings-percent"
)

// SpotToSpotMinOptions is how many strictly cheaper spot options a
// spot-to-spot replacement needs; it launches with only that many, the
// cheapest (Karpenter's rule, on by default here).
const SpotToSpotMinOptions = 15

// Inputs is the cluster as a consolidation run sees it.
type Inputs struct {
	Now time.Time
	// Nodes, Pods (every pod, bound or pending), PDBs and DaemonSets of the
	// cluster.
	Nodes      []*corev1.Node
	Pods       []*corev1.Pod
	PDBs       []*policyv1.PodDisruptionBudget
	DaemonSets []*appsv1.DaemonSet
	// Records are Nodewright's NodeClaims; a Node is Nodewright's when a
	// record's InstanceID matches its providerID's instance.
	Records []*state.NodeClaim
	// Actions in progress: their nodes count against budgets.
	Actions     []*state.Action
	NodePools   []*apis.NodePool
	NodeClasses []*apis.EC2NodeClass
	Catalog     *catalog.Catalog
	Zones       []string
	Spot        catalog.SpotPricer
	Unavailable func(instanceType, zone, capacityType string) bool
	// Volumes are the cluster's PersistentVolumeClaims, PersistentVolumes
	// and StorageClasses: a pod with a zonal volume moves only to a node in
	// its volume's zone (nil: not read; volumes do not narrow nodes).
	Volumes *scheduling.Volumes
	// NodeCosts are what a node of each NodePool costs beyond its instance
	// ($/h by NodePool name: its volumes and public IPv4 address, package
	// nodecost), on both sides of a consolidation: the nodes it removes
	// and the replacements it plans (nil: instances only).
	NodeCosts map[string]float64
	// CurrentImages are, per EC2NodeClass, the AMI IDs its selector
	// resolves to now: a node whose record's ImageID is not among them has
	// drifted (nil: AMI drift is not checked).
	CurrentImages map[string]map[string]bool
	// CurrentSubnets and CurrentSecurityGroups are, per EC2NodeClass, the
	// subnet and security group IDs its selectors resolve to now: a node
	// whose record's subnet is not among them, or whose security groups are
	// not exactly them, has drifted (a class not listed, or a record
	// without them: not checked).
	CurrentSubnets        map[string]map[string]bool
	CurrentSecurityGroups map[string]map[string]bool
	// CurrentPlacementGroups are, per EC2NodeClass, the ID of the placement
	// group its placementGroupSelector resolves to now ("": it names none):
	// a node whose record's group differs has drifted (a class not listed:
	// not checked).
	CurrentPlacementGroups map[string]string
	// NotReady are the NodePools no replacement may be planned into: their
	// EC2NodeClass is missing or resolves no subnet, security group or AMI,
	// so provision leaves them out of its solves too. Their nodes are still
	// candidates (deleted under their pool's budgets and policy, or replaced
	// in a ready pool).
	NotReady map[string]bool
	// SpotToSpot allows replacing a spot node with a cheaper spot node
	// (given SpotToSpotMinOptions cheaper options).
	SpotToSpot bool
	// Budget bounds the run's work (the zero value: no bound).
	Budget Budget
	// ReachFirst are the Node names an earlier run's budget kept it from
	// reaching (its Report.Unreached): single-node considers them before
	// the other candidates (in its usual order within each), so that a
	// budget that stops every run at the same place does not leave the
	// same candidates out every time (nil: the usual order).
	ReachFirst []string
	// CurrentReservations are, per EC2NodeClass, the capacity reservations
	// its selector resolves to now, ended ones included: a node whose
	// record names a reservation not among them has drifted (a class not
	// listed: not checked).
	CurrentReservations map[string]map[string]bool
	// EndingBlocks are the Capacity Blocks within their reclaim lead
	// (fleet.BlockReclaimLead) of their end, by reservation ID, with that
	// end: their nodes expire, drained ahead of EC2's reclaim (nil: none).
	EndingBlocks map[string]time.Time
	// StatusChecks are the EC2 status checks of Nodewright's instances, by
	// instance ID, as the consolidation function polled them
	// (DescribeInstanceStatus); an instance not listed passes (nil: not
	// polled).
	StatusChecks map[string]StatusCheck
}

// StatusCheck is an instance's EC2 status checks (DescribeInstanceStatus).
type StatusCheck struct {
	// Impaired: the instance or the system check fails.
	Impaired bool
	// Since is when the failing check first failed (its ImpairedSince).
	Since time.Time
	// Detail names the failing check ("instance reachability: failed").
	Detail string
}

// Budget bounds one run's work (Decide or Validate), so that a tick ends
// inside the function's timeout whatever the cluster holds. Every
// simulation is one solve; the run stops simulating once it has made
// MaxSolves of them or the deadline has passed, and each solve is bounded
// by MaxGroups group placements (scheduling.Budget). The candidates the
// run did not reach are reported (Report.Unreached) and wait for the next
// tick; a command found before the budget ran out still stands (its
// simulation was complete). The solve count and the group bound cut at the
// same place on every run; the deadline is a backstop against the clock.
type Budget struct {
	// MaxSolves is the most simulations the run makes (0: no bound).
	MaxSolves int
	// MaxGroups bounds each simulation's group placements (0: no bound); a
	// simulation that does not place every pod within it fails.
	MaxGroups int
	// Deadline: no simulation starts at or after it (zero: none).
	Deadline time.Time
	// Now is the clock Deadline is read on (nil: time.Now).
	Now func() time.Time
}

// Command is one consolidation action to carry out.
type Command struct {
	Method Method
	Reason Reason
	// Candidates are the NodeClaims (record names) to remove, Nodes their
	// Node names, in the order chosen.
	Candidates []string
	Nodes      []string
	// Replacements are NodeClaims to launch first (none for a delete),
	// with options already limited to what makes the action worth it.
	Replacements []scheduling.NodeClaim
	// PriceBefore is the candidates' price per hour, PriceAfter the
	// replacements'.
	PriceBefore, PriceAfter float64
	// Drift is, for a drift, how the node drifted.
	Drift DriftReason `json:",omitempty"`
	// Explanation is one line a person reads (for logs and events).
	Explanation string
	// Immediate: once draining begins the candidates' pods are deleted at
	// once, PodDisruptionBudgets and do-not-disrupt notwithstanding, as at
	// the end of a terminationGracePeriod (repair: Karpenter sets an
	// unhealthy NodeClaim's termination timestamp to now).
	Immediate bool `json:",omitempty"`
	// Condition is, for a repair, the unhealthy condition it repairs
	// (apis.ConditionEC2StatusCheck for a failing status check).
	Condition corev1.NodeConditionType `json:",omitempty"`
	// Scores are, for a consolidation of nodes of Balanced NodePools, each
	// such pool's approving score, sorted by NodePool.
	Scores []Score `json:",omitempty"`
}

// Savings is what the command saves per hour, as planned.
func (c Command) Savings() float64 { return c.PriceBefore - c.PriceAfter }

// Report says what a run considered.
type Report struct {
	// Candidates counts the nodes that could be disrupted now.
	Candidates int
	// Skipped maps a node to why it is not a candidate (do-not-disrupt, a
	// PDB, consolidateAfter, budget, policy, not initialized...).
	Skipped map[string]string
	// Blocked are the Skipped nodes a do-not-disrupt annotation or a
	// PodDisruptionBudget holds (Karpenter's DisruptionBlocked), by why.
	Blocked map[string]string
	// Unconsolidatable are the candidates consolidation considered and
	// could neither delete nor replace by cheaper capacity (Karpenter's
	// Unconsolidatable), by why.
	Unconsolidatable map[string]string
	// Unbalanced are the candidates of Balanced NodePools whose move (a
	// delete or a replacement consolidation found) their pool's score
	// rejected, by node, with that score. Karpenter records these in its
	// consolidation_moves_total and consolidation_score metrics, decision
	// rejected, and no event: they are not Unconsolidatable.
	Unbalanced map[string]Score
	// Method is the method whose commands Decide returned ("" when none
	// found work).
	Method Method
	// Rejected maps a candidate that a method considered and left alone to
	// why (the budget was spent, its pods need more nodes, no cheaper
	// replacement, the spot-to-spot rule).
	Rejected map[string]string
	// Warnings are problems with the inputs that did not stop the run (a
	// budget or annotation that cannot be read, a node whose price is not
	// known), by object.
	Warnings []string
	// BudgetSpent names the bound of Inputs.Budget that stopped the run
	// ("solves" or "deadline"; "" when none did), Solves counts the
	// simulations it made, and Unreached are the candidates (Node names,
	// sorted) no method considered because of it: the next run takes them.
	BudgetSpent string
	Solves      int
	Unreached   []string
	// Allowed is, per NodePool and reason, how many more of its nodes its
	// budgets let be disrupted when the run began.
	Allowed map[string]map[apis.DisruptionReason]int
	// RepairHeld maps an unhealthy node repair leaves alone (within its
	// toleration, opted out, the safety stop) to why.
	RepairHeld map[string]string
	// RepairPaused maps a NodePool whose repair is paused by the safety
	// stop (more than 20% of its nodes unhealthy) to why.
	RepairPaused map[string]string
}
