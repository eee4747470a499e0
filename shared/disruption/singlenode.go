package disruption

import "github.com/nodewright/nodewright/shared/apis"

// MethodSingleNode removes one underutilized node, or replaces it by
// cheaper capacity.
const MethodSingleNode Method = "single-node"

// singleNode is Karpenter's SingleNodeConsolidation, a graceful disruption
// under the Underutilized budgets.
type singleNode struct{}

func (singleNode) kind() kind {
	return kind{name: MethodSingleNode, class: graceful, budget: apis.DisruptionReasonUnderutilized}
}

func (singleNode) candidate(d *decider, n *nodeInfo) (bool, string) { return d.underused(n) }

// compute takes the candidates one by one, by disruption cost (those an
// earlier run did not reach first: Inputs.ReachFirst), and returns
// the first that can be deleted (its pods fit elsewhere) or replaced by
// cheaper capacity (one node, or two smaller ones), and that its pool's
// Balanced policy, if it has it, approves: a Balanced candidate that even
// a delete would not be worth is skipped before any simulation.
func (singleNode) compute(d *decider, cands []*nodeInfo) []Command {
	for _, n := range d.reachFirst(d.underutilized(cands, false)) {
		if ok, why := d.canPass(n); !ok {
			d.rep.Rejected[n.name()] = "single-node: not worth its disruption " + why
			continue
		}
		cmd, why := d.consolidate([]*nodeInfo{n}, false)
		if cmd != nil {
			return []Command{*cmd}
		}
		if d.v.work.spent != "" {
			return nil // this candidate and the rest are not reached
		}
		d.rep.Rejected[n.name()] = "single-node: " + why
		if d.rejected != nil {
			d.recordRejection(MethodSingleNode) // Karpenter counts it, with no event
		} else {
			d.rep.Unconsolidatable[n.name()] = why
		}
	}
	return nil
}

func (singleNode) still(v *view, n *nodeInfo, nominated map[string]bool) error {
	return stillConsolidatable(v, n, nominated)
}

func (singleNode) holds(s *sim, cmd Command, cands []*nodeInfo) error {
	return consolidationHolds(s, cmd, cands)
}

// reachFirst moves the candidates an earlier run did not reach
// (Inputs.ReachFirst) to the front, each part in its order.
func (d *decider) reachFirst(cands []*nodeInfo) []*nodeInfo {
	if len(d.v.in.ReachFirst) == 0 {
		return cands
	}
	first := make(map[string]bool, len(d.v.in.ReachFirst))
	for _, name := range d.v.in.ReachFirst {
		first[name] = true
	}
	out := make([]*nodeInfo, 0, len(cands))
	for _, n := range cands {
		if first[n.name()] {
			out = append(out, n)
		}
	}
	for _, n := range cands {
		if !first[n.name()] {
			out = append(out, n)
		}
	}
	return out
}
