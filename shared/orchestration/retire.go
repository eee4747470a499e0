package orchestration

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/disruption"
	"github.com/nodewright/nodewright/shared/metrics"
	"github.com/nodewright/nodewright/shared/provision"
	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/shared/termination"
)

// The draining, terminating and abandoned steps: each candidate goes
// through package termination with the intent the action owns on it.

// candidate is a candidate's record and its Node (nil when gone).
type candidate struct {
	rec  *state.NodeClaim
	node *corev1.Node
}

// candidates reads the candidates still recorded, with their Nodes.
func (e *Executor) candidates(ctx context.Context, a *state.Action) ([]candidate, error) {
	view, err := e.Source.View(ctx)
	if err != nil {
		return nil, err
	}
	var out []candidate
	for _, name := range a.NodeClaims {
		r, err := e.Store.GetNodeClaim(ctx, name)
		if errors.Is(err, state.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, err
		}
		c := candidate{rec: r}
		for _, n := range view.Nodes {
			if r.InstanceID != "" && provision.InstanceIDOf(n.Spec.ProviderID) == r.InstanceID {
				c.node = n
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// drain takes one drain step on every candidate (Eviction API, PDBs
// honoured; past a candidate's deadline its pods left are deleted); done
// when no candidate has a pod left to move. deleteBy is set to the
// earliest DeleteBy of the candidates' passes.
func (e *Executor) drain(ctx context.Context, a *state.Action, deleteBy *time.Time) (bool, error) {
	cands, err := e.candidates(ctx, a)
	if err != nil {
		return false, err
	}
	all, progressed := true, false
	for _, c := range cands {
		if c.node == nil || c.rec.Phase == state.Terminating {
			continue
		}
		if !c.rec.Disruption.OwnedBy(a.ID) {
			continue // another action took the node's intent over: it removes the node
		}
		out, err := e.Terminator.Drain(ctx, termination.Request{Node: c.node, Record: c.rec, Intent: *c.rec.Disruption})
		res := out.Drain
		if n := len(res.Evicted) + len(res.Deleted); n > 0 {
			a.Evicted += len(res.Evicted)
			a.Stranded = append(a.Stranded, res.Deleted...)
			progressed = true
		}
		if err != nil {
			return false, fmt.Errorf("drain %s: %w", c.node.Name, err)
		}
		deadline := out.Record.Disruption.Deadline
		if !out.Drained {
			all = false
			if by := res.DeleteBy; !by.IsZero() && (deleteBy.IsZero() || by.Before(*deleteBy)) {
				*deleteBy = by
			}
			e.Log.Info("consolidation draining", "action", a.ID, "node", c.node.Name, "evicted", len(res.Evicted),
				"forced", len(res.Deleted), "blocked", len(res.Blocked), "remaining", len(res.Remaining), "deadline", deadline,
				"deleteBy", res.DeleteBy)
		}
	}
	if progressed && !all {
		// What moved so far is on record even if this invocation ends.
		if err := e.Store.PutAction(ctx, a); err != nil {
			return false, err
		}
	}
	return all, nil
}

// markTerminating marks the drained candidates' records terminating: from
// then on they are only terminated and removed, never drained again.
func (e *Executor) markTerminating(ctx context.Context, a *state.Action) error {
	return e.editRecords(ctx, a.NodeClaims, "mark terminating", func(r *state.NodeClaim) edit {
		if r.Phase == state.Terminating || !r.Disruption.OwnedBy(a.ID) {
			return skip
		}
		r.Phase = state.Terminating
		return write
	}, nil)
}

// terminate terminates every drained candidate's instance and removes its
// Node and record; done when all are gone.
func (e *Executor) terminate(ctx context.Context, a *state.Action) (bool, error) {
	cands, err := e.candidates(ctx, a)
	if err != nil {
		return false, err
	}
	all := true
	for _, c := range cands {
		if !c.rec.Disruption.OwnedBy(a.ID) {
			continue // another action took the node's intent over: it removes the node
		}
		res, err := e.Terminator.Step(ctx, termination.Request{Node: c.node, Record: c.rec, Intent: *c.rec.Disruption})
		if err != nil {
			return false, err
		}
		all = all && res.Done
	}
	return all, nil
}

// abandon ends the action without acting: the candidates whose intent it
// still owns get their taint and intent removed; a candidate whose intent
// another action took over (an interruption) keeps both, as that action
// drains it. Replacements already launched stay (they are capacity the
// next solves use or consolidation removes).
func (e *Executor) abandon(ctx context.Context, a *state.Action, reason AbandonReason, cause string) error {
	e.Log.Info("consolidation abandoned", "action", a.ID, "step", a.Step, "reason", reason, "cause", cause)
	taken := map[string]bool{} // instances whose intent another action owns
	err := e.editRecords(ctx, a.NodeClaims, "give back", func(r *state.NodeClaim) edit {
		if r.Disruption == nil {
			return skip
		}
		if !r.Disruption.OwnedBy(a.ID) {
			taken[r.InstanceID] = true
			return skip
		}
		r.Disruption = nil
		r.Phase = state.Initialized
		if a.Method == string(disruption.MethodRepair) && r.InitializedAt.IsZero() {
			// Repair also takes a node that registered and never
			// initialized: it goes back to registered, for the sweep.
			r.Phase = state.Registered
		}
		return write
	}, nil)
	if err != nil {
		return err
	}
	keep, err := e.nodesOf(ctx, taken)
	if err != nil {
		return err
	}
	for _, n := range a.Nodes {
		if keep[n] {
			e.Log.Info("candidate left to the action that took it over", "action", a.ID, "node", n)
			continue
		}
		if e.Nodes != nil {
			if err := e.Nodes.Untaint(ctx, n, apis.TaintKeyDisrupted); err != nil {
				e.Log.Warn("remove the disrupted taint", "node", n, "error", err)
			}
		}
		e.event(ctx, n, corev1.EventTypeNormal, EventDisruptionAbandoned, "consolidation "+a.Method+" abandoned: "+cause)
	}
	a.Step, a.Cause = state.StepAbandoned, cause
	_ = e.Metrics.Emit(metrics.ConsolidationAbandoned, 1, metrics.Dims{metrics.DimReason: string(reason)})
	if err := e.Store.PutAction(ctx, a); err != nil {
		return err
	}
	e.recordDecision(ctx, a, "")
	return nil
}

// nodesOf names the Nodes of instances (none when instances is empty).
func (e *Executor) nodesOf(ctx context.Context, instances map[string]bool) (map[string]bool, error) {
	out := map[string]bool{}
	if len(instances) == 0 || e.Source == nil {
		return out, nil
	}
	view, err := e.Source.View(ctx)
	if err != nil {
		return nil, err
	}
	for _, n := range view.Nodes {
		if instances[provision.InstanceIDOf(n.Spec.ProviderID)] {
			out[n.Name] = true
		}
	}
	return out, nil
}

// AbandonReason is why an action was abandoned, in a few classes: the
// ConsolidationAbandoned metric's Reason dimension.
type AbandonReason string

const (
	AbandonDoNotDisrupt    AbandonReason = "DoNotDisrupt"
	AbandonPDB             AbandonReason = "PDB"
	AbandonReplacement     AbandonReason = "Replacement" // the replacements failed to launch or become ready
	AbandonNoLongerFits    AbandonReason = "NoLongerFits"
	AbandonNoLongerCheaper AbandonReason = "NoLongerCheaper"
	AbandonChanged         AbandonReason = "Changed"
)

// invalidReason is the abandon reason of a validation's error, by the
// cause it carries (disruption.CauseOf).
func invalidReason(err error) AbandonReason {
	switch disruption.CauseOf(err) {
	case disruption.CauseDoNotDisrupt:
		return AbandonDoNotDisrupt
	case disruption.CausePDB:
		return AbandonPDB
	case disruption.CauseNoLongerFits:
		return AbandonNoLongerFits
	case disruption.CauseNoLongerCheaper:
		return AbandonNoLongerCheaper
	}
	return AbandonChanged
}

// EventReason is the reason of an event the executor records on a
// candidate Node.
type EventReason string

const (
	EventDisruptionPlanned   EventReason = "DisruptionPlanned"
	EventDisruptionAbandoned EventReason = "DisruptionAbandoned"
)

func (e *Executor) event(ctx context.Context, node, typ string, reason EventReason, msg string) {
	e.Events.Event(ctx, provision.Ref{Kind: "Node", Name: node}, typ, string(reason), msg)
}
