package interruption

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/logging"
	"github.com/nodewright/nodewright/shared/metrics"
	"github.com/nodewright/nodewright/shared/pause"
	"github.com/nodewright/nodewright/shared/provision"
	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/shared/termination"
	"github.com/nodewright/nodewright/shared/trigger"
)

// Handler defaults.
const (
	// DefaultLeaseTTL is the node lease's lifetime, renewed every third of
	// it while the node is worked on (keeper.go), however long a drain pass
	// takes: if the holder dies, another invocation
	// takes the node over within it (names.InterruptionHeartbeat brings the
	// message back as soon), inside deadlineMargin of the deadline.
	DefaultLeaseTTL = 10 * time.Second
	// messageMemory is how long a handled message's ID is remembered.
	messageMemory = 24 * time.Hour
	// drainPoll is the pause between drain passes of one node.
	drainPoll = time.Second
	// deadlineMargin: the drain's deadline is this much before the
	// instance's end, so pods are deleted (and their replacements start)
	// before the instance vanishes under them.
	deadlineMargin = 15 * time.Second
)

// Store is the part of the state table the handler reads and writes
// (*state.Store).
type Store interface {
	NodeClaimByInstance(ctx context.Context, instanceID string) (*state.NodeClaim, error)
	GetNodeClaim(ctx context.Context, name string) (*state.NodeClaim, error)
	PutNodeClaim(ctx context.Context, nc *state.NodeClaim) error
	GetAction(ctx context.Context, id string) (*state.Action, error)
	PutAction(ctx context.Context, a *state.Action) error
	MarkUnavailable(ctx context.Context, offs []state.Offering, ttl time.Duration) error
	Acquire(ctx context.Context, name, holder string, ttl time.Duration, asks ...string) (*state.Lease, error)
	Renew(ctx context.Context, l *state.Lease, ttl time.Duration) error
	Release(ctx context.Context, l *state.Lease) (rerun bool, err error)
	FirstSeen(ctx context.Context, id string, ttl time.Duration) (bool, error)
}

// Capacity launches replacements for pods (*provision.Reconciler).
type Capacity interface {
	// Replace launches capacity for the pods at once, under the node's
	// lease, through the provision code path.
	Replace(ctx context.Context, lease *state.Lease, pods []string, reason string, avoid ...state.Offering) (*provision.Report, error)
}

// Terminator records termination intents and retires nodes
// (*termination.Terminator).
type Terminator interface {
	// Intend merges an intent into the node's record (no lease needed).
	Intend(ctx context.Context, rec *state.NodeClaim, intent state.Disruption) (*state.NodeClaim, error)
	// Step drains the node one pass with its record's intent, and
	// terminates and removes it once drained.
	Step(ctx context.Context, req termination.Request) (termination.Result, error)
}

// Tainter taints and cordons Nodes (provision.Nodes).
type Tainter interface {
	Taint(ctx context.Context, name string, taint corev1.Taint, cordon bool) error
}

// NodeNamer finds the Node name of an instance (*fleet.Launcher).
type NodeNamer interface {
	NodeName(ctx context.Context, instanceID string) (string, error)
}

// ClusterSource reads the cluster (provision.ClusterSource).
type ClusterSource interface {
	View(ctx context.Context) (*provision.View, error)
}

// Events records Kubernetes events (provision.Events); it never fails the
// caller.
type Events interface {
	Event(ctx context.Context, ref provision.Ref, eventType, reason, message string)
}

// Metrics emits CloudWatch metrics (*metrics.Emitter).
type Metrics interface {
	Emit(name string, value float64, dims metrics.Dims) error
}

// Deps are what a handler works with, each through the narrow interface
// it uses (shared/setup wires them, once per warm container).
type Deps struct {
	Store      Store
	Capacity   Capacity
	Terminator Terminator
	Source     ClusterSource
	Nodes      Tainter   // nil: Nodes are not tainted
	Events     Events    // nil: none
	Metrics    Metrics   // nil: none
	Names      NodeNamer // nil: a gone Node's name comes from its record only
	// NodePools and NodeClasses are the deployed configuration (merged
	// with the cluster's objects).
	NodePools   []*apis.NodePool
	NodeClasses []*apis.EC2NodeClass
	// Wait pauses d between drain passes on the handler's clock (nil: a
	// timer; tests and the fault suite drive it from the fake clock their
	// handlers' Now reads).
	Wait func(ctx context.Context, d time.Duration) error
	// RenewAtPasses renews the node's lease at each drain pass, on the
	// invocation's own goroutine, instead of from a keeper goroutine
	// (keeper.go): for the fault suite, whose scheduler orders every call
	// of an invocation and cannot order a second goroutine's. A pass
	// longer than the lease's TTL loses the lease then.
	RenewAtPasses bool
}

// Handler handles the interruption queue's messages for one invocation.
type Handler struct {
	Deps
	Now      func() time.Time
	Log      *slog.Logger
	LeaseTTL time.Duration
	// Poll is the pause between drain passes of one node (0: drainPoll).
	Poll time.Duration
	// Holder names this invocation in leases.
	Holder string
	// After, when set, sees what each message did (tests).
	After func(events.SQSMessage, []Outcome, error)
	// Queue, when set, keeps each message out of sight while it is worked
	// on, a Heartbeat at a time (0: names.InterruptionHeartbeat), and
	// brings a failed one back after RetryVisibility (0:
	// names.InterruptionRetryVisibility) rather than the queue's
	// visibility timeout.
	Queue                      Visibility
	Heartbeat, RetryVisibility time.Duration
	// Recheck: the batch is the recheck queue's (recheck.go): an event
	// the node's action already records is acknowledged; any other is
	// handled as a first delivery.
	Recheck bool
}

// New is a handler over d for the invocation holder (nil: a handler that
// can only acknowledge events that need no action).
func New(d *Deps, now func() time.Time, log *slog.Logger, holder string) *Handler {
	h := &Handler{Now: now, Log: log, Holder: holder}
	if d != nil {
		h.Deps = *d
	}
	if h.Events == nil {
		h.Events = provision.DiscardEvents{}
	}
	if h.Metrics == nil {
		h.Metrics = metrics.Discard{}
	}
	return h
}

// emit writes a data point (never failing the caller).
func (h *Handler) emit(name string, v float64, dims metrics.Dims) {
	if h.Metrics != nil {
		_ = h.Metrics.Emit(name, v, dims)
	}
}

func (h *Handler) poll() time.Duration {
	if h.Poll <= 0 {
		return drainPoll
	}
	return h.Poll
}

// sleep waits d on the handler's clock (Handler.Wait, else a timer).
func (h *Handler) sleep(ctx context.Context, d time.Duration) error {
	return pause.For(ctx, d, h.Wait)
}

// Outcome is what handling one instance did.
type Outcome struct {
	Instance  string
	NodeClaim string
	// Ours is false for instances without a NodeClaim record.
	Ours bool
	// Acted: the node was (or is being) replaced and drained.
	Acted        bool
	Replacements []string
	Drained      bool
	Terminated   bool
	Stranded     []string
	Note         string
}

// HandleBatch handles an SQS batch: messages in parallel, each on its own.
// A message that cannot be decoded, or whose handling fails, comes back
// as a batch item failure (SQS redelivers it alone and, after the queue's
// receive limit, moves it to the DLQ); the others succeed.
func (h *Handler) HandleBatch(ctx context.Context, ev events.SQSEvent) events.SQSEventResponse {
	var resp events.SQSEventResponse
	failed := make([]bool, len(ev.Records))
	var wg sync.WaitGroup
	for i, msg := range ev.Records {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs, err := h.Message(ctx, msg)
			if h.After != nil {
				h.After(msg, outs, err)
			}
			if err != nil {
				h.Log.Error("interruption message failed", "messageId", msg.MessageId, "error", logging.Err(err))
				h.emit(metrics.InterruptionMessagesFailed, 1, nil)
				failed[i] = true
			}
		}()
	}
	wg.Wait()
	for i, msg := range ev.Records {
		if failed[i] {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: msg.MessageId})
		}
	}
	return resp
}

// Message handles one queue message. It never panics: a panic becomes the
// message's error. With a Queue, the message stays out of sight while it
// is worked on, and comes back after RetryVisibility if it fails.
func (h *Handler) Message(ctx context.Context, msg events.SQSMessage) (outs []Outcome, err error) {
	hb := h.heartbeat(msg, h.Log.With("messageId", msg.MessageId))
	defer func() { hb.settle(ctx, err != nil) }() // after the recovery below: a panic fails the message
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	in, err := trigger.DecodeInterruption([]byte(msg.Body))
	if err != nil {
		return nil, err
	}
	arrived := h.Now()
	if ms, perr := strconv.ParseInt(msg.Attributes["SentTimestamp"], 10, 64); perr == nil {
		arrived = time.UnixMilli(ms)
	}
	log := h.Log.With("messageId", msg.MessageId, "eventId", in.EventID, "kind", in.Kind)
	h.emit(metrics.KarpenterInterruptionReceivedMessages, 1, metrics.Dims{metrics.LabelMessageType: trigger.KarpenterMessageType(in.Kind, in.State)})
	if in.Kind == trigger.KindUnknown {
		log.Warn("event of an unknown kind: acknowledged")
		h.emit(metrics.Interruptions, 1, metrics.Dims{metrics.DimKind: string(in.Kind)})
		return nil, nil
	}
	if h.Store == nil || h.Capacity == nil || h.Terminator == nil || h.Source == nil {
		return nil, errors.New("interruption handler has no reconciler")
	}
	hb.beat(ctx)
	for attempt := 1; ; attempt++ {
		outs, err = h.instances(ctx, in, arrived, hb, log)
		if err == nil || attempt == messageAttempts || !transient(err) {
			break
		}
		wait := time.Duration(attempt) * time.Second
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait+invocationReserve {
			break
		}
		log.Warn("transient failure: handling the message again", "attempt", attempt, "error", err)
		hb.beat(ctx)
		if h.sleep(ctx, wait) != nil {
			break
		}
	}
	if err != nil {
		return outs, err
	}
	first, err := h.Store.FirstSeen(ctx, in.EventID, messageMemory)
	if err != nil {
		log.Warn("remember message", "error", err)
	}
	if first {
		h.emit(metrics.Interruptions, 1, metrics.Dims{metrics.DimKind: string(in.Kind)})
	}
	return outs, nil
}

// instances handles each instance of an event.
func (h *Handler) instances(ctx context.Context, in trigger.Interruption, arrived time.Time, hb *heartbeat, log *slog.Logger) ([]Outcome, error) {
	var outs []Outcome
	var errs []error
	for _, id := range in.InstanceIDs {
		out, err := h.instance(ctx, in, id, arrived, hb, log.With("instance", id))
		outs = append(outs, out)
		if err != nil {
			errs = append(errs, fmt.Errorf("instance %s: %w", id, err))
		}
	}
	return outs, errors.Join(errs...)
}

// instance handles one instance of an event.
func (h *Handler) instance(ctx context.Context, in trigger.Interruption, id string, arrived time.Time, hb *heartbeat, log *slog.Logger) (Outcome, error) {
	out := Outcome{Instance: id}
	rec, err := h.Store.NodeClaimByInstance(ctx, id)
	if errors.Is(err, state.ErrNotFound) {
		out.Note = "not a Nodewright instance"
		log.Info("instance is not ours: acknowledged")
		return out, nil
	}
	if err != nil {
		return out, err
	}
	out.Ours, out.NodeClaim = true, rec.Name
	view, node, err := h.locate(ctx, rec, id, log)
	if err != nil {
		return out, err
	}
	pool := h.poolOf(view, rec.NodePool)
	h.notify(ctx, in, rec, node)
	d := Decide(in, rec, pool, h.Now())
	if !d.Act {
		out.Note = d.Note
		log.Info("no action", "nodeClaim", rec.Name, "why", d.Note)
		if in.Kind == trigger.KindRebalanceRecommendation && node != nil {
			h.Events.Event(ctx, provision.Ref{Kind: "Node", Name: node.Name, UID: string(node.UID)}, corev1.EventTypeNormal,
				string(EventRebalanceRecommended), "EC2 recommends rebalancing this spot instance: "+d.Note)
		}
		return out, nil
	}
	if h.Recheck {
		a, err := h.Store.GetAction(ctx, ActionPrefix+rec.InstanceID)
		if errors.Is(err, state.ErrNotFound) {
			a, err = nil, nil
		}
		if err != nil {
			return out, err
		}
		if why := recheckDecision(a, in.EventID); why != RecheckActs {
			out.Note = string(why)
			log.Info("recheck: nothing to do", "nodeClaim", rec.Name, "why", why, "step", a.Step)
			return out, nil
		}
	}
	h.onBoth(ctx, rec, node, corev1.EventTypeWarning, EventTerminatingOnInterruption, "The interruption drains the node and terminates it: "+d.Reason)
	if d.MarkUnavailable && rec.InstanceType != "" {
		if err := h.Store.MarkUnavailable(ctx, []state.Offering{{InstanceType: rec.InstanceType, Zone: rec.Zone, CapacityType: rec.CapacityType, Code: string(in.Kind)}}, state.UnavailableTTL); err != nil {
			log.Warn("mark the interrupted offering unavailable", "error", err)
		}
	}
	lease, err := h.Store.Acquire(ctx, state.LeaseNode(rec.Name), h.Holder, h.leaseTTL())
	if held := heldBy(err, h.Now()); held != nil {
		// Another invocation drains the node (a rebalance replacement, a
		// scheduled change, the sweep, or this message's invocation that
		// died): this event's deadline reaches it through the record, which
		// it reads between passes. Recording needs no lease; the message is
		// acknowledged only once the intent is stored.
		intent := state.IntentFor(state.CauseInterruption, ActionPrefix+rec.InstanceID, d.Reason, h.Now(), drainDeadline(in, d))
		if _, err := h.Terminator.Intend(ctx, rec, intent); err != nil {
			return out, fmt.Errorf("record the interruption while another invocation handles the node: %w", err)
		}
		if !urgent(intent.Deadline, h.Now()) {
			out.Note = "another invocation is handling this node: its deadline is recorded for it"
			log.Info("another invocation is handling this node: intent recorded, acknowledged", "nodeClaim", rec.Name, "deadline", intent.Deadline)
			return out, nil
		}
		// The deadline is near: if the holder died, nothing else would
		// resume the drain in time. Wait for it to finish or lapse.
		log.Info("another invocation is handling this node: intent recorded, waiting for it to finish or lapse", "nodeClaim", rec.Name,
			"holder", held.Holder, "until", held.Until, "deadline", intent.Deadline)
		if lease, err = h.awaitLease(ctx, rec.Name, held, hb, log); err != nil || lease == nil {
			out.Note = "another invocation handled this node: its deadline was recorded for it"
			return out, err
		}
		// What the holder left: the record and the cluster as they are now.
		if rec, err = h.Store.GetNodeClaim(ctx, rec.Name); err == nil {
			view, node, err = h.locate(ctx, rec, id, log)
		}
	}
	if err != nil {
		if lease != nil {
			_, _ = h.Store.Release(context.WithoutCancel(ctx), lease)
		}
		return out, err
	}
	defer func() {
		for {
			rerun, err := h.Store.Release(context.WithoutCancel(ctx), lease)
			if err != nil || !rerun {
				return
			}
		}
	}()
	out.Acted = true
	// The lease is kept alive while the node is worked on, however long a
	// drain pass takes; its loss stops the work (before the release above).
	if h.RenewAtPasses {
		return h.act(ctx, lease, in, d, rec, node, view, arrived, hb, out, log)
	}
	wctx, k := h.keep(ctx, lease, log)
	out, err = h.act(wctx, lease, in, d, rec, node, view, arrived, hb, out, log)
	return out, k.end(err)
}

// act marks, taints, replaces and drains the node, then terminates it.
func (h *Handler) act(ctx context.Context, lease *state.Lease, in trigger.Interruption, d Decision, rec *state.NodeClaim, node *corev1.Node,
	view *provision.View, arrived time.Time, hb *heartbeat, out Outcome, log *slog.Logger) (Outcome, error) {
	actionID := ActionPrefix + rec.InstanceID
	deadline := drainDeadline(in, d)
	a, err := h.Store.GetAction(ctx, actionID)
	switch {
	case errors.Is(err, state.ErrNotFound):
		a = &state.Action{ID: actionID, Kind: state.KindInterruption, Reason: d.Reason, Step: state.StepReplacing,
			NodeClaims: []string{rec.Name}, Messages: []string{in.EventID}, Deadline: deadline, PriceBefore: rec.PricePerHour}
		if node != nil {
			a.Nodes = []string{node.Name}
		}
		if err := h.Store.PutAction(ctx, a); err != nil {
			return out, fmt.Errorf("record interruption: %w", err)
		}
		log.Info("interruption recorded", "nodeClaim", rec.Name, "deadline", deadline)
	case err != nil:
		return out, err
	default:
		log.Info("interruption already recorded: carrying it on", "step", a.Step)
		if !slices.Contains(a.Messages, in.EventID) {
			a.Messages = append(a.Messages, in.EventID)
		}
		if !deadline.IsZero() && (a.Deadline.IsZero() || deadline.Before(a.Deadline)) {
			a.Deadline = deadline
		}
	}
	if !a.Open() {
		out.Note = "already handled"
		return out, nil
	}
	// Record the intent: its pods move in every solve from now on. The
	// provision function writes the record too (registration): the
	// terminator reads it again on a conflict, as a redelivery would cost
	// the notice seconds.
	intent := state.IntentFor(state.CauseInterruption, actionID, d.Reason, h.Now(), a.Deadline)
	if rec, err = h.Terminator.Intend(ctx, rec, intent); err != nil {
		return out, err
	}
	if node != nil && h.Nodes != nil {
		if err := h.Nodes.Taint(ctx, node.Name, apis.DisruptedTaint(), true); err != nil {
			log.Warn("taint and cordon", "node", node.Name, "error", err)
		} else {
			node = disruptedCopy(node) // the drain passes need not taint it again
		}
	}
	if a.Step == state.StepReplacing {
		pods := reschedulablePods(view, node)
		if len(pods) > 0 {
			hb.beat(ctx)
			rep, err := h.Capacity.Replace(ctx, lease, pods, fmt.Sprintf("replacement for %s: %s", rec.Name, d.Reason), reclaimed(in.Kind, d, rec)...)
			if err != nil {
				return out, fmt.Errorf("replace: %w", err)
			}
			for _, l := range rep.Launched() {
				a.Replacements = append(a.Replacements, l.NodeClaim)
			}
			// Pods a concurrent round launched for once the intent marked
			// them go to its NodeClaims: those are the replacements too.
			for _, nc := range rep.InFlightTo() {
				if !slices.Contains(a.Replacements, nc) {
					a.Replacements = append(a.Replacements, nc)
				}
			}
			h.emit(metrics.InterruptionToReplacement, h.Now().Sub(arrived).Seconds(), nil)
			log.Info("replacement launched", "pods", len(pods), "nodeClaims", a.Replacements, "pricePerHour", rep.PricePerHour(),
				"sinceMessage", h.Now().Sub(arrived).String())
		}
		a.Step = state.StepDraining
		if err := h.Store.PutAction(ctx, a); err != nil {
			return out, fmt.Errorf("record replacement: %w", err)
		}
	}
	out.Replacements = a.Replacements
	// Drain until the node is gone, the deadline has forced the rest, or
	// the invocation runs short (the provision sweep carries on).
	for {
		res, err := h.Terminator.Step(ctx, termination.Request{Node: node, Record: rec, Intent: intent})
		moved := len(res.Drain.Evicted) + len(res.Drain.Deleted)
		a.Evicted += len(res.Drain.Evicted)
		// Pods deleted past the deadline could not be moved in time: the
		// action records them (stranded).
		a.Stranded = append(a.Stranded, res.Drain.Deleted...)
		if err != nil {
			_ = h.Store.PutAction(ctx, a)
			return out, err
		}
		if res.Done {
			break
		}
		if moved > 0 {
			// What moved is on record even if this invocation dies.
			if err := h.Store.PutAction(ctx, a); err != nil {
				return out, fmt.Errorf("record drain progress: %w", err)
			}
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < 10*time.Second {
			out.Note = "drain continues in a later invocation"
			log.Info("drain continues in a later invocation (the next message or the provision sweep)", "nodeClaim", rec.Name,
				"evicted", a.Evicted, "stranded", len(a.Stranded), "blocked", len(res.Drain.Blocked), "deadline", a.Deadline)
			if termination.MissesDeleteBy(h.Now(), res.Drain.DeleteBy) {
				log.Warn("a pod a budget holds is due for deletion before the next sweep: it may get less than its whole grace",
					"nodeClaim", rec.Name, "deleteBy", res.Drain.DeleteBy, "blocked", res.Drain.Blocked)
			}
			_ = h.Store.PutAction(ctx, a)
			return out, nil
		}
		if h.RenewAtPasses {
			if err := h.Store.Renew(ctx, lease, h.leaseTTL()); err != nil {
				return out, err
			}
		}
		hb.beat(ctx)
		// The next pass comes by the drain's DeleteBy: a pod a budget holds
		// is deleted then with its whole grace before the deadline.
		if err := h.sleep(ctx, termination.NextPass(h.Now(), h.poll(), res.Drain.DeleteBy)); err != nil {
			return out, err
		}
		fresh, err := h.Store.GetNodeClaim(ctx, rec.Name)
		if errors.Is(err, state.ErrNotFound) {
			break // retired meanwhile (the sweep)
		}
		if err != nil {
			return out, err
		}
		rec = fresh
		// Another invocation may have recorded an earlier deadline (a spot
		// warning while this one drains for a rebalance): the next pass
		// drains to it, and the action says so.
		if cur := rec.Disruption; cur != nil && !cur.Deadline.IsZero() && (a.Deadline.IsZero() || cur.Deadline.Before(a.Deadline)) {
			log.Info("deadline shortened by a later intent", "nodeClaim", rec.Name, "deadline", cur.Deadline, "owner", cur.Action)
			a.Deadline = cur.Deadline
		}
	}
	out.Drained, out.Terminated, out.Stranded = true, true, a.Stranded
	h.emit(metrics.InterruptionToDrained, h.Now().Sub(arrived).Seconds(), nil)
	a.Step = state.StepDone
	if len(a.Stranded) > 0 {
		a.Cause = fmt.Sprintf("%d pods could not be moved before the deadline and were deleted", len(a.Stranded))
	}
	if err := h.Store.PutAction(ctx, a); err != nil {
		log.Warn("record interruption done", "error", err)
	}
	log.Info("interrupted node retired", "nodeClaim", rec.Name, "evicted", a.Evicted, "stranded", len(a.Stranded), "sinceMessage", h.Now().Sub(arrived).String())
	return out, nil
}

// drainDeadline is when the node's pods must be gone for event in: the
// instance's end less a margin, so pods are deleted (and their
// replacements start) before the instance vanishes under them; a state
// change's is now.
func drainDeadline(in trigger.Interruption, d Decision) time.Time {
	if d.Deadline.IsZero() || in.Kind == trigger.KindStateChange {
		return d.Deadline
	}
	return d.Deadline.Add(-deadlineMargin)
}

func (h *Handler) leaseTTL() time.Duration {
	if h.LeaseTTL <= 0 {
		return DefaultLeaseTTL
	}
	return h.LeaseTTL
}
