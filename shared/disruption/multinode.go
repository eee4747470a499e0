package disruption

import "github.com/nodewright/nodewright/shared/apis"

// MethodMultiNode removes several underutilized nodes at once, replacing
// them by at most one cheaper node.
const MethodMultiNode Method = "multi-node"

// maxMultiNode caps how many candidates multi-node consolidation considers
// at once (Karpenter's batch of 100).
const maxMultiNode = 100

// multiNode is Karpenter's MultiNodeConsolidation, a graceful disruption
// under the Underutilized budgets.
type multiNode struct{}

func (multiNode) kind() kind {
	return kind{name: MethodMultiNode, class: graceful, budget: apis.DisruptionReasonUnderutilized}
}

func (multiNode) candidate(d *decider, n *nodeInfo) (bool, string) { return d.underused(n) }

// compute finds the largest prefix of the candidates (at least two, at
// most 100) whose pods fit on the other nodes plus at most one new,
// strictly cheaper node, and that every Balanced pool among them approves,
// by binary search over the prefix length as Karpenter's
// firstNConsolidationOption.
func (multiNode) compute(d *decider, cands []*nodeInfo) []Command {
	cands = d.underutilized(cands, true)
	if len(cands) > maxMultiNode {
		cands = cands[:maxMultiNode]
	}
	if len(cands) < 2 {
		return nil
	}
	var best *Command
	lo, hi := 1, len(cands)-1
	for lo <= hi {
		mid := (lo + hi) / 2
		cmd, _ := d.consolidate(cands[:mid+1], true)
		switch {
		case cmd != nil:
			best = cmd
			lo = mid + 1
		case d.v.work.spent != "":
			lo = hi + 1 // the budget is spent: keep what was found
		default:
			hi = mid - 1
		}
	}
	if best == nil {
		d.recordRejection(MethodMultiNode) // the last move Balanced pools rejected
		return nil
	}
	d.rejected = nil
	return []Command{*best}
}

func (multiNode) still(v *view, n *nodeInfo, nominated map[string]bool) error {
	return stillConsolidatable(v, n, nominated)
}

func (multiNode) holds(s *sim, cmd Command, cands []*nodeInfo) error {
	return consolidationHolds(s, cmd, cands)
}
