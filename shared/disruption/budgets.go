package disruption

import (
	"fmt"
	"maps"
	"slices"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/state"
)

// budgets are, per NodePool and reason, how many more of its nodes may be
// disrupted now: the pool's most restrictive active budget for the
// reason, over its initialized nodes, minus the nodes already disrupting
// (Karpenter's BuildDisruptionBudgetMapping).
type budgets struct {
	left map[string]map[apis.DisruptionReason]int
	// why explains a zero, per pool and reason.
	why map[string]map[apis.DisruptionReason]string
}

// newBudgets counts, per pool, the initialized nodes (records initialized
// or disrupting, with a Node; terminating ones no longer count) and those
// already disrupting (a record under an action, a Node being deleted or
// not Ready, a node of an open action).
func newBudgets(v *view) *budgets {
	b := &budgets{left: map[string]map[apis.DisruptionReason]int{}, why: map[string]map[apis.DisruptionReason]string{}}
	inAction := map[string]bool{}
	for _, a := range v.in.Actions {
		if a == nil || !a.Open() {
			continue
		}
		for _, name := range a.NodeClaims {
			inAction[name] = true
		}
	}
	nodes, disrupting := map[string]int{}, map[string]int{}
	for _, n := range v.nodes {
		r := n.rec
		if r == nil || (r.Phase != state.Initialized && r.Phase != state.Disrupting) {
			continue
		}
		nodes[r.NodePool]++
		if r.Disruption != nil || n.node.DeletionTimestamp != nil || !nodeReady(n.node) || inAction[r.Name] {
			disrupting[r.NodePool]++
		}
	}
	for _, name := range slices.Sorted(maps.Keys(v.pools)) {
		pool := v.pools[name]
		b.left[name] = map[apis.DisruptionReason]int{}
		b.why[name] = map[apis.DisruptionReason]string{}
		for _, reason := range apis.DisruptionReasons() {
			allowed, err := pool.AllowedDisruptions(v.now, nodes[name], reason)
			if err != nil {
				v.warn("%v: no %s disruptions until it is fixed", err, reason)
				b.why[name][reason] = fmt.Sprintf("NodePool %s: a budget cannot be read", name)
			}
			left := max(allowed-disrupting[name], 0)
			b.left[name][reason] = left
			if left == 0 && err == nil {
				b.why[name][reason] = fmt.Sprintf("NodePool %s's budget allows %d %s disruptions of its %d nodes and %d are disrupting", name, allowed, reason, nodes[name], disrupting[name])
			}
		}
	}
	return b
}

// allows reports whether one more node of pool may be disrupted for reason.
func (b *budgets) allows(pool string, reason apis.DisruptionReason) bool {
	return b.left[pool][reason] > 0
}

// take counts one more node of pool as disrupting: every reason's budget
// has one fewer left.
func (b *budgets) take(pool string) {
	for r, n := range b.left[pool] {
		if n > 0 {
			b.left[pool][r] = n - 1
		}
		if b.left[pool][r] == 0 && b.why[pool][r] == "" {
			b.why[pool][r] = fmt.Sprintf("NodePool %s's %s budget is spent", pool, r)
		}
	}
}

func (b *budgets) reason(pool string, reason apis.DisruptionReason) string {
	if w := b.why[pool][reason]; w != "" {
		return "budget: " + w
	}
	return "budget: NodePool " + pool + " allows no more " + string(reason) + " disruptions"
}

// clone copies the budgets (a method tries its candidates against a copy).
func (b *budgets) clone() *budgets {
	c := &budgets{left: map[string]map[apis.DisruptionReason]int{}, why: map[string]map[apis.DisruptionReason]string{}}
	for p, m := range b.left {
		c.left[p] = map[apis.DisruptionReason]int{}
		c.why[p] = map[apis.DisruptionReason]string{}
		for r, n := range m {
			c.left[p][r] = n
			c.why[p][r] = b.why[p][r]
		}
	}
	return c
}
