package disruption

import (
	"sort"

	"github.com/nodewright/nodewright/shared/apis"
)

// MethodDrift replaces nodes that no longer match their NodePool or
// EC2NodeClass.
const MethodDrift Method = "drift"

// DriftReason says how a node drifted, with the names of Karpenter
// v1.14.1's Drifted condition reasons (the core's and the AWS provider's),
// checked in Karpenter's order.
type DriftReason string

const (
	// DriftNodePool: the NodePool's template changed since the launch (its
	// hash).
	DriftNodePool DriftReason = "NodePoolDrifted"
	// DriftRequirements: the node no longer meets its NodePool's
	// requirements.
	DriftRequirements DriftReason = "RequirementsDrifted"
	// DriftNodeClass: the EC2NodeClass changed since the launch (its hash)
	// or no longer exists.
	DriftNodeClass DriftReason = "NodeClassDrift"
	// DriftAMI: the node's AMI is no longer among those its class selects.
	DriftAMI DriftReason = "AMIDrift"
	// DriftSecurityGroup: the node's security groups are no longer exactly
	// those its class selects.
	DriftSecurityGroup DriftReason = "SecurityGroupDrift"
	// DriftSubnet: the node's subnet is no longer among those its class
	// selects.
	DriftSubnet DriftReason = "SubnetDrift"
	// DriftPlacementGroup: the node's placement group is not the one its
	// class's placementGroupSelector resolves to now.
	DriftPlacementGroup DriftReason = "PlacementGroupDrift"
	// DriftInstanceTypeNotFound: the node's instance type is no longer
	// offered in the region (Karpenter's core drift reason).
	DriftInstanceTypeNotFound DriftReason = "InstanceTypeNotFound"
	// DriftCapacityReservation: the node's capacity reservation is no
	// longer among those its class selects (one that ended is still
	// selected: its nodes run on-demand, not drifted).
	DriftCapacityReservation DriftReason = "CapacityReservationDrift"
)

// drift replaces drifted nodes within their pools' Drifted budgets
// (Karpenter's Drift method, an eventual disruption).
type drift struct{}

func (drift) kind() kind {
	return kind{name: MethodDrift, class: eventual, budget: apis.DisruptionReasonDrifted}
}

func (drift) candidate(d *decider, n *nodeInfo) (bool, string) {
	reason, why := d.v.drifted(n)
	if reason == "" {
		return false, ""
	}
	d.detail[n] = string(reason) + ": " + why
	d.drift[n] = reason
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
		cmd := d.command(MethodDrift, ReasonDrifted, []*nodeInfo{n}, out.res.NodeClaims, d.detail[n])
		cmd.Drift = d.drift[n]
		cmds = append(cmds, cmd)
		d.sim.apply([]*nodeInfo{n}, out.res, out.res.NodeClaims)
		d.budgets.take(n.pool.Name)
	}
	return cmds
}

func (drift) still(v *view, n *nodeInfo, _ map[string]bool) error {
	if reason, _ := v.drifted(n); reason == "" {
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
