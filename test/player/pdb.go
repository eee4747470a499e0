package player

import (
	policyv1 "k8s.io/api/policy/v1"
)

// pdbTracker counts PodDisruptionBudget violations from the budgets'
// status (as kube-controller-manager computes it), for every PDB in the
// cluster. A PDB is armed once all its expected pods are healthy; while it
// is armed and its expected pods do not change, fewer healthy pods than it
// desires is a violation (counted once per episode). A change in expected
// pods (a Deployment scaled, which a PDB does not govern) disarms it until
// all are healthy again.
type pdbTracker struct {
	state map[string]*pdbState
	// Violations counts the episodes.
	Violations int
}

type pdbState struct {
	expected int32
	armed    bool
	violated bool
}

func newPDBTracker() *pdbTracker { return &pdbTracker{state: map[string]*pdbState{}} }

// observe takes a PDB's current status and reports whether a new
// violation began.
func (t *pdbTracker) observe(b *policyv1.PodDisruptionBudget) bool {
	key := b.Namespace + "/" + b.Name
	st := b.Status
	s := t.state[key]
	if s == nil {
		s = &pdbState{expected: st.ExpectedPods}
		t.state[key] = s
	}
	if st.ExpectedPods != s.expected {
		s.expected, s.armed, s.violated = st.ExpectedPods, false, false
	}
	if st.ExpectedPods > 0 && st.CurrentHealthy >= st.ExpectedPods {
		s.armed = true
	}
	if !s.armed {
		return false
	}
	if st.CurrentHealthy < st.DesiredHealthy {
		if !s.violated {
			s.violated = true
			t.Violations++
			return true
		}
		return false
	}
	s.violated = false
	return false
}
