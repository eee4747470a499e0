package disruption

import (
	"fmt"
	"sort"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/scheduling"
)

// maxMultiNode caps how many candidates multi-node consolidation considers
// at once (Karpenter's batch of 100).
const maxMultiNode = 100

// decider is one Decide run.
type decider struct {
	v         *view
	sim       *sim
	budgets   *budgets
	nominated map[string]bool
	rep       Report

	expired, drifted, consolidatable []*nodeInfo
	// why a classified node is expired or drifted.
	detail map[*nodeInfo]string
}

// Decide finds what consolidation should do now: the commands of the first
// method that finds work, in order expiration and drift, emptiness,
// multi-node, single-node; and a report of the nodes it considered. It is
// deterministic: the same inputs give the same commands.
//
// Inputs.Budget bounds its work: once the budget is spent no method
// simulates further, a command already found stands, and the candidates
// not reached are reported (Report.Unreached) for the next run.
func Decide(in Inputs) ([]Command, Report) {
	d := newDecider(&in)
	if d.v.work.spent != "" {
		return d.finish(nil)
	}
	methods := []func() []Command{d.expireAndDrift, d.emptiness, d.multiNode, d.singleNode}
	for _, m := range methods {
		if cmds := m(); len(cmds) > 0 {
			d.rep.Method = cmds[0].Method
			return d.finish(cmds)
		}
		if d.v.work.spent != "" {
			break
		}
	}
	return d.finish(nil)
}

// finish completes the report: warnings, the work spent and, when the
// budget stopped the run, the candidates no method reached.
func (d *decider) finish(cmds []Command) ([]Command, Report) {
	d.rep.Warnings = d.v.warnings
	d.rep.Solves, d.rep.BudgetSpent = d.v.work.solves, d.v.work.spent
	if d.v.work.spent == "" {
		return cmds, d.rep
	}
	in := map[string]bool{}
	for _, c := range cmds {
		for _, n := range c.Nodes {
			in[n] = true
		}
	}
	for _, list := range [][]*nodeInfo{d.expired, d.drifted, d.consolidatable} {
		for _, n := range list {
			name := n.name()
			if _, rejected := d.rep.Rejected[name]; !rejected && !in[name] {
				in[name] = true
				d.rep.Unreached = append(d.rep.Unreached, name)
			}
		}
	}
	sort.Strings(d.rep.Unreached)
	return cmds, d.rep
}

func newDecider(in *Inputs) *decider {
	v := newView(in)
	d := &decider{v: v, sim: newSim(v), detail: map[*nodeInfo]string{},
		rep: Report{Skipped: map[string]string{}, Rejected: map[string]string{}}}
	d.nominated = v.baseline()
	d.budgets = newBudgets(v)
	d.classify()
	return d
}

// classify sorts the nodes into the methods' candidates and says why the
// others are none.
func (d *decider) classify() {
	v := d.v
	for _, n := range v.nodes {
		if why := v.blocked(n, forceful); why != "" {
			d.rep.Skipped[n.name()] = why
			continue
		}
		if why := v.expired(n); why != "" {
			d.expired = append(d.expired, n)
			d.detail[n] = why
			d.rep.Candidates++
			continue
		}
		candidate := false
		whyNot := v.blocked(n, eventual)
		if whyNot == "" {
			if why := v.drifted(n); why != "" {
				d.drifted = append(d.drifted, n)
				d.detail[n] = why
				candidate = true
			}
		}
		if whyNot == "" {
			whyNot = v.blocked(n, graceful)
		}
		if whyNot == "" {
			whyNot = v.consolidatable(n, d.nominated)
		}
		if whyNot == "" {
			d.consolidatable = append(d.consolidatable, n)
			candidate = true
		}
		if candidate {
			d.rep.Candidates++
		} else {
			d.rep.Skipped[n.name()] = whyNot
		}
	}
	byAge(d.expired)
	// Empty drifted nodes first (they free budget without moving pods and
	// must not receive pods that would move again), then oldest first.
	sort.SliceStable(d.drifted, func(i, j int) bool {
		a, b := len(d.drifted[i].moving) == 0, len(d.drifted[j].moving) == 0
		if a != b {
			return a
		}
		return d.drifted[i].rec.CreatedAt.Before(d.drifted[j].rec.CreatedAt) ||
			(d.drifted[i].rec.CreatedAt.Equal(d.drifted[j].rec.CreatedAt) && d.drifted[i].name() < d.drifted[j].name())
	})
	byCost(d.consolidatable)
}

// expireAndDrift replaces every expired node (no budget: Karpenter v1
// expires nodes forcefully) and then drifted nodes within the Drifted
// budgets, one command per node, each simulated after the ones before it.
func (d *decider) expireAndDrift() []Command {
	var cmds []Command
	all := d.v.typesByPrice
	// Expired nodes all go: none is a place for another's pods.
	for _, n := range d.expired {
		d.sim.avoid[n.name()] = true
	}
	for _, n := range d.expired {
		out := d.sim.simulate([]*nodeInfo{n}, all, false)
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
	for _, n := range d.drifted {
		if !d.budgets.allows(n.pool.Name, apis.DisruptionReasonDrifted) {
			d.rep.Rejected[n.name()] = "drift: " + d.budgets.reason(n.pool.Name, apis.DisruptionReasonDrifted)
			continue
		}
		out := d.sim.simulate([]*nodeInfo{n}, all, true)
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

// emptiness deletes every empty candidate its pool's Empty budget allows,
// at once.
func (d *decider) emptiness() []Command {
	var empty []*nodeInfo
	for _, n := range d.consolidatable {
		if len(n.moving) > 0 {
			continue
		}
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

// underutilized are the non-empty candidates that consolidation may move
// pods off, by disruption cost, within their pools' Underutilized budgets
// (taken in order, as Karpenter filters multi-node's candidates).
func (d *decider) underutilized(take bool) []*nodeInfo {
	b := d.budgets
	if take {
		b = b.clone()
	}
	var out []*nodeInfo
	for _, n := range d.consolidatable {
		if len(n.moving) == 0 {
			continue
		}
		if !b.allows(n.pool.Name, apis.DisruptionReasonUnderutilized) {
			d.rep.Rejected[n.name()] = "consolidation: " + b.reason(n.pool.Name, apis.DisruptionReasonUnderutilized)
			continue
		}
		if take {
			b.take(n.pool.Name)
		}
		out = append(out, n)
	}
	return out
}

// multiNode finds the largest prefix of the candidates (at least two, at
// most 100) whose pods fit on the other nodes plus at most one new,
// strictly cheaper node, by binary search over the prefix length as
// Karpenter's firstNConsolidationOption.
func (d *decider) multiNode() []Command {
	cands := d.underutilized(true)
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
		return nil
	}
	return []Command{*best}
}

// singleNode takes the candidates one by one, by disruption cost, and
// returns the first that can be deleted (its pods fit elsewhere) or
// replaced by cheaper capacity (one node, or two smaller ones).
func (d *decider) singleNode() []Command {
	for _, n := range d.underutilized(false) {
		cmd, why := d.consolidate([]*nodeInfo{n}, false)
		if cmd != nil {
			return []Command{*cmd}
		}
		if d.v.work.spent != "" {
			return nil // this candidate and the rest are not reached
		}
		d.rep.Rejected[n.name()] = "single-node: " + why
	}
	return nil
}

// consolidate decides what to do with a set of candidates: delete them if
// their pods fit on the other nodes, else replace them with new capacity
// that is cheaper by the minimum saving, or nothing (and why).
func (d *decider) consolidate(cands []*nodeInfo, multi bool) (*Command, string) {
	method := MethodSingleNode
	if multi {
		method = MethodMultiNode
	}
	// Deleting needs no instance type: try it first, on a small solve.
	out := d.sim.simulate(cands, nil, true)
	if out.spent {
		return nil, out.fail
	}
	if out.fail == "" && len(out.res.NodeClaims) == 0 {
		cmd := d.command(method, ReasonUnderutilized, cands, nil, "its pods fit on the other nodes")
		return &cmd, ""
	}
	deleteFail := out.fail
	if out.res != nil && len(out.res.Unschedulable) > 0 {
		deleteFail = "its pods do not all fit on the other nodes"
	}
	before := 0.0
	for _, c := range cands {
		before += c.price
	}
	need, err := minSaving(cands, before)
	if err != nil {
		d.v.warn("%v", err)
		return nil, deleteFail + "; " + err.Error()
	}
	types := d.v.typesUnder(priceLimit(before, need))
	if len(types) == 0 {
		if need > 0 {
			return nil, fmt.Sprintf("%s; no instance type is cheaper than %s by the NodePool's minimum saving of %s", deleteFail, money(before), money(need))
		}
		return nil, deleteFail + "; no instance type is cheaper than " + money(before)
	}
	out = d.sim.simulate(cands, types, true)
	if out.fail != "" {
		return nil, out.fail
	}
	if len(out.res.NodeClaims) == 0 {
		cmd := d.command(method, ReasonUnderutilized, cands, nil, "its pods fit on the other nodes")
		return &cmd, ""
	}
	rule := replaceRule{before: before, need: need, maxClaims: 2, allSpot: true, spotToSpot: d.v.in.SpotToSpot}
	if multi {
		rule.maxClaims = 1
		rule.sameType = map[string]float64{}
		for _, c := range cands {
			if p, ok := rule.sameType[c.instanceType]; !ok || c.price < p {
				rule.sameType[c.instanceType] = c.price
			}
		}
	}
	for _, c := range cands {
		if c.capacityType != apis.CapacityTypeSpot {
			rule.allSpot = false
		}
	}
	repl, _, why := d.v.replacements(out.res.NodeClaims, rule)
	if why != "" {
		return nil, why
	}
	note := ""
	if need > 0 {
		note = "the NodePool's minimum saving is " + money(need)
	}
	cmd := d.command(method, ReasonUnderutilized, cands, repl, note)
	return &cmd, ""
}

// command builds a command and its one-line explanation.
func (d *decider) command(method, reason string, cands []*nodeInfo, repl []scheduling.NodeClaim, note string) Command {
	cmd := Command{Method: method, Reason: reason, Replacements: repl}
	for _, c := range cands {
		cmd.Candidates = append(cmd.Candidates, c.recName())
		cmd.Nodes = append(cmd.Nodes, c.name())
		cmd.PriceBefore += c.price
	}
	for _, r := range repl {
		cmd.PriceAfter += r.PricePerHour
	}
	cmd.PriceBefore, cmd.PriceAfter = roundPrice(cmd.PriceBefore), roundPrice(cmd.PriceAfter)
	cmd.Explanation = explain(cmd, cands, note)
	return cmd
}
