package disruption

import (
	"sort"

	"github.com/nodewright/nodewright/shared/apis"
)

// MethodDrift replaces nodes that no longer match their NodePool or
// EC2NodeClass.
const MethodDrift Method = "drift"

// drift replaces drifted nodes within their pools' Drifted budgets
// (Karpenter's Drift method, an eventual disruption).
type drift struct{}

func (drift) kind() kind {
	return kind{name: MethodDrift, class: eventual, budget: apis.DisruptionReasonDrifted}
}

func (drift) candidate(d *decider, n *nodeInfo) (bool, string) {
	why := d.v.drifted(n)
	if why == "" {
		return false, ""
	}
	d.detail[n] = why
	return true, ""
}

// compute replaces the drifted nodes one command per node, each simulated
// after the ones before it: empty ones first (they free budget without
// moving pods and must not receive pods that would move again), then
// oldest first.
func (drift) compute(d *decider, cands []*nodeInfo) []Command {
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := len(cands[i].moving) == 0, len(cands[j].moving) == 0
		if a != b {
			return a
		}
		return cands[i].rec.CreatedAt.Before(cands[j].rec.CreatedAt) ||
			(cands[i].rec.CreatedAt.Equal(cands[j].rec.CreatedAt) && cands[i].name() < cands[j].name())
	})
	var cmds []Command
	for _, n := range cands {
		if !d.budgets.allows(n.pool.Name, apis.DisruptionReasonDrifted) {
			d.rep.Rejected[n.name()] = "drift: " + d.budgets.reason(n.pool.Name, apis.DisruptionReasonDrifted)
			continue
		}
		out := d.sim.simulate([]*nodeInfo{n}, d.v.typesByPrice, true)
		if out.spent {
			return cmds
		}
		if out.fail != "" {
			d.rep.Rejected[n.name()] = "drift: " + out.fail
			continue
		}
		cmds = append(cmds, d.command(MethodDrift, ReasonDrifted, []*nodeInfo{n}, out.res.NodeClaims, d.detail[n]))
		d.sim.apply([]*nodeInfo{n}, out.res, out.res.NodeClaims)
		d.budgets.take(n.pool.Name)
	}
	return cmds
}

func (drift) still(v *view, n *nodeInfo, _ map[string]bool) error {
	if v.drifted(n) == "" {
		return invalid(CauseChanged, "node %s: no longer drifted", n.name())
	}
	return nil
}

// holds: the pods still fit, on no more new nodes than planned.
func (drift) holds(s *sim, cmd Command, cands []*nodeInfo) error {
	out := s.simulate(cands, s.v.typesByPrice, true)
	if out.fail != "" {
		return invalid(CauseNoLongerFits, "pods no longer fit: %s", out.fail)
	}
	if len(out.res.NodeClaims) > len(cmd.Replacements) {
		return invalid(CauseNoLongerFits, "pods now need %d new nodes, the command planned %d", len(out.res.NodeClaims), len(cmd.Replacements))
	}
	return nil
}
