package disruption

import (
	"errors"
	"fmt"
)

// Cause classifies why a command no longer holds when Validate checks it
// again: a class of low cardinality, for the metrics and events of the
// action it abandons.
type Cause string

const (
	// CauseDoNotDisrupt: a candidate or one of its pods is now annotated
	// karpenter.sh/do-not-disrupt.
	CauseDoNotDisrupt Cause = "DoNotDisrupt"
	// CausePDB: a PodDisruptionBudget now blocks a candidate's pod.
	CausePDB Cause = "PDB"
	// CauseNoLongerFits: the candidates' pods no longer fit where the
	// command planned them (the other nodes, or as many new nodes).
	CauseNoLongerFits Cause = "NoLongerFits"
	// CauseNoLongerCheaper: the planned replacements no longer save
	// enough at today's prices and offerings.
	CauseNoLongerCheaper Cause = "NoLongerCheaper"
	// CauseChanged: anything else changed (a candidate is gone, no longer
	// expired, drifted, empty or consolidatable, the budgets, a pending
	// pod that needs the room, a better plan).
	CauseChanged Cause = "Changed"
)

// Invalid is Validate's error: what changed, and its cause.
type Invalid struct {
	Cause Cause
	Err   error
}

func (e *Invalid) Error() string { return e.Err.Error() }
func (e *Invalid) Unwrap() error { return e.Err }

// invalid is an Invalid error of cause c, formatted as fmt.Errorf.
func invalid(c Cause, format string, args ...any) error {
	return &Invalid{Cause: c, Err: fmt.Errorf(format, args...)}
}

// CauseOf is the cause of a Validate error (CauseChanged for an error
// that carries none).
func CauseOf(err error) Cause {
	var inv *Invalid
	if errors.As(err, &inv) {
		return inv.Cause
	}
	return CauseChanged
}
