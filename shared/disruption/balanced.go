package disruption

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	"github.com/nodewright/nodewright/shared/apis"
)

// BalancedK is the Balanced consolidation policy's constant (Karpenter's
// v1.BalancedK): a move is approved when the share of its NodePool's cost
// it saves is at least 1/k of the share of the pool's disruption cost it
// causes.
const BalancedK = 2

// NodeDisruptionCost is what disrupting a node costs before its pods: the
// cordon, drain and replacement (Karpenter's PerNodeBaseDisruptionCost).
const NodeDisruptionCost = 1.0

// PoolTotals are one NodePool's sums over all of its nodes, candidates or
// not, taken once per run: their price per hour and their disruption cost.
type PoolTotals struct {
	Cost           float64
	DisruptionCost float64
}

// Verdict is a Balanced NodePool's decision on a consolidation move, as
// Karpenter labels karpenter_consolidation_moves_total.
type Verdict string

const (
	VerdictApproved Verdict = "approved"
	VerdictRejected Verdict = "rejected"
)

// Score is how one Balanced NodePool scores a move: the share of the
// pool's cost it saves and the share of the pool's disruption cost it
// causes.
type Score struct {
	NodePool           string
	SavingsFraction    float64
	DisruptionFraction float64
	K                  int
}

// Value is savings over disruption: 0 when the move saves nothing, +Inf
// when it disrupts nothing.
func (s Score) Value() float64 {
	switch {
	case s.SavingsFraction <= 0:
		return 0
	case s.DisruptionFraction == 0:
		return math.Inf(1)
	}
	return s.SavingsFraction / s.DisruptionFraction
}

// Threshold is the least Value approved: 1/k.
func (s Score) Threshold() float64 { return 1 / float64(s.K) }

// Verdict approves the move when its Value reaches the threshold.
func (s Score) Verdict() Verdict {
	if s.Value() >= s.Threshold() {
		return VerdictApproved
	}
	return VerdictRejected
}

// String is one line a person reads, as Karpenter's score events word it.
func (s Score) String() string {
	op := ">="
	if s.Verdict() == VerdictRejected {
		op = "<"
	}
	return fmt.Sprintf("NodePool %s consolidates Balanced: score %.2f %s threshold %.2f (k: %d, savings %.1f%%, disruption %.1f%%)",
		s.NodePool, s.Value(), op, s.Threshold(), s.K, s.SavingsFraction*100, s.DisruptionFraction*100)
}

// ScoreMove scores a move of one NodePool that saves savings per hour and
// costs disruption, against the pool's totals. With no totals to compare
// against, nothing is measured and the move is rejected.
func ScoreMove(pool string, savings, disruption float64, totals PoolTotals) Score {
	s := Score{NodePool: pool, K: BalancedK}
	if totals.Cost <= 0 || totals.DisruptionCost <= 0 {
		return s
	}
	s.SavingsFraction = savings / totals.Cost
	s.DisruptionFraction = disruption / totals.DisruptionCost
	return s
}

// MovePart is one node a move removes: its NodePool, whether that pool
// consolidates Balanced, its price per hour and its disruption cost.
type MovePart struct {
	NodePool       string
	Balanced       bool
	Price          float64
	DisruptionCost float64
}

// ApproveMove decides a move that removes parts and saves savings per hour
// (their price less the replacements'), as Karpenter's Balanced policy:
// each Balanced NodePool among the parts scores the move on its own nodes'
// disruption and its share of the savings (by its share of the removed
// price), against its totals; the move is approved when every one of them
// approves. Pools of other policies do not score. The scores are sorted by
// NodePool.
func ApproveMove(parts []MovePart, savings float64, totals map[string]PoolTotals) (Verdict, []Score) {
	if len(parts) == 0 {
		return VerdictRejected, nil
	}
	type sums struct{ price, disruption float64 }
	byPool := map[string]*sums{}
	source := 0.0
	for _, p := range parts {
		source += p.Price
		if !p.Balanced {
			continue
		}
		s := byPool[p.NodePool]
		if s == nil {
			s = &sums{}
			byPool[p.NodePool] = s
		}
		s.price += p.Price
		s.disruption += p.DisruptionCost
	}
	pools := map[string]bool{}
	for _, p := range parts {
		pools[p.NodePool] = true
	}
	verdict := VerdictApproved
	var scores []Score
	for name, s := range byPool {
		share := savings
		if len(pools) > 1 && source > 0 {
			share = savings * s.price / source
		}
		sc := ScoreMove(name, share, s.disruption, totals[name])
		if sc.Verdict() == VerdictRejected {
			verdict = VerdictRejected
		}
		scores = append(scores, sc)
	}
	sort.Slice(scores, func(i, j int) bool { return scores[i].NodePool < scores[j].NodePool })
	return verdict, scores
}

// rejectedScores is the line of a rejected move's failing scores.
func rejectedScores(scores []Score) string {
	var out []string
	for _, s := range scores {
		if s.Verdict() == VerdictRejected {
			out = append(out, s.String())
		}
	}
	return strings.Join(out, "; ")
}

// balancedCost is a node's disruption cost under the Balanced policy
// (Karpenter's RescheduleDisruptionCost): NodeDisruptionCost plus the
// eviction cost of each pod that would move, negatives counted as 0.
func balancedCost(n *nodeInfo) float64 {
	c := NodeDisruptionCost
	for _, p := range n.moving {
		c += max(0, evictionCost(p))
	}
	return c
}

// poolTotals sums, per NodePool, the price and Balanced disruption cost of
// all its nodes, once per run (Karpenter snapshots them once per cycle).
func (v *view) poolTotals() map[string]PoolTotals {
	if v.totals != nil {
		return v.totals
	}
	v.totals = map[string]PoolTotals{}
	for _, n := range v.nodes {
		if n.pool == nil {
			continue
		}
		t := v.totals[n.pool.Name]
		t.Cost += n.price
		t.DisruptionCost += balancedCost(n)
		v.totals[n.pool.Name] = t
	}
	return v.totals
}

// balanced says whether a node's pool consolidates Balanced.
func balanced(n *nodeInfo) bool {
	return n.pool != nil && n.pool.Spec.Disruption.ConsolidationPolicy == apis.ConsolidationPolicyBalanced
}

// approve scores a consolidation command of cands under their pools'
// Balanced policy and says why it is rejected ("" when approved or no pool
// is Balanced), keeping the rejection for recordRejection; an approved
// command carries its scores.
func (d *decider) approve(cmd *Command, cands []*nodeInfo) string {
	parts := make([]MovePart, len(cands))
	scored := false
	for i, c := range cands {
		parts[i] = MovePart{NodePool: c.pool.Name, Balanced: balanced(c), Price: c.price, DisruptionCost: balancedCost(c)}
		scored = scored || parts[i].Balanced
	}
	if !scored {
		return ""
	}
	verdict, scores := ApproveMove(parts, cmd.Savings(), d.v.poolTotals())
	if verdict == VerdictApproved {
		cmd.Scores = scores
		return ""
	}
	d.rejected = &rejection{cands: cands, scores: scores}
	return rejectedScores(scores)
}

// rejection is the last move Balanced pools rejected: the method records
// it in the report once it settles on no command (multi-node's search
// rejects larger moves on its way to one it takes).
type rejection struct {
	cands  []*nodeInfo
	scores []Score
}

// recordRejection records the last rejected move of method m, if any, and
// forgets it.
func (d *decider) recordRejection(m Method) {
	r := d.rejected
	if r == nil {
		return
	}
	d.rejected = nil
	d.unbalanced(r.cands, r.scores)
	for _, c := range r.cands {
		if _, ok := d.rep.Rejected[c.name()]; !ok {
			d.rep.Rejected[c.name()] = string(m) + ": not worth its disruption: " + rejectedScores(r.scores)
		}
	}
}

// canPass says whether the best a Balanced candidate can do, deleting it
// outright, would be approved (Karpenter's CanPassThreshold): when not, no
// replacement would be and single-node consolidation skips it.
func (d *decider) canPass(n *nodeInfo) (bool, string) {
	if !balanced(n) {
		return true, ""
	}
	totals := d.v.poolTotals()[n.pool.Name]
	if totals.Cost <= 0 {
		return true, ""
	}
	sc := ScoreMove(n.pool.Name, n.price, balancedCost(n), totals)
	if sc.Verdict() == VerdictApproved {
		return true, ""
	}
	d.unbalanced([]*nodeInfo{n}, []Score{sc})
	return false, "even deleting it: " + sc.String()
}

// unbalanced records, on each Balanced candidate whose pool rejected a
// move, that pool's score (in a move two pools scored, a candidate of the
// approving one is not recorded).
func (d *decider) unbalanced(cands []*nodeInfo, scores []Score) {
	if d.rep.Unbalanced == nil {
		d.rep.Unbalanced = map[string]Score{}
	}
	for _, c := range cands {
		if !balanced(c) {
			continue
		}
		i := slices.IndexFunc(scores, func(s Score) bool { return s.NodePool == c.pool.Name && s.Verdict() == VerdictRejected })
		if i >= 0 {
			d.rep.Unbalanced[c.name()] = scores[i]
		}
	}
}
