package provision

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/metrics"
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

// Fleet launches and ends instances (*fleet.Launcher).
type Fleet interface {
	Zones(ctx context.Context, classes []*apis.EC2NodeClass) ([]string, error)
	// ResolveAll resolves each EC2NodeClass against the account (its
	// subnets, security groups and AMIs), or says why it could not.
	ResolveAll(ctx context.Context, classes []*apis.EC2NodeClass) []fleet.Resolution
	LaunchGroup(ctx context.Context, req fleet.Request) ([]*fleet.Instance, error)
	TagNodeClaim(ctx context.Context, instanceID, nodePool, nodeClaim string) error
	Instances(ctx context.Context) ([]fleet.Running, error)
	Terminate(ctx context.Context, ids []string) error
}

// Nodes writes the Nodes Nodewright manages.
type Nodes interface {
	// MarkNode adds labels and Nodewright's termination finalizer
	// (apis.FinalizerTermination) to a Node.
	MarkNode(ctx context.Context, name string, labels map[string]string) error
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

// NodeClaimRef is the event reference of a NodeClaim record (Nodewright
// keeps NodeClaims in its state table, not as objects: the events are
// listed by `kubectl get events --field-selector involvedObject.kind=NodeClaim`).
func NodeClaimRef(name string) Ref {
	return Ref{APIVersion: apis.NodePoolAPIVersion, Kind: "NodeClaim", Name: name}
}

// Events records Kubernetes events (aggregated and rate limited by the
// implementation); it never fails the caller.
type Events interface {
	Event(ctx context.Context, ref Ref, eventType, reason, message string)
}

// DrainResult is what one drain call achieved.
type DrainResult struct {
	// Done: no pod that must leave is left on the node.
	Done bool
	// Evicted, Blocked (by a PDB), Deleted (after the deadline, without
	// eviction) and Remaining pods, as namespace/name.
	Evicted, Blocked, Deleted, Remaining []string
}

// DrainOptions qualify one drain call.
type DrainOptions struct {
	// Deadline (zero: none) after which the pods left are deleted.
	Deadline time.Time
	// Force evicts pods annotated karpenter.sh/do-not-disrupt too (the
	// instance is going whatever they say: an interruption).
	Force bool
	// MaxGracePeriod caps each pod's termination grace period (a spot
	// notice shorter than a pod's grace period).
	MaxGracePeriod *time.Duration
}

// Drainer evicts a node's pods (through the Eviction API, PDBs honoured),
// resumable: each call looks at the node's current pods.
type Drainer interface {
	Drain(ctx context.Context, node string, opts DrainOptions) (DrainResult, error)
}

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

type nopEvents struct{}

func (nopEvents) Event(context.Context, Ref, string, string, string) {}

type nopMetrics struct{}

func (nopMetrics) Emit(string, float64, metrics.Dims) error { return nil }
