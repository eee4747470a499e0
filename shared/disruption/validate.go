package disruption

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/nodewright/nodewright/shared/scheduling"
)

// Validate checks a command again on fresh inputs (after the validation
// wait, with its own candidates shown as not yet disrupted): every
// candidate may still be disrupted by the command's method (no new
// do-not-disrupt pod or node, no PDB that now blocks, consolidateAfter,
// policy, drift or expiry still holding), the budgets still allow it,
// pending pods do not count on the candidates' room, the candidates' pods
// still fit where the command assumed (on the other nodes, or on
// replacements of the planned types and number), and the replacements are
// still cheaper by the minimum saving at today's prices. The error names
// what changed.
func Validate(cmd Command, in Inputs) error { return validate(cmd, in, methods) }

// validate is Validate with the methods of r.
func validate(cmd Command, in Inputs, r *registry) error {
	if len(cmd.Candidates) == 0 {
		return errors.New("the command has no candidates")
	}
	v := newView(&in)
	nominated := v.baseline()
	if v.work.spent != "" {
		return invalid(CauseChanged, "the validation's work budget ran out (%s) simulating the pending pods: decide again", v.work.spent)
	}
	m := r.lookup(cmd.Method)
	if m == nil {
		return fmt.Errorf("unknown method %q", cmd.Method)
	}
	k := m.kind()
	records := map[string]bool{}
	for _, r := range in.Records {
		if r != nil {
			records[r.Name] = true
		}
	}
	cands := make([]*nodeInfo, 0, len(cmd.Candidates))
	for _, name := range cmd.Candidates {
		n := v.byRecord[name]
		if n == nil {
			if !records[name] {
				return invalid(CauseChanged, "nodeclaim %s is gone", name)
			}
			return invalid(CauseChanged, "nodeclaim %s no longer has a Node", name)
		}
		if why, cause := v.blocked(n, k.class); why != "" {
			return invalid(cause, "node %s: %s", n.name(), why)
		}
		if err := m.still(v, n, nominated); err != nil {
			return err
		}
		cands = append(cands, n)
	}
	if k.budget != "" {
		b := newBudgets(v)
		for _, n := range cands {
			if !b.allows(n.pool.Name, k.budget) {
				return invalid(CauseChanged, "node %s: %s", n.name(), b.reason(n.pool.Name, k.budget))
			}
			b.take(n.pool.Name)
		}
	}
	return m.holds(newSim(v), cmd, cands)
}

// stillConsolidatable: a consolidation candidate is still one
// (consolidateAfter, policy, pending pods that count on its room).
func stillConsolidatable(v *view, n *nodeInfo, nominated map[string]bool) error {
	if why := v.consolidatable(n, nominated); why != "" {
		return invalid(CauseChanged, "node %s: %s", n.name(), why)
	}
	return nil
}

// consolidationHolds: a consolidation's pods still fit on the other nodes
// (a delete), or on replacements of the planned types and number that
// are still cheaper by the minimum saving at today's prices.
func consolidationHolds(s *sim, cmd Command, cands []*nodeInfo) error {
	v := s.v
	before := 0.0
	for _, n := range cands {
		before += n.price
	}
	if len(cmd.Replacements) == 0 {
		out := s.simulate(cands, nil, true)
		if out.fail != "" {
			return invalid(CauseNoLongerFits, "pods no longer fit on the other nodes: %s", out.fail)
		}
		return nil
	}
	need, err := minSaving(cands, before)
	if err != nil {
		return &Invalid{Cause: CauseChanged, Err: err}
	}
	out := s.simulate(cands, v.typesUnder(priceLimit(before, need)), true)
	if out.fail != "" {
		return invalid(CauseNoLongerFits, "pods no longer fit: %s", out.fail)
	}
	if len(out.res.NodeClaims) == 0 {
		return invalid(CauseChanged, "pods now fit on the other nodes without a replacement: decide again")
	}
	if len(out.res.NodeClaims) > len(cmd.Replacements) {
		return invalid(CauseNoLongerFits, "pods now need %d new nodes, the command planned %d", len(out.res.NodeClaims), len(cmd.Replacements))
	}
	fits := map[string]bool{}
	for _, nc := range out.res.NodeClaims {
		for _, t := range nc.InstanceTypes {
			fits[t] = true
		}
	}
	worst := 0.0
	for i, r := range cmd.Replacements {
		for _, t := range r.InstanceTypes {
			if !fits[t] {
				return invalid(CauseNoLongerCheaper, "replacement %d: %s no longer fits the pods or is no longer cheaper than %s", i+1, t, money(before))
			}
		}
		w, err := v.dearest(r)
		if err != nil {
			return invalid(CauseNoLongerCheaper, "replacement %d: %w", i+1, err)
		}
		worst += w
	}
	if !worth(before, worst, need) {
		return invalid(CauseNoLongerCheaper, "replacement no longer cheaper: the candidates cost %s now, the replacements up to %s (%s)", money(before), money(worst), savingWord(need))
	}
	return nil
}

// dearest is the most a planned replacement may cost now: its dearest
// type at that type's cheapest offering in the claim's zones and capacity
// types (what the fleet may launch).
func (v *view) dearest(r scheduling.NodeClaim) (float64, error) {
	if v.in.Catalog == nil {
		return 0, errors.New("no instance catalog to price it")
	}
	worst := 0.0
	var gone []string
	for _, t := range r.InstanceTypes {
		it, ok := v.in.Catalog.Get(t)
		if !ok {
			gone = append(gone, t)
			continue
		}
		best := math.Inf(1)
		for _, z := range r.Zones {
			for _, ct := range r.CapacityTypes {
				best = min(best, v.price(it, z, ct))
			}
		}
		if math.IsInf(best, 1) {
			gone = append(gone, t)
			continue
		}
		worst = max(worst, best+claimSurplus(it, r))
	}
	if len(gone) == len(r.InstanceTypes) {
		return 0, fmt.Errorf("none of its types is offered now (%s)", strings.Join(slices.Compact(gone), ", "))
	}
	return worst + v.in.NodeCosts[r.NodePool], nil
}
