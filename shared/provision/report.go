package provision

import (
	"slices"
	"time"

	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/launch"
	"github.com/nodewright/nodewright/shared/scheduling"
	"github.com/nodewright/nodewright/shared/state"
)

// Report is what a round saw, planned and launched.
type Report struct {
	Pending       int `json:"pending"`
	Reschedulable int `json:"reschedulable,omitempty"`
	InFlight      int `json:"inFlight"`
	// Unevaluated counts the pods kube-scheduler had not evaluated yet
	// though they were created a batch's idle window before the round read
	// (Backlog): a burst it is still working through.
	Unevaluated int      `json:"unevaluated,omitempty"`
	Nodes       int      `json:"nodes"`
	Zones       []string `json:"zones"`
	Warnings    []string `json:"warnings,omitempty"`
	// Plan is the last solve's result (nil when nothing was pending).
	Plan *scheduling.Result `json:"plan,omitempty"`
	// Solves counts solves (more than one when EC2 refused offerings).
	Solves int `json:"solves"`
	// Nominated counts the pending pods left out of the last solve because
	// a NodeClaim in flight was launched for them (they stay on it).
	Nominated int `json:"nominated,omitempty"`
	// NominatedTo are the NodeClaims in flight those pods stay on, sorted.
	NominatedTo []string `json:"nominatedTo,omitempty"`
	// Deferred counts the pending pods the last solve's budget did not
	// reach (listed in Plan.Deferred): the next round takes them.
	Deferred int      `json:"deferred,omitempty"`
	Launches []Launch `json:"launches,omitempty"`
	// Recovered are records of a crashed invocation whose instances were
	// adopted; Registered the NodeClaims whose Node appeared.
	Recovered  []string         `json:"recovered,omitempty"`
	Registered []string         `json:"registered,omitempty"`
	Refused    []state.Offering `json:"refused,omitempty"`
	// Standby says why the round launched nothing it planned: Karpenter's
	// controller runs in the cluster (handover).
	Standby string `json:"standby,omitempty"`
	// pricedBy and spotBy are the prices the last solve chose by (the
	// catalog and spot prices with the NodeOverlays applied).
	pricedBy *catalog.Catalog
	spotBy   catalog.SpotPricer
	// Batch is the batching wait before the round (set by the caller that
	// settled: the provision handler).
	Batch  Batched       `json:"batch"`
	Read   time.Duration `json:"read"`
	Solve  time.Duration `json:"solve"`
	Launch time.Duration `json:"launch"`
}

// Launch is one NodeClaim a round launched (or failed to).
type Launch = launch.Launch

// Launched returns the instances the round launched.
func (rep *Report) Launched() []*fleet.Instance {
	var out []*fleet.Instance
	for _, l := range rep.Launches {
		if l.Instance != nil {
			out = append(out, l.Instance)
		}
	}
	return out
}

// InFlightTo returns the NodeClaims already in flight that the round's
// pods go to without a launch of its own, sorted: those they were
// nominated to (launched for them by a concurrent round, say) and those
// whose room the last solve put them in.
func (rep *Report) InFlightTo() []string {
	out := slices.Clone(rep.NominatedTo)
	if rep.Plan != nil {
		for _, n := range rep.Plan.ExistingNodes {
			if n.InFlight && len(n.Pods) > 0 {
				out = append(out, n.Node)
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Failed returns the launches that failed.
func (rep *Report) Failed() []Launch {
	var out []Launch
	for _, l := range rep.Launches {
		if l.Error != "" {
			out = append(out, l)
		}
	}
	return out
}

// PricePerHour is the price of what the round launched.
func (rep *Report) PricePerHour() float64 {
	var sum float64
	for _, in := range rep.Launched() {
		sum += in.PricePerHour
	}
	return sum
}
