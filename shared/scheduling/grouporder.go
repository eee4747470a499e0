package scheduling

import (
	"sort"

	"github.com/nodewright/nodewright/shared/apis"
)

// rankOf orders groups: pods that need a node of their own first (they decide
// how many nodes there are), then zonal spreads, then other topology, then
// the rest; larger pods first within a rank.
func (g *group) rankOf() int {
	for _, sp := range g.spreads {
		if sp.key == apis.LabelHostname && sp.selfMatch {
			return 0
		}
	}
	for _, t := range g.anti {
		if t.key == apis.LabelHostname && t.selfMatch && !t.preferred {
			return 0
		}
	}
	if len(g.hostPorts) > 0 {
		return 0
	}
	if len(g.spreads) > 0 {
		return 1
	}
	if len(g.affinity)+len(g.anti) > 0 {
		return 2
	}
	return 3
}

func sortGroups(gs []*group, order groupOrder) {
	for _, g := range gs {
		g.rank = g.rankOf()
	}
	class := exclusiveClasses(gs)
	sort.SliceStable(gs, func(i, j int) bool {
		a, b := gs[i], gs[j]
		switch {
		case a.rank != b.rank:
			return a.rank < b.rank
		case class[a] != class[b]:
			return class[a] > class[b]
		case order == byMemory && a.req[rMemory] != b.req[rMemory]:
			return a.req[rMemory] > b.req[rMemory]
		case a.req[rCPU] != b.req[rCPU]:
			return a.req[rCPU] > b.req[rCPU]
		case a.req[rMemory] != b.req[rMemory]:
			return a.req[rMemory] > b.req[rMemory]
		}
		return podKey(a.rep) < podKey(b.rep)
	})
}

// groupOrder is how groups of the same rank follow each other: larger pods
// first by cpu (the default) or by memory.
type groupOrder int

const (
	byCPU groupOrder = iota
	byMemory
)

// exclusiveClasses gives each group that may put only a few pods on a node
// the number of nodes its class (the groups limited by the same hostname
// anti-affinity or spread) needs at least: the largest class decides how
// many nodes there are, so it opens them first and the others fill them.
func exclusiveClasses(gs []*group) map[*group]int {
	pods := map[int]int{}
	perNode := map[int]int{}
	counterOf := map[*group]int{}
	for _, g := range gs {
		c, n := -1, 0
		for _, sp := range g.spreads {
			if !sp.dropped && sp.selfMatch && sp.key == apis.LabelHostname {
				c, n = sp.counter, sp.maxSkew
			}
		}
		for _, t := range g.anti {
			if !t.dropped && !t.preferred && t.selfMatch && t.key == apis.LabelHostname {
				c, n = t.counter, 1
			}
		}
		if c >= 0 {
			counterOf[g] = c
			pods[c] += len(g.pods)
			perNode[c] = max(perNode[c], n)
		}
	}
	out := map[*group]int{}
	for g, c := range counterOf {
		out[g] = (pods[c] + perNode[c] - 1) / perNode[c]
	}
	return out
}
