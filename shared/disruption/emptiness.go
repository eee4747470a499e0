package disruption

import (
	"github.com/nodewright/nodewright/shared/apis"
)

// MethodEmptiness deletes nodes that run no pod that would move.
const MethodEmptiness Method = "emptiness"

// emptiness deletes the empty consolidation candidates (Karpenter's
// Emptiness method, a graceful disruption under the Empty budgets).
type emptiness struct{}

func (emptiness) kind() kind {
	return kind{name: MethodEmptiness, class: graceful, budget: apis.DisruptionReasonEmpty}
}

func (emptiness) candidate(d *decider, n *nodeInfo) (bool, string) {
	if why := d.consolidatable(n); why != "" {
		return false, why
	}
	return len(n.moving) == 0, ""
}

// compute deletes every empty candidate its pool's Empty budget allows,
// at once.
func (emptiness) compute(d *decider, cands []*nodeInfo) []Command {
	byCost(cands)
	var empty []*nodeInfo
	for _, n := range cands {
		if !d.budgets.allows(n.pool.Name, apis.DisruptionReasonEmpty) {
			d.rep.Rejected[n.name()] = "emptiness: " + d.budgets.reason(n.pool.Name, apis.DisruptionReasonEmpty)
			continue
		}
		d.budgets.take(n.pool.Name)
		empty = append(empty, n)
	}
	if len(empty) == 0 {
		return nil
	}
	return []Command{d.command(MethodEmptiness, ReasonEmpty, empty, nil, "")}
}

func (emptiness) still(v *view, n *nodeInfo, nominated map[string]bool) error {
	if why := v.consolidatable(n, nominated); why != "" {
		return invalid(CauseChanged, "node %s: %s", n.name(), why)
	}
	if len(n.moving) > 0 {
		keys := make([]string, len(n.moving))
		for i, p := range n.moving {
			keys[i] = podKey(p)
		}
		return invalid(CauseChanged, "node %s is no longer empty: %s", n.name(), podList(keys, 3))
	}
	return nil
}

// holds: an empty node moves no pod.
func (emptiness) holds(*sim, Command, []*nodeInfo) error { return nil }
