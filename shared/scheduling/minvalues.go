package scheduling

import (
	"fmt"
	"slices"
	"strings"

	"github.com/nodewright/nodewright/shared/apis"
)

// MinValuesPolicy says what a solve does when a NodeClaim's instance types
// cannot keep a requirement's minValues (too few fit, or the cap on a
// NodeClaim's types leaves too few): Karpenter's --min-values-policy.
type MinValuesPolicy string

const (
	// MinValuesStrict leaves the pods unschedulable, with a reason (the
	// default, as in Karpenter).
	MinValuesStrict MinValuesPolicy = "Strict"
	// MinValuesBestEffort launches with what there is and lowers the
	// NodeClaim's minValues to it (NodeClaim.MinValuesRelaxed says so).
	MinValuesBestEffort MinValuesPolicy = "BestEffort"
)

// minKey is a requirement's minValues: at least min distinct values of key
// among a NodeClaim's instance types. Type labels count each type's value;
// zone and capacity type count the offerings the NodeClaim may launch.
type minKey struct {
	key string
	min int
}

// minValueKeys lists the minValues of reqs that instance types or offerings
// can meet.
func (s *solver) minValueKeys(rs *reqSet) []minKey {
	var out []minKey
	for _, r := range rs.reqs {
		if r.MinValues != nil && (s.u.isTypeKey(r.Key) || s.u.isOfferingKey(r.Key)) {
			out = append(out, minKey{r.Key, *r.MinValues})
		}
	}
	return out
}

// typeValues calls f with the values type t brings to key when it may
// launch in the offering slots of mask.
func (s *solver) typeValues(t int, key string, mask uint64, f func(v string)) {
	u := s.u
	nc := len(capacityTypes)
	switch key {
	case apis.LabelZone:
		for z := range u.zones {
			for c := 0; c < nc; c++ {
				if slot := z*nc + c; mask&(1<<uint(slot)) != 0 && u.offered[slot].has(t) {
					f(u.zones[z])
					break
				}
			}
		}
	case apis.LabelCapacityType:
		for c, ct := range capacityTypes {
			for z := range u.zones {
				if slot := z*nc + c; mask&(1<<uint(slot)) != 0 && u.offered[slot].has(t) {
					f(ct)
					break
				}
			}
		}
	default:
		if v, ok := u.labels[t][key]; ok {
			f(v)
		}
	}
}

// candidate is an instance type with the offering slots it may launch in.
type candidate struct {
	t     int
	slots uint64
}

// distinct counts, per key, the values the candidates bring.
func (s *solver) distinct(cands []candidate, keys []minKey) []int {
	out := make([]int, len(keys))
	for i, mk := range keys {
		seen := map[string]bool{}
		for _, c := range cands {
			s.typeValues(c.t, mk.key, c.slots, func(v string) { seen[v] = true })
			if len(seen) >= mk.min {
				break
			}
		}
		out[i] = len(seen)
	}
	return out
}

// valuesCover picks, from cands (in their order), types that together bring every
// key its minimum of distinct values, never more than limit: each pick is
// the first candidate that brings the most values still missing. It
// returns the picks' indexes in cands and whether every minimum is met.
func (s *solver) valuesCover(cands []candidate, keys []minKey, limit int) ([]int, bool) {
	seen := make([]map[string]bool, len(keys))
	for i := range seen {
		seen[i] = map[string]bool{}
	}
	missing := func() int {
		n := 0
		for i, mk := range keys {
			n += max(mk.min-len(seen[i]), 0)
		}
		return n
	}
	picked := make([]bool, len(cands))
	var out []int
	for missing() > 0 && len(out) < limit {
		best, bestGain := -1, 0
		for ci, c := range cands {
			if picked[ci] {
				continue
			}
			gain := 0
			for i, mk := range keys {
				if len(seen[i]) >= mk.min {
					continue
				}
				fresh := map[string]bool{}
				s.typeValues(c.t, mk.key, c.slots, func(v string) {
					if !seen[i][v] {
						fresh[v] = true
					}
				})
				gain += min(len(fresh), mk.min-len(seen[i]))
			}
			if gain > bestGain {
				best, bestGain = ci, gain
			}
		}
		if best < 0 {
			break
		}
		picked[best] = true
		out = append(out, best)
		for i, mk := range keys {
			s.typeValues(cands[best].t, mk.key, cands[best].slots, func(v string) { seen[i][v] = true })
		}
	}
	slices.Sort(out)
	return out, missing() == 0
}

// minValuesOK says whether a NodeClaim may launch types and keep every
// minValues: enough distinct values among them and, when the minimums add
// up to more than the cap on a NodeClaim's types, a choice of at most that
// many that keeps them all. Under BestEffort it always may.
func (s *solver) minValuesOK(types bitset, mask uint64, keys []minKey) bool {
	if len(keys) == 0 || s.bestEffort {
		return true
	}
	var cands []candidate
	types.each(func(t int) bool {
		cands = append(cands, candidate{t, mask})
		return true
	})
	sum := 0
	for i, n := range s.distinct(cands, keys) {
		if n < keys[i].min {
			return false
		}
		sum += keys[i].min
	}
	if sum <= s.in.MaxInstanceTypes {
		return true
	}
	_, ok := s.valuesCover(cands, keys, s.in.MaxInstanceTypes)
	return ok
}

// truncate keeps at most MaxInstanceTypes options: first those valuesCover picks
// to keep every minValues, then the cheapest others, in price order.
func (s *solver) truncate(opts []option, keys []minKey) []option {
	limit := s.in.MaxInstanceTypes
	if len(opts) <= limit {
		return opts
	}
	keep := make([]bool, len(opts))
	n := 0
	if len(keys) > 0 {
		picks, _ := s.valuesCover(candidates(opts), keys, limit)
		for _, i := range picks {
			keep[i] = true
		}
		n = len(picks)
	}
	for i := range opts {
		if n == limit {
			break
		}
		if !keep[i] {
			keep[i] = true
			n++
		}
	}
	out := make([]option, 0, limit)
	for i, o := range opts {
		if keep[i] {
			out = append(out, o)
		}
	}
	return out
}

func candidates(opts []option) []candidate {
	out := make([]candidate, len(opts))
	for i, o := range opts {
		out[i] = candidate{o.t, o.slots}
	}
	return out
}

// minValuesKept compares what the options bring to each minValues: the
// NodeClaim's effective minValues (lowered to what they bring where they
// bring less) and, when some are short, a reason naming them.
func (s *solver) minValuesKept(p *pool, opts []option, keys []minKey) (effective map[string]int, short string) {
	if len(keys) == 0 {
		return nil, ""
	}
	effective = map[string]int{}
	var parts []string
	for i, n := range s.distinct(candidates(opts), keys) {
		mk := keys[i]
		effective[mk.key] = min(mk.min, n)
		if n < mk.min {
			parts = append(parts, fmt.Sprintf("%s needs %d distinct values and its instance types bring %d", mk.key, mk.min, n))
		}
	}
	if len(parts) == 0 {
		return effective, ""
	}
	return effective, fmt.Sprintf("NodePool %s cannot keep its minValues (minValuesPolicy Strict): %s, with at most %d instance types per NodeClaim",
		p.name, strings.Join(parts, "; "), s.in.MaxInstanceTypes)
}

// minValuesReason says which minValues the instance types that fit need
// cannot keep, or "".
func (s *solver) minValuesReason(c *claim, st *reqState, need vec) string {
	if len(st.minKeys) == 0 || s.bestEffort {
		return ""
	}
	var cands []candidate
	s.fitSet(c, st, need).each(func(t int) bool {
		cands = append(cands, candidate{t, st.mask})
		return true
	})
	var parts []string
	for i, n := range s.distinct(cands, st.minKeys) {
		if mk := st.minKeys[i]; n < mk.min {
			parts = append(parts, fmt.Sprintf("%s needs %d distinct values and the instance types that fit bring %d", mk.key, mk.min, n))
		}
	}
	if len(parts) == 0 {
		return fmt.Sprintf("NodePool %s cannot keep its minValues (minValuesPolicy Strict) within the %d instance types a NodeClaim may list (%s)",
			c.pool.name, s.in.MaxInstanceTypes, minKeysString(st.minKeys))
	}
	return fmt.Sprintf("NodePool %s cannot keep its minValues (minValuesPolicy Strict): %s", c.pool.name, strings.Join(parts, "; "))
}

func minKeysString(keys []minKey) string {
	parts := make([]string, len(keys))
	for i, mk := range keys {
		parts[i] = fmt.Sprintf("%s minValues %d", mk.key, mk.min)
	}
	return strings.Join(parts, ", ")
}
