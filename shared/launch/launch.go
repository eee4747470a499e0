package launch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"time"

	"github.com/aws/smithy-go"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/metrics"
	"github.com/nodewright/nodewright/shared/pause"
	"github.com/nodewright/nodewright/shared/scheduling"
	"github.com/nodewright/nodewright/shared/state"
)

// group is a set of identical NodeClaims launched by one fleet.
type group struct {
	token   string // the group's name: its first NodeClaim's
	claim   scheduling.NodeClaim
	class   *apis.EC2NodeClass
	recs    []*state.NodeClaim // sorted by name; recs[0].Name == token
	plan    *fleet.Plan        // the fleet's request, stored in recs
	insts   []*fleet.Instance
	err     error
	crashed error
	// unrecorded: the group failed before its records were written.
	unrecorded bool
}

// Launch names the plan's NodeClaims, writes their records with each
// fleet's request (fenced by lease, and conditioned on the launch
// versions in.Versions, read before in.Records), launches each group of
// identical claims with one fleet, and records what launched. It fails
// with state.ErrConflict when another launcher wrote records since they
// were read (nothing was launched: the caller reads the records again and
// solves again).
func (l *Launcher) Launch(ctx context.Context, lease *state.Lease, in Input) (*Result, error) {
	res := &Result{}
	if err := l.check(); err != nil {
		return res, err
	}
	if in.Versions == nil {
		return res, errors.New("launch: no launch versions to fence the records with")
	}
	plan, reason := in.Plan, in.Reason
	classes := map[string]*apis.EC2NodeClass{}
	for _, c := range in.Classes {
		classes[c.Name] = c
	}
	pools := map[string]*apis.NodePool{}
	for _, p := range in.Pools {
		pools[p.Name] = p
	}
	now := l.Now()
	var groups []*group
	var recs []*state.NodeClaim
	for _, idx := range Groups(plan.NodeClaims) {
		first := plan.NodeClaims[idx[0]]
		g := &group{claim: first, class: classes[first.NodeClass]}
		if g.class == nil {
			l.Log.Error("NodePool's EC2NodeClass is not configured", "nodePool", first.NodePool, "nodeClass", first.NodeClass)
			continue
		}
		names := make([]string, 0, len(idx))
		for range idx {
			name, err := l.Names(first.NodePool)
			if err != nil {
				return res, err
			}
			names = append(names, name)
		}
		sortStrings(names)
		g.token = names[0]
		capacity := ClaimCapacity(first, l.Catalog, g.class)
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
	keep, dropped := overLimit(in.Pools, in.Records, recs, l.Log)
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
		return res, nil
	}
	// Each fleet's request is resolved (Parallelism at a time: a cold
	// container makes launch templates) and stored in its records before
	// any CreateFleet: a re-drive sends the very same request.
	l.planGroups(ctx, groups, in.Exclude)
	var live, failed []*group
	keep = keep[:0]
	for _, g := range groups {
		switch {
		case len(g.recs) == 0:
		case g.err != nil:
			failed = append(failed, g)
		default:
			live = append(live, g)
			keep = append(keep, g.recs...)
		}
	}
	var refused []state.Offering
	for _, g := range failed {
		_, ref := l.settle(ctx, g, res)
		refused = append(refused, ref...)
	}
	if len(keep) == 0 {
		res.Refused = refused
		return res, nil
	}
	if err := l.Store.CreateNodeClaims(ctx, lease, keep, in.Versions); err != nil {
		return res, fmt.Errorf("record nodeclaims: %w", err)
	}
	l.launchGroups(ctx, live)
	for _, g := range live {
		if g.crashed != nil {
			// As if the process died here: no record is updated; the next
			// round re-drives the fleets and adopts their instances.
			return res, fmt.Errorf("after CreateFleet %s: %w", g.token, g.crashed)
		}
	}
	// Each group's records, objects and events are written at once
	// (Parallelism at a time), and gathered in the groups' order.
	settled := make([]settledGroup, len(live))
	fns := make([]func(), 0, len(live))
	for i, g := range live {
		fns = append(fns, func() {
			s := &settled[i]
			s.launched, s.refused = l.settle(ctx, g, &s.res)
		})
	}
	l.parallel(fns...)
	for _, s := range settled {
		res.Launches = append(res.Launches, s.res.Launches...)
		res.Short += s.res.Short
		res.Launched = append(res.Launched, s.launched...)
		refused = append(refused, s.refused...)
	}
	res.Refused = refused
	if len(refused) > 0 {
		if err := l.Store.MarkUnavailable(ctx, refused, state.UnavailableTTL); err != nil {
			l.Log.Error("record unavailable offerings", "error", err)
		}
	}
	return res, nil
}

// planGroups plans every group with records, Parallelism at a time; a
// group that cannot be planned carries its error (its records are not
// written).
func (l *Launcher) planGroups(ctx context.Context, groups []*group, exclude []state.Offering) {
	var fns []func()
	for _, g := range groups {
		if len(g.recs) == 0 {
			continue
		}
		fns = append(fns, func() {
			if err := l.planGroup(ctx, g, exclude); err != nil {
				g.err, g.unrecorded = err, true
			}
		})
	}
	l.parallel(fns...)
}

// launchGroups calls CreateFleet for every group, Parallelism at a time.
func (l *Launcher) launchGroups(ctx context.Context, groups []*group) {
	fns := make([]func(), 0, len(groups))
	for _, g := range groups {
		fns = append(fns, func() {
			g.insts, g.err = l.createFleet(ctx, g.plan)
			if g.err == nil && l.AfterCreateFleet != nil {
				g.crashed = l.AfterCreateFleet(g.token)
			}
		})
	}
	l.parallel(fns...)
}

// parallel runs fns through l.Parallel, else a goroutine each,
// Parallelism at a time, and returns when all have returned.
func (l *Launcher) parallel(fns ...func()) {
	if l.Parallel != nil {
		l.Parallel(fns...)
		return
	}
	sem := make(chan struct{}, l.Parallelism)
	var wg sync.WaitGroup
	for _, fn := range fns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			fn()
		}()
	}
	wg.Wait()
}

// Throttling retries of CreateFleet: exponential backoff from
// throttleBase, capped at throttleCap, with full jitter, at most
// throttleAttempts calls.
const (
	throttleBase     = 200 * time.Millisecond
	throttleCap      = 5 * time.Second
	throttleAttempts = 6
)

// planGroup resolves a group's fleet request under a ClientToken unique to
// this cluster and this launch, and stores it in the group's records. The
// excluded offerings of the claim's types and zones are left out of the
// fleet's overrides: the solve planned the claim without them, but the
// fleet crosses every type with every zone, and EC2 would pick a refused
// or reclaimed offering if it is the cheapest there.
func (l *Launcher) planGroup(ctx context.Context, g *group, excluded []state.Offering) error {
	if g.class == nil {
		return fmt.Errorf("NodePool %s: EC2NodeClass %s is not configured", g.claim.NodePool, g.claim.NodeClass)
	}
	nonce, err := l.Nonce()
	if err != nil {
		return fmt.Errorf("launch nonce: %w", err)
	}
	p, err := l.Fleet.Prepare(ctx, fleet.Request{
		Name: g.token, Token: fleet.LaunchToken(l.Cluster, g.token, nonce), Claim: g.claim, NodeClass: g.class, Count: len(g.recs),
		Exclude: claimExclusions(g.claim, excluded),
	})
	if err != nil {
		return err
	}
	raw, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("encode the fleet request of %s: %w", g.token, err)
	}
	g.plan = p
	for _, rec := range g.recs {
		rec.Launch = raw
	}
	return nil
}

// claimExclusions are the offerings of excluded among the claim's types,
// zones and capacity types, deduplicated and sorted.
func claimExclusions(c scheduling.NodeClaim, excluded []state.Offering) []fleet.UnavailableOffering {
	types, zones, cts := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, t := range c.InstanceTypes {
		types[t] = true
	}
	for _, z := range c.Zones {
		zones[z] = true
	}
	for _, ct := range c.CapacityTypes {
		cts[ct] = true
	}
	seen := map[fleet.UnavailableOffering]bool{}
	var out []fleet.UnavailableOffering
	for _, o := range excluded {
		if !types[o.InstanceType] || !zones[o.Zone] || (len(cts) > 0 && !cts[o.CapacityType]) {
			continue
		}
		u := fleet.UnavailableOffering{InstanceType: o.InstanceType, Zone: o.Zone, CapacityType: o.CapacityType}
		if !seen[u] {
			seen[u] = true
			out = append(out, u)
		}
	}
	slices.SortFunc(out, fleet.CompareOfferings)
	return out
}

// createFleet launches a plan, retrying throttled calls with exponential
// backoff and full jitter (the same token: a call EC2 did carry out
// returns the same instances).
func (l *Launcher) createFleet(ctx context.Context, p *fleet.Plan) ([]*fleet.Instance, error) {
	token := p.Token
	backoff := throttleBase
	for attempt := 1; ; attempt++ {
		insts, err := l.Fleet.LaunchPlan(ctx, p)
		if err == nil || !throttled(err) || attempt == throttleAttempts {
			return insts, err
		}
		draw := rand.Int64N
		if l.Jitter != nil {
			draw = l.Jitter
		}
		wait := time.Duration(draw(int64(backoff)))
		l.Log.Warn("CreateFleet throttled: retrying", "token", token, "attempt", attempt, "wait", wait.String())
		if serr := l.sleep(ctx, wait); serr != nil {
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

// settledGroup is what settling one group gave.
type settledGroup struct {
	res      Result
	launched []*state.NodeClaim
	refused  []state.Offering
}

// mayHaveLaunched reports whether a failed launch may have been carried
// out: a server error, or no answer at all (a timeout, a dead connection),
// says nothing of what EC2 did. A fleet's own errors (fleet.LaunchError),
// throttling and the other refusals of the request launched nothing.
func mayHaveLaunched(err error) bool {
	var le *fleet.LaunchError
	if errors.As(err, &le) {
		return false
	}
	var ae smithy.APIError
	if !errors.As(err, &ae) {
		return true
	}
	switch ae.ErrorCode() {
	case "InternalError", "InternalFailure", "ServiceUnavailable", "Unavailable", "RequestTimeout":
		return true
	}
	return ae.ErrorFault() == smithy.FaultServer
}

// ErrFewerInstances is the error of the NodeClaims of a group EC2 launched
// only part of.
const ErrFewerInstances = "EC2 launched fewer instances than asked for"

// settle records a group's outcome: each launched instance goes to a
// record (records by name, instances by ID), the records left without an
// instance are removed (the round solves again for their pods, under new
// names: a reused name is a reused ClientToken, which EC2 answers with the
// first call's result), and refused offerings are returned to be marked
// unavailable.
func (l *Launcher) settle(ctx context.Context, g *group, res *Result) ([]*state.NodeClaim, []state.Offering) {
	var refused []state.Offering
	var launched []*state.NodeClaim
	if g.err != nil {
		for _, o := range fleet.UnavailableOfferings(g.err) {
			refused = append(refused, state.Offering{InstanceType: o.InstanceType, Zone: o.Zone, CapacityType: o.CapacityType, Code: o.Code})
		}
		reason := failureReason(g.err)
		l.Log.Warn("launch failed", "nodeClaims", len(g.recs), "token", g.token, "nodePool", g.claim.NodePool, "reason", reason, "error", g.err.Error())
		_ = l.Metrics.Emit(metrics.LaunchFailures, float64(len(g.recs)), metrics.Dims{metrics.DimReason: reason})
		l.karpenterLaunchFailed(g.err, len(g.recs))
		keep := mayHaveLaunched(g.err)
		if keep && !g.unrecorded {
			l.Log.Warn("CreateFleet may have launched: records kept for the re-drive", "token", g.token, "error", g.err.Error())
		}
		for i, rec := range g.recs {
			res.Launches = append(res.Launches, Launch{NodeClaim: rec.Name, Claim: rec.Claim, Error: g.err.Error(), FleetCall: i == 0, InsufficientCapacity: len(refused) > 0})
			if g.unrecorded || keep {
				// Not written; or EC2 may have launched the group's
				// instances: the records stay launching, and the re-drive
				// (the same ClientToken) adopts what EC2 launched.
				continue
			}
			if err := l.Store.DeleteNodeClaim(ctx, rec); err != nil {
				l.Log.Error("remove the record of a failed launch", "nodeClaim", rec.Name, "error", err)
			}
		}
		l.countRefused(refused)
		return nil, refused
	}
	// Each record is written at once (Parallelism at a time); the
	// outcomes are gathered in the records' order.
	outs := make([]Launch, len(g.recs))
	fns := make([]func(), 0, len(g.recs))
	for i, rec := range g.recs {
		out := &outs[i]
		*out = Launch{NodeClaim: rec.Name, Claim: rec.Claim, FleetCall: i == 0}
		if i >= len(g.insts) {
			out.Error = ErrFewerInstances
			fns = append(fns, func() {
				if err := l.Store.DeleteNodeClaim(ctx, rec); err != nil {
					l.Log.Error("remove the record of a failed launch", "nodeClaim", rec.Name, "error", err)
				}
			})
			continue
		}
		in := *g.insts[i]
		in.NodeClaim = rec.Name
		out.Instance = &in
		fns = append(fns, func() {
			if err := l.adopt(ctx, rec, &in, g.class); err != nil {
				out.Error = err.Error()
			}
		})
	}
	l.parallel(fns...)
	for i, rec := range g.recs {
		if i >= len(g.insts) {
			res.Short++
		} else {
			// Its instance runs whether or not the record could be
			// written (the write may have taken effect; else the re-drive
			// adopts the instance): it counts for its pods and against its
			// pool's limits.
			launched = append(launched, rec)
		}
		res.Launches = append(res.Launches, outs[i])
	}
	if len(g.insts) > 0 {
		for _, o := range g.insts[0].Unavailable {
			refused = append(refused, state.Offering{InstanceType: o.InstanceType, Zone: o.Zone, CapacityType: o.CapacityType, Code: o.Code})
		}
		l.countRefused(refused)
	}
	return launched, refused
}

// adopt records that rec's instance launched and tags a group member's
// instance with its own NodeClaim name.
func (l *Launcher) adopt(ctx context.Context, rec *state.NodeClaim, in *fleet.Instance, class *apis.EC2NodeClass) error {
	now := l.Now()
	rec.Phase = state.Launched
	rec.InstanceID, rec.InstanceType, rec.Zone, rec.CapacityType = in.InstanceID, in.InstanceType, in.Zone, in.CapacityType
	rec.ImageID, rec.PricePerHour, rec.LaunchedAt = in.ImageID, in.PricePerHour, now
	rec.SubnetID, rec.SecurityGroups, rec.PlacementGroupID = in.SubnetID, in.SecurityGroups, in.PlacementGroupID
	rec.ProviderID = state.ProviderIDFor(in.Zone, in.InstanceID)
	if c := TypeCapacity(in.InstanceType, l.Catalog, class); c != nil {
		rec.Capacity = c
	}
	if err := l.Store.PutNodeClaim(ctx, rec); err != nil {
		// The next round re-drives the launch and adopts the instance.
		l.Log.Error("record a launch", "nodeClaim", rec.Name, "instance", in.InstanceID, "error", err)
		return fmt.Errorf("record launch of %s: %w", rec.Name, err)
	}
	if rec.Name != rec.Group {
		if err := l.Fleet.TagNodeClaim(ctx, in.InstanceID, rec.NodePool, rec.Name); err != nil {
			l.Log.Warn("tag a group member's instance", "nodeClaim", rec.Name, "error", err)
		}
	}
	if l.OnLaunched != nil {
		l.OnLaunched(ctx, rec)
	}
	_ = l.Metrics.Emit(metrics.NodeClaimsLaunched, 1, metrics.Dims{
		metrics.DimNodePool: rec.NodePool, metrics.DimCapacityType: rec.CapacityType, metrics.DimInstanceType: rec.InstanceType,
	})
	l.karpenterCreated(rec)
	l.Log.Info("nodeclaim launched", "nodeClaim", rec.Name, "nodePool", rec.NodePool, "instance", rec.InstanceID,
		"type", rec.InstanceType, "zone", rec.Zone, "capacityType", rec.CapacityType, "price", rec.PricePerHour, "reason", rec.Reason)
	return nil
}

func (l *Launcher) countRefused(refused []state.Offering) {
	for _, o := range refused {
		_ = l.Metrics.Emit(metrics.InsufficientCapacityErrors, 1, metrics.Dims{metrics.DimCapacityType: o.CapacityType})
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

// sleep waits d (l.Wait when set).
func (l *Launcher) sleep(ctx context.Context, d time.Duration) error {
	return pause.For(ctx, d, l.Wait)
}
