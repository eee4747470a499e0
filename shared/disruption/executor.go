// Package disruption carries out consolidation's commands as state
// machines in the state table: planned (candidates tainted
// karpenter.sh/disrupted:NoSchedule, then a validation wait), validated
// again on fresh state (or abandoned, with the taint removed), replacing
// (replacements launched and waited for until initialized), draining
// (Eviction API, PDBs honoured, terminationGracePeriod forcing), done.
// Every step is written before the next begins, so a later invocation
// resumes any action where the last one stopped, and conditional writes
// keep two invocations from acting on one node.
package disruption

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
	"github.com/nodewright/nodewright/shared/consolidation"
	"github.com/nodewright/nodewright/shared/metrics"
	"github.com/nodewright/nodewright/shared/provision"
	"github.com/nodewright/nodewright/shared/state"
)

// DefaultValidationWait is how long candidates stay tainted before the
// decision is checked again and carried out (Karpenter waits 15 s).
const DefaultValidationWait = 15 * time.Second

// Executor carries out consolidation commands with the provision
// function's reconciler (store, view, launcher, node writes, drainer).
type Executor struct {
	R              *provision.Reconciler
	Now            func() time.Time
	Log            *slog.Logger
	ValidationWait time.Duration
	// Validate re-checks a command on fresh inputs (consolidation.Validate).
	Validate func(consolidation.Command, consolidation.Inputs) error
}

func (e *Executor) wait() time.Duration {
	if e.ValidationWait <= 0 {
		return DefaultValidationWait
	}
	return e.ValidationWait
}

// ActionID is a command's action ID: its method and a hash of its
// candidates, so the same decision taken twice is one action.
func ActionID(cmd consolidation.Command, now time.Time) string {
	h := sha256.Sum256([]byte(strings.Join(cmd.Candidates, ",")))
	return fmt.Sprintf("%s-%s-%d-%s", state.KindConsolidation, cmd.Method, now.Unix(), hex.EncodeToString(h[:])[:8])
}

// Start records the command as a planned action, marks its candidates
// disrupting (conditionally: ErrConflict if another action took one) and
// taints their Nodes so that no new pod lands on them during the
// validation wait.
func (e *Executor) Start(ctx context.Context, cmd consolidation.Command, records []*state.NodeClaim) (*state.Action, error) {
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
		ID: ActionID(cmd, now), Kind: state.KindConsolidation, Reason: cmd.Reason, Method: cmd.Method, Step: state.StepPlanned,
		NodeClaims: cmd.Candidates, Nodes: cmd.Nodes, PriceBefore: cmd.PriceBefore, PriceAfter: cmd.PriceAfter,
		Plan: plan, ValidateAt: now.Add(e.wait()),
	}
	if err := e.R.Store.StartAction(ctx, a, cands); err != nil {
		return nil, fmt.Errorf("start %s: %w", a.ID, err)
	}
	for _, n := range cmd.Nodes {
		if err := e.R.Nodes.Taint(ctx, n, disruptedTaint(), false); err != nil {
			e.Log.Warn("taint candidate", "node", n, "error", err)
		}
	}
	e.recordDecision(ctx, a, cmd.Explanation)
	e.Log.Info("consolidation planned", "action", a.ID, "method", cmd.Method, "reason", cmd.Reason, "nodes", cmd.Nodes,
		"priceBefore", cmd.PriceBefore, "priceAfter", cmd.PriceAfter, "explanation", cmd.Explanation)
	for _, n := range cmd.Nodes {
		e.event(ctx, n, corev1.EventTypeNormal, "DisruptionPlanned", cmd.Explanation)
	}
	return a, nil
}

func disruptedTaint() corev1.Taint {
	return corev1.Taint{Key: apis.TaintKeyDisrupted, Effect: corev1.TaintEffectNoSchedule}
}

// Inputs reads fresh inputs for validation.
type Inputs func(ctx context.Context) (consolidation.Inputs, error)

// Advance carries an open action one or more steps forward, as far as it
// can go now: it returns once the action is done or abandoned, or when it
// must wait (the validation wait, replacements not initialized yet, a
// drain blocked by a PDB). The caller holds the consolidation lease.
func (e *Executor) Advance(ctx context.Context, lease *state.Lease, a *state.Action, fresh Inputs) error {
	for a.Open() {
		progressed, err := e.step(ctx, lease, a, fresh)
		if err != nil {
			return fmt.Errorf("advance %s (%s): %w", a.ID, a.Step, err)
		}
		if !progressed {
			return nil
		}
	}
	return nil
}

// step makes one step; progressed is false when the action must wait.
func (e *Executor) step(ctx context.Context, lease *state.Lease, a *state.Action, fresh Inputs) (bool, error) {
	var cmd consolidation.Command
	if err := json.Unmarshal(a.Plan, &cmd); err != nil {
		return false, e.abandon(ctx, a, "unreadable plan: "+err.Error())
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
			return true, e.abandon(ctx, a, err.Error())
		}
		if len(cmd.Replacements) > 0 {
			rep, launched, err := e.R.LaunchClaims(ctx, lease, cmd.Replacements, fmt.Sprintf("replacement for %s: consolidation %s", strings.Join(a.NodeClaims, ","), cmd.Method))
			if err != nil {
				return false, err
			}
			if len(launched) < len(cmd.Replacements) {
				for _, l := range launched {
					// A partial replacement is not the plan: take it back.
					_ = e.R.Fleet.Terminate(ctx, []string{l.InstanceID})
					_ = e.R.Store.DeleteNodeClaim(ctx, l)
				}
				cause := "replacement launch failed"
				if f := rep.Failed(); len(f) > 0 {
					cause += ": " + f[0].Error
				}
				return true, e.abandon(ctx, a, cause)
			}
			for _, l := range launched {
				a.Replacements = append(a.Replacements, l.Name)
			}
			a.Step = state.StepReplacing
		} else {
			a.Step = state.StepDraining
		}
		if err := e.R.Store.PutAction(ctx, a); err != nil {
			return false, err
		}
		if err := e.reschedule(ctx, a); err != nil {
			return false, err
		}
		return true, nil
	case state.StepReplacing:
		// The replacements join while this action waits: move their
		// records on (registered, initialized) as the provision sweep does.
		if _, err := e.R.Register(ctx); err != nil {
			return false, err
		}
		ready, failed, err := e.replacementsReady(ctx, a)
		if err != nil {
			return false, err
		}
		if failed != "" {
			return true, e.abandon(ctx, a, failed)
		}
		if !ready {
			return false, nil
		}
		a.Step = state.StepDraining
		return true, e.R.Store.PutAction(ctx, a)
	case state.StepDraining:
		done, err := e.drain(ctx, a)
		if err != nil || !done {
			return false, err
		}
		a.Step = state.StepDone
		if err := e.R.Store.PutAction(ctx, a); err != nil {
			return false, err
		}
		e.recordDecision(ctx, a, "")
		saved := a.PriceBefore - a.PriceAfter
		_ = e.R.Metrics.Emit(metrics.ConsolidationActions, 1, metrics.Dims{metrics.DimMethod: a.Method, metrics.DimReason: a.Reason})
		_ = e.R.Metrics.Emit(metrics.ConsolidationNodesRemoved, float64(len(a.NodeClaims)), nil)
		_ = e.R.Metrics.Emit(metrics.ConsolidationSavings, saved, nil)
		e.Log.Info("consolidation done", "action", a.ID, "method", a.Method, "reason", a.Reason, "nodes", a.Nodes,
			"priceBefore", a.PriceBefore, "priceAfter", a.PriceAfter, "evicted", a.Evicted)
		return true, nil
	}
	return false, fmt.Errorf("unknown step %q", a.Step)
}

// withoutAction shows validation the cluster as if this action had not
// marked its candidates (their own disruption must not disqualify them).
func withoutAction(in consolidation.Inputs, a *state.Action) consolidation.Inputs {
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

// reschedule marks the candidates' records so solves place their pods
// elsewhere (on the in-flight replacements) from now on.
func (e *Executor) reschedule(ctx context.Context, a *state.Action) error {
	for _, name := range a.NodeClaims {
		for attempt := 0; attempt < 3; attempt++ {
			r, err := e.R.Store.GetNodeClaim(ctx, name)
			if errors.Is(err, state.ErrNotFound) {
				break
			}
			if err != nil {
				return err
			}
			if r.Disruption == nil || r.Disruption.Action != a.ID || r.Disruption.Reschedule {
				break
			}
			r.Disruption.Reschedule = true
			if err = e.R.Store.PutNodeClaim(ctx, r); err == nil || !errors.Is(err, state.ErrConflict) {
				if err != nil {
					return err
				}
				break
			}
		}
	}
	return nil
}

// replacementsReady reports whether every replacement is initialized, or
// why the action cannot go on (a replacement gone, or not registered in
// time).
func (e *Executor) replacementsReady(ctx context.Context, a *state.Action) (bool, string, error) {
	for _, name := range a.Replacements {
		r, err := e.R.Store.GetNodeClaim(ctx, name)
		if errors.Is(err, state.ErrNotFound) {
			return false, "replacement " + name + " is gone", nil
		}
		if err != nil {
			return false, "", err
		}
		if r.Phase != state.Initialized {
			if e.Now().Sub(r.CreatedAt) > e.R.RegistrationTimeout() {
				return false, "replacement " + name + " did not become ready in time", nil
			}
			return false, "", nil
		}
	}
	return true, "", nil
}

// drain retires every candidate (drain, terminate, remove); done when all
// are gone.
func (e *Executor) drain(ctx context.Context, a *state.Action) (bool, error) {
	view, err := e.R.Source.View(ctx)
	if err != nil {
		return false, err
	}
	pools := map[string]*apis.NodePool{}
	merged, _, _ := provision.MergeConfig(e.R.NodePools, e.R.NodeClasses, view)
	for _, p := range merged {
		pools[p.Name] = p
	}
	all := true
	for _, name := range a.NodeClaims {
		r, err := e.R.Store.GetNodeClaim(ctx, name)
		if errors.Is(err, state.ErrNotFound) {
			continue
		}
		if err != nil {
			return false, err
		}
		var node *corev1.Node
		for _, n := range view.Nodes {
			if provision.InstanceIDOf(n.Spec.ProviderID) == r.InstanceID {
				node = n
			}
		}
		var grace *time.Duration
		if p := pools[r.NodePool]; p != nil && p.Spec.Template.Spec.TerminationGracePeriod != nil {
			d := p.Spec.Template.Spec.TerminationGracePeriod.Duration
			grace = &d
		}
		res, err := e.R.Retire(ctx, provision.RetireRequest{Node: node, Record: r, Action: a.ID, Reason: "Consolidation" + a.Reason, Grace: grace})
		a.Evicted += len(res.Drain.Evicted)
		if n := len(res.Drain.Evicted) + len(res.Drain.Deleted); n > 0 {
			_ = e.R.Metrics.Emit(metrics.PodsEvicted, float64(n), metrics.Dims{metrics.DimReason: state.KindConsolidation})
		}
		if err != nil {
			return false, err
		}
		all = all && res.Done
	}
	return all, nil
}

// abandon ends the action without acting: the candidates' taint and
// disruption mark are removed; replacements already launched stay (they
// are capacity the next solves use or consolidation removes).
func (e *Executor) abandon(ctx context.Context, a *state.Action, cause string) error {
	e.Log.Info("consolidation abandoned", "action", a.ID, "cause", cause)
	for _, name := range a.NodeClaims {
		r, err := e.R.Store.GetNodeClaim(ctx, name)
		if err != nil {
			continue
		}
		if r.Disruption != nil && r.Disruption.Action == a.ID {
			r.Disruption = nil
			r.Phase = state.Initialized
			if err := e.R.Store.PutNodeClaim(ctx, r); err != nil {
				return err
			}
		}
	}
	for _, n := range a.Nodes {
		if err := e.R.Nodes.Untaint(ctx, n, apis.TaintKeyDisrupted); err != nil {
			e.Log.Warn("remove the disrupted taint", "node", n, "error", err)
		}
		e.event(ctx, n, corev1.EventTypeNormal, "DisruptionAbandoned", "consolidation "+a.Method+" abandoned: "+cause)
	}
	a.Step, a.Cause = state.StepAbandoned, cause
	_ = e.R.Metrics.Emit(metrics.ConsolidationAbandoned, 1, metrics.Dims{metrics.DimReason: causeClass(cause)})
	if err := e.R.Store.PutAction(ctx, a); err != nil {
		return err
	}
	e.recordDecision(ctx, a, "")
	return nil
}

// causeClass is a short, low-cardinality class of an abandon cause for the
// metric's dimension.
func causeClass(cause string) string {
	switch {
	case strings.Contains(cause, "do-not-disrupt"):
		return "DoNotDisrupt"
	case strings.Contains(cause, "PodDisruptionBudget") || strings.Contains(cause, "PDB"):
		return "PDB"
	case strings.Contains(cause, "replacement"):
		return "Replacement"
	case strings.Contains(cause, "fit"):
		return "NoLongerFits"
	case strings.Contains(cause, "cheaper") || strings.Contains(cause, "price"):
		return "NoLongerCheaper"
	}
	return "Changed"
}

func (e *Executor) event(ctx context.Context, node, typ, reason, msg string) {
	e.R.Events.Event(ctx, provision.Ref{Kind: "Node", Name: node}, typ, reason, msg)
}
