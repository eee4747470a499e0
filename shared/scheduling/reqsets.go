package scheduling

import (
	"github.com/nodewright/nodewright/shared/requirements"
)

// reqSet is an interned requirement set: equal sets share one value, so the
// solve caches operations on them (merges, pins, per-pool states) by id
// instead of rebuilding and comparing requirements in its inner loops.
type reqSet struct {
	id   int
	reqs requirements.Requirements
	key  string
}

type setPair struct{ a, b int }

type pinOp struct {
	id         int
	key, value string
}

type stateKey struct {
	pool   *pool
	set    int
	exotic bool
}

// intern returns the shared set equal to r.
func (s *solver) intern(r requirements.Requirements) *reqSet {
	key := r.String()
	if rs, ok := s.sets[key]; ok {
		return rs
	}
	rs := &reqSet{id: len(s.sets), reqs: r, key: key}
	s.sets[key] = rs
	return rs
}

// merged is a ∩ b when a node can satisfy both (keys only b constrains must
// be well-known or allow the label's absence), else nil.
func (s *solver) merged(a, b *reqSet) *reqSet {
	k := setPair{a.id, b.id}
	if rs, ok := s.merges[k]; ok {
		return rs
	}
	var rs *reqSet
	if a.reqs.Compatible(b.reqs, requirements.WellKnown) == nil {
		if m := a.reqs.Intersect(b.reqs); m.Satisfiable() == nil {
			rs = s.intern(m)
		}
	}
	s.merges[k] = rs
	return rs
}

// pinned is a with key In [value].
func (s *solver) pinned(a *reqSet, key, value string) *reqSet {
	k := pinOp{a.id, key, value}
	if rs, ok := s.pins[k]; ok {
		return rs
	}
	rs := s.intern(a.reqs.Add(requirements.In(key, value)))
	s.pins[k] = rs
	return rs
}
