package orchestration

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/disruption"
	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/metrics"
	"github.com/nodewright/nodewright/shared/pause"
	"github.com/nodewright/nodewright/shared/provision"
	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/shared/termination"
)

// Run defaults.
const (
	DefaultLeaseTTL = time.Minute
	// pollEvery is the pause while an action waits (validation, a
	// replacement coming up, a drain blocked by a PDB).
	pollEvery = time.Second
	// finishMargin is the time before the invocation's deadline at which a
	// run stops waiting and leaves the action to the next tick.
	finishMargin = 30 * time.Second
	// DefaultMaxWait bounds how long one tick waits on open actions
	// (validation, replacements booting, drains blocked by PDBs) before it
	// leaves them to the next tick: waiting costs Lambda time, and the
	// state machine resumes where it stopped.
	DefaultMaxWait = 2 * time.Minute
	// DefaultDecideSolves bounds the simulations of one decision (or
	// validation): the 500-node packed benchmark cluster, where every
	// candidate is simulated and none can go, takes 505 in about a second.
	DefaultDecideSolves = 5_000
	// DefaultDecideTime bounds a decision's wall time; it shrinks so that
	// the tick keeps the time to carry its command out (MaxWait and
	// finishMargin) before the invocation's deadline.
	DefaultDecideTime = 5 * time.Minute
)

// RunStore is the part of the state table a tick reads and writes
// (*state.Store).
type RunStore interface {
	Acquire(ctx context.Context, name, holder string, ttl time.Duration, asks ...string) (*state.Lease, error)
	Renew(ctx context.Context, l *state.Lease, ttl time.Duration) error
	Release(ctx context.Context, l *state.Lease) (rerun bool, err error)
	Actions(ctx context.Context) ([]*state.Action, error)
	NodeClaims(ctx context.Context) ([]*state.NodeClaim, error)
	PutNodeClaim(ctx context.Context, nc *state.NodeClaim) error
	PodSums(ctx context.Context) (*state.PodSums, error)
	PutPodSums(ctx context.Context, read *state.PodSums, sums map[string]state.PodSum) (int, error)
	Unavailable(ctx context.Context) ([]state.Offering, error)
}

// RegionalCatalog is the region's catalog in the state table
// (*pricing.Regional).
type RegionalCatalog interface {
	Load(ctx context.Context) error
	Catalog() *catalog.Catalog
}

// Classes resolves the node classes against the account (*fleet.Launcher):
// the zones replacements are priced in, and which NodePools can launch.
type Classes interface {
	ResolveAll(ctx context.Context, classes []*apis.EC2NodeClass) []fleet.Resolution
}

// SpotPrices are the region's spot prices (provision.SpotPrices).
type SpotPrices interface {
	catalog.SpotPricer
	Ensure(ctx context.Context) error
}

// Run is one consolidation timer tick.
type Run struct {
	// Store is the state table (leases, actions, records, unavailable
	// offerings); Classes resolves the node classes (zones, the NodePools
	// that can launch); Catalog and Spot what decisions price with (Spot
	// nil: on-demand only).
	Store   RunStore
	Classes Classes
	Catalog *catalog.Catalog
	// Regional, when set, is the region's catalog as the state table holds
	// it, read again by every tick and used in place of Catalog: the
	// provision sweep refreshes the table, and a consolidation container
	// would otherwise keep the figures of its cold start (where each type is
	// offered among them).
	Regional RegionalCatalog
	Spot     SpotPrices
	// Exec carries the commands out; its Capacity, Source and configuration
	// serve the tick too.
	Exec   *Executor
	Decide func(disruption.Inputs) ([]disruption.Command, disruption.Report)
	// Images resolves an EC2NodeClass's AMIs now (drift); nil: no AMI drift.
	Images func(ctx context.Context, nc *apis.EC2NodeClass) ([]string, error)
	// StatusChecks reads the EC2 status checks of instances and returns
	// the impaired ones (node repair; *fleet.Launcher); nil: not polled.
	StatusChecks func(ctx context.Context, instanceIDs []string) (map[string]fleet.Impairment, error)
	SpotToSpot   bool
	Holder       string
	LeaseTTL     time.Duration
	// MaxWait bounds the time a tick waits on open actions (0: DefaultMaxWait).
	MaxWait time.Duration
	// Budget bounds each decision's and validation's work (zero fields:
	// DefaultDecideSolves, provision.DefaultSolveGroups per solve,
	// DefaultDecideTime shortened to the invocation's deadline).
	Budget disruption.Budget
	// Wait pauses d between an action's steps on the tick's clock (nil: a
	// timer; tests and the fault suite drive it from a fake clock with
	// Exec.Now).
	Wait func(ctx context.Context, d time.Duration) error
	// Carry is what a tick leaves the next one of the same (warm)
	// container; copies of the Run share it (nil: every tick starts over).
	Carry *Carry
}

// Carry holds, between the ticks of a warm container, the candidates the
// last decision's work budget kept it from reaching: the next decision
// considers them first (disruption.Inputs.ReachFirst), so a budget that
// stops every tick at the same place does not leave the same nodes out
// every time. A cold container starts over in the usual order.
type Carry struct {
	mu        sync.Mutex
	unreached []string
}

// reachFirst is what the last decision did not reach (nil c: nothing).
func (c *Carry) reachFirst() []string {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.unreached
}

// keep records what a decision did not reach.
func (c *Carry) keep(unreached []string) {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.unreached = unreached
}

// TickReport is what a tick did.
type TickReport struct {
	Candidates int                 `json:"candidates"`
	Skipped    map[string]string   `json:"skipped,omitempty"`
	Resumed    []string            `json:"resumed,omitempty"`
	Started    *state.Action       `json:"started,omitempty"`
	Command    *disruption.Command `json:"command,omitempty"`
	Finished   []*state.Action     `json:"finished,omitempty"`
	// BudgetSpent and Unreached: the decision's work budget ran out before
	// it reached these candidates (the next tick takes them).
	BudgetSpent string   `json:"budgetSpent,omitempty"`
	Unreached   []string `json:"unreached,omitempty"`
	// Standby says why the tick started nothing: Karpenter's controller
	// runs in the cluster (package handover).
	Standby string `json:"standby,omitempty"`
}

// Tick carries on the open consolidation actions and, when none is left
// waiting, decides and carries out the first command that finds work. It
// holds the consolidation lease throughout (two ticks never act at once).
func (r *Run) Tick(ctx context.Context) (*TickReport, error) {
	rep := &TickReport{}
	e := r.Exec
	ttl := r.LeaseTTL
	if ttl <= 0 {
		ttl = DefaultLeaseTTL
	}
	lease, err := r.Store.Acquire(ctx, state.LeaseConsolidation, r.Holder, ttl)
	if errors.Is(err, state.ErrHeld) {
		e.Log.Info("another consolidation run is in progress")
		return rep, nil
	}
	if err != nil {
		return rep, err
	}
	defer func() {
		for {
			rerun, err := r.Store.Release(context.WithoutCancel(ctx), lease)
			if err != nil || !rerun {
				return
			}
		}
	}()
	fresh := func(ctx context.Context) (disruption.Inputs, error) { return r.Inputs(ctx) }
	acts, err := r.Store.Actions(ctx)
	if err != nil {
		return rep, err
	}
	waiting := false
	for _, a := range acts {
		if a.Kind != state.KindConsolidation || !a.Open() {
			continue
		}
		rep.Resumed = append(rep.Resumed, a.ID)
		if err := r.carry(ctx, lease, a, fresh, ttl); err != nil {
			return rep, err
		}
		if a.Open() {
			waiting = true
		} else {
			rep.Finished = append(rep.Finished, a)
		}
	}
	if waiting {
		return rep, nil
	}
	if _, err := e.Capacity.Register(ctx); err != nil {
		return rep, err
	}
	in, view, err := r.inputs(ctx)
	if err != nil {
		return rep, err
	}
	if c := view.Karpenter; c != nil {
		// Karpenter's controller runs: no action starts (its replacements
		// could not launch; see package handover).
		rep.Standby = c.Message()
		e.Log.Warn("Karpenter's controller runs: starting no consolidation action", "lease", c.Holding(), "until", c.Until)
		return rep, nil
	}
	if err := r.fingerprint(ctx, in); err != nil {
		return rep, err
	}
	in.ReachFirst = r.Carry.reachFirst()
	cmds, drep := r.Decide(in)
	r.Carry.keep(drep.Unreached)
	r.notDisruptedEvents(ctx, drep, in.Records)
	r.repairNotes(ctx, in, drep)
	rep.Candidates, rep.Skipped = drep.Candidates, drep.Skipped
	rep.BudgetSpent, rep.Unreached = drep.BudgetSpent, drep.Unreached
	if drep.BudgetSpent != "" {
		e.Log.Warn("the decision's work budget ran out: the candidates not reached wait for the next tick", "spent", drep.BudgetSpent,
			"solves", drep.Solves, "unreached", len(drep.Unreached), "first", firstFew(drep.Unreached, 10))
	}
	if len(cmds) == 0 {
		e.Log.Info("nothing to consolidate", "candidates", drep.Candidates, "skipped", summarize(drep.Skipped), "rejected", summarize(drep.Rejected))
	}
	_ = e.Metrics.Emit(metrics.ConsolidationCandidates, float64(drep.Candidates), nil)
	e.karpenterBudgets(drep.Allowed)
	if len(cmds) == 0 {
		return rep, nil
	}
	cmd := cmds[0]
	rep.Command = &cmd
	a, err := e.Start(ctx, cmd, in.Records)
	if errors.Is(err, state.ErrConflict) {
		e.Log.Info("a candidate changed since it was read: next tick", "error", err)
		return rep, nil
	}
	if err != nil {
		return rep, err
	}
	rep.Started = a
	if err := r.carry(ctx, lease, a, fresh, ttl); err != nil {
		return rep, err
	}
	if !a.Open() {
		rep.Finished = append(rep.Finished, a)
	}
	return rep, nil
}

// carry advances an action until it ends or the invocation runs short,
// waiting between steps. A drain pass's DeleteBy brings the next pass
// forward, and keeps the tick past its MaxWait when the next sweep may come
// too late for it and the invocation has the time.
func (r *Run) carry(ctx context.Context, lease *state.Lease, a *state.Action, fresh Inputs, ttl time.Duration) error {
	e := r.Exec
	giveUp := e.Now().Add(r.maxWait())
	for {
		deleteBy, err := e.Advance(ctx, lease, a, fresh)
		if err != nil {
			return err
		}
		if !a.Open() {
			return nil
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < finishMargin {
			r.leaving(a, deleteBy)
			return nil
		}
		if e.Now().After(giveUp) && !r.stayFor(ctx, deleteBy) {
			e.Log.Info("consolidation action still waiting: next tick", "action", a.ID, "step", a.Step)
			r.leaving(a, deleteBy)
			return nil
		}
		if err := r.Store.Renew(ctx, lease, ttl); err != nil {
			return err
		}
		wait := pollEvery
		if a.Step == state.StepPlanned {
			if d := a.ValidateAt.Sub(e.Now()); d > 0 {
				wait = min(d, 5*time.Second)
			}
		}
		if err := r.sleep(ctx, termination.NextPass(e.Now(), wait, deleteBy)); err != nil {
			return err
		}
	}
}

// stayFor reports whether a tick past its MaxWait stays for deleteBy: the
// next sweep may come after it, and the invocation lasts past it (with its
// finishing margin).
func (r *Run) stayFor(ctx context.Context, deleteBy time.Time) bool {
	now := r.Exec.Now()
	if !termination.MissesDeleteBy(now, deleteBy) {
		return false
	}
	dl, ok := ctx.Deadline()
	return !ok || time.Until(dl)-finishMargin > deleteBy.Sub(now)
}

// leaving says so when the tick leaves a drain whose DeleteBy the next
// sweep may come too late for.
func (r *Run) leaving(a *state.Action, deleteBy time.Time) {
	if termination.MissesDeleteBy(r.Exec.Now(), deleteBy) {
		r.Exec.Log.Warn("a pod a budget holds is due for deletion before the next sweep: it may get less than its whole grace",
			"action", a.ID, "deleteBy", deleteBy)
	}
}

// sleep waits d on the tick's clock (Run.Wait, else a timer).
func (r *Run) sleep(ctx context.Context, d time.Duration) error {
	return pause.For(ctx, d, r.Wait)
}

// Inputs reads what a decision needs: the cluster, the records and
// actions, unavailable offerings, zones, spot prices and the node classes'
// current AMIs.
func (r *Run) Inputs(ctx context.Context) (disruption.Inputs, error) {
	in, _, err := r.inputs(ctx)
	return in, err
}

// inputs is Inputs, and the cluster view it read.
func (r *Run) inputs(ctx context.Context) (disruption.Inputs, *provision.View, error) {
	e := r.Exec
	view, err := e.Source.View(ctx)
	if err != nil {
		return disruption.Inputs{}, nil, err
	}
	pools, classes, _ := provision.MergeConfig(e.NodePools, e.NodeClasses, view)
	records, err := r.Store.NodeClaims(ctx)
	if err != nil {
		return disruption.Inputs{}, nil, err
	}
	// When each node's pods last changed is in the pods summary, not in
	// the records (see fingerprint).
	sums, err := r.Store.PodSums(ctx)
	if err != nil {
		return disruption.Inputs{}, nil, err
	}
	sums.Apply(records)
	acts, err := r.Store.Actions(ctx)
	if err != nil {
		return disruption.Inputs{}, nil, err
	}
	var open []*state.Action
	for _, a := range acts {
		if a.Open() {
			open = append(open, a)
		}
	}
	unavail, err := r.Store.Unavailable(ctx)
	if err != nil {
		return disruption.Inputs{}, nil, err
	}
	// Replacements are planned only into the NodePools provision would
	// launch into (their class exists and resolves whole); the nodes of the
	// others stay candidates for deletion.
	resolved := r.Classes.ResolveAll(ctx, classes)
	zones, err := provision.ReadyZones(resolved)
	if err != nil {
		return disruption.Inputs{}, nil, err
	}
	notReady := map[string]bool{}
	for _, s := range provision.Readiness(pools, classes, resolved) {
		if !s.Ready() {
			notReady[s.NodePool] = true
			e.Log.Info("NodePool not ready: no replacement is planned into it", "nodePool", s.NodePool, "reason", string(s.Reason), "message", s.Message)
		}
	}
	in := disruption.Inputs{
		Now: e.Now(), Nodes: view.Nodes, Pods: view.Pods, PDBs: view.PDBs, DaemonSets: view.DaemonSets,
		Records: records, Actions: open, NodePools: pools, NotReady: notReady, NodeClasses: classes, Catalog: r.catalog(ctx), Zones: zones,
		Unavailable: state.NewUnavailableSet(unavail).Has, SpotToSpot: r.SpotToSpot, Budget: r.budget(ctx),
		Volumes: view.Volumes,
	}
	in.CurrentSubnets, in.CurrentSecurityGroups = placements(resolved)
	in.CurrentPlacementGroups = placementGroups(resolved)
	in.EndingBlocks, in.CurrentReservations = endingBlocks(resolved, in.Now), selectedReservations(resolved)
	if r.Spot != nil {
		if err := r.Spot.Ensure(ctx); err == nil {
			in.Spot = r.Spot
		}
	}
	in.StatusChecks = r.statusChecks(ctx, records)
	if in.NodeCosts, err = provision.NodeCosts(pools, classes, zones, resolved); err != nil {
		e.Log.Warn("nodes priced by their instances alone", "error", err)
	}
	in.Catalog, in.Spot, _ = provision.Overlaid(in.Catalog, in.Spot, provision.MergeOverlays(e.NodeOverlays, view))
	if r.Images != nil {
		in.CurrentImages = map[string]map[string]bool{}
		for _, c := range classes {
			ids, err := r.Images(ctx, c)
			if err != nil {
				e.Log.Warn("resolve AMIs for drift", "nodeClass", c.Name, "error", err)
				continue
			}
			set := map[string]bool{}
			for _, id := range ids {
				set[id] = true
			}
			in.CurrentImages[c.Name] = set
		}
	}
	return in, view, nil
}

// placements are, per node class that resolved, the subnets and security
// groups it selects now (subnet and security group drift); a class that
// did not resolve is left out: its nodes do not drift on them.
func placements(resolved []fleet.Resolution) (subnets, sgs map[string]map[string]bool) {
	subnets, sgs = map[string]map[string]bool{}, map[string]map[string]bool{}
	for _, r := range resolved {
		if r.Err != nil || r.Class == nil {
			continue
		}
		subnets[r.Name], sgs[r.Name] = setOf(r.Class.SubnetIDs), setOf(r.Class.SecurityGroups)
	}
	return subnets, sgs
}

// placementGroups are, per resolved class, the ID of the placement group it
// selects ("": none).
func placementGroups(resolved []fleet.Resolution) map[string]string {
	out := map[string]string{}
	for _, r := range resolved {
		if r.Err != nil || r.Class == nil {
			continue
		}
		out[r.Name] = ""
		if pg := r.Class.PlacementGroup; pg != nil {
			out[r.Name] = pg.ID
		}
	}
	return out
}

func setOf(ids []string) map[string]bool {
	out := make(map[string]bool, len(ids))
	for _, id := range ids {
		out[id] = true
	}
	return out
}

// budget is a decision's work budget (see Run.Budget).
func (r *Run) budget(ctx context.Context) disruption.Budget {
	dl, ok := ctx.Deadline()
	return budgetFor(r.Budget, r.Exec.Now, time.Until(dl), ok, r.maxWait()+finishMargin)
}

// budgetFor fills b's zero fields: the default bounds, and a deadline on
// now's clock DefaultDecideTime away, or sooner so that reserve is left of
// the invocation's left time (when bounded).
func budgetFor(b disruption.Budget, now func() time.Time, left time.Duration, bounded bool, reserve time.Duration) disruption.Budget {
	if b.MaxSolves <= 0 {
		b.MaxSolves = DefaultDecideSolves
	}
	if b.MaxGroups <= 0 {
		b.MaxGroups = provision.DefaultSolveGroups
	}
	if b.Now == nil {
		b.Now = now
	}
	if b.Deadline.IsZero() {
		room := DefaultDecideTime
		if bounded {
			room = min(room, max(left-reserve, 0))
		}
		b.Deadline = b.Now().Add(room)
	}
	return b
}

func (r *Run) maxWait() time.Duration {
	if r.MaxWait <= 0 {
		return DefaultMaxWait
	}
	return r.MaxWait
}

// firstFew is at most n of names.
func firstFew(names []string, n int) []string {
	if len(names) > n {
		return names[:n]
	}
	return names
}

// summarize is a bounded one-line account of why nodes were left alone.
func summarize(m map[string]string) string {
	var b strings.Builder
	for i, k := range slices.Sorted(maps.Keys(m)) {
		if i == 10 {
			fmt.Fprintf(&b, " and %d more", len(m)-10)
			break
		}
		if i > 0 {
			b.WriteString("; ")
		}
		fmt.Fprintf(&b, "%s: %s", k, m[k])
	}
	return b.String()
}

// catalog is the catalog a tick decides with: the region's as the state
// table holds it now, else Catalog.
func (r *Run) catalog(ctx context.Context) *catalog.Catalog {
	if r.Regional == nil {
		return r.Catalog
	}
	if err := r.Regional.Load(ctx); err != nil {
		r.Exec.Log.Warn("read the region's figures: deciding with the last ones read", "error", err)
	}
	return r.Regional.Catalog()
}
