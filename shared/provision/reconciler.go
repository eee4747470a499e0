package provision

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/launch"
	"github.com/nodewright/nodewright/shared/metrics"
	"github.com/nodewright/nodewright/shared/scheduling"
	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/shared/termination"
)

// Defaults of Options, and the registration timeout's bounds.
const (
	MinRegistrationTimeout     = 2 * time.Minute
	MaxRegistrationTimeout     = 24 * time.Hour
	DefaultParallelism         = 10
	DefaultRegistrationTimeout = 15 * time.Minute
	DefaultOrphanGrace         = 5 * time.Minute
	DefaultRedriveAfter        = 30 * time.Second
	DefaultMaxAttempts         = 4
	// DefaultSolveGroups bounds a solve's group placements: 10,000 pods
	// that each form a group of their own take about 1.6 s of CPU (README,
	// benchmarks), so 20,000 stays within seconds.
	DefaultSolveGroups = 20_000
	// DefaultSolveTime bounds a solve's wall time.
	DefaultSolveTime = time.Minute
	// launchReserve is the part of the invocation a solve leaves for the
	// launches after it: a minute, or half of what is left when less than
	// two minutes are (an interruption's replacement, late in a short
	// invocation, still gets a solve).
	launchReserve = time.Minute
)

// Options tune a Reconciler; zero values take the defaults.
type Options struct {
	// Parallelism is how many fleets a round launches at once.
	Parallelism int
	// RegistrationTimeout: a NodeClaim whose Node has not registered this
	// long after launch is terminated and removed.
	RegistrationTimeout time.Duration
	// OrphanGrace: an instance with Nodewright's tags and no record is
	// terminated once it is this old.
	OrphanGrace time.Duration
	// RedriveAfter: a record still launching this long after it was
	// written belongs to an invocation that died; the next round re-drives
	// its CreateFleet (same ClientToken: EC2 returns the same instances).
	RedriveAfter time.Duration
	// MaxAttempts bounds how often one round solves again after EC2 refused
	// offerings.
	MaxAttempts int
	// MaxInstanceTypes caps each NodeClaim's options (0: the solver's 60).
	MaxInstanceTypes int
	// SolveGroups and SolveTime are each solve's work budget (group
	// placements and wall time; the time shrinks to fit the invocation's
	// deadline less a minute for launching). Pods the budget does not reach
	// are reported (Report.Deferred) and wait for the next round.
	SolveGroups int
	SolveTime   time.Duration
}

// RegistrationTimeout is the reconciler's registration timeout
// (Options.RegistrationTimeout, else DefaultRegistrationTimeout), for the
// callers that wait on registrations (consolidation's replacements).
func (r *Reconciler) RegistrationTimeout() time.Duration {
	if r.Options.RegistrationTimeout > 0 {
		return r.Options.RegistrationTimeout
	}
	return DefaultRegistrationTimeout
}

// ParseRegistrationTimeout reads a registration timeout as the stack sets
// it (a Go duration) and checks it is within MinRegistrationTimeout and
// MaxRegistrationTimeout: a Node takes a minute or two to register, and a
// NodeClaim that never does costs money until the timeout.
func ParseRegistrationTimeout(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("registration timeout %q: want a duration such as 15m", s)
	}
	if d < MinRegistrationTimeout || d > MaxRegistrationTimeout {
		return 0, fmt.Errorf("registration timeout %s: want %s to %s", d, MinRegistrationTimeout, MaxRegistrationTimeout)
	}
	return d, nil
}

func (o *Options) defaults() {
	if o.Parallelism <= 0 {
		o.Parallelism = DefaultParallelism
	}
	if o.RegistrationTimeout <= 0 {
		o.RegistrationTimeout = DefaultRegistrationTimeout
	}
	if o.OrphanGrace <= 0 {
		o.OrphanGrace = DefaultOrphanGrace
	}
	if o.RedriveAfter <= 0 {
		o.RedriveAfter = DefaultRedriveAfter
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.SolveGroups <= 0 {
		o.SolveGroups = DefaultSolveGroups
	}
	if o.SolveTime <= 0 {
		o.SolveTime = DefaultSolveTime
	}
}

// Reconciler carries out rounds and sweeps for one cluster.
type Reconciler struct {
	Cluster string
	Store   *state.Store
	Source  ClusterSource
	Fleet   Fleet
	Nodes   Nodes
	// NodeClaims keeps a NodeClaim object per record (nil: none kept).
	NodeClaims NodeClaimObjects
	// Status writes the status of the cluster's NodePools and
	// EC2NodeClasses (nil: none).
	Status  StatusWriter
	Drainer Drainer
	Events  Events
	Metrics Metrics
	Catalog *catalog.Catalog
	Spot    SpotPrices // nil: on-demand only
	// Regional, when set, replaces Catalog at the start of each round with
	// the region's (its prices and offerings); a sweep refreshes it.
	Regional RegionalCatalog
	// NodePools and NodeClasses are the deployed configuration.
	NodePools   []*apis.NodePool
	NodeClasses []*apis.EC2NodeClass
	// NodeOverlays are the deployed configuration's (the cluster's replace
	// them by name: MergeOverlays).
	NodeOverlays []*apis.NodeOverlay
	// Names names new NodeClaims (default fleet.NodeClaimName with
	// crypto/rand).
	Names func(nodePool string) (string, error)
	// Nonce draws a launch's random nonce, which its ClientToken hashes
	// (default: 16 bytes of crypto/rand).
	Nonce   func() (string, error)
	Now     func() time.Time
	Log     *slog.Logger
	Options Options
	// AfterCreateFleet, when set, is called after CreateFleet answered and
	// before the records are updated: an error stands for the process
	// dying there (no record is updated and the round fails), the fault
	// tests inject.
	AfterCreateFleet func(token string) error
	// Parallel runs fns at once and returns when all have returned (nil:
	// a goroutine each). The fault suite (test/faults) runs them one after
	// another, in order, so that a seed replays exactly.
	Parallel func(fns ...func())

	// wait sleeps d (nil: a timer); jitter draws a duration in [0, n) (nil:
	// math/rand). Unit tests replace them.
	wait   func(ctx context.Context, d time.Duration) error
	jitter func(n int64) int64

	// placed are the pods earlier solves put in the room of in-flight
	// NodeClaims (see nominate).
	placed placements
	// readinessNote is the pool readiness last written for status.
	readinessNote readinessNote
	// drainEvents dedupes the terminators' repeated drain events;
	// adoptEvents adoption's NotAdopted events.
	drainEvents, adoptEvents termination.Recent
	// nominations limits the pods' Nominated events (nominatedPerSecond).
	nominations *rate.Limiter
	// defaults fills the unset fields once: a container's invocations may
	// share a fresh reconciler.
	defaults sync.Once
}

func (r *Reconciler) init() error {
	if r.Store == nil || r.Source == nil || r.Fleet == nil || r.Catalog == nil {
		return errors.New("provision: a reconciler needs Store, Source, Fleet and Catalog")
	}
	r.defaults.Do(func() {
		if r.Names == nil {
			r.Names = func(pool string) (string, error) { return fleet.NodeClaimName(pool, rand.Reader) }
		}
		if r.Nonce == nil {
			r.Nonce = launch.RandomNonce
		}
		if r.Now == nil {
			r.Now = time.Now
		}
		if r.Log == nil {
			r.Log = slog.New(slog.DiscardHandler)
		}
		if r.Events == nil {
			r.Events = DiscardEvents{}
		}
		if r.Metrics == nil {
			r.Metrics = metrics.Discard{}
		}
		r.nominations = rate.NewLimiter(nominatedPerSecond, nominatedBurst)
		r.Options.defaults()
	})
	return nil
}

// world is what a round read.
type world struct {
	view     *View
	pools    []*apis.NodePool
	classes  []*apis.EC2NodeClass
	versions state.Versions
	records  []*state.NodeClaim
	// stale are the records of launches that never got an instance and
	// are past the registration timeout (phantom): left out of records,
	// so they count neither as capacity in flight nor against limits.
	stale       []*state.NodeClaim
	unavailable []state.Offering
	// avoid are offerings the caller rules out (the one being reclaimed
	// that a replacement replaces), whatever the table says.
	avoid []state.Offering
	zones []string
	// resolved are the classes resolved against the account, readiness
	// the pools' readiness decided from them (see poolReadiness).
	resolved  []fleet.Resolution
	readiness []PoolStatus
}

// read reads the cluster, the state table, the node classes' zones and the
// spot prices, at once where they do not depend on one another.
func (r *Reconciler) read(ctx context.Context, rep *Report) (*world, error) {
	w := &world{}
	if r.Regional != nil {
		r.Catalog = r.Regional.Catalog()
		if u, ok := r.Fleet.(interface{ UseCatalog(*catalog.Catalog) }); ok {
			u.UseCatalog(r.Catalog) // so launches record the region's prices
		}
		missing := 0.0
		if warn := r.Regional.Warning(); warn != "" {
			r.Log.Warn(warn)
			rep.Warnings = append(rep.Warnings, warn)
			missing = 1
		}
		_ = r.Metrics.Emit(metrics.OnDemandPricesMissing, missing, nil)
	}
	errs := make([]error, 4)
	took := make([]time.Duration, 3) // cluster, state, spot prices
	r.parallel(func() {
		start := r.Now()
		defer func() { took[0] = r.Now().Sub(start) }()
		w.view, errs[0] = r.Source.View(ctx)
		if errs[0] == nil {
			var warns []string
			w.pools, w.classes, warns = MergeConfig(r.NodePools, r.NodeClasses, w.view)
			rep.Warnings = append(rep.Warnings, w.view.Warnings...)
			rep.Warnings = append(rep.Warnings, warns...)
			w.resolved = r.Fleet.ResolveAll(ctx, w.classes)
		}
	}, func() {
		start := r.Now()
		defer func() { took[1] = r.Now().Sub(start) }()
		// Versions before records: a launch between the two reads shows in
		// the records and fails our commit, never the other way round.
		if w.versions, errs[1] = r.Store.Versions(ctx); errs[1] == nil {
			w.records, errs[1] = r.Store.NodeClaims(ctx)
		}
		if errs[1] == nil {
			w.unavailable, errs[1] = r.Store.Unavailable(ctx)
		}
	}, func() {
		start := r.Now()
		defer func() { took[2] = r.Now().Sub(start) }()
		if r.Spot != nil {
			if err := r.Spot.Ensure(ctx); err != nil {
				errs[2] = err
			}
		}
	})
	if errs[0] == nil {
		errs[3] = r.poolReadiness(ctx, w, rep)
	}
	r.Log.Debug("read", "cluster", took[0].String(), "state", took[1].String(), "spotPrices", took[2].String())
	if errs[2] != nil {
		rep.Warnings = append(rep.Warnings, fmt.Sprintf("spot prices: %v (planning on-demand only)", errs[2]))
	}
	if err := errors.Join(errs[0], errs[1], errs[3]); err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	w.records, w.stale = r.splitStale(w.records)
	rep.Zones = w.zones
	rep.Nodes = len(w.view.Nodes)
	return w, nil
}

// parallel runs fns through r.Parallel, else a goroutine each.
func (r *Reconciler) parallel(fns ...func()) {
	if r.Parallel != nil {
		r.Parallel(fns...)
		return
	}
	var wg sync.WaitGroup
	for _, fn := range fns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			fn()
		}()
	}
	wg.Wait()
}

func (r *Reconciler) spot(rep *Report) catalog.SpotPricer {
	if r.Spot == nil {
		return nil
	}
	for _, w := range rep.Warnings {
		if strings.HasPrefix(w, "spot prices:") {
			return nil
		}
	}
	return r.Spot
}

// Round makes one provisioning round under lease. It fails when it cannot
// read or its lease is lost; launches that fail are in the report.
func (r *Reconciler) Round(ctx context.Context, lease *state.Lease) (*Report, error) {
	if err := r.init(); err != nil {
		return nil, err
	}
	rep := &Report{}
	start := r.Now()
	w, err := r.read(ctx, rep)
	rep.Read = r.Now().Sub(start)
	if err != nil {
		return rep, err
	}
	if err := r.redrive(ctx, w, rep); err != nil {
		return rep, err
	}
	r.demoteEnded(ctx, w)
	rep.Unevaluated = Backlog(w.view.Pods, start.Add(-DefaultBatchIdle))
	r.register(ctx, w, rep)
	r.keepStatic(ctx, lease, w, rep)
	err = r.solveAndLaunch(ctx, lease, w, nil, "provisioning", rep)
	r.emitRound(ctx, w, rep)
	return rep, err
}

// Replace launches capacity for the given pods (namespace/name) of nodes
// being disrupted, through the same solve as a round, fenced by lease (the
// caller's node lease, not the provision lease: a replacement never waits
// behind a provisioning round). Offerings in avoid (the interrupted
// node's, being reclaimed) are neither planned on nor put in a fleet's
// overrides, whether or not the table still marks them unavailable. It
// returns the records it launched, and records what it did for the pods
// as a decision (kind "replacement").
func (r *Reconciler) Replace(ctx context.Context, lease *state.Lease, pods []string, reason string, avoid ...state.Offering) (*Report, error) {
	if err := r.init(); err != nil {
		return nil, err
	}
	rep := &Report{}
	start := r.Now()
	w, err := r.read(ctx, rep)
	rep.Read = r.Now().Sub(start)
	if err != nil {
		return rep, err
	}
	w.avoid = avoid
	only := map[string]bool{}
	for _, p := range pods {
		only[p] = true
	}
	err = r.solveAndLaunch(ctx, lease, w, only, reason, rep)
	r.recordReplacement(ctx, rep, reason)
	return rep, err
}

// solveAndLaunch solves and launches, and solves again without the
// offerings EC2 refused (falling back from spot to on-demand where the
// pool allows it), or for the NodeClaims a partial fleet left out, at most
// Options.MaxAttempts times; a launch that lost the launch fence (another
// launcher wrote records since the read, or a race for a limited pool)
// re-reads and solves again, at most launchConflicts times. Pods a NodeClaim in flight was launched for
// stay on it (nominate): a solve places only the others.
func (r *Reconciler) solveAndLaunch(ctx context.Context, lease *state.Lease, w *world, only map[string]bool, reason string, rep *Report) error {
	conflicts := 0
	for attempt := 0; attempt < r.Options.MaxAttempts; attempt++ {
		unavailable := state.NewUnavailableSet(w.excluded())
		prep := Prepare(Inputs{
			View: w.view, Records: w.records, NodePools: w.pools, NodeClasses: w.classes, Catalog: r.Catalog,
			Zones: w.zones, Spot: r.spot(rep), Unavailable: unavailable.Has, Only: only, Readiness: w.readiness,
			NodeOverlays: MergeOverlays(r.NodeOverlays, w.view), NodeCostRates: NodeCostRates(w.zones), PublicIPv4: PublicIPv4(w.resolved),
			Reservations: Reservations(w.resolved, w.records, r.Now()),
		})
		if attempt == 0 {
			rep.Warnings = append(rep.Warnings, prep.Warnings...)
		}
		rep.pricedBy, rep.spotBy = prep.Catalog, prep.Spot
		rep.Pending, rep.Reschedulable, rep.InFlight = prep.Pending, prep.Reschedulable, prep.InFlight
		rep.Nominated, rep.NominatedTo = nominate(&prep.Input, w.records, &r.placed)
		if len(prep.Input.Pods) == 0 {
			return nil
		}
		prep.Input.MaxInstanceTypes = r.Options.MaxInstanceTypes
		prep.Input.Budget = r.solveBudget(ctx)
		start := r.Now()
		plan, err := scheduling.Solve(prep.Input)
		rep.Solve += r.Now().Sub(start)
		rep.Solves++
		if err != nil {
			return fmt.Errorf("solve: %w", err)
		}
		rep.Plan, rep.Deferred = plan, len(plan.Deferred)
		r.placed.record(plan)
		_ = r.Metrics.Emit(metrics.SolveDuration, float64(r.Now().Sub(start).Milliseconds()), nil)
		r.karpenterSolved(r.Now().Sub(start), len(plan.Unschedulable))
		if len(plan.Deferred) > 0 || attempt == 0 {
			// Every round's first solve reports, so the gauge drops back to
			// zero once the backlog is through.
			_ = r.Metrics.Emit(metrics.PodsDeferred, float64(len(plan.Deferred)), nil)
		}
		if len(plan.Deferred) > 0 {
			r.Log.Warn("the solve's work budget left pods for the next round", "deferred", len(plan.Deferred),
				"placed", len(prep.Input.Pods)-len(plan.Deferred), "budgetSpent", plan.BudgetSpent)
		}
		r.Log.Info("plan", "pods", len(prep.Input.Pods), "nominated", rep.Nominated, "nodeClaims", len(plan.NodeClaims), "onExistingNodes", len(plan.ExistingNodes),
			"unschedulable", len(plan.Unschedulable), "deferred", len(plan.Deferred), "budgetSpent", plan.BudgetSpent,
			"pricePerHour", plan.PricePerHour, "attempt", attempt)
		if len(plan.NodeClaims) == 0 {
			r.podEvents(ctx, w, plan, nil)
			return nil
		}
		start = r.Now()
		launched, refused, short, err := r.launch(ctx, lease, w, plan, reason, rep)
		rep.Launch += r.Now().Sub(start)
		if rep.Standby != "" {
			return nil
		}
		if errors.Is(err, state.ErrConflict) {
			// Another launcher wrote records since we read (the launch
			// fence, or room in a limited pool): read the records again and
			// solve again; pods now nominated to its in-flight NodeClaims
			// stay there.
			// A lost fence is another launcher's progress, not a failure of
			// this attempt's: it does not count against MaxAttempts, only
			// against launchConflicts, and running out of those is an
			// error (nothing was launched for these pods).
			if conflicts++; conflicts == launchConflicts {
				return fmt.Errorf("lost the launch fence to other launchers %d times: %w", conflicts, err)
			}
			attempt--
			r.Log.Info("another launcher launched since the records were read: solving again", "error", err.Error(), "conflicts", conflicts)
			if err := r.readRecordsAgain(ctx, w); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		w.records = append(w.records, launched...)
		r.podEvents(ctx, w, plan, launched)
		if len(refused) == 0 && short == 0 {
			return nil
		}
		if short > 0 {
			// A partial fleet: what launched is recorded; solve again at
			// once for the pods of the NodeClaims it left out.
			r.Log.Info("EC2 launched fewer instances than asked for: solving again for the rest", "missing", short, "attempt", attempt)
		}
		rep.Refused = append(rep.Refused, refused...)
		w.unavailable = append(w.unavailable, refused...)
	}
	return nil
}

// launchConflicts bounds how often one round or replacement solves again
// after losing the launch fence: with 100 spot warnings at once, each
// replacement races the others' (and the rounds') writes.
const launchConflicts = 16

// solveBudget is a solve's work budget: Options.SolveGroups placements and
// Options.SolveTime, shortened so that the invocation keeps launchReserve
// after it. The deadline is set on the reconciler's clock (the time left in
// the context, measured on the wall clock, added to Now).
func (r *Reconciler) solveBudget(ctx context.Context) scheduling.Budget {
	dl, ok := ctx.Deadline()
	return budgetFor(r.Options, r.Now, time.Until(dl), ok)
}

// budgetFor is the budget of a solve starting at now() with left of the
// invocation remaining (when bounded).
func budgetFor(o Options, now func() time.Time, left time.Duration, bounded bool) scheduling.Budget {
	room := o.SolveTime
	if bounded {
		room = min(room, max(left-min(launchReserve, left/2), 0))
	}
	return scheduling.Budget{MaxGroups: o.SolveGroups, Deadline: now().Add(room), Now: now}
}

// excluded are the offerings no launch of this round may use: those EC2
// refused recently (the table's, and this round's) and those the caller
// avoids.
func (w *world) excluded() []state.Offering {
	return append(append([]state.Offering(nil), w.unavailable...), w.avoid...)
}

// splitStale takes the phantom launches (see launch.Phantom) out of
// records.
func (r *Reconciler) splitStale(records []*state.NodeClaim) (live, stale []*state.NodeClaim) {
	now := r.Now()
	for _, rec := range records {
		if launch.Phantom(rec, now, r.Options.RegistrationTimeout) {
			stale = append(stale, rec)
		} else {
			live = append(live, rec)
		}
	}
	return live, stale
}
