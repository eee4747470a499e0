package disruption

import (
	"fmt"
	"sort"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/scheduling"
)

// decider is one Decide run.
type decider struct {
	v         *view
	sim       *sim
	budgets   *budgets
	nominated map[string]bool
	rep       Report

	methods *registry
	// cands are each method's candidates, by the method's place in methods.
	cands [][]*nodeInfo
	// detail says why a candidate is expired or drifted.
	detail map[*nodeInfo]string
	// drift says how a drift candidate drifted.
	drift map[*nodeInfo]DriftReason
	// blocks and unconsolidatable memoize blocked and consolidatable (""
	// when nothing blocks), which several methods ask of every node.
	blocks           map[blockKey]blocking
	unconsolidatable map[*nodeInfo]string
	// rejected is the last move Balanced pools rejected (nil: none since
	// it was recorded; balanced.go).
	rejected *rejection
	// batchOnly are the candidates multi-node's batch left out for its
	// copy of the budgets, with the reason it gave: single-node, under the
	// budgets themselves, may still take them.
	batchOnly map[string]string
}

type blockKey struct {
	n *nodeInfo
	c class
}

// Decide finds what consolidation should do now: the commands of the
// disruption methods, tried in order (methods.go: repair, expiration, drift,
// emptiness, multi-node, single-node) until one that is not forceful
// leaves the run with commands; and a report of the nodes it considered.
// It is deterministic: the same inputs give the same commands.
//
// Inputs.Budget bounds its work: once the budget is spent no method
// simulates further, a command already found stands, and the candidates
// not reached are reported (Report.Unreached) for the next run.
func Decide(in Inputs) ([]Command, Report) { return decide(in, methods) }

// decide is Decide with the methods of r.
func decide(in Inputs, r *registry) ([]Command, Report) {
	d := newDecider(&in, r)
	if d.v.work.spent != "" {
		return d.finish(nil)
	}
	var cmds []Command
	for i, m := range r.methods {
		cmds = append(cmds, m.compute(d, d.cands[i])...)
		if d.v.work.spent != "" || (len(cmds) > 0 && !m.kind().class.isForceful()) {
			break
		}
	}
	if len(cmds) > 0 {
		d.rep.Method = cmds[0].Method
	}
	return d.finish(cmds)
}

// finish completes the report: warnings, the work spent and, when the
// budget stopped the run, the candidates no method reached.
func (d *decider) finish(cmds []Command) ([]Command, Report) {
	d.rep.Warnings = d.v.warnings
	for pool, h := range d.v.health {
		if h.held != "" {
			if d.rep.RepairPaused == nil {
				d.rep.RepairPaused = map[string]string{}
			}
			d.rep.RepairPaused[pool] = h.held
		}
	}
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
	// A candidate only multi-node's batch left out, that no later method
	// considered, was not reached.
	for name, why := range d.batchOnly {
		if d.rep.Rejected[name] == why {
			delete(d.rep.Rejected, name)
		}
	}
	for _, list := range d.cands {
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

func newDecider(in *Inputs, r *registry) *decider {
	v := newView(in)
	d := &decider{v: v, sim: newSim(v), methods: r, cands: make([][]*nodeInfo, len(r.methods)), detail: map[*nodeInfo]string{}, drift: map[*nodeInfo]DriftReason{},
		blocks: map[blockKey]blocking{}, unconsolidatable: map[*nodeInfo]string{}, batchOnly: map[string]string{},
		rep: Report{Skipped: map[string]string{}, Rejected: map[string]string{}, Blocked: map[string]string{}, Unconsolidatable: map[string]string{}}}
	d.nominated = v.baseline()
	d.budgets = newBudgets(v)
	d.rep.Allowed = d.budgets.clone().left
	d.classify()
	return d
}

// classify offers every node to each method in order, unless its class
// blocks the node: a forceful method's candidate is no later method's. A
// node no method takes is Skipped, with the first reason a method gave.
func (d *decider) classify() {
	for _, n := range d.v.nodes {
		taken, whyNot, blockedBy := false, "", Cause("")
		for i, m := range d.methods.methods {
			c := m.kind().class
			b := d.blocking(n, c)
			ok, why := false, b.why
			if why == "" {
				ok, why = m.candidate(d, n)
			} else if whyNot == "" {
				blockedBy = b.cause
			}
			if ok {
				d.cands[i] = append(d.cands[i], n)
				taken = true
				if c.isForceful() {
					break
				}
				continue
			}
			if whyNot == "" {
				whyNot = why
			}
		}
		if taken {
			d.rep.Candidates++
		} else {
			d.rep.Skipped[n.name()] = whyNot
			if blockedBy == CauseDoNotDisrupt || blockedBy == CausePDB {
				d.rep.Blocked[n.name()] = whyNot
			}
		}
	}
}

// blocking is why view.blocked holds a node, and its cause.
type blocking struct {
	why   string
	cause Cause
}

// blocked is view.blocked, once per node and class.
func (d *decider) blocked(n *nodeInfo, c class) string {
	return d.blocking(n, c).why
}

func (d *decider) blocking(n *nodeInfo, c class) blocking {
	k := blockKey{n, c}
	b, ok := d.blocks[k]
	if !ok {
		b.why, b.cause = d.v.blocked(n, c)
		d.blocks[k] = b
	}
	return b
}

// consolidatable is view.consolidatable, once per node.
func (d *decider) consolidatable(n *nodeInfo) string {
	why, ok := d.unconsolidatable[n]
	if !ok {
		why = d.v.consolidatable(n, d.nominated)
		d.unconsolidatable[n] = why
	}
	return why
}

// underused says whether a node is a candidate of the consolidation
// methods that move pods (multi-node, single-node): consolidatable, and
// not empty (emptiness takes empty nodes).
func (d *decider) underused(n *nodeInfo) (bool, string) {
	if why := d.consolidatable(n); why != "" {
		return false, why
	}
	return len(n.moving) > 0, ""
}

// underutilized orders the candidates by disruption cost and keeps those
// their pools' Underutilized budgets allow (taken in order, as Karpenter
// filters multi-node's candidates, on a copy of the budgets).
func (d *decider) underutilized(cands []*nodeInfo, take bool) []*nodeInfo {
	byCost(cands)
	b := d.budgets
	if take {
		b = b.clone()
	}
	var out []*nodeInfo
	for _, n := range cands {
		if !b.allows(n.pool.Name, apis.DisruptionReasonUnderutilized) {
			why := "consolidation: " + b.reason(n.pool.Name, apis.DisruptionReasonUnderutilized)
			d.rep.Rejected[n.name()] = why
			if take {
				d.batchOnly[n.name()] = why
			}
			continue
		}
		if take {
			b.take(n.pool.Name)
		}
		out = append(out, n)
	}
	return out
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
		return d.approved(&cmd, cands)
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
	maxClaims := 2
	if multi {
		maxClaims = 1
	}
	// What the other nodes cannot take needs new nodes: when its requests
	// alone rule every replacement out, do not solve.
	if why := d.v.cannotHouse(out.short, len(types), before, need, maxClaims); why != "" {
		return nil, why
	}
	out = d.sim.simulate(cands, types, true)
	if out.fail != "" {
		return nil, out.fail
	}
	if len(out.res.NodeClaims) == 0 {
		cmd := d.command(method, ReasonUnderutilized, cands, nil, "its pods fit on the other nodes")
		return d.approved(&cmd, cands)
	}
	rule := replaceRule{before: before, need: need, maxClaims: maxClaims, allSpot: true, spotToSpot: d.v.in.SpotToSpot}
	if multi {
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
	return d.approved(&cmd, cands)
}

// approved returns cmd when the candidates' Balanced pools approve it, else
// no command and why (the move it would have been, and the scores).
func (d *decider) approved(cmd *Command, cands []*nodeInfo) (*Command, string) {
	if why := d.approve(cmd, cands); why != "" {
		return nil, "not worth its disruption: " + why
	}
	return cmd, ""
}

// command builds a command and its one-line explanation.
func (d *decider) command(method Method, reason Reason, cands []*nodeInfo, repl []scheduling.NodeClaim, note string) Command {
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
