package orchestration

import (
	"context"
	"fmt"
	"strings"

	"github.com/nodewright/nodewright/shared/state"
)

// ActionDecision is the decision a consolidation action's step is recorded
// as, for `nodewright explain` and reports: planned (with the decision's
// explanation), done or abandoned (with the cause), always with the price
// per hour before and after.
func ActionDecision(a *state.Action, explanation string) *state.Decision {
	var what string
	switch a.Step {
	case state.StepPlanned:
		what = "planned"
	case state.StepDone:
		what = "done"
	case state.StepAbandoned:
		what = "abandoned (" + a.Cause + ")"
	default:
		what = a.Step
	}
	summary := fmt.Sprintf("consolidation %s %s: %s %s, $%.4f/h -> $%.4f/h", a.Method, what, a.Reason,
		strings.Join(a.Nodes, ","), a.PriceBefore, a.PriceAfter)
	if len(a.Replacements) > 0 {
		summary += "; replacements " + strings.Join(a.Replacements, ",")
	}
	if explanation != "" {
		summary += "; " + explanation
	}
	return &state.Decision{Function: "consolidation", Kind: "consolidation-" + a.Step, Summary: summary, Action: state.DecidedActionOf(a)}
}

// recordDecision records the action's current step as a decision; a
// failure is logged, never fatal (the action itself is in the table).
func (e *Executor) recordDecision(ctx context.Context, a *state.Action, explanation string) {
	d := ActionDecision(a, explanation)
	d.Time = e.Now()
	if err := e.Store.RecordDecision(ctx, d, a.ID+"#"+a.Step); err != nil {
		e.Log.Warn("record decision", "action", a.ID, "error", err)
	}
}
