package scheduling

import (
	"math/bits"
	"slices"
	"sort"
)

// bitset is a set of instance-type indexes. All bitsets of a solve have the
// same length, so "types that are compatible, offered and big enough" is a few
// word-wise ANDs.
type bitset []uint64

func newBitset(n int) bitset { return make(bitset, (n+63)/64) }

func (b bitset) set(i int)      { b[i>>6] |= 1 << (uint(i) & 63) }
func (b bitset) has(i int) bool { return b[i>>6]&(1<<(uint(i)&63)) != 0 }

func (b bitset) clone() bitset { return append(bitset(nil), b...) }

// and sets b to b ∩ o.
func (b bitset) and(o bitset) {
	for i := range b {
		b[i] &= o[i]
	}
}

// or sets b to b ∪ o.
func (b bitset) or(o bitset) {
	for i := range b {
		b[i] |= o[i]
	}
}

// andNot sets b to b − o.
func (b bitset) andNot(o bitset) {
	for i := range b {
		b[i] &^= o[i]
	}
}

func (b bitset) empty() bool {
	for _, w := range b {
		if w != 0 {
			return false
		}
	}
	return true
}

// intersects says whether b ∩ o is not empty, without building it.
func (b bitset) intersects(o bitset) bool {
	for i := range b {
		if b[i]&o[i] != 0 {
			return true
		}
	}
	return false
}

// each calls f for every member in increasing order until f returns false.
func (b bitset) each(f func(i int) bool) {
	for wi, w := range b {
		for w != 0 {
			t := bits.TrailingZeros64(w)
			if !f(wi<<6 + t) {
				return
			}
			w &= w - 1
		}
	}
}

// threshold indexes types by one amount, so "the types with at least (or at
// most) x" is one binary search: values are the distinct amounts ascending
// and sets[i] the types with at least values[i] (an at-least index) or at
// most values[i] (an at-most index).
type threshold struct {
	values []int64
	sets   []bitset
}

func newThreshold(types bitset, n int, amount func(t int) int64, atLeast bool) threshold {
	type tv struct {
		t int
		v int64
	}
	var all []tv
	types.each(func(t int) bool {
		all = append(all, tv{t, amount(t)})
		return true
	})
	// Accumulate from the end the sets include: the largest amounts for an
	// at-least index, the smallest for an at-most one.
	sort.Slice(all, func(i, j int) bool {
		if atLeast {
			return all[i].v > all[j].v
		}
		return all[i].v < all[j].v
	})
	var th threshold
	cur := newBitset(n)
	for i := 0; i < len(all); {
		v := all[i].v
		for ; i < len(all) && all[i].v == v; i++ {
			cur.set(all[i].t)
		}
		th.values = append(th.values, v)
		th.sets = append(th.sets, cur.clone())
	}
	if atLeast {
		slices.Reverse(th.values)
		slices.Reverse(th.sets)
	}
	return th
}

// atLeast is the types with at least x (nil when none), for an at-least index.
func (th *threshold) atLeast(x int64) bitset {
	i := sort.Search(len(th.values), func(i int) bool { return th.values[i] >= x })
	if i == len(th.values) {
		return nil
	}
	return th.sets[i]
}

// atMost is the types with at most x (nil when none), for an at-most index.
func (th *threshold) atMost(x int64) bitset {
	i := sort.Search(len(th.values), func(i int) bool { return th.values[i] > x }) - 1
	if i < 0 {
		return nil
	}
	return th.sets[i]
}
