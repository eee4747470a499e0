package scheduling

import (
	"math"
	"slices"
	"sort"
)

// coverCost is the cheapest cover of n pods of request req, at most perNode
// on a node, by the types (+Inf when none holds one).
func coverCost(types []lpType, req vec, perNode, n int) float64 {
	sorted := slices.Clone(types)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].price < sorted[j].price })
	var opts []packOption
	for i, t := range sorted {
		k := int(min(int64(perNode), req.howMany(t.alloc)))
		if k > 0 {
			opts = append(opts, packOption{i, k, t.at(int64(k) * req[rCPU])})
		}
		// A burstable type's price grows with its pods: a node of it with
		// fewer pods is an option of its own.
		for j := 1; t.rate > 0 && j < k; j++ {
			opts = append(opts, packOption{i, j, t.at(int64(j) * req[rCPU])})
		}
	}
	if len(opts) == 0 {
		return math.Inf(1)
	}
	return newCoverTable(frontier(opts), n).cost[n]
}

// maxExactStates bounds exactCover: the product over the sets of (pods + 1).
const maxExactStates = 1500

// exactCover is the cheapest way to put the sets' pods on nodes of the types
// when that is small enough to search exhaustively (ok false otherwise): by
// dynamic programming over the pods still to place, each node a mix of pods
// (at most each set's per-node limit) that fits a type, at the cheapest
// type it fits. It is the integer optimum of the relaxation the LP bound
// relaxes further, so it bounds small workloads where whole pods and whole
// nodes decide the price.
func exactCover(types []lpType, sets []podSet) (float64, bool) {
	states := 1
	for _, ps := range sets {
		states *= ps.n + 1
		if states > maxExactStates {
			return 0, false
		}
	}
	m := len(sets)
	digits := make([]int, states*m)
	for x := range states {
		r := x
		for i, ps := range sets {
			digits[x*m+i] = r % (ps.n + 1)
			r /= ps.n + 1
		}
	}
	radix := make([]int, m)
	r := 1
	for i, ps := range sets {
		radix[i] = r
		r *= ps.n + 1
	}
	// cost of a node holding mix c: the cheapest type it fits.
	cost := make([]float64, states)
	var mixes []int
	for c := 1; c < states; c++ {
		var need vec
		ok := true
		for i, ps := range sets {
			k := digits[c*m+i]
			if k > ps.perNode {
				ok = false
				break
			}
			need = need.add(ps.req.scale(int64(k)))
		}
		cost[c] = math.Inf(1)
		if !ok {
			continue
		}
		for _, t := range types {
			if t.price < cost[c] && need.fits(t.alloc) {
				cost[c] = min(cost[c], t.at(need[rCPU]))
			}
		}
		if !math.IsInf(cost[c], 1) {
			mixes = append(mixes, c)
		}
	}
	f := make([]float64, states)
	for x := 1; x < states; x++ {
		f[x] = math.Inf(1)
		for _, c := range mixes {
			if c > x {
				break
			}
			sub, fits := 0, true
			for i := range m {
				d := digits[x*m+i] - digits[c*m+i]
				if d < 0 {
					fits = false
					break
				}
				sub += d * radix[i]
			}
			if fits {
				f[x] = min(f[x], cost[c]+f[sub])
			}
		}
	}
	if math.IsInf(f[states-1], 1) {
		return 0, false
	}
	return f[states-1], true
}
