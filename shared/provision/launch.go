package provision

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/aws/smithy-go"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/metrics"
	"github.com/nodewright/nodewright/shared/scheduling"
	"github.com/nodewright/nodewright/shared/state"
)

// group is a set of identical NodeClaims launched by one fleet.
type group struct {
	token   string
	claim   scheduling.NodeClaim
	class   *apis.EC2NodeClass
	recs    []*state.NodeClaim // sorted by name; recs[0].Name == token
	insts   []*fleet.Instance
	err     error
	crashed error
}

// launch names the plan's NodeClaims, writes their records (fenced, and
// conditioned on the limited pools' versions), launches each group of
// identical claims with one fleet, and records what launched. It returns
// the records now launched and the offerings EC2 refused; ErrConflict when
// a limited pool changed since it was read (nothing was launched).
func (r *Reconciler) launch(ctx context.Context, lease *state.Lease, w *world, plan *scheduling.Result, reason string, rep *Report) ([]*state.NodeClaim, []state.Offering, error) {
	classes := map[string]*apis.EC2NodeClass{}
	for _, c := range w.classes {
		classes[c.Name] = c
	}
	pools := map[string]*apis.NodePool{}
	for _, p := range w.pools {
		pools[p.Name] = p
	}
	now := r.Now()
	var groups []*group
	var recs []*state.NodeClaim
	for _, idx := range Groups(plan.NodeClaims) {
		first := plan.NodeClaims[idx[0]]
		g := &group{claim: first, class: classes[first.NodeClass]}
		if g.class == nil {
			r.Log.Error("NodePool's EC2NodeClass is not configured", "nodePool", first.NodePool, "nodeClass", first.NodeClass)
			continue
		}
		names := make([]string, 0, len(idx))
		for range idx {
			name, err := r.Names(first.NodePool)
			if err != nil {
				return nil, nil, err
			}
			names = append(names, name)
		}
		sortStrings(names)
		g.token = names[0]
		capacity := ClaimCapacity(first, r.Catalog, g.class)
		for i, ci := range idx {
			c := plan.NodeClaims[ci]
			rec := &state.NodeClaim{
				Name: names[i], NodePool: c.NodePool, NodeClass: c.NodeClass, Phase: state.Launching, Claim: c,
				Capacity: capacity, NodeClassHash: g.class.Hash(), Reason: reason,
				Group: g.token, GroupSize: len(idx), CreatedAt: now,
			}
			if np := pools[c.NodePool]; np != nil {
				rec.NodePoolHash = np.Hash()
			}
			g.recs = append(g.recs, rec)
			recs = append(recs, rec)
		}
		groups = append(groups, g)
	}
	keep, dropped := r.overLimit(w, recs)
	if len(dropped) > 0 {
		drop := map[*state.NodeClaim]bool{}
		for _, d := range dropped {
			drop[d] = true
		}
		for _, g := range groups {
			var kept []*state.NodeClaim
			for _, rec := range g.recs {
				if !drop[rec] {
					kept = append(kept, rec)
				}
			}
			g.recs = kept
			if len(kept) > 0 && kept[0].Name != g.token {
				// The token is the first record's name: re-point the group.
				g.token = kept[0].Name
				for _, rec := range kept {
					rec.Group = g.token
				}
			}
			for _, rec := range kept {
				rec.GroupSize = len(kept)
			}
		}
	}
	if len(keep) == 0 {
		return nil, nil, nil
	}
	versions := limitedVersions(w.pools, w.versions)
	if err := r.Store.CreateNodeClaims(ctx, lease, keep, versions); err != nil {
		return nil, nil, fmt.Errorf("record nodeclaims: %w", err)
	}
	for p, v := range versions {
		w.versions[p] = v
	}
	var live []*group
	for _, g := range groups {
		if len(g.recs) > 0 {
			live = append(live, g)
		}
	}
	r.launchGroups(ctx, live)
	for _, g := range live {
		if g.crashed != nil {
			// As if the process died here: no record is updated; the next
			// round re-drives the fleets and adopts their instances.
			return nil, nil, fmt.Errorf("after CreateFleet %s: %w", g.token, g.crashed)
		}
	}
	var launched []*state.NodeClaim
	var refused []state.Offering
	for _, g := range live {
		l, ref := r.settle(ctx, g, rep)
		launched = append(launched, l...)
		refused = append(refused, ref...)
	}
	if len(refused) > 0 {
		if err := r.Store.MarkUnavailable(ctx, refused, state.UnavailableTTL); err != nil {
			r.Log.Error("record unavailable offerings", "error", err)
		}
	}
	return launched, refused, nil
}

// launchGroups calls CreateFleet for every group, Parallelism at a time.
func (r *Reconciler) launchGroups(ctx context.Context, groups []*group) {
	sem := make(chan struct{}, r.Options.Parallelism)
	fns := make([]func(), 0, len(groups))
	for _, g := range groups {
		fns = append(fns, func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			g.insts, g.err = r.createFleet(ctx, g.token, g.claim, g.class, len(g.recs))
			if g.err == nil && r.AfterCreateFleet != nil {
				g.crashed = r.AfterCreateFleet(g.token)
			}
		})
	}
	r.parallel(fns...)
}

// Throttling retries of CreateFleet: exponential backoff from
// throttleBase, capped at throttleCap, with full jitter, at most
// throttleAttempts calls.
const (
	throttleBase     = 200 * time.Millisecond
	throttleCap      = 5 * time.Second
	throttleAttempts = 6
)

// createFleet launches count instances of claim with ClientToken token,
// retrying throttled calls with exponential backoff and full jitter (the
// same token: a call EC2 did carry out returns the same instances).
func (r *Reconciler) createFleet(ctx context.Context, token string, claim scheduling.NodeClaim, class *apis.EC2NodeClass, count int) ([]*fleet.Instance, error) {
	req := fleet.Request{Name: token, Claim: claim, NodeClass: class, Count: count}
	backoff := throttleBase
	for attempt := 1; ; attempt++ {
		insts, err := r.Fleet.LaunchGroup(ctx, req)
		if err == nil || !throttled(err) || attempt == throttleAttempts {
			return insts, err
		}
		draw := rand.Int64N
		if r.jitter != nil {
			draw = r.jitter
		}
		wait := time.Duration(draw(int64(backoff)))
		r.Log.Warn("CreateFleet throttled: retrying", "token", token, "attempt", attempt, "wait", wait.String())
		if serr := r.sleep(ctx, wait); serr != nil {
			return nil, fmt.Errorf("create fleet %s: throttled (%v), then %w", token, err, serr)
		}
		backoff = min(backoff*2, throttleCap)
	}
}

// throttled reports whether err is an AWS throttling error.
func throttled(err error) bool {
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return false
	}
	switch ae.ErrorCode() {
	case "RequestLimitExceeded", "Throttling", "ThrottlingException", "TooManyRequestsException":
		return true
	}
	return false
}

// errFewerInstances is the error of the NodeClaims of a group EC2 launched
// only part of.
const errFewerInstances = "EC2 launched fewer instances than asked for"

// settle records a group's outcome: each launched instance goes to a
// record (records by name, instances by ID), the records left without an
// instance are removed (the round solves again for their pods, under new
// names: a reused name is a reused ClientToken, which EC2 answers with the
// first call's result), and refused offerings are returned to be marked
// unavailable.
func (r *Reconciler) settle(ctx context.Context, g *group, rep *Report) ([]*state.NodeClaim, []state.Offering) {
	var refused []state.Offering
	var launched []*state.NodeClaim
	if g.err != nil {
		for _, o := range fleet.UnavailableOfferings(g.err) {
			refused = append(refused, state.Offering{InstanceType: o.InstanceType, Zone: o.Zone, CapacityType: o.CapacityType, Code: o.Code})
		}
		reason := failureReason(g.err)
		r.Log.Warn("launch failed", "nodeClaims", len(g.recs), "token", g.token, "nodePool", g.claim.NodePool, "reason", reason, "error", g.err.Error())
		_ = r.Metrics.Emit(metrics.LaunchFailures, float64(len(g.recs)), metrics.Dims{metrics.DimReason: reason})
		for i, rec := range g.recs {
			rep.Launches = append(rep.Launches, Launch{NodeClaim: rec.Name, Claim: rec.Claim, Error: g.err.Error(), FleetCall: i == 0})
			if err := r.Store.DeleteNodeClaim(ctx, rec); err != nil {
				r.Log.Error("remove the record of a failed launch", "nodeClaim", rec.Name, "error", err)
			}
		}
		r.countRefused(refused)
		return nil, refused
	}
	for i, rec := range g.recs {
		l := Launch{NodeClaim: rec.Name, Claim: rec.Claim, FleetCall: i == 0}
		if i >= len(g.insts) {
			l.Error = errFewerInstances
			rep.Launches = append(rep.Launches, l)
			if err := r.Store.DeleteNodeClaim(ctx, rec); err != nil {
				r.Log.Error("remove the record of a failed launch", "nodeClaim", rec.Name, "error", err)
			}
			continue
		}
		in := *g.insts[i]
		in.NodeClaim = rec.Name
		l.Instance = &in
		if err := r.adopt(ctx, rec, &in, g.class); err != nil {
			l.Error = err.Error()
		} else {
			launched = append(launched, rec)
		}
		rep.Launches = append(rep.Launches, l)
	}
	if len(g.insts) > 0 {
		for _, o := range g.insts[0].Unavailable {
			refused = append(refused, state.Offering{InstanceType: o.InstanceType, Zone: o.Zone, CapacityType: o.CapacityType, Code: o.Code})
		}
		r.countRefused(refused)
	}
	return launched, refused
}

// adopt records that rec's instance launched and tags a group member's
// instance with its own NodeClaim name.
func (r *Reconciler) adopt(ctx context.Context, rec *state.NodeClaim, in *fleet.Instance, class *apis.EC2NodeClass) error {
	now := r.Now()
	rec.Phase = state.Launched
	rec.InstanceID, rec.InstanceType, rec.Zone, rec.CapacityType = in.InstanceID, in.InstanceType, in.Zone, in.CapacityType
	rec.ImageID, rec.PricePerHour, rec.LaunchedAt = in.ImageID, in.PricePerHour, now
	rec.ProviderID = state.ProviderIDFor(in.Zone, in.InstanceID)
	if c := TypeCapacity(in.InstanceType, r.Catalog, class); c != nil {
		rec.Capacity = c
	}
	if err := r.Store.PutNodeClaim(ctx, rec); err != nil {
		// The next round re-drives the launch and adopts the instance.
		r.Log.Error("record a launch", "nodeClaim", rec.Name, "instance", in.InstanceID, "error", err)
		return fmt.Errorf("record launch of %s: %w", rec.Name, err)
	}
	if rec.Name != rec.Group {
		if err := r.Fleet.TagNodeClaim(ctx, in.InstanceID, rec.NodePool, rec.Name); err != nil {
			r.Log.Warn("tag a group member's instance", "nodeClaim", rec.Name, "error", err)
		}
	}
	r.Events.Event(ctx, NodeClaimRef(rec.Name), corev1.EventTypeNormal, "Launched",
		fmt.Sprintf("Launched NodeClaim %s (%s, %s, %s, $%.4f/h) as instance %s for %d pods of NodePool %s",
			rec.Name, rec.InstanceType, rec.CapacityType, rec.Zone, rec.PricePerHour, rec.InstanceID, len(rec.Claim.Pods), rec.NodePool))
	_ = r.Metrics.Emit(metrics.NodeClaimsLaunched, 1, metrics.Dims{
		metrics.DimNodePool: rec.NodePool, metrics.DimCapacityType: rec.CapacityType, metrics.DimInstanceType: rec.InstanceType,
	})
	r.Log.Info("nodeclaim launched", "nodeClaim", rec.Name, "nodePool", rec.NodePool, "instance", rec.InstanceID,
		"type", rec.InstanceType, "zone", rec.Zone, "capacityType", rec.CapacityType, "price", rec.PricePerHour, "reason", rec.Reason)
	return nil
}

func (r *Reconciler) countRefused(refused []state.Offering) {
	for _, o := range refused {
		_ = r.Metrics.Emit(metrics.InsufficientCapacityErrors, 1, metrics.Dims{metrics.DimCapacityType: o.CapacityType})
	}
}

// failureReason is the LaunchFailures reason of a failed launch: the first
// EC2 error code, or a short word for errors without one.
func failureReason(err error) string {
	var le *fleet.LaunchError
	if errors.As(err, &le) && len(le.Errors) > 0 {
		return le.Errors[0].Code
	}
	var ae smithy.APIError
	if errors.As(err, &ae) {
		return ae.ErrorCode()
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return "Timeout"
	}
	return "Other"
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}
