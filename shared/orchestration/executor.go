// Package orchestration carries out the disruption commands package
// disruption decides (repair, expiration, drift, emptiness, multi-node and
// single-node consolidation) as state machines in the state table:
//
//	planned -> replacing -> replacement-ready -> draining -> terminating -> done
//	   \___________\______________\________________________________/-> abandoned
//
// planned: the candidates are marked disrupting (their termination intent,
// owned by the action) and tainted karpenter.sh/disrupted:NoSchedule, then
// the validation wait; the command is validated again on fresh state (or
// abandoned: the taint and intent removed from the candidates whose intent
// the action still owns).
// replacing: the replacements are launching (a command without
// replacements goes straight to draining). replacement-ready: every
// replacement is initialized (its Node Ready) and no pod has been evicted
// yet. draining: the candidates' pods go through the Eviction API, PDBs
// honoured; terminationGracePeriod counts from the moment this step
// begins, and past it the pods left are deleted. terminating: the
// instances are terminated and the Nodes and records removed. Draining and
// terminating go through package termination, with each candidate's
// intent; a candidate whose intent a more urgent action took over (an
// interruption) is left to that action. Every step
// is written before the next begins, so a later invocation resumes any
// action exactly where the last one stopped, and conditional writes keep
// two invocations from acting on one node.
package orchestration

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/disruption"
	"github.com/nodewright/nodewright/shared/metrics"
	"github.com/nodewright/nodewright/shared/provision"
	"github.com/nodewright/nodewright/shared/scheduling"
	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/shared/termination"
)

// DefaultValidationWait is how long candidates stay tainted before the
// decision is checked again and carried out (Karpenter waits 15 s).
const DefaultValidationWait = 15 * time.Second

// Store is the part of the state table the executor reads and writes
// (*state.Store).
type Store interface {
	StartAction(ctx context.Context, a *state.Action, claims []*state.NodeClaim) error
	PutAction(ctx context.Context, a *state.Action) error
	NodeClaims(ctx context.Context) ([]*state.NodeClaim, error)
	GetNodeClaim(ctx context.Context, name string) (*state.NodeClaim, error)
	PutNodeClaim(ctx context.Context, nc *state.NodeClaim) error
	RecordDecision(ctx context.Context, d *state.Decision, id string) error
}

// Capacity launches replacements and follows them as they join
// (*provision.Reconciler).
type Capacity interface {
	// LaunchClaims launches planned NodeClaims as they are, fenced by the
	// lease; it returns the records launched.
	LaunchClaims(ctx context.Context, lease *state.Lease, claims []scheduling.NodeClaim, reason string) (*provision.Report, []*state.NodeClaim, error)
	// Register moves records on as their Nodes join (registered,
	// initialized).
	Register(ctx context.Context) (*provision.Report, error)
}

// Terminator drains and retires nodes with their records' termination
// intents (*termination.Terminator).
type Terminator interface {
	// Drain taints and cordons the node and makes one drain pass.
	Drain(ctx context.Context, req termination.Request) (termination.Result, error)
	// Step is Drain and, once drained, terminates the node and removes
	// its Node and record (a record marked terminating is not drained).
	Step(ctx context.Context, req termination.Request) (termination.Result, error)
}

// ClusterSource reads the cluster (provision.ClusterSource).
type ClusterSource interface {
	View(ctx context.Context) (*provision.View, error)
}

// Events records Kubernetes events (provision.Events).
type Events interface {
	Event(ctx context.Context, ref provision.Ref, eventType, reason, message string)
}

// Metrics emits CloudWatch metrics (*metrics.Emitter).
type Metrics interface {
	Emit(name string, value float64, dims metrics.Dims) error
}

// Tainter taints and untaints Nodes (provision.Nodes).
type Tainter interface {
	Taint(ctx context.Context, name string, taint corev1.Taint, cordon bool) error
	Untaint(ctx context.Context, name, key string) error
}

// Executor carries out consolidation commands, through the narrow
// interfaces it declares (shared/setup wires them).
type Executor struct {
	Store      Store
	Capacity   Capacity
	Terminator Terminator
	Source     ClusterSource
	Nodes      Tainter
	Events     Events
	// Claims names NodeClaim objects for events (nil: by name alone).
	Claims  NodeClaimRefs
	Metrics Metrics
	// NodePools and NodeClasses are the deployed configuration (merged
	// with the cluster's objects for each pool's terminationGracePeriod).
	NodePools    []*apis.NodePool
	NodeClasses  []*apis.EC2NodeClass
	NodeOverlays []*apis.NodeOverlay
	Now          func() time.Time
	Log          *slog.Logger
	// ValidationWait is the wait between planning and validation (0:
	// DefaultValidationWait).
	ValidationWait time.Duration
	// ReadyTimeout: a replacement not initialized this long after it was
	// recorded abandons the action (0: provision.DefaultRegistrationTimeout).
	ReadyTimeout time.Duration
	// Validate re-checks a command on fresh inputs (disruption.Validate).
	Validate func(disruption.Command, disruption.Inputs) error
	// seen dedupes the events of nodes a run could not disrupt: the
	// executor lives as long as the container (a Run is copied per
	// invocation).
	seen termination.Recent
}

// WithDefaults fills the executor's optional parts (no events, no
// metrics) and returns it.
func (e *Executor) WithDefaults() *Executor {
	if e.Events == nil {
		e.Events = provision.DiscardEvents{}
	}
	if e.Metrics == nil {
		e.Metrics = metrics.Discard{}
	}
	return e
}

func (e *Executor) wait() time.Duration {
	if e.ValidationWait <= 0 {
		return DefaultValidationWait
	}
	return e.ValidationWait
}

func (e *Executor) readyTimeout() time.Duration {
	if e.ReadyTimeout <= 0 {
		return provision.DefaultRegistrationTimeout
	}
	return e.ReadyTimeout
}

// ActionID is a command's action ID: its method and a hash of its
// candidates, so the same decision taken twice is one action.
func ActionID(cmd disruption.Command, now time.Time) string {
	h := sha256.Sum256([]byte(strings.Join(cmd.Candidates, ",")))
	return fmt.Sprintf("%s-%s-%d-%s", state.KindConsolidation, cmd.Method, now.Unix(), hex.EncodeToString(h[:])[:8])
}

// Start records the command as a planned action, marks its candidates
// disrupting (conditionally: ErrConflict if another action took one) and
// taints their Nodes so that no new pod lands on them during the
// validation wait.
func (e *Executor) Start(ctx context.Context, cmd disruption.Command, records []*state.NodeClaim) (*state.Action, error) {
	now := e.Now()
	byName := map[string]*state.NodeClaim{}
	for _, r := range records {
		byName[r.Name] = r
	}
	var cands []*state.NodeClaim
	for _, name := range cmd.Candidates {
		r, ok := byName[name]
		if !ok {
			return nil, fmt.Errorf("start %s: nodeclaim %s has no record", cmd.Method, name)
		}
		cands = append(cands, r)
	}
	plan, err := json.Marshal(cmd)
	if err != nil {
		return nil, err
	}
	a := &state.Action{
		ID: ActionID(cmd, now), Kind: state.KindConsolidation, Reason: string(cmd.Reason), Method: string(cmd.Method), Drift: string(cmd.Drift), Step: state.StepPlanned,
		NodeClaims: cmd.Candidates, Nodes: cmd.Nodes, PriceBefore: cmd.PriceBefore, PriceAfter: cmd.PriceAfter,
		Plan: plan, ValidateAt: now.Add(e.wait()),
	}
	if err := e.Store.StartAction(ctx, a, cands); err != nil {
		return nil, fmt.Errorf("start %s: %w", a.ID, err)
	}
	for _, n := range cmd.Nodes {
		if e.Nodes == nil {
			break
		}
		if err := e.Nodes.Taint(ctx, n, apis.DisruptedTaint(), false); err != nil {
			e.Log.Warn("taint candidate", "node", n, "error", err)
		}
	}
	e.recordDecision(ctx, a, cmd.Explanation)
	if cmd.Method == disruption.MethodRepair {
		e.karpenterRepair(cmd, cands)
	}
	e.Log.Info("consolidation planned", "action", a.ID, "method", cmd.Method, "reason", cmd.Reason, "nodes", cmd.Nodes,
		"priceBefore", cmd.PriceBefore, "priceAfter", cmd.PriceAfter, "explanation", cmd.Explanation)
	for _, n := range cmd.Nodes {
		e.event(ctx, n, corev1.EventTypeNormal, EventDisruptionPlanned, cmd.Explanation)
	}
	e.approvedEvents(ctx, cmd)
	return a, nil
}

// Inputs reads fresh inputs for validation.
type Inputs func(ctx context.Context) (disruption.Inputs, error)

// Advance carries an open action one or more steps forward, as far as it
// can go now: it returns once the action is done or abandoned, or when it
// must wait (the validation wait, replacements not initialized yet, a
// drain blocked by a PDB). The caller holds the consolidation lease.
// deleteBy, when set, is when the caller must advance it again: a pod a
// budget holds is deleted then with its whole grace before the deadline.
func (e *Executor) Advance(ctx context.Context, lease *state.Lease, a *state.Action, fresh Inputs) (deleteBy time.Time, err error) {
	for a.Open() {
		deleteBy = time.Time{}
		progressed, err := e.step(ctx, lease, a, fresh, &deleteBy)
		if err != nil {
			return deleteBy, fmt.Errorf("advance %s (%s): %w", a.ID, a.Step, err)
		}
		if !progressed {
			return deleteBy, nil
		}
	}
	return time.Time{}, nil
}

// step makes one step; progressed is false when the action must wait.
// Each step ends by writing the action, so a later invocation starts from
// the step written last. A drain step sets deleteBy (see Advance).
func (e *Executor) step(ctx context.Context, lease *state.Lease, a *state.Action, fresh Inputs, deleteBy *time.Time) (bool, error) {
	var cmd disruption.Command
	if err := json.Unmarshal(a.Plan, &cmd); err != nil {
		return false, e.abandon(ctx, a, AbandonChanged, "unreadable plan: "+err.Error())
	}
	switch a.Step {
	case state.StepPlanned:
		if e.Now().Before(a.ValidateAt) {
			return false, nil
		}
		in, err := fresh(ctx)
		if err != nil {
			return false, err
		}
		in = withoutAction(in, a)
		if err := e.Validate(cmd, in); err != nil {
			return true, e.abandon(ctx, a, invalidReason(err), err.Error())
		}
		if len(cmd.Replacements) == 0 {
			return true, e.beginDraining(ctx, a, cmd.Immediate)
		}
		a.Step = state.StepReplacing
		return true, e.Store.PutAction(ctx, a)
	case state.StepReplacing:
		if len(a.Replacements) == 0 {
			return e.launch(ctx, lease, a, cmd)
		}
		// The replacements join while this action waits: move their
		// records on (registered, initialized) as the provision sweep does.
		if _, err := e.Capacity.Register(ctx); err != nil {
			return false, err
		}
		waiting, failed, err := e.replacementsReady(ctx, a)
		if err != nil {
			return false, err
		}
		if failed != "" {
			return true, e.abandon(ctx, a, AbandonReplacement, failed)
		}
		if len(waiting) > 0 {
			e.waitingEvents(ctx, a, waiting)
			return false, nil
		}
		a.Step = state.StepReplacementReady
		if err := e.Store.PutAction(ctx, a); err != nil {
			return false, err
		}
		e.Log.Info("consolidation replacements ready", "action", a.ID, "replacements", a.Replacements)
		return true, nil
	case state.StepReplacementReady:
		return true, e.beginDraining(ctx, a, cmd.Immediate)
	case state.StepDraining:
		done, err := e.drain(ctx, a, deleteBy)
		if err != nil || !done {
			return false, err
		}
		if err := e.markTerminating(ctx, a); err != nil {
			return false, err
		}
		a.Step = state.StepTerminate
		return true, e.Store.PutAction(ctx, a)
	case state.StepTerminate:
		done, err := e.terminate(ctx, a)
		if err != nil || !done {
			return false, err
		}
		a.Step = state.StepDone
		if err := e.Store.PutAction(ctx, a); err != nil {
			return false, err
		}
		e.recordDecision(ctx, a, "")
		saved := a.PriceBefore - a.PriceAfter
		_ = e.Metrics.Emit(metrics.ConsolidationActions, 1, metrics.Dims{metrics.DimMethod: a.Method, metrics.DimReason: a.Reason})
		e.karpenterDecision(a)
		_ = e.Metrics.Emit(metrics.ConsolidationNodesRemoved, float64(len(a.NodeClaims)), nil)
		_ = e.Metrics.Emit(metrics.ConsolidationSavings, saved, nil)
		e.Log.Info("consolidation done", "action", a.ID, "method", a.Method, "reason", a.Reason, "nodes", a.Nodes,
			"priceBefore", a.PriceBefore, "priceAfter", a.PriceAfter, "evicted", a.Evicted, "forced", len(a.Stranded))
		return true, nil
	}
	return false, fmt.Errorf("unknown step %q", a.Step)
}

// replacementReason is the launch reason of an action's replacements: it
// names the action, so that a later invocation finds replacements an
// earlier one launched but did not live to write into the action.
func replacementReason(a *state.Action) string {
	return fmt.Sprintf("replacement for %s: consolidation %s (%s)", strings.Join(a.NodeClaims, ","), a.Method, a.ID)
}

// launch launches the command's replacements (or adopts those an earlier
// invocation launched for this action) and writes them into the action;
// the candidates' pods then move onto them in every solve.
func (e *Executor) launch(ctx context.Context, lease *state.Lease, a *state.Action, cmd disruption.Command) (bool, error) {
	reason := replacementReason(a)
	recs, err := e.Store.NodeClaims(ctx)
	if err != nil {
		return false, err
	}
	var launched []*state.NodeClaim
	for _, r := range recs {
		if r.Reason == reason {
			launched = append(launched, r)
		}
	}
	cause := "replacement launch failed"
	if len(launched) > 0 {
		e.Log.Info("consolidation replacements launched by an earlier invocation", "action", a.ID, "replacements", len(launched))
		cause = "replacements of an earlier invocation are incomplete"
	} else {
		rep, l, err := e.Capacity.LaunchClaims(ctx, lease, cmd.Replacements, reason)
		if err != nil {
			return false, fmt.Errorf("launch replacements: %w", err)
		}
		launched = l
		if rep != nil {
			if f := rep.Failed(); len(f) > 0 {
				cause += ": " + f[0].Error
			}
		}
	}
	if len(launched) < len(cmd.Replacements) {
		// A partial replacement is not the plan: take it back.
		for _, l := range launched {
			intent := state.IntentFor(state.CauseConsolidation, a.ID, "partial replacement taken back", e.Now(), time.Time{})
			if _, err := e.Terminator.Step(ctx, termination.Request{Record: l, Intent: intent}); err != nil {
				e.Log.Warn("take back a partial replacement", "nodeClaim", l.Name, "error", err)
			}
		}
		return true, e.abandon(ctx, a, AbandonReplacement, cause)
	}
	for _, l := range launched {
		a.Replacements = append(a.Replacements, l.Name)
	}
	// The events tell of a launch that has happened: recorded before the
	// action is written, they survive an invocation that ends right after
	// it (a later one adopting the replacements records them again, and
	// the recorder counts the repeat).
	e.launchingEvents(ctx, a, launched)
	if err := e.Store.PutAction(ctx, a); err != nil {
		return false, err
	}
	e.Log.Info("consolidation replacements launching", "action", a.ID, "replacements", a.Replacements)
	return true, e.markCandidates(ctx, a, nil)
}

// beginDraining starts the drain: the candidates' pods are to move (solves
// place them elsewhere from now on) and each candidate's
// terminationGracePeriod starts counting now, as its drain deadline (for
// an immediate command, a repair, the deadline is now: its pods are
// deleted in the first pass, as Karpenter's repair sets the termination
// timestamp to now). It
// writes the action at StepDraining.
func (e *Executor) beginDraining(ctx context.Context, a *state.Action, immediate bool) error {
	grace := map[string]time.Duration{}
	if len(a.NodeClaims) > 0 && e.Source != nil {
		view, err := e.Source.View(ctx)
		if err != nil {
			return err
		}
		pools, _, _ := provision.MergeConfig(e.NodePools, e.NodeClasses, view)
		for _, p := range pools {
			if g := p.Spec.Template.Spec.TerminationGracePeriod; g != nil {
				grace[p.Name] = g.Duration
			}
		}
	}
	now := e.Now()
	var earliest time.Time
	var marked []*state.NodeClaim
	err := e.markCandidates(ctx, a, func(r *state.NodeClaim) bool {
		d := r.Disruption
		if immediate && (d.Deadline.IsZero() || d.Deadline.After(now)) {
			d.Deadline = now
			return true
		}
		if g, ok := grace[r.NodePool]; ok && d.Deadline.IsZero() {
			d.Deadline = now.Add(g)
			return true
		}
		return false
	}, func(r *state.NodeClaim) {
		marked = append(marked, r)
		if dl := r.Disruption.Deadline; !dl.IsZero() && (earliest.IsZero() || dl.Before(earliest)) {
			earliest = dl
		}
	})
	if err != nil {
		return err
	}
	// The candidates are marked: their drain has begun. As at launch, the
	// events go before the action's write, so that an invocation ending at
	// it loses none (the next one marks again and records them again).
	e.terminatingEvents(ctx, a, marked)
	a.Step, a.Deadline = state.StepDraining, earliest
	if err := e.Store.PutAction(ctx, a); err != nil {
		return err
	}
	e.Log.Info("consolidation draining", "action", a.ID, "nodes", a.Nodes, "deadline", a.Deadline)
	return nil
}

// markCandidates marks the candidates' records so solves place their pods
// elsewhere (Reschedule), lets change alter the disruption further
// (reporting whether it did), and shows each record as written to seen.
func (e *Executor) markCandidates(ctx context.Context, a *state.Action, change func(*state.NodeClaim) bool, seen ...func(*state.NodeClaim)) error {
	return e.editRecords(ctx, a.NodeClaims, "mark", func(r *state.NodeClaim) edit {
		if r.Disruption == nil || r.Disruption.Action != a.ID {
			return skip
		}
		changed := !r.Disruption.Reschedule
		r.Disruption.Reschedule = true
		if change != nil && change(r) {
			changed = true
		}
		if changed {
			return write
		}
		return keep
	}, func(r *state.NodeClaim) {
		for _, f := range seen {
			f(r)
		}
	})
}

// edit is what editRecords does with a record once its function has seen
// it.
type edit int

const (
	skip  edit = iota // leave it: not this action's to change
	keep              // nothing to write; it is as wanted
	write             // write it back
)

// editRecords reads each named record, lets fn change it and writes it
// back when fn says so, then shows it to seen (unless skipped). A
// conflicting write is read again and retried, at most markAttempts times;
// a record that is gone is passed over.
func (e *Executor) editRecords(ctx context.Context, names []string, what string, fn func(*state.NodeClaim) edit, seen func(*state.NodeClaim)) error {
	for _, name := range names {
		for attempt := 1; ; attempt++ {
			r, err := e.Store.GetNodeClaim(ctx, name)
			if errors.Is(err, state.ErrNotFound) {
				break
			}
			if err != nil {
				return fmt.Errorf("%s nodeclaim %s: %w", what, name, err)
			}
			ed := fn(r)
			if ed == skip {
				break
			}
			if ed == write {
				err = e.Store.PutNodeClaim(ctx, r)
			}
			if err == nil {
				if seen != nil {
					seen(r)
				}
				break
			}
			if !errors.Is(err, state.ErrConflict) || attempt == markAttempts {
				return fmt.Errorf("%s nodeclaim %s: %w", what, name, err)
			}
		}
	}
	return nil
}

// markAttempts bounds the retries of a conflicting record write.
const markAttempts = 5

// withoutAction shows validation the cluster as if this action had not
// marked its candidates (their own disruption must not disqualify them).
func withoutAction(in disruption.Inputs, a *state.Action) disruption.Inputs {
	out := in
	out.Records = nil
	for _, r := range in.Records {
		if r.Disruption != nil && r.Disruption.Action == a.ID {
			c := *r
			c.Disruption, c.Phase = nil, state.Initialized
			out.Records = append(out.Records, &c)
			continue
		}
		out.Records = append(out.Records, r)
	}
	out.Actions = nil
	for _, x := range in.Actions {
		if x.ID != a.ID {
			out.Actions = append(out.Actions, x)
		}
	}
	out.Nodes = nil
	for _, n := range in.Nodes {
		if slices.Contains(a.Nodes, n.Name) {
			c := *n
			c.Spec.Taints = slices.DeleteFunc(slices.Clone(n.Spec.Taints), func(t corev1.Taint) bool { return t.Key == apis.TaintKeyDisrupted })
			out.Nodes = append(out.Nodes, &c)
			continue
		}
		out.Nodes = append(out.Nodes, n)
	}
	return out
}

// replacementsReady returns the action's replacements not yet initialized,
// or why the action must be abandoned: a replacement gone, or one that
// did not initialize in time.
func (e *Executor) replacementsReady(ctx context.Context, a *state.Action) ([]*state.NodeClaim, string, error) {
	var waiting []*state.NodeClaim
	for _, name := range a.Replacements {
		r, err := e.Store.GetNodeClaim(ctx, name)
		if errors.Is(err, state.ErrNotFound) {
			return nil, "replacement " + name + " is gone", nil
		}
		if err != nil {
			return nil, "", err
		}
		if r.Phase != state.Initialized {
			if e.Now().Sub(r.CreatedAt) > e.readyTimeout() {
				return nil, "replacement " + name + " did not become ready in time", nil
			}
			waiting = append(waiting, r)
		}
	}
	return waiting, "", nil
}
