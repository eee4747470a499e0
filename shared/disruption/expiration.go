package disruption

// MethodExpiration replaces nodes older than their NodePool's expireAfter.
const MethodExpiration Method = "expiration"

// expiration replaces every expired node, forcefully and without budget,
// as Karpenter v1 expires NodeClaims: nothing blocks it (the drain honours
// PDBs and do-not-disrupt until the pool's terminationGracePeriod), an
// expired node is no other method's candidate, and its commands share the
// run with the method after it.
type expiration struct{}

func (expiration) kind() kind { return kind{name: MethodExpiration, class: forceful} }

func (expiration) candidate(d *decider, n *nodeInfo) (bool, string) {
	why := d.v.expired(n)
	if why == "" {
		return false, ""
	}
	d.detail[n] = why
	return true, ""
}

// compute replaces the expired nodes oldest first, one command per node,
// each simulated after the ones before it; pods with no place wait for
// the provision function.
func (expiration) compute(d *decider, cands []*nodeInfo) []Command {
	byAge(cands)
	var cmds []Command
	// Expired nodes all go: none is a place for another's pods.
	for _, n := range cands {
		d.sim.avoid[n.name()] = true
	}
	for _, n := range cands {
		out := d.sim.simulate([]*nodeInfo{n}, d.v.typesByPrice, false)
		if out.spent {
			return cmds
		}
		if out.res == nil {
			d.rep.Rejected[n.name()] = "expiration: " + out.fail
			continue
		}
		note := d.detail[n]
		if u := out.res.Unschedulable; len(u) > 0 {
			keys := make([]string, len(u))
			for i := range u {
				keys[i] = u[i].Pod
			}
			note += "; no place for " + podList(keys, 3) + " (they wait for the provision function)"
		}
		cmds = append(cmds, d.command(MethodExpiration, ReasonExpired, []*nodeInfo{n}, out.res.NodeClaims, note))
		d.sim.apply([]*nodeInfo{n}, out.res, out.res.NodeClaims)
		d.budgets.take(n.pool.Name)
	}
	return cmds
}

func (expiration) still(v *view, n *nodeInfo, _ map[string]bool) error {
	if v.expired(n) == "" {
		return invalid(CauseChanged, "node %s: no longer expired (NodePool %s expireAfter changed)", n.name(), n.pool.Name)
	}
	return nil
}

// holds: an expired node goes whether or not its pods find a place.
func (expiration) holds(*sim, Command, []*nodeInfo) error { return nil }
