package provision

import (
	"context"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/metrics"
	"github.com/nodewright/nodewright/shared/termination"
	"github.com/nodewright/nodewright/shared/trigger"
)

// ClusterSource reads the cluster (a kube cache kept across invocations).
type ClusterSource interface {
	View(ctx context.Context) (*View, error)
}

// PodSource is a ClusterSource that can also bring only the pods up to
// date, which Settle uses for its looks (a round's read still reads
// everything).
type PodSource interface {
	Pods(ctx context.Context) ([]*corev1.Pod, error)
}

// Expecter is a ClusterSource that can be told which pods the invocation's
// trigger names (none for a sweep), so that its reads end once those pods'
// changes are in rather than at the API server's next bookmark
// (kube.Cache.Expect says what is then up to date).
type Expecter interface {
	Expect(pods []trigger.PodRef)
}

// Fleet launches and ends instances (*fleet.Launcher).
type Fleet interface {
	Zones(ctx context.Context, classes []*apis.EC2NodeClass) ([]string, error)
	// ResolveAll resolves each EC2NodeClass against the account (its
	// subnets, security groups and AMIs), or says why it could not.
	ResolveAll(ctx context.Context, classes []*apis.EC2NodeClass) []fleet.Resolution
	// Prepare resolves a request into its fleet's plan (stored in the
	// records before LaunchPlan calls CreateFleet with it).
	Prepare(ctx context.Context, req fleet.Request) (*fleet.Plan, error)
	LaunchPlan(ctx context.Context, p *fleet.Plan) ([]*fleet.Instance, error)
	TagNodeClaim(ctx context.Context, instanceID, nodePool, nodeClaim string) error
	Instances(ctx context.Context) ([]fleet.Running, error)
	Terminate(ctx context.Context, ids []string) error
}

// Nodes writes the Nodes Nodewright manages.
type Nodes interface {
	// MarkNode adds annotations, labels and Nodewright's termination
	// finalizer (apis.FinalizerTermination) to a Node: the labels last, so
	// that the registered label is on a Node only once the rest is.
	MarkNode(ctx context.Context, name string, labels, annotations map[string]string) error
	// Relabel sets a Node's labels, and removes those whose value is nil.
	Relabel(ctx context.Context, name string, labels map[string]*string) error
	// RemoveFinalizer takes the termination finalizer off a Node (the API
	// server then deletes a Node being deleted).
	RemoveFinalizer(ctx context.Context, name string) error
	// Taint adds a taint to a Node (and cordons it when cordon is set).
	Taint(ctx context.Context, name string, taint corev1.Taint, cordon bool) error
	// Untaint removes a Node's taints with key.
	Untaint(ctx context.Context, name, key string) error
	// DeleteNode deletes a Node (no error if it is gone).
	DeleteNode(ctx context.Context, name string) error
}

// Ref names the object an event is about. APIVersion is "v1" when empty
// (Pods, Nodes); a NodeClaim's is karpenter.sh/v1.
type Ref struct {
	APIVersion, Kind, Namespace, Name, UID string
}

// NodeClaimRef is the event reference of a NodeClaim by name; the
// reconciler adds the object's UID when it keeps NodeClaim objects
// (nodeClaimRef), so that `kubectl describe nodeclaim` lists the events.
func NodeClaimRef(name string) Ref {
	return Ref{APIVersion: apis.NodePoolAPIVersion, Kind: "NodeClaim", Name: name}
}

// Events records Kubernetes events (aggregated and rate limited by the
// implementation); it never fails the caller.
type Events interface {
	Event(ctx context.Context, ref Ref, eventType, reason, message string)
}

// EventReason is the reason of an event the provision function records:
// the values Karpenter users see in kubectl describe.
type EventReason string

// The provision function's event reasons.
const (
	EventLaunched         EventReason = "Launched"
	EventNominated        EventReason = "Nominated"
	EventFailedScheduling EventReason = "FailedScheduling"
	EventRegistered       EventReason = "Registered"
	// EventKarpenterRunning is on a NodePool a round would have launched
	// into while Karpenter's controller runs (package handover).
	EventKarpenterRunning EventReason = "KarpenterRunning"
	// EventInsufficientCapacityError is on a NodeClaim whose launch EC2
	// refused for want of capacity (Karpenter's reason).
	EventInsufficientCapacityError EventReason = "InsufficientCapacityError"
	// EventNoCompatibleInstanceTypes is on a NodePool whose requirements
	// leave no instance type with an available offering, as a solve finds
	// it (Karpenter's reason).
	EventNoCompatibleInstanceTypes EventReason = "NoCompatibleInstanceTypes"
)

// DrainResult, DrainOptions and Drainer are package termination's (the
// drain is the terminator's; the Reconciler carries the Drainer it uses).
type (
	DrainResult  = termination.DrainResult
	DrainOptions = termination.DrainOptions
	Drainer      = termination.Drainer
)

// Metrics emits CloudWatch metrics (*metrics.Emitter).
type Metrics interface {
	Emit(name string, value float64, dims metrics.Dims) error
}

// SpotPrices are the region's spot prices for solves.
type SpotPrices interface {
	catalog.SpotPricer
	// Ensure makes prices available: from memory, else the state table,
	// else EC2; a stale copy is used while a refresh runs.
	Ensure(ctx context.Context) error
}

// RegionalCatalog is the region's catalog: its on-demand prices and the
// zones each type is offered in (*pricing.Regional).
type RegionalCatalog interface {
	// Catalog and Warning answer from memory, at once; Warning is "" when
	// the prices are the region's own.
	Catalog() *catalog.Catalog
	Warning() string
	// Refresh starts a refresh in the background when one is due; it
	// never blocks.
	Refresh(ctx context.Context)
}

// DiscardEvents drops every event: what a flow records to when it is given
// no recorder (tests, tools).
type DiscardEvents struct{}

// Event drops the event.
func (DiscardEvents) Event(context.Context, Ref, string, string, string) {}
