package disruption

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/nodewright/nodewright/shared/apis"
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
func Validate(cmd Command, in Inputs) error {
	if len(cmd.Candidates) == 0 {
		return errors.New("the command has no candidates")
	}
	v := newView(&in)
	nominated := v.baseline()
	if v.work.spent != "" {
		return fmt.Errorf("the validation's work budget ran out (%s) simulating the pending pods: decide again", v.work.spent)
	}
	cls := graceful
	var reason apis.DisruptionReason
	switch cmd.Method {
	case MethodExpiration:
		cls = forceful
	case MethodDrift:
		cls, reason = eventual, apis.DisruptionReasonDrifted
	case MethodEmptiness:
		reason = apis.DisruptionReasonEmpty
	case MethodMultiNode, MethodSingleNode:
		reason = apis.DisruptionReasonUnderutilized
	default:
		return fmt.Errorf("unknown method %q", cmd.Method)
	}
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
				return fmt.Errorf("nodeclaim %s is gone", name)
			}
			return fmt.Errorf("nodeclaim %s no longer has a Node", name)
		}
		if why := v.blocked(n, cls); why != "" {
			return fmt.Errorf("node %s: %s", n.name(), why)
		}
		switch cmd.Method {
		case MethodExpiration:
			if v.expired(n) == "" {
				return fmt.Errorf("node %s: no longer expired (NodePool %s expireAfter changed)", n.name(), n.pool.Name)
			}
		case MethodDrift:
			if v.drifted(n) == "" {
				return fmt.Errorf("node %s: no longer drifted", n.name())
			}
		default:
			if why := v.consolidatable(n, nominated); why != "" {
				return fmt.Errorf("node %s: %s", n.name(), why)
			}
			if cmd.Method == MethodEmptiness && len(n.moving) > 0 {
				keys := make([]string, len(n.moving))
				for i, p := range n.moving {
					keys[i] = podKey(p)
				}
				return fmt.Errorf("node %s is no longer empty: %s", n.name(), podList(keys, 3))
			}
		}
		cands = append(cands, n)
	}
	if reason != "" {
		b := newBudgets(v)
		for _, n := range cands {
			if !b.allows(n.pool.Name, reason) {
				return fmt.Errorf("node %s: %s", n.name(), b.reason(n.pool.Name, reason))
			}
			b.take(n.pool.Name)
		}
	}
	s := newSim(v)
	switch cmd.Method {
	case MethodExpiration, MethodEmptiness:
		return nil
	case MethodDrift:
		out := s.simulate(cands, v.typesByPrice, true)
		if out.fail != "" {
			return fmt.Errorf("pods no longer fit: %s", out.fail)
		}
		if len(out.res.NodeClaims) > len(cmd.Replacements) {
			return fmt.Errorf("pods now need %d new nodes, the command planned %d", len(out.res.NodeClaims), len(cmd.Replacements))
		}
		return nil
	}
	before := 0.0
	for _, n := range cands {
		before += n.price
	}
	if len(cmd.Replacements) == 0 {
		out := s.simulate(cands, nil, true)
		if out.fail != "" {
			return fmt.Errorf("pods no longer fit on the other nodes: %s", out.fail)
		}
		return nil
	}
	need, err := minSaving(cands, before)
	if err != nil {
		return err
	}
	out := s.simulate(cands, v.typesUnder(priceLimit(before, need)), true)
	if out.fail != "" {
		return fmt.Errorf("pods no longer fit: %s", out.fail)
	}
	if len(out.res.NodeClaims) == 0 {
		return errors.New("pods now fit on the other nodes without a replacement: decide again")
	}
	if len(out.res.NodeClaims) > len(cmd.Replacements) {
		return fmt.Errorf("pods now need %d new nodes, the command planned %d", len(out.res.NodeClaims), len(cmd.Replacements))
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
				return fmt.Errorf("replacement %d: %s no longer fits the pods or is no longer cheaper than %s", i+1, t, money(before))
			}
		}
		w, err := v.dearest(r)
		if err != nil {
			return fmt.Errorf("replacement %d: %w", i+1, err)
		}
		worst += w
	}
	if !worth(before, worst, need) {
		return fmt.Errorf("replacement no longer cheaper: the candidates cost %s now, the replacements up to %s (%s)", money(before), money(worst), savingWord(need))
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
		worst = max(worst, best)
	}
	if len(gone) == len(r.InstanceTypes) {
		return 0, fmt.Errorf("none of its types is offered now (%s)", strings.Join(slices.Compact(gone), ", "))
	}
	return worst, nil
}
