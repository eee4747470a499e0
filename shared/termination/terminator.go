package termination

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/metrics"
	"github.com/nodewright/nodewright/shared/state"
)

// Store is the part of the state table the terminator writes: the node
// records, each write conditioned on the version read (*state.Store).
type Store interface {
	GetNodeClaim(ctx context.Context, name string) (*state.NodeClaim, error)
	PutNodeClaim(ctx context.Context, nc *state.NodeClaim) error
	DeleteNodeClaim(ctx context.Context, nc *state.NodeClaim) error
}

// Fleet terminates instances (*fleet.Launcher).
type Fleet interface {
	Terminate(ctx context.Context, ids []string) error
}

// Nodes writes the Nodes being retired.
type Nodes interface {
	// Taint adds a taint to a Node (and cordons it when cordon is set).
	Taint(ctx context.Context, name string, taint corev1.Taint, cordon bool) error
	// RemoveFinalizer takes apis.FinalizerTermination off a Node.
	RemoveFinalizer(ctx context.Context, name string) error
	// DeleteNode deletes a Node (no error if it is gone).
	DeleteNode(ctx context.Context, name string) error
}

// DrainResult is what one drain pass achieved.
type DrainResult struct {
	// Done: no pod that must leave is left on the node.
	Done bool
	// Evicted, Blocked (by a PDB), Deleted (at the deadline, without
	// eviction) and Remaining pods, as namespace/name.
	Evicted, Blocked, Deleted, Remaining []string
	// DeleteBy, when set, is when the next pass must come for a Blocked pod
	// to be deleted with its whole grace before the deadline (NextPass).
	DeleteBy time.Time
	// UIDs are the UIDs of the pods the pass acted on, by namespace/name
	// (the events about them name them).
	UIDs map[string]string
	// Why says why the Eviction API refused a Blocked pod (a budget, or
	// the call's error), by namespace/name; pods held otherwise
	// (do-not-disrupt, a critical pod waiting its turn) are not in it.
	Why map[string]string
}

// DrainOptions qualify one drain pass.
type DrainOptions struct {
	// Deadline (zero: none) by which the pods left are deleted.
	Deadline time.Time
	// Force evicts pods annotated karpenter.sh/do-not-disrupt too (the
	// instance is going whatever they say: an interruption).
	Force bool
	// MaxGracePeriod caps each pod's termination grace period (a spot
	// notice shorter than a pod's grace period).
	MaxGracePeriod *time.Duration
}

// Drainer evicts a node's pods (through the Eviction API, PDBs honoured),
// resumable: each pass looks at the node's current pods.
type Drainer interface {
	Drain(ctx context.Context, node string, opts DrainOptions) (DrainResult, error)
}

// Events records events about Nodes and their pods; it never fails the
// caller.
type Events interface {
	NodeEvent(ctx context.Context, node *corev1.Node, eventType, reason, message string)
	PodEvent(ctx context.Context, pod PodRef, eventType, reason, message string)
	// NodeClaimEvent records an event about the NodeClaim of a record.
	NodeClaimEvent(ctx context.Context, name, eventType, reason, message string)
}

// Metrics emits CloudWatch metrics (*metrics.Emitter).
type Metrics interface {
	Emit(name string, value float64, dims metrics.Dims) error
}

// Terminator retires nodes.
type Terminator struct {
	Store   Store
	Fleet   Fleet
	Nodes   Nodes   // nil: Nodes are not written
	Drainer Drainer // nil: nodes are not drained
	Events  Events  // nil: none
	// Recent dedupes the drain's repeated Node events (nil: none).
	Recent  *Recent
	Metrics Metrics // nil: none
	// Leases and Actions serve Sweep (nil: Sweep does not resume intents
	// and keeps no action's account).
	Leases  Leases
	Actions Actions
	Now     func() time.Time
	Log     *slog.Logger
}

func (t *Terminator) now() time.Time {
	if t.Now == nil {
		return time.Now()
	}
	return t.Now()
}

func (t *Terminator) log() *slog.Logger {
	if t.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return t.Log
}

func (t *Terminator) emit(name string, v float64, dims metrics.Dims) {
	if t.Metrics != nil {
		_ = t.Metrics.Emit(name, v, dims)
	}
}

// Request is one node to carry toward its removal.
type Request struct {
	// Node is the node's Node (nil: gone, or never registered).
	Node *corev1.Node
	// Record is the node's record (nil: a Node of ours with no record).
	Record *state.NodeClaim
	// Intent is merged into the record's intent (its pods are to move);
	// for a node without a record it is the whole intent.
	Intent state.Disruption
	// Grace is the NodePool's terminationGracePeriod: the intent's deadline
	// is at most its start plus Grace.
	Grace *time.Duration
}

func (req Request) name() string {
	switch {
	case req.Node != nil:
		return req.Node.Name
	case req.Record != nil:
		return req.Record.Name
	}
	return "?"
}

// Result is what one call achieved.
type Result struct {
	// Done: the instance is terminated and the Node and record are gone.
	Done bool
	// Drained: no pod is left to move (the node may still be there).
	Drained bool
	Drain   DrainResult
	// Record is the node's record as written last (nil: none, or removed).
	Record *state.NodeClaim
}

// writeAttempts bounds the retries of a record write that conflicts with
// another invocation's.
const writeAttempts = 5

// Intend records intent on the node's record: merged with the intent it
// carries (state.Merge), its pods to move, written conditioned on the
// version read, and on a conflict read again and merged again. No lease is
// needed: whoever drains the node reads the record between passes. It
// returns the record as stored (state.ErrNotFound if it is gone).
func (t *Terminator) Intend(ctx context.Context, rec *state.NodeClaim, intent state.Disruption) (*state.NodeClaim, error) {
	intent.Reschedule = true
	if intent.Since.IsZero() {
		intent.Since = t.now()
	}
	return t.update(ctx, rec, "record the termination intent", func(r *state.NodeClaim) bool {
		merged, changed := state.Merge(r.Disruption, intent)
		if !changed && (r.Phase == state.Disrupting || r.Phase == state.Terminating) {
			return false
		}
		r.Disruption = &merged
		if r.Phase != state.Terminating {
			r.Phase = state.Disrupting
		}
		return true
	})
}

// update applies change to rec and writes it if change says so; a
// conflicting write is read again and changed again.
func (t *Terminator) update(ctx context.Context, rec *state.NodeClaim, what string, change func(*state.NodeClaim) bool) (*state.NodeClaim, error) {
	for attempt := 1; ; attempt++ {
		if !change(rec) {
			return rec, nil
		}
		err := t.Store.PutNodeClaim(ctx, rec)
		if err == nil {
			return rec, nil
		}
		if !errors.Is(err, state.ErrConflict) || attempt == writeAttempts {
			return rec, fmt.Errorf("%s on nodeclaim %s: %w", what, rec.Name, err)
		}
		fresh, gerr := t.Store.GetNodeClaim(ctx, rec.Name)
		if gerr != nil {
			return rec, fmt.Errorf("%s on nodeclaim %s: read it again: %w", what, rec.Name, gerr)
		}
		rec = fresh
	}
}

// intent records the request's intent (a record-less node's is the
// request's) and returns it with the record as stored.
func (t *Terminator) intent(ctx context.Context, req Request) (state.Disruption, *state.NodeClaim, error) {
	in := req.Intent
	if in.Since.IsZero() {
		in.Since = t.now()
	}
	if req.Grace != nil {
		since := in.Since
		if req.Record != nil && req.Record.Disruption != nil && !req.Record.Disruption.Since.IsZero() {
			since = req.Record.Disruption.Since
		}
		in.Deadline = state.Earliest(in.Deadline, since.Add(*req.Grace))
	}
	if req.Record == nil {
		in.Reschedule = true
		return in.Normalize(), nil, nil
	}
	rec, err := t.Intend(ctx, req.Record, in)
	if err != nil {
		return in, rec, err
	}
	return *rec.Disruption, rec, nil
}

// Drain records the intent, taints and cordons the Node and makes one
// drain pass with the intent's deadline; Drained once no pod is left to
// move. It does not terminate: Step does.
func (t *Terminator) Drain(ctx context.Context, req Request) (Result, error) {
	intent, rec, err := t.intent(ctx, req)
	out := Result{Record: rec}
	if err != nil {
		return out, fmt.Errorf("retire %s: %w", req.name(), err)
	}
	if rec != nil && rec.Phase == state.Terminating {
		out.Drained = true
		return out, nil
	}
	if req.Node != nil && t.Nodes != nil && !disrupted(req.Node) {
		// No new pod may land on a node being drained. A Node already
		// gone (its instance ended outside Nodewright) has nothing to
		// keep pods off.
		if err := t.Nodes.Taint(ctx, req.Node.Name, apis.DisruptedTaint(), true); err != nil && !apierrors.IsNotFound(err) {
			return out, fmt.Errorf("retire %s: taint: %w", req.Node.Name, err)
		}
	}
	if t.Drainer == nil || req.Node == nil {
		out.Drained = true
		return out, nil
	}
	opts := DrainOptions{Deadline: intent.Deadline, Force: intent.Forced()}
	if opts.Force {
		// A pod whose grace period outlasts the notice still goes, with
		// the time there is.
		left := max(intent.Deadline.Sub(t.now()), time.Second)
		opts.MaxGracePeriod = &left
	}
	res, err := t.Drainer.Drain(ctx, req.Node.Name, opts)
	out.Drain = res
	if err != nil {
		return out, fmt.Errorf("retire %s: drain: %w", req.Node.Name, err)
	}
	t.drainEvents(ctx, req.Node, rec, intent.Reason, intent.Deadline, res)
	if n := len(res.Evicted) + len(res.Deleted); n > 0 {
		t.emit(metrics.PodsEvicted, float64(n), metrics.Dims{metrics.DimReason: reasonDim(intent)})
	}
	if !res.Done {
		t.log().Info("draining", "node", req.Node.Name, "owner", intent.Action, "evicted", len(res.Evicted), "blocked", len(res.Blocked),
			"remaining", len(res.Remaining), "deadline", intent.Deadline, "deleteBy", res.DeleteBy)
		return out, nil
	}
	out.Drained = true
	return out, nil
}

// reasonDim is the PodsEvicted metric's reason of an intent (the action
// kinds it used before intents were typed).
func reasonDim(d state.Disruption) string {
	switch d.Normalize().Cause {
	case state.CauseInterruption:
		return state.KindInterruption
	case state.CauseDeletion, state.CauseOrphan, state.CauseScaleDown:
		return state.KindDeletion
	}
	return state.KindConsolidation
}

// Step carries the node one pass on: Drain, then (once drained) the record
// marked terminating, the instance terminated, the Node's finalizer
// removed and the Node deleted, the record removed. Done once all that is.
func (t *Terminator) Step(ctx context.Context, req Request) (Result, error) {
	out, err := t.Drain(ctx, req)
	if err != nil || !out.Drained {
		return out, err
	}
	rec := out.Record
	if rec != nil && rec.Phase != state.Terminating {
		if rec, err = t.update(ctx, rec, "mark terminating", func(r *state.NodeClaim) bool {
			if r.Phase == state.Terminating {
				return false
			}
			r.Phase = state.Terminating
			return true
		}); err != nil {
			return out, fmt.Errorf("retire %s: %w", req.name(), err)
		}
		out.Record = rec
	}
	return t.release(ctx, req, rec, out)
}

// release terminates the instance, removes the Node and the record.
func (t *Terminator) release(ctx context.Context, req Request, rec *state.NodeClaim, out Result) (Result, error) {
	id := ""
	if rec != nil {
		id = rec.InstanceID
	} else if req.Node != nil {
		id = InstanceIDOf(req.Node.Spec.ProviderID)
	}
	if id != "" {
		if err := t.Fleet.Terminate(ctx, []string{id}); err != nil {
			t.karpenterTerminateFailed()
			if req.Node != nil && t.Events != nil {
				t.Events.NodeEvent(ctx, req.Node, corev1.EventTypeWarning, string(EventFailedTermination),
					fmt.Sprintf("Failed to terminate instance %s: %v", id, err))
			}
			return out, fmt.Errorf("retire %s: %w", req.name(), err)
		}
	}
	if req.Node != nil && t.Nodes != nil {
		if err := t.Nodes.RemoveFinalizer(ctx, req.Node.Name); err != nil && !apierrors.IsNotFound(err) {
			return out, fmt.Errorf("retire %s: release: %w", req.Node.Name, err)
		}
		if err := t.Nodes.DeleteNode(ctx, req.Node.Name); err != nil {
			return out, fmt.Errorf("retire %s: delete node: %w", req.Node.Name, err)
		}
	}
	if rec != nil {
		if err := t.remove(ctx, rec); err != nil {
			return out, fmt.Errorf("retire %s: remove record: %w", req.name(), err)
		}
		out.Record = nil
	}
	why := req.Intent.Reason
	if rec != nil && rec.Disruption != nil {
		why = rec.Disruption.Reason
	}
	if req.Node != nil && t.Events != nil {
		t.Events.NodeEvent(ctx, req.Node, corev1.EventTypeNormal, string(EventTerminated), fmt.Sprintf("%s: drained, instance %s terminated", why, id))
	}
	t.log().Info("node retired", "node", req.name(), "instance", id, "reason", why)
	t.karpenterRetired(req, rec)
	out.Done = true
	return out, nil
}

// remove deletes the record; one changed meanwhile (registration wrote it)
// is read again, one already gone is fine.
func (t *Terminator) remove(ctx context.Context, rec *state.NodeClaim) error {
	for attempt := 1; ; attempt++ {
		err := t.Store.DeleteNodeClaim(ctx, rec)
		if err == nil || errors.Is(err, state.ErrNotFound) {
			return nil
		}
		if !errors.Is(err, state.ErrConflict) || attempt == writeAttempts {
			return err
		}
		fresh, gerr := t.Store.GetNodeClaim(ctx, rec.Name)
		if errors.Is(gerr, state.ErrNotFound) {
			return nil
		}
		if gerr != nil {
			return gerr
		}
		rec = fresh
	}
}

// disrupted reports whether the node carries the disrupted taint and is
// cordoned.
func disrupted(n *corev1.Node) bool {
	return n.Spec.Unschedulable && slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool {
		return t.Key == apis.TaintKeyDisrupted && t.Effect == corev1.TaintEffectNoSchedule
	})
}

// InstanceIDOf returns the instance ID of an EKS providerID
// (aws:///us-east-1a/i-0123...), or "".
func InstanceIDOf(providerID string) string {
	if !strings.HasPrefix(providerID, "aws://") {
		return ""
	}
	i := strings.LastIndex(providerID, "/")
	if i < 0 || !strings.HasPrefix(providerID[i+1:], "i-") {
		return ""
	}
	return providerID[i+1:]
}
