package metrics

import (
	"slices"
	"sort"
)

// KarpenterVersion is the Karpenter release whose metrics Karpenter()
// lists: the version go.mod pins (sigs.k8s.io/karpenter and
// github.com/aws/karpenter-provider-aws), whose sources a test reads.
const KarpenterVersion = "v1.14.1"

// Karpenter's label names, which Nodewright's twins of Karpenter's metrics
// carry as EMF dimensions (beside ClusterName).
const (
	LabelNodePool          = "nodepool"
	LabelZone              = "zone"
	LabelCapacityType      = "capacity_type"
	LabelReason            = "reason"
	LabelMinValuesRelaxed  = "min_values_relaxed"
	LabelResourceType      = "resource_type"
	LabelController        = "controller"
	LabelMessageType       = "message_type"
	LabelDecision          = "decision"
	LabelConsolidationType = "consolidation_type"
	LabelMethod            = "method"
	LabelProvider          = "provider"
	LabelError             = "error"
	LabelCondition         = "condition"
	LabelImageID           = "image_id"
)

// Karpenter metric names: the names of Karpenter's metrics that Nodewright
// emits (see Karpenter for all of them and what each means here).
const (
	KarpenterNodesCreated                 = "karpenter_nodes_created_total"
	KarpenterNodesTerminated              = "karpenter_nodes_terminated_total"
	KarpenterNodeClaimsCreated            = "karpenter_nodeclaims_created_total"
	KarpenterNodeClaimsTerminated         = "karpenter_nodeclaims_terminated_total"
	KarpenterNodeClaimsDisrupted          = "karpenter_nodeclaims_disrupted_total"
	KarpenterNodeClaimsUnhealthyDisrupted = "karpenter_nodeclaims_unhealthy_disrupted_total"
	KarpenterPodsStartupDuration          = "karpenter_pods_startup_duration_seconds"
	KarpenterNodePoolsUsage               = "karpenter_nodepools_usage"
	KarpenterNodePoolsLimit               = "karpenter_nodepools_limit"
	KarpenterNodePoolsAllowedDisruptions  = "karpenter_nodepools_allowed_disruptions"
	KarpenterSchedulingDuration           = "karpenter_scheduler_scheduling_duration_seconds"
	KarpenterUnschedulablePods            = "karpenter_scheduler_unschedulable_pods_count"
	KarpenterInterruptionReceivedMessages = "karpenter_interruption_received_messages_total"
	KarpenterVoluntaryDisruptionDecisions = "karpenter_voluntary_disruption_decisions_total"
	KarpenterClusterStateNodeCount        = "karpenter_cluster_state_node_count"
	KarpenterCloudProviderErrors          = "karpenter_cloudprovider_errors_total"
)

// Values Nodewright gives some of Karpenter's labels, as Karpenter does.
const (
	// ControllerProvisioner is the controller label of the provisioning
	// solve (Karpenter's provisioner).
	ControllerProvisioner = "provisioner"
	// ControllerNodeClaimLifecycle is the controller label of instance
	// launches and terminations (Karpenter's nodeclaim.lifecycle).
	ControllerNodeClaimLifecycle = "nodeclaim.lifecycle"
	// ProviderAWS is the provider label of cloud provider errors.
	ProviderAWS = "aws"
	// ReasonProvisioned is the reason label of a NodeClaim created for
	// pending pods.
	ReasonProvisioned = "provisioned"
	// ErrorUnknown stands for Karpenter's empty error label (an error of
	// no well-known type): CloudWatch refuses an empty dimension value.
	ErrorUnknown = "unknown"
	// ErrorInsufficientCapacity is the error label of a launch EC2 refused
	// for capacity.
	ErrorInsufficientCapacity = "InsufficientCapacityError"
	// ConsolidationTypeNone stands for Karpenter's empty
	// consolidation_type (drift, expiration): CloudWatch refuses an empty
	// dimension value.
	ConsolidationTypeNone = "none"
)

// KarpenterKind is how a Karpenter metric is registered with Prometheus.
type KarpenterKind string

// Kinds of Prometheus metric.
const (
	Counter   KarpenterKind = "counter"
	Gauge     KarpenterKind = "gauge"
	Histogram KarpenterKind = "histogram"
	Summary   KarpenterKind = "summary"
)

// KarpenterMetric is one metric Karpenter v1.14.1 registers, and what
// Nodewright makes of it.
type KarpenterMetric struct {
	Name string
	Kind KarpenterKind
	// Labels are Karpenter's labels, in its order. RuntimeLabels marks a
	// metric whose labels Karpenter builds at run time (the well-known
	// node labels): Labels then lists those it always has.
	Labels        []string
	RuntimeLabels bool
	// Dropped are Karpenter labels Nodewright does not publish: one stream
	// per node or per pod would cost more than the metric is worth.
	Dropped []string
	// Unit and Statistic are set for a metric Nodewright emits (as EMF,
	// under Namespace, with the Labels less the Dropped as dimensions); a
	// metric without a Unit is not emitted.
	Unit      Unit
	Statistic Statistic
	// Nodewright says what Nodewright emits under the name or, for a
	// metric it does not emit, what stands for it or why the name means
	// nothing without a controller.
	Nodewright string
}

// Emitted reports whether Nodewright emits the metric.
func (k KarpenterMetric) Emitted() bool { return k.Unit != "" }

// Dimensions are the labels Nodewright publishes as EMF dimensions.
func (k KarpenterMetric) Dimensions() []string {
	var out []string
	for _, l := range k.Labels {
		if !slices.Contains(k.Dropped, l) {
			out = append(out, l)
		}
	}
	return out
}

// Definition is the metric's Emit definition (for an emitted one).
func (k KarpenterMetric) Definition() Definition {
	return Definition{Name: k.Name, Unit: k.Unit, Statistic: k.Statistic, Detail: k.Dimensions(), Description: k.Nodewright}
}

// perNode is why a metric labeled per node is not emitted.
const perNode = "not emitted: labeled per node (node_name), one CloudWatch stream per node; karpenter_nodepools_usage has the pool totals"

// perPod is why a metric labeled per pod is not emitted.
const perPod = "not emitted: labeled per pod (name, namespace), one CloudWatch stream per pod; PendingPodOldestAgeSeconds is the oldest pending pod's age"

// noController is the opening of the reason of a name that has no meaning
// without a controller.
const noController = "no meaning without a controller: "

// Karpenter returns every metric Karpenter v1.14.1 registers under its
// namespace (sigs.k8s.io/karpenter and the AWS provider), sorted by name.
// The slice is new on every call.
func Karpenter() []KarpenterMetric {
	nodeLabels := []string{"node_name", "phase", "managed"}
	withResource := []string{"node_name", "phase", "managed", LabelResourceType}
	podLabels := []string{"name", "namespace"}
	out := []KarpenterMetric{
		// sigs.k8s.io/karpenter: pkg/metrics
		{Name: KarpenterNodeClaimsCreated, Kind: Counter, Labels: []string{LabelReason, LabelNodePool, LabelMinValuesRelaxed}, Unit: UnitCount, Statistic: Sum,
			Nodewright: "a NodeClaim launched (beside NodeClaimsLaunched); reason provisioned, or replacement for one launched to replace a node (Karpenter names the disruption's reason); min_values_relaxed true when the solve relaxed minValues"},
		{Name: KarpenterNodeClaimsTerminated, Kind: Counter, Labels: []string{LabelNodePool, LabelCapacityType, LabelZone}, Unit: UnitCount, Statistic: Sum,
			Nodewright: "a NodeClaim's record removed once its instance is terminated (the termination path)"},
		{Name: KarpenterNodeClaimsDisrupted, Kind: Counter, Labels: []string{LabelReason, LabelNodePool, LabelCapacityType}, Unit: UnitCount, Statistic: Sum,
			Nodewright: "a node retired by the termination path: reason underutilized, empty, drifted or expired (consolidation), the message type (interruption), garbage_collected (an instance no record claimed); a Node someone deleted is not counted"},
		{Name: KarpenterNodesCreated, Kind: Counter, Labels: []string{LabelNodePool, LabelZone}, Unit: UnitCount, Statistic: Sum,
			Nodewright: "a launched NodeClaim's Node registered (beside RegistrationSeconds)"},
		{Name: KarpenterNodesTerminated, Kind: Counter, Labels: []string{LabelNodePool, LabelZone}, Unit: UnitCount, Statistic: Sum,
			Nodewright: "a Node deleted by the termination path"},
		// pkg/controllers/state
		{Name: KarpenterClusterStateNodeCount, Kind: Gauge, Unit: UnitCount, Statistic: Maximum,
			Nodewright: "the Nodes in the cluster at a provisioning round (all of them, as Karpenter's cluster state counts them)"},
		{Name: "karpenter_cluster_state_synced", Kind: Gauge,
			Nodewright: noController + "Karpenter's in-memory copy of the cluster; Nodewright reads the API server and its state table at every invocation"},
		{Name: "karpenter_cluster_state_unsynced_time_seconds", Kind: Gauge,
			Nodewright: noController + "Karpenter's in-memory copy of the cluster; Nodewright keeps none between invocations"},
		{Name: "karpenter_pods_scheduling_decision_duration_seconds", Kind: Histogram,
			Nodewright: "not emitted: the provision function runs on a pending pod's hint, so its first try follows at once; PendingPodOldestAgeSeconds"},
		// pkg/cloudprovider/metrics
		{Name: "karpenter_cloudprovider_duration_seconds", Kind: Histogram, Labels: []string{LabelController, LabelMethod, LabelProvider},
			Nodewright: "not emitted: the functions' Lambda Duration and their logs time the EC2 calls"},
		{Name: KarpenterCloudProviderErrors, Kind: Counter, Labels: []string{LabelController, LabelMethod, LabelProvider, LabelError}, Unit: UnitCount, Statistic: Sum,
			Nodewright: "a failed launch (method Create; error InsufficientCapacityError or unknown, Karpenter's empty value) or termination (method Delete), beside LaunchFailures"},
		// pkg/controllers/node/termination
		{Name: "karpenter_nodes_termination_duration_seconds", Kind: Summary, Labels: []string{LabelNodePool},
			Nodewright: "not emitted: InterruptionToDrainedSeconds for interruptions; consolidation's actions are in the decision log"},
		{Name: "karpenter_nodes_drained_total", Kind: Counter, Labels: []string{LabelNodePool},
			Nodewright: "not emitted: ConsolidationNodesRemoved and the Terminated events"},
		{Name: "karpenter_nodes_lifetime_duration_seconds", Kind: Histogram, Labels: []string{LabelNodePool},
			Nodewright: "not emitted: the state table holds each NodeClaim's launch time"},
		{Name: "karpenter_pods_eviction_requests_total", Kind: Counter, Labels: []string{"code"},
			Nodewright: "not emitted: PodsEvicted counts the evictions by reason"},
		{Name: "karpenter_pods_drained_total", Kind: Counter, Labels: []string{LabelReason},
			Nodewright: "not emitted: PodsEvicted (reason interruption, consolidation or deletion)"},
		// pkg/controllers/node/health
		{Name: KarpenterNodeClaimsUnhealthyDisrupted, Kind: Counter, Labels: []string{LabelCondition, LabelNodePool, LabelCapacityType, LabelImageID},
			Unit: UnitCount, Statistic: Sum,
			Nodewright: "a node repair started, by the condition it repairs (EC2StatusCheck for a failing status check), NodePool, capacity type and image"},
		// pkg/controllers/metrics/node
		{Name: "karpenter_nodes_allocatable", Kind: Gauge, Labels: withResource, RuntimeLabels: true, Dropped: []string{"node_name"}, Nodewright: perNode},
		{Name: "karpenter_nodes_total_pod_requests", Kind: Gauge, Labels: withResource, RuntimeLabels: true, Dropped: []string{"node_name"}, Nodewright: perNode},
		{Name: "karpenter_nodes_total_pod_limits", Kind: Gauge, Labels: withResource, RuntimeLabels: true, Dropped: []string{"node_name"}, Nodewright: perNode},
		{Name: "karpenter_nodes_total_daemon_requests", Kind: Gauge, Labels: withResource, RuntimeLabels: true, Dropped: []string{"node_name"}, Nodewright: perNode},
		{Name: "karpenter_nodes_total_daemon_limits", Kind: Gauge, Labels: withResource, RuntimeLabels: true, Dropped: []string{"node_name"}, Nodewright: perNode},
		{Name: "karpenter_nodes_system_overhead", Kind: Gauge, Labels: withResource, RuntimeLabels: true, Dropped: []string{"node_name"}, Nodewright: perNode},
		{Name: "karpenter_nodes_current_lifetime_seconds", Kind: Gauge, Labels: nodeLabels, RuntimeLabels: true, Dropped: []string{"node_name"}, Nodewright: perNode},
		{Name: "karpenter_cluster_utilization_percent", Kind: Gauge, Labels: []string{LabelResourceType},
			Nodewright: "not emitted: karpenter_nodepools_usage against the pods' requests in `nodewright status`"},
		// pkg/controllers/metrics/nodepool
		{Name: KarpenterNodePoolsLimit, Kind: Gauge, Labels: []string{LabelResourceType, LabelNodePool}, Unit: UnitNone, Statistic: Maximum,
			Nodewright: "a NodePool's spec.limits, per resource, at every provisioning round"},
		{Name: KarpenterNodePoolsUsage, Kind: Gauge, Labels: []string{LabelResourceType, LabelNodePool}, Unit: UnitNone, Statistic: Maximum,
			Nodewright: "the summed capacity of a NodePool's NodeClaims (cpu in cores, memory and ephemeral-storage in bytes, pods, nodes), at every provisioning round"},
		{Name: "karpenter_nodepools_cost_total", Kind: Gauge, Labels: []string{LabelNodePool},
			Nodewright: "not emitted under this name: ClusterPricePerHour (USD per hour by NodePool and capacity type)"},
		{Name: "karpenter_nodepools_cost_tracker_errors_total", Kind: Counter, Labels: []string{LabelNodePool},
			Nodewright: noController + "errors of Karpenter's in-memory cost tracker; Nodewright prices each record at launch"},
		// pkg/controllers/metrics/pod
		{Name: "karpenter_pods_state", Kind: Gauge,
			Labels:  []string{"name", "namespace", "owner", "node", "scheduled", LabelNodePool, LabelZone, "arch", LabelCapacityType, "instance_type", "phase", "ready", "managed"},
			Dropped: []string{"name", "namespace", "owner", "node"}, Nodewright: perPod},
		{Name: KarpenterPodsStartupDuration, Kind: Summary, Unit: UnitSeconds, Statistic: Average,
			Nodewright: "a pod on a Nodewright node: its creation to its Ready condition, observed by the one-minute sweep whose interval the Ready transition falls in (a late sweep can miss or repeat one)"},
		{Name: "karpenter_pods_unstarted_time_seconds", Kind: Gauge, Labels: podLabels, Dropped: podLabels, Nodewright: perPod},
		{Name: "karpenter_pods_bound_duration_seconds", Kind: Histogram,
			Nodewright: "not emitted: karpenter_pods_startup_duration_seconds and RegistrationSeconds"},
		{Name: "karpenter_pods_unbound_time_seconds", Kind: Gauge, Labels: podLabels, Dropped: podLabels, Nodewright: perPod},
		{Name: "karpenter_pods_provisioning_bound_duration_seconds", Kind: Histogram,
			Nodewright: "not emitted: karpenter_pods_startup_duration_seconds and RegistrationSeconds"},
		{Name: "karpenter_pods_provisioning_unbound_time_seconds", Kind: Gauge, Labels: podLabels, Dropped: podLabels, Nodewright: perPod},
		{Name: "karpenter_pods_provisioning_startup_duration_seconds", Kind: Histogram,
			Nodewright: "not emitted: karpenter_pods_startup_duration_seconds"},
		{Name: "karpenter_pods_provisioning_unstarted_time_seconds", Kind: Gauge, Labels: podLabels, Dropped: podLabels, Nodewright: perPod},
		{Name: "karpenter_pods_provisioning_scheduling_undecided_time_seconds", Kind: Gauge, Labels: podLabels, Dropped: podLabels, Nodewright: perPod},
		// pkg/controllers/disruption
		{Name: "karpenter_voluntary_disruption_decision_evaluation_duration_seconds", Kind: Histogram, Labels: []string{LabelReason, LabelConsolidationType},
			Nodewright: "not emitted: the consolidation function's Lambda Duration, and its report's solves"},
		{Name: KarpenterVoluntaryDisruptionDecisions, Kind: Counter, Labels: []string{LabelDecision, LabelReason, LabelConsolidationType}, Unit: UnitCount, Statistic: Sum,
			Nodewright: "a finished consolidation action (beside ConsolidationActions): decision delete or replace; reason underutilized, empty, drifted or expired; consolidation_type empty, single, multi or none (Karpenter's empty value)"},
		{Name: "karpenter_voluntary_disruption_decisions_by_nodepool_total", Kind: Counter, Labels: []string{LabelNodePool, LabelDecision, LabelReason, LabelConsolidationType},
			Nodewright: "not emitted: karpenter_voluntary_disruption_decisions_total and karpenter_nodeclaims_disrupted_total (by NodePool)"},
		{Name: "karpenter_voluntary_disruption_eligible_nodes", Kind: Gauge, Labels: []string{LabelReason},
			Nodewright: "not emitted: ConsolidationCandidates (all reasons)"},
		{Name: "karpenter_voluntary_disruption_consolidation_timeouts_total", Kind: Counter, Labels: []string{LabelConsolidationType},
			Nodewright: noController + "Karpenter's per-method timeout; a consolidation run stops at its work budget and logs it"},
		{Name: "karpenter_voluntary_disruption_failed_validations_total", Kind: Counter, Labels: []string{LabelConsolidationType},
			Nodewright: "not emitted: ConsolidationAbandoned (by cause)"},
		{Name: KarpenterNodePoolsAllowedDisruptions, Kind: Gauge, Labels: []string{LabelNodePool, LabelReason}, Unit: UnitCount, Statistic: Minimum,
			Nodewright: "how many more of a NodePool's nodes its budgets let be disrupted now, per reason (Underutilized, Empty, Drifted), at every consolidation run"},
		{Name: "karpenter_nodepools_nodes_consuming_budgets", Kind: Gauge, Labels: []string{LabelNodePool, LabelReason},
			Nodewright: "not emitted: karpenter_nodepools_allowed_disruptions"},
		{Name: "karpenter_voluntary_disruption_queue_failures_total", Kind: Counter, Labels: []string{LabelDecision, LabelReason, LabelConsolidationType},
			Nodewright: "not emitted: ConsolidationAbandoned (by cause)"},
		{Name: "karpenter_consolidation_score", Kind: Histogram, Labels: []string{LabelDecision, LabelNodePool, "policy"},
			Nodewright: "not emitted: a move a Balanced NodePool rejects is in the consolidation run's log (rejected: not worth its disruption, with its score)"},
		{Name: "karpenter_consolidation_moves_total", Kind: Counter, Labels: []string{LabelDecision, LabelNodePool, "policy"},
			Nodewright: "not emitted: a move a Balanced NodePool rejects is in the consolidation run's log (rejected: not worth its disruption, with its score)"},
		// pkg/controllers/provisioning/scheduling
		{Name: KarpenterSchedulingDuration, Kind: Histogram, Labels: []string{LabelController}, Unit: UnitSeconds, Statistic: Average,
			Nodewright: "one provisioning solve (beside SolveDurationMillis); controller provisioner"},
		{Name: "karpenter_scheduler_queue_depth", Kind: Gauge, Labels: []string{LabelController, "scheduling_id"}, Dropped: []string{"scheduling_id"},
			Nodewright: noController + "a long-running scheduler's queue, labeled per run (scheduling_id); PodsDeferred counts what a solve's budget left"},
		{Name: "karpenter_scheduler_unfinished_work_seconds", Kind: Gauge, Labels: []string{LabelController, "scheduling_id"}, Dropped: []string{"scheduling_id"},
			Nodewright: noController + "a long-running scheduler's run in progress, labeled per run (scheduling_id); a solve is bounded by its budget"},
		{Name: "karpenter_scheduler_ignored_pods_count", Kind: Gauge,
			Nodewright: "not emitted: the pods left out are in the FailedScheduling events"},
		{Name: KarpenterUnschedulablePods, Kind: Gauge, Labels: []string{LabelController}, Unit: UnitCount, Statistic: Maximum,
			Nodewright: "the pods the last provisioning solve could not place on any NodePool; controller provisioner"},
		{Name: "karpenter_scheduler_pending_pods_by_effective_zone_count", Kind: Gauge, Labels: []string{LabelController, LabelZone},
			Nodewright: "not emitted: PendingPods"},
		// pkg/controllers/nodeclaim/lifecycle
		{Name: "karpenter_nodeclaims_instance_termination_duration_seconds", Kind: Histogram, Labels: []string{LabelNodePool},
			Nodewright: "not emitted: the termination path's logs time each step"},
		{Name: "karpenter_nodeclaims_termination_duration_seconds", Kind: Histogram, Labels: []string{LabelNodePool},
			Nodewright: "not emitted: the termination path's logs time each step"},
		// pkg/operator and pkg/state/cost
		{Name: "karpenter_build_info", Kind: Gauge, Labels: []string{"version", "goversion", "goarch", "commit"},
			Nodewright: noController + "the build of a running controller; Nodewright's version is its stack's"},
		// github.com/aws/karpenter-provider-aws
		{Name: "karpenter_cloudprovider_instance_type_offering_available", Kind: Gauge, Labels: []string{"instance_type", LabelCapacityType, LabelZone},
			Nodewright: "not emitted: one stream per offering (hundreds of types by zone and capacity type); `nodewright explain` and InsufficientCapacityErrors"},
		{Name: "karpenter_cloudprovider_instance_type_offering_price_estimate", Kind: Gauge, Labels: []string{"instance_type", LabelCapacityType, LabelZone},
			Nodewright: "not emitted: one stream per offering; the prices are in `nodewright plan` and ClusterPricePerHour"},
		{Name: KarpenterInterruptionReceivedMessages, Kind: Counter, Labels: []string{LabelMessageType}, Unit: UnitCount, Statistic: Sum,
			Nodewright: "every interruption message handled (beside Interruptions); message_type as Karpenter names it (spot_interrupted, rebalance_recommendation, scheduled_change, instance_stopped, instance_terminated, capacity_reservation_interrupted, no_op)"},
		{Name: "karpenter_interruption_deleted_messages_total", Kind: Counter,
			Nodewright: "not emitted: SQS's NumberOfMessagesDeleted on the interruption queue"},
		{Name: "karpenter_interruption_message_queue_duration_seconds", Kind: Histogram,
			Nodewright: "not emitted: InterruptionToReplacementSeconds and InterruptionToDrainedSeconds"},
		{Name: "karpenter_interruption_instance_status_unhealthy_total", Kind: Counter, Labels: []string{"category"},
			Nodewright: "not emitted: node repair's events name the failed status check"},
		{Name: "karpenter_ec2nodeclasses_userdata_bytes", Kind: Gauge, Labels: []string{"nodeclass"},
			Nodewright: "not emitted: `nodewright validate` checks the user data"},
		{Name: "karpenter_cloudprovider_instance_launch_failures_total", Kind: Counter, Labels: []string{LabelZone, "zone_id", LabelCapacityType, LabelReason},
			Nodewright: "not emitted under this name: LaunchFailures (by EC2 error code) and InsufficientCapacityErrors"},
		{Name: "karpenter_cloudprovider_instance_termination_failures_total", Kind: Counter, Labels: []string{LabelZone, "zone_id"},
			Nodewright: "not emitted under this name: karpenter_cloudprovider_errors_total with method Delete"},
		{Name: "karpenter_cloudprovider_instance_type_cpu_cores", Kind: Gauge, Labels: []string{"instance_type"},
			Nodewright: noController + "a controller's catalog of instance types; Nodewright's is built into its functions (`nodewright explain`)"},
		{Name: "karpenter_cloudprovider_instance_type_memory_bytes", Kind: Gauge, Labels: []string{"instance_type"},
			Nodewright: noController + "a controller's catalog of instance types; Nodewright's is built into its functions (`nodewright explain`)"},
		{Name: "karpenter_cloudprovider_batcher_batch_time_seconds", Kind: Histogram, Labels: []string{"batcher"},
			Nodewright: noController + "Karpenter's in-process batching of EC2 calls"},
		{Name: "karpenter_cloudprovider_batcher_batch_size", Kind: Histogram, Labels: []string{"batcher"},
			Nodewright: noController + "Karpenter's in-process batching of EC2 calls"},
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// KarpenterDefinitions returns the definitions of the Karpenter metrics
// Nodewright emits, sorted by name.
func KarpenterDefinitions() []Definition {
	var out []Definition
	for _, k := range Karpenter() {
		if k.Emitted() {
			out = append(out, k.Definition())
		}
	}
	return out
}
