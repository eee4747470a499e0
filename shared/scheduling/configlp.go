package scheduling

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
)

// The configuration bound. The covering LP of lowerBound buys cpu and memory
// as fluids (within the pods' ratio range); when the cheapest cpu and the
// cheapest memory come from different types (burstable types with little
// memory, memory types with little cpu), whole pods cannot take both and
// that bound stays well below any plan. The configuration LP buys nodes
// instead: each column is a type holding a whole mix of pods (k_g pods of
// each set g, within the type's allocatable and each set's per-node limit),
// at the type's price, and the rows ask for every set's pods. It is the
// linear relaxation of the exact problem on new capacity, so its value
// bounds every plan; it is solved by column generation (a knapsack per type
// finds the mix worth most at the current dual prices), and the dual prices
// are certified over every column of every type with an upper bound of that
// knapsack, so the bound is valid however the generation ends.

// configMaxSets and configMaxPods bound the workloads the configuration
// bound runs for (small ones, where whole pods and nodes decide the price).
const (
	configMaxSets  = 8
	configMaxPods  = 500
	configMaxIters = 30
	// configKnapsackNodes bounds one knapsack's search, and configLPNodes
	// all of them in one generation (and again in its certification); past
	// them the searches' own upper bounds are used (still valid, looser).
	configKnapsackNodes = 4000
	configLPNodes       = 100000
)

// configLP is the configuration LP of sets on types after column
// generation: its columns (colType[j] is the index in types of column j's
// type), primal solution x and dual prices y; nil when the workload is too
// large for it or a set fits no type.
type configLP struct {
	lp      *coverLP
	colType []int
	x, y    []float64
}

func solveConfigLP(types []lpType, sets []podSet) *configLP {
	if len(sets) == 0 || len(sets) > configMaxSets {
		return nil
	}
	total := 0
	for _, ps := range sets {
		total += ps.n
	}
	if total > configMaxPods {
		return nil
	}
	m := len(sets)
	c := &configLP{lp: &coverLP{b: make([]float64, m)}}
	lp := c.lp
	for i, ps := range sets {
		lp.b[i] = float64(ps.n)
	}
	seen := map[string]bool{}
	addColumn := func(t int, k []int) bool {
		key := strconv.Itoa(t) + ":" + fmt.Sprint(k)
		if seen[key] {
			return false
		}
		seen[key] = true
		a := make([]float64, m)
		for i, v := range k {
			a[i] = float64(v)
		}
		lp.a = append(lp.a, a)
		lp.price = append(lp.price, types[t].price)
		c.colType = append(c.colType, t)
		return true
	}
	// Start with every type's largest single-set column, so every row is
	// covered.
	for i, ps := range sets {
		for t, ty := range types {
			if k := maxOf(ps, ty.alloc); k > 0 {
				col := make([]int, m)
				col[i] = k
				addColumn(t, col)
			}
		}
	}
	for i := range sets {
		covered := false
		for _, a := range lp.a {
			covered = covered || a[i] > 0
		}
		if !covered {
			return nil
		}
	}
	budget := configLPNodes
	for iter := 0; ; iter++ {
		c.x, c.y = lp.solve()
		if iter == configMaxIters {
			break
		}
		added := false
		for t, ty := range types {
			best, k, _ := knapsack(sets, ty.alloc, c.y, ty.price*(1+1e-9), configKnapsackNodes, &budget)
			if best > ty.price*(1+1e-9) && k != nil && addColumn(t, k) {
				added = true
			}
		}
		if !added {
			break
		}
	}
	return c
}

// configBound is the configuration LP's value, certified (0 when it does
// not apply).
func configBound(types []lpType, sets []podSet) float64 {
	types = undominated(types)
	c := solveConfigLP(types, sets)
	if c == nil {
		return 0
	}
	// Certify y over every column of every type.
	worst := 1.0
	budget := configLPNodes
	for _, ty := range types {
		_, _, upper := knapsack(sets, ty.alloc, c.y, ty.price, budget, &budget)
		worst = max(worst, upper/ty.price)
	}
	v := 0.0
	for i, ps := range sets {
		v += float64(ps.n) * c.y[i]
	}
	return v / (worst * (1 + 1e-12))
}

// undominated drops the types another type beats: as much allocatable in
// every dimension for no more money.
func undominated(types []lpType) []lpType {
	sorted := slices.Clone(types)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].price < sorted[j].price })
	var out []lpType
	for _, t := range sorted {
		if t.price <= 0 || math.IsInf(t.price, 1) {
			continue
		}
		dominated := false
		for _, o := range out {
			if t.alloc.fits(o.alloc) {
				dominated = true
				break
			}
		}
		if !dominated {
			out = append(out, t)
		}
	}
	return out
}

// maxOf is how many pods of ps one node of allocatable alloc holds.
func maxOf(ps podSet, alloc vec) int {
	return int(min(int64(ps.perNode), int64(ps.n), ps.req.howMany(alloc)))
}

// surrogates are the weightings of cpu, memory and pod slots (shares of the
// node) whose surrogate constraints bound knapsack.
var surrogates = func() [][numRes]float64 {
	var out [][numRes]float64
	for _, w := range [][3]float64{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}, {0.5, 0.5, 0}, {1.0 / 3, 1.0 / 3, 1.0 / 3}} {
		var v [numRes]float64
		v[rCPU], v[rMemory], v[rPods] = w[0], w[1], w[2]
		out = append(out, v)
	}
	return out
}()

// knapsack finds the mix of pods (k[i] of set i, at most its per-node limit
// and its count) that fits alloc and is worth most at prices y, when it is
// worth more than floor: the best value found (floor when none beats it),
// its mix (nil then) and an upper bound on every mix's value (exact when
// the search finished within maxNodes and what is left of budget, which it
// spends). Column generation searches briefly (configKnapsackNodes): any
// mix worth more than its price is a column worth adding; certification
// searches with all the budget left.
func knapsack(sets []podSet, alloc vec, y []float64, floor float64, maxNodes int, budget *int) (float64, []int, float64) {
	m := len(sets)
	limit := make([]int, m)
	order := make([]int, 0, m)
	for i, ps := range sets {
		limit[i] = maxOf(ps, alloc)
		if limit[i] > 0 && y[i] > 0 {
			order = append(order, i)
		}
	}
	if len(order) == 0 {
		return floor, nil, floor
	}
	// Densest first: value per share of the node the pod takes.
	share := func(i int) float64 {
		s := 0.0
		for d := range alloc {
			if sets[i].req[d] > 0 && alloc[d] > 0 {
				s = max(s, float64(sets[i].req[d])/float64(alloc[d]))
			}
		}
		return s
	}
	sort.SliceStable(order, func(a, b int) bool {
		return y[order[a]]/max(share(order[a]), 1e-12) > y[order[b]]/max(share(order[b]), 1e-12)
	})
	// rest bounds what sets order[j:] add within room: the fractional
	// knapsack of a surrogate constraint (a weighted sum of the node's
	// shares of each dimension), the least over a few weightings, and no
	// more than every remaining pod at its limit. Each weighting's pod
	// weights and value order are fixed for the call.
	pos := make([]int, m) // set -> its place in order
	for j, i := range order {
		pos[i] = j
	}
	type surrogate struct {
		w     []float64 // per set
		order []int     // sets by value per weight, best first
	}
	surs := make([]surrogate, len(surrogates))
	for x, wt := range surrogates {
		sg := surrogate{w: make([]float64, m)}
		for _, i := range order {
			for d, f := range wt {
				if f > 0 && alloc[d] > 0 {
					sg.w[i] += f * float64(sets[i].req[d]) / float64(alloc[d])
				}
			}
			sg.order = append(sg.order, i)
		}
		slices.SortStableFunc(sg.order, func(a, b int) int {
			va, vb := y[a]/max(sg.w[a], 1e-18), y[b]/max(sg.w[b], 1e-18)
			switch {
			case va > vb:
				return -1
			case va < vb:
				return 1
			}
			return 0
		})
		surs[x] = sg
	}
	var n [configMaxSets]float64
	rest := func(j int, room vec) float64 {
		best := 0.0
		for _, i := range order[j:] {
			n[i] = float64(min(int64(limit[i]), sets[i].req.howMany(room)))
			best += y[i] * n[i]
		}
		for x, wt := range surrogates {
			sg := &surs[x]
			capacity := 0.0
			for d, f := range wt {
				if f > 0 && alloc[d] > 0 {
					capacity += f * float64(max(room[d], 0)) / float64(alloc[d])
				}
			}
			v := 0.0
			for _, i := range sg.order {
				if pos[i] < j || n[i] <= 0 {
					continue
				}
				if sg.w[i] <= 0 {
					v += y[i] * n[i]
					continue
				}
				if capacity <= 0 {
					continue
				}
				take := min(n[i], capacity/sg.w[i])
				v += take * y[i]
				capacity -= take * sg.w[i]
			}
			best = min(best, v)
		}
		return best
	}
	root := rest(0, alloc)
	if root <= floor || *budget <= 0 {
		return floor, nil, max(root, floor)
	}
	maxNodes = min(maxNodes, *budget)
	bestVal, bestK := floor, []int(nil)
	cur := make([]int, m)
	nodes := 0
	aborted := false
	defer func() { *budget -= nodes }()
	var walk func(j int, room vec, val float64)
	walk = func(j int, room vec, val float64) {
		if val > bestVal {
			bestVal, bestK = val, slices.Clone(cur)
		}
		if j == len(order) {
			return
		}
		if nodes++; nodes > maxNodes {
			aborted = true
			return
		}
		if val+rest(j, room) <= bestVal*(1+1e-12) {
			return
		}
		i := order[j]
		k := int(min(int64(limit[i]), sets[i].req.howMany(room)))
		for ; k >= 0; k-- {
			cur[i] = k
			walk(j+1, room.sub(sets[i].req.scale(int64(k))), val+float64(k)*y[i])
			if aborted {
				break
			}
		}
		cur[i] = 0
	}
	walk(0, alloc, 0)
	upper := bestVal
	if aborted {
		upper = max(bestVal, root)
	}
	return bestVal, bestK, upper
}
