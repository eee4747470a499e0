// Package metrics defines the CloudWatch metrics the functions publish (their
// namespace, names, units and dimensions) and writes them in CloudWatch's
// embedded metric format (EMF): one JSON line on the function's log stream per
// data point, which CloudWatch turns into a metric without a PutMetricData call.
//
// It exists so that the functions that emit a metric and the CDK stack that
// graphs and alarms on it read the same names: the stack imports this package,
// so a renamed metric changes the dashboard and the alarms with it.
package metrics

import (
	"slices"
	"sort"
	"sync"
)

// Namespace is the CloudWatch namespace of every Nodewright metric.
const Namespace = "Nodewright"

// Dimension keys.
const (
	// DimCluster is on every metric: the EKS cluster's name.
	DimCluster = "ClusterName"
	// DimNodePool is a NodePool's name.
	DimNodePool = "NodePool"
	// DimCapacityType is spot, on-demand or reserved.
	DimCapacityType = "CapacityType"
	// DimReason is why something failed or happened (an EC2 error code for
	// launch failures; Empty, Underutilized, Drifted or Expired for
	// consolidation).
	DimReason = "Reason"
	// DimKind is the kind of interruption event (see Interruption kinds in
	// package trigger).
	DimKind = "Kind"
	// DimAction is what consolidation did: Delete or Replace.
	DimAction = "Action"
	// DimMethod is how consolidation found an action (emptiness,
	// multi-node, single-node, expiration, drift).
	DimMethod = "Method"
	// DimInstanceType is an EC2 instance type.
	DimInstanceType = "InstanceType"
)

// Metric names.
const (
	// PendingPods is the number of pods the last solve found pending
	// (unschedulable on existing and in-flight nodes). Gauge.
	PendingPods = "PendingPods"
	// PendingPodOldestAge is the age in seconds of the oldest pending pod the
	// last solve saw. Gauge; alarmed on.
	PendingPodOldestAge = "PendingPodOldestAgeSeconds"
	// NodeClaimsLaunched counts launched NodeClaims (instances).
	NodeClaimsLaunched = "NodeClaimsLaunched"
	// LaunchFailures counts failed launches by EC2 error code.
	LaunchFailures = "LaunchFailures"
	// InsufficientCapacityErrors counts offerings found without capacity
	// (InsufficientInstanceCapacity and kin) by capacity type.
	InsufficientCapacityErrors = "InsufficientCapacityErrors"
	// Interruptions counts interruption events handled, by kind.
	Interruptions = "Interruptions"
	// ConsolidationActions counts consolidation decisions carried out.
	ConsolidationActions = "ConsolidationActions"
	// Nodes is the number of nodes Nodewright manages. Gauge.
	Nodes = "Nodes"
	// ClusterPricePerHour is the summed hourly price (USD) of those nodes.
	// Gauge.
	ClusterPricePerHour = "ClusterPricePerHour"
	// PodsDeferred is how many pending pods the last solve's work budget
	// did not reach (they wait for the next round, which the provision
	// handler runs at once). Gauge.
	PodsDeferred = "PodsDeferred"
	// SolveDuration is how long one scheduling simulation took.
	SolveDuration = "SolveDurationMillis"
	// RegistrationDuration is the time from a NodeClaim's launch to its
	// Node registering, in seconds.
	RegistrationDuration = "RegistrationSeconds"
	// InterruptionToReplacement is the time from an interruption message's
	// arrival in the queue to its replacement's CreateFleet, in seconds.
	InterruptionToReplacement = "InterruptionToReplacementSeconds"
	// InterruptionToDrained is the time from an interruption message's
	// arrival to the node's last pod gone, in seconds.
	InterruptionToDrained = "InterruptionToDrainedSeconds"
	// PodsEvicted counts pods evicted (or, past a deadline, deleted) from
	// nodes being taken out, by reason (the disruption's kind).
	PodsEvicted = "PodsEvicted"
	// InterruptionMessagesFailed counts queue messages that failed (and
	// return to the queue, then the DLQ).
	InterruptionMessagesFailed = "InterruptionMessagesFailed"
	// ConsolidationCandidates is how many nodes the last consolidation run
	// could disrupt. Gauge.
	ConsolidationCandidates = "ConsolidationCandidates"
	// ConsolidationNodesRemoved counts nodes consolidation removed.
	ConsolidationNodesRemoved = "ConsolidationNodesRemoved"
	// ConsolidationSavings is the price per hour (USD) a finished action
	// saved.
	ConsolidationSavings = "ConsolidationSavingsPerHour"
	// ConsolidationAbandoned counts actions abandoned, by cause.
	ConsolidationAbandoned = "ConsolidationAbandoned"
	// NodePoolNotReady is 1 for a NodePool that solves leave out (its
	// EC2NodeClass is missing, or selects no subnet, security group or
	// AMI), 0 for one that is ready. Gauge; under ClusterName alone, 1 while
	// any pool is not ready.
	NodePoolNotReady = "NodePoolNotReady"
	// KarpenterRunning is 1 while Karpenter's controller runs in the
	// cluster (its leader-election Lease is live) and Nodewright launches
	// nothing, 0 otherwise. Gauge.
	KarpenterRunning = "KarpenterRunning"
	// OnDemandPricesMissing is 1 when a round priced on-demand capacity
	// with stand-in figures, none having been read for the cluster's region
	// yet (the shipped us-east-1 prices), 0 when with the region's own.
	// Gauge.
	OnDemandPricesMissing = "OnDemandPricesMissing"
)

// Unit is a CloudWatch metric unit.
type Unit string

// Units used here.
const (
	UnitCount        Unit = "Count"
	UnitSeconds      Unit = "Seconds"
	UnitMilliseconds Unit = "Milliseconds"
	UnitNone         Unit = "None"
)

// Statistic is the CloudWatch statistic that makes sense for a metric over a
// period: Sum for counters, Maximum or Average for gauges.
type Statistic string

// Statistics used here.
const (
	Sum     Statistic = "Sum"
	Maximum Statistic = "Maximum"
	Minimum Statistic = "Minimum"
	Average Statistic = "Average"
)

// Definition describes one metric.
type Definition struct {
	Name string
	Unit Unit
	// Statistic is how a period's data points combine into one value.
	Statistic Statistic
	// Detail is the dimension keys beyond DimCluster a data point must carry.
	// Each point is published twice over: under {ClusterName} alone (what
	// alarms watch) and, when Detail is not empty, under {ClusterName,
	// Detail...} (what the dashboard breaks down).
	Detail []string
	// Description says what the metric counts, for the dashboard and docs.
	Description string
}

// DimensionSets returns the EMF dimension sets of d.
func (d Definition) DimensionSets() [][]string {
	sets := [][]string{{DimCluster}}
	if len(d.Detail) > 0 {
		sets = append(sets, append([]string{DimCluster}, d.Detail...))
	}
	return sets
}

// Definitions returns every metric, sorted by name. The slice is new on every
// call.
func Definitions() []Definition {
	defs := []Definition{
		{PendingPods, UnitCount, Maximum, nil, "pods pending after the last solve"},
		{PendingPodOldestAge, UnitSeconds, Maximum, nil, "age of the oldest pending pod"},
		{NodeClaimsLaunched, UnitCount, Sum, []string{DimNodePool, DimCapacityType, DimInstanceType}, "instances launched"},
		{LaunchFailures, UnitCount, Sum, []string{DimReason}, "launches that failed, by EC2 error code"},
		{InsufficientCapacityErrors, UnitCount, Sum, []string{DimCapacityType}, "offerings without capacity"},
		{Interruptions, UnitCount, Sum, []string{DimKind}, "interruption events handled"},
		{ConsolidationActions, UnitCount, Sum, []string{DimMethod, DimReason}, "consolidation actions carried out"},
		{ConsolidationCandidates, UnitCount, Maximum, nil, "nodes consolidation could disrupt"},
		{ConsolidationNodesRemoved, UnitCount, Sum, nil, "nodes consolidation removed"},
		{ConsolidationSavings, UnitNone, Sum, nil, "USD per hour saved by consolidation"},
		{ConsolidationAbandoned, UnitCount, Sum, []string{DimReason}, "consolidation actions abandoned, by cause"},
		{Nodes, UnitCount, Maximum, []string{DimNodePool, DimCapacityType}, "nodes managed"},
		{ClusterPricePerHour, UnitNone, Maximum, []string{DimNodePool, DimCapacityType}, "USD per hour of the managed nodes"},
		{SolveDuration, UnitMilliseconds, Maximum, nil, "duration of one scheduling simulation"},
		{PodsDeferred, UnitCount, Maximum, nil, "pending pods a solve's work budget left for the next round"},
		{RegistrationDuration, UnitSeconds, Maximum, nil, "launch to Node registered"},
		{InterruptionToReplacement, UnitSeconds, Maximum, nil, "interruption message to replacement launched"},
		{InterruptionToDrained, UnitSeconds, Maximum, nil, "interruption message to node drained"},
		{PodsEvicted, UnitCount, Sum, []string{DimReason}, "pods evicted from nodes taken out"},
		{InterruptionMessagesFailed, UnitCount, Sum, nil, "interruption messages that failed"},
		{OnDemandPricesMissing, UnitCount, Maximum, nil, "1 while rounds price on-demand with stand-in figures (none read yet for the region)"},
		{NodePoolNotReady, UnitCount, Maximum, []string{DimNodePool}, "NodePools left out of solves (1: not ready)"},
		{KarpenterRunning, UnitCount, Maximum, nil, "1 while Karpenter's controller runs and Nodewright launches nothing"},
	}
	sort.Slice(defs, func(i, j int) bool { return defs[i].Name < defs[j].Name })
	return defs
}

// Lookup returns the definition of the metric called name: one of
// Nodewright's own (Definitions) or a Karpenter metric Nodewright emits
// (KarpenterDefinitions).
func Lookup(name string) (Definition, bool) {
	d, ok := byName()[name]
	d.Detail = slices.Clone(d.Detail)
	return d, ok
}

// byName indexes every definition by name, once.
var byName = sync.OnceValue(func() map[string]Definition {
	m := map[string]Definition{}
	for _, d := range append(Definitions(), KarpenterDefinitions()...) {
		m[d.Name] = d
	}
	return m
})
