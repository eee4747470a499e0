package provision

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/metrics"
	"github.com/nodewright/nodewright/shared/scheduling"
	"github.com/nodewright/nodewright/shared/state"
)

// podEvents tells pods where they are going: "Nominated" with the
// NodeClaim that was launched for them, or "FailedScheduling" with the
// solver's reason when nothing can take them; "NoCompatibleInstanceTypes"
// on each NodePool whose requirements leave it no instance type.
func (r *Reconciler) podEvents(ctx context.Context, w *world, plan *scheduling.Result, launched []*state.NodeClaim) {
	pods := map[string]*corev1.Pod{}
	for _, p := range w.view.Pods {
		pods[p.Namespace+"/"+p.Name] = p
	}
	ref := func(key string) (Ref, bool) {
		p, ok := pods[key]
		if !ok {
			return Ref{}, false
		}
		return Ref{Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: string(p.UID)}, true
	}
	now := r.Now()
	for _, rec := range launched {
		msg := fmt.Sprintf("Nominated to NodeClaim %s (%s, %s, %s)", rec.Name, rec.InstanceType, rec.CapacityType, rec.Zone)
		for _, key := range rec.Claim.Pods {
			if rf, ok := ref(key); ok && r.nominations.AllowN(now, 1) {
				r.Events.Event(ctx, rf, corev1.EventTypeNormal, string(EventNominated), msg)
			}
		}
	}
	for _, u := range plan.Unschedulable {
		if rf, ok := ref(u.Pod); ok {
			r.Events.Event(ctx, rf, corev1.EventTypeWarning, string(EventFailedScheduling), "Nodewright cannot place the pod: "+u.Reason)
		}
	}
	uids := map[string]string{}
	for _, p := range w.view.NodePools {
		uids[p.Name] = string(p.UID)
	}
	for _, name := range plan.NoCompatibleInstanceTypes {
		r.Events.Event(ctx, Ref{APIVersion: apis.NodePoolAPIVersion, Kind: apis.NodePoolKind, Name: name, UID: uids[name]},
			corev1.EventTypeWarning, string(EventNoCompatibleInstanceTypes),
			"The NodePool's requirements leave no instance type with an available offering: it launches nothing until they change or capacity returns")
	}
}

// emitRound publishes the round's gauges (pending pods, the oldest one's
// age, nodes and price per hour by NodePool and capacity type) and records
// the round's decision.
func (r *Reconciler) emitRound(ctx context.Context, w *world, rep *Report) {
	now := r.Now()
	_ = r.Metrics.Emit(metrics.PendingPods, float64(rep.Pending), nil)
	oldest := 0.0
	for _, p := range w.view.Pods {
		if p.Spec.NodeName != "" || p.DeletionTimestamp != nil {
			continue
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				oldest = math.Max(oldest, now.Sub(p.CreationTimestamp.Time).Seconds())
			}
		}
	}
	_ = r.Metrics.Emit(metrics.PendingPodOldestAge, oldest, nil)
	type key struct{ pool, ct string }
	count, price := map[key]float64{}, map[key]float64{}
	for _, rec := range w.records {
		if rec.InstanceID == "" || rec.Phase == state.Terminating {
			continue
		}
		k := key{rec.NodePool, rec.CapacityType}
		count[k]++
		price[k] += rec.PricePerHour
	}
	for k, n := range count {
		dims := metrics.Dims{metrics.DimNodePool: k.pool, metrics.DimCapacityType: k.ct}
		_ = r.Metrics.Emit(metrics.Nodes, n, dims)
		_ = r.Metrics.Emit(metrics.ClusterPricePerHour, math.Round(price[k]*1e4)/1e4, dims)
	}
	r.karpenterRound(w)
	if rep.Plan == nil || (len(rep.Launches) == 0 && len(rep.Plan.Unschedulable) == 0) {
		return
	}
	d := Decision(rep)
	cat, spot := r.prices(rep)
	d.NodeClaims = DecidedNodeClaims(rep, cat, spot)
	if err := r.Store.RecordDecision(ctx, d, fmt.Sprintf("%d", now.UnixNano())); err != nil {
		r.Log.Warn("record decision", "error", err)
	}
}

// prices are the catalog and spot prices the report's solve chose by (the
// reconciler's own when it did not solve).
func (r *Reconciler) prices(rep *Report) (*catalog.Catalog, catalog.SpotPricer) {
	if rep.pricedBy != nil {
		return rep.pricedBy, rep.spotBy
	}
	return r.Catalog, r.spot(rep)
}

// recordReplacement records what a replacement (Replace) did for the
// disrupted node's pods, as a round does, with its reason.
func (r *Reconciler) recordReplacement(ctx context.Context, rep *Report, reason string) {
	if rep.Plan == nil || (len(rep.Launches) == 0 && len(rep.Plan.Unschedulable) == 0 && len(rep.Plan.ExistingNodes) == 0) {
		return
	}
	d := Decision(rep)
	d.Kind, d.Summary = "replacement", reason+": "+d.Summary
	cat, spot := r.prices(rep)
	d.NodeClaims = DecidedNodeClaims(rep, cat, spot)
	now := r.Now()
	d.Time = now
	if err := r.Store.RecordDecision(ctx, d, fmt.Sprintf("%d-replacement", now.UnixNano())); err != nil {
		r.Log.Warn("record decision", "error", err)
	}
}

// Decision summarises a round for `nodewright explain` and reports: what
// each pod was given, the NodeClaims with their options and prices.
func Decision(rep *Report) *state.Decision {
	d := &state.Decision{Function: "provision", Kind: "round", Pods: map[string]string{}}
	var launched, failed int
	for _, l := range rep.Launches {
		what := ""
		if l.Instance != nil {
			launched++
			what = fmt.Sprintf("nodeclaim %s (%s, %s, %s, $%.4f/h; options: %s)", l.NodeClaim, l.Instance.InstanceType,
				l.Instance.CapacityType, l.Instance.Zone, l.Instance.PricePerHour, optionList(l.Claim.InstanceTypes))
		} else {
			failed++
			what = fmt.Sprintf("nodeclaim %s failed to launch: %s", l.NodeClaim, l.Error)
		}
		for _, p := range l.Claim.Pods {
			d.Pods[p] = what
		}
	}
	if rep.Plan != nil {
		for _, e := range rep.Plan.ExistingNodes {
			for _, p := range e.Pods {
				if e.InFlight {
					d.Pods[p] = "in-flight nodeclaim " + e.Node
				} else {
					d.Pods[p] = "node " + e.Node
				}
			}
		}
		for _, u := range rep.Plan.Unschedulable {
			d.Pods[u.Pod] = "pending: " + u.Reason
		}
	}
	unsched := 0
	if rep.Plan != nil {
		unsched = len(rep.Plan.Unschedulable)
	}
	d.Summary = fmt.Sprintf("%d pending, %d reschedulable: launched %d NodeClaims ($%.4f/h), %d failed, %d pods left pending",
		rep.Pending, rep.Reschedulable, launched, rep.PricePerHour(), failed, unsched)
	if b, err := json.Marshal(struct {
		Launches []Launch         `json:"launches"`
		Refused  []state.Offering `json:"refused,omitempty"`
	}{rep.Launches, rep.Refused}); err == nil {
		d.Detail = b
	}
	return d
}

func optionList(types []string) string {
	if len(types) > 5 {
		return strings.Join(types[:5], ",") + fmt.Sprintf(" and %d more", len(types)-5)
	}
	return strings.Join(types, ",")
}

// MaxDecidedNodeClaims bounds the NodeClaims one decision describes (the
// summary counts them all).
const MaxDecidedNodeClaims = 100

// DecidedNodeClaims describes the round's launches for `nodewright
// explain`: each NodeClaim with what it launched as (or its error) and its
// cheapest options with their prices from cat and spot (nil: on-demand
// only), at most state.MaxDecidedOptions each and MaxDecidedNodeClaims in
// all.
func DecidedNodeClaims(rep *Report, cat *catalog.Catalog, spot catalog.SpotPricer) []state.DecidedNodeClaim {
	var out []state.DecidedNodeClaim
	for _, l := range rep.Launches {
		if len(out) == MaxDecidedNodeClaims {
			break
		}
		d := state.DecidedNodeClaim{Name: l.NodeClaim, NodePool: l.Claim.NodePool, Pods: len(l.Claim.Pods), Error: l.Error,
			OptionsTotal: len(l.Claim.InstanceTypes), Options: decidedOptions(l.Claim, cat, spot)}
		if l.Instance != nil {
			d.InstanceType, d.CapacityType, d.Zone, d.PricePerHour = l.Instance.InstanceType, l.Instance.CapacityType, l.Instance.Zone, l.Instance.PricePerHour
		}
		out = append(out, d)
	}
	return out
}

// decidedOptions prices each of the claim's instance types at its cheapest
// offering in the claim's zones and capacity types, cheapest first (then
// by name), at most state.MaxDecidedOptions.
func decidedOptions(c scheduling.NodeClaim, cat *catalog.Catalog, spot catalog.SpotPricer) []state.DecidedOption {
	opts := make([]state.DecidedOption, 0, len(c.InstanceTypes))
	for _, name := range c.InstanceTypes {
		o := state.DecidedOption{InstanceType: name}
		var it *catalog.InstanceType
		if cat != nil {
			it, _ = cat.Get(name)
		}
		if it != nil {
			for _, off := range it.Offerings(c.Zones, spot) {
				if len(c.CapacityTypes) > 0 && !slices.Contains(c.CapacityTypes, off.CapacityType) {
					continue
				}
				if o.PricePerHour == 0 || off.Price < o.PricePerHour {
					o.PricePerHour, o.CapacityType = off.Price, off.CapacityType
				}
			}
		}
		opts = append(opts, o)
	}
	sort.SliceStable(opts, func(i, j int) bool {
		pi, pj := opts[i].PricePerHour, opts[j].PricePerHour
		if (pi == 0) != (pj == 0) {
			return pj == 0 // unpriced last
		}
		if pi != pj {
			return pi < pj
		}
		return opts[i].InstanceType < opts[j].InstanceType
	})
	return opts[:min(len(opts), state.MaxDecidedOptions)]
}

// Pod nomination events are limited across pods and rounds as Karpenter
// limits them (its pod-nomination token bucket): a burst of
// nominatedBurst, then nominatedPerSecond; the rest are dropped. One
// event per pod would be a write each through the function's API client
// (50 a second): a 1,000-pod scale-out's events alone would hold the next
// round back by 20 s.
const (
	nominatedPerSecond = 5
	nominatedBurst     = 10
)
