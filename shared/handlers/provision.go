package handlers

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/nodewright/nodewright/shared/logging"
	"github.com/nodewright/nodewright/shared/provision"
	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/shared/trigger"
)

// askSweep is what a schedule trigger turned away asks of the lease's
// holder: the sweep it would have run.
const askSweep = "sweep"

// Provision handling defaults.
const (
	// DefaultLeaseTTL is the provision lease's lifetime; the holder renews
	// it every third of that, so an invocation that dies frees the cluster
	// within it.
	DefaultLeaseTTL = 30 * time.Second
	// finishMargin is the time left before the function's deadline below
	// which no new round starts.
	finishMargin = 20 * time.Second
	// maxDeferredRounds bounds the rounds one invocation runs for pods a
	// solve's budget deferred (each round launches what it placed, so the
	// next one starts further on).
	maxDeferredRounds = 10
	// maxFollowRounds bounds the rounds one invocation runs after a round
	// that launched: a scale-out's pods keep arriving while a round
	// settles, solves and launches, and the webhook coalesces its hints
	// over 10 s, so the holder looks again at once (the in-flight
	// NodeClaims count as capacity: pods already covered launch nothing)
	// until a round launches nothing.
	maxFollowRounds = 20
)

// Provision handles every trigger of the provision function: the schedule
// sweep, audit-log batches and webhook hints all lead to the same
// reconcile, since a trigger is only a hint and the rounds read the truth.
type Provision struct {
	Env Env
	Log *slog.Logger
	// Setup builds the reconciler on the first invocation; the warm
	// container keeps it (its cluster cache, spot prices, clients). An
	// error is returned to Lambda and the next invocation tries again.
	Setup func(ctx context.Context) (*provision.Reconciler, error)
	// Batch windows (0: provision's defaults) and the lease's lifetime.
	BatchIdle, BatchMax time.Duration
	LeaseTTL            time.Duration
	// AfterRound, when set, sees every round's report (tests, `make run`).
	AfterRound func(*provision.Report, *provision.SweepReport)

	mu  sync.Mutex
	rec *provision.Reconciler
}

func (h *Provision) reconciler(ctx context.Context) (*provision.Reconciler, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.rec != nil {
		return h.rec, nil
	}
	if h.Setup == nil {
		return nil, errors.New("provision handler: no Setup")
	}
	r, err := h.Setup(ctx)
	if err != nil {
		return nil, fmt.Errorf("set up: %w", err)
	}
	h.rec = r
	return r, nil
}

// Handle decodes the trigger and reconciles. A payload that is none of
// the known triggers is an error (counted in the function's Errors metric;
// no launch follows). A trigger that arrives while another invocation holds
// the provision lease marks the lease "run again" and returns: the holder
// runs another round before it lets go, so no trigger is lost.
func (h *Provision) Handle(ctx context.Context, raw json.RawMessage) (err error) {
	defer recovered(h.Log, &err)
	p, err := trigger.DecodeProvision(raw)
	if err != nil {
		h.Log.Error("unreadable provision trigger", "error", logging.Err(err), "bytes", len(raw))
		return err
	}
	if p.Control {
		h.Log.Info("audit log subscription control message")
		return nil
	}
	if p.Cluster != "" && p.Cluster != h.Env.Cluster {
		h.Log.Warn("provision hint for another cluster: ignored", "hintCluster", logging.Quote(p.Cluster), "cluster", h.Env.Cluster)
		return nil
	}
	log := h.Log.With("requestId", requestID(ctx), "source", p.Source)
	log.Info("provision trigger", "time", p.Time, "pods", len(p.Pods), "skippedAuditEvents", p.Skipped, "configHash", h.Env.ConfigHash)
	r, err := h.reconciler(ctx)
	if err != nil {
		log.Error("provision set-up failed", "error", err)
		return err
	}
	ttl := h.LeaseTTL
	if ttl <= 0 {
		ttl = DefaultLeaseTTL
	}
	var asks []string
	if p.Source == trigger.SourceSchedule {
		asks = append(asks, askSweep)
	}
	lease, err := r.Store.Acquire(ctx, state.LeaseProvision, requestID(ctx), ttl, asks...)
	if errors.Is(err, state.ErrHeld) {
		log.Info("a provisioning round is in progress: asked it to run again")
		return nil
	}
	if err != nil {
		log.Error("acquire the provision lease", "error", err)
		return err
	}
	rctx, stop := renewing(ctx, r.Store, lease, ttl, log)
	defer stop()
	r.Expect(p.Pods) // the first round's reads end once the named pods are in
	err = h.rounds(rctx, r, lease, p.Source == trigger.SourceSchedule, log)
	if sc, ok := r.Spot.(*provision.SpotCache); ok {
		// A price refresh begun in this invocation ends before the
		// container freezes, so its result reaches the table.
		sc.Wait(ctx)
	}
	if rg, ok := r.Regional.(interface{ Wait(context.Context) }); ok {
		rg.Wait(ctx) // likewise the region figures' refresh the sweep began
	}
	return err
}

// rounds runs rounds until the lease is released with no request for
// another, sweeping once when the trigger was the schedule.
func (h *Provision) rounds(ctx context.Context, r *provision.Reconciler, lease *state.Lease, sweep bool, log *slog.Logger) error {
	var failed error // the last round's failure: the invocation's error
	backlog := -1    // the last round's Unevaluated (-1: none yet)
	for round := 1; ; round++ {
		batch, err := r.Settle(ctx, h.BatchIdle, h.BatchMax)
		if err != nil {
			log.Error("wait for pending pods to settle", "error", err)
			return err
		}
		rep, err := r.Round(ctx, lease)
		if round == 1 {
			r.Expect(nil) // later rounds look for pods no trigger named: to the barrier
		}
		if rep != nil {
			rep.Batch = batch
			log.Info("round", "round", round, "batchWait", batch.Waited.String(), "batchLooks", batch.Looks, "batchLooking", batch.Looking.String(), "pending", rep.Pending, "reschedulable", rep.Reschedulable,
				"inFlight", rep.InFlight, "unevaluated", rep.Unevaluated, "solves", rep.Solves, "launched", len(rep.Launched()), "failed", len(rep.Failed()),
				"recovered", len(rep.Recovered), "registered", len(rep.Registered), "read", rep.Read.String(), "solve", rep.Solve.String(),
				"launch", rep.Launch.String(), "deferred", rep.Deferred, "warnings", len(rep.Warnings))
		}
		failed = err
		if err != nil {
			log.Error("round failed", "round", round, "error", err)
			if errors.Is(err, state.ErrLeaseLost) {
				return err
			}
		}
		var srep *provision.SweepReport
		if sweep {
			sweep = false
			if srep, err = r.Sweep(ctx); err != nil {
				log.Error("sweep failed", "error", err)
			} else {
				log.Info("sweep", "terminated", len(srep.Terminated), "recordsRemoved", len(srep.RecordsRemoved),
					"nodesDeleted", len(srep.NodesDeleted), "retired", len(srep.Retired), "draining", len(srep.Draining))
			}
		}
		if h.AfterRound != nil {
			h.AfterRound(rep, srep)
		}
		if rep != nil && rep.Deferred > 0 && round < maxDeferredRounds && !ending(ctx) {
			// The solve's budget left pods: keep the lease and take them.
			log.Info("the solve's budget left pods for another round: running again", "deferred", rep.Deferred)
			continue
		}
		if err == nil && rep != nil && len(rep.Launched()) > 0 && round < maxFollowRounds && !ending(ctx) {
			// Pods may have arrived since this round read the cluster.
			log.Debug("launched: looking again for pods that arrived meanwhile")
			backlog = rep.Unevaluated
			continue
		}
		if err == nil && rep != nil && rep.Unevaluated > 0 && (backlog < 0 || rep.Unevaluated < backlog) && round < maxFollowRounds && !ending(ctx) {
			// kube-scheduler is still working through a burst: its marks
			// would reach a hint gate that holds the next hint for its
			// window, so the holder looks again while the backlog shrinks
			// (a backlog that does not, pods of another scheduler, ends it).
			log.Info("kube-scheduler has not evaluated every pending pod yet: looking again", "unevaluated", rep.Unevaluated)
			backlog = rep.Unevaluated
			continue
		}
		rerun, err := r.Store.Release(ctx, lease)
		if err != nil {
			log.Error("release the provision lease", "error", err)
			return err
		}
		if !rerun {
			return failed
		}
		if slices.Contains(lease.Asks, askSweep) {
			sweep = true // a schedule trigger came during the round: its sweep is ours to run
		}
		if ending(ctx) {
			// No time for another round: let go; the next trigger or the
			// sweep within a minute picks the work up.
			if _, err := r.Store.Release(ctx, lease); err != nil {
				return err
			}
			log.Warn("another round was asked for but the invocation is ending: released")
			return failed
		}
		log.Info("another trigger arrived during the round: running again")
	}
}

// ending says whether the invocation is too close to its deadline to start
// another round.
func ending(ctx context.Context) bool {
	dl, ok := ctx.Deadline()
	return ok && time.Until(dl) < finishMargin
}

// renewing renews the lease every third of ttl until stop; if it is lost,
// the returned context is cancelled so the round stops acting.
func renewing(ctx context.Context, st *state.Store, lease *state.Lease, ttl time.Duration, log *slog.Logger) (context.Context, func()) {
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(ttl / 3)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-rctx.Done():
				return
			case <-t.C:
				if err := st.Renew(rctx, lease, ttl); err != nil {
					log.Error("renew the provision lease", "error", err)
					if errors.Is(err, state.ErrLeaseLost) {
						cancel()
						return
					}
				}
			}
		}
	}()
	return rctx, func() {
		close(done)
		wg.Wait()
		cancel()
	}
}

// requestID is the Lambda request ID, or a random ID outside Lambda.
func requestID(ctx context.Context) string {
	if lc, ok := lambdacontext.FromContext(ctx); ok && lc.AwsRequestID != "" {
		return lc.AwsRequestID
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return "local-" + hex.EncodeToString(b)
}
