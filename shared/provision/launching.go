package provision

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/launch"
	"github.com/nodewright/nodewright/shared/scheduling"
	"github.com/nodewright/nodewright/shared/state"
)

// launcher is the launch path this reconciler's rounds, replacements and
// re-drives go through (shared/launch), on the reconciler's dependencies.
func (r *Reconciler) launcher() *launch.Launcher {
	return &launch.Launcher{
		Cluster: r.Cluster, Store: r.Store, Fleet: r.Fleet, Catalog: r.Catalog, Spot: r.Spot, Metrics: r.Metrics,
		Log: r.Log, Now: r.Now, Names: r.Names, Nonce: r.Nonce, Parallelism: r.Options.Parallelism,
		Timeout: r.Options.RegistrationTimeout, RedriveAfter: r.Options.RedriveAfter,
		OnLaunched: r.launchedEvent, AfterCreateFleet: r.AfterCreateFleet, Wait: r.sleep, Jitter: r.jitter, Parallel: r.Parallel,
	}
}

// launch launches a plan through shared/launch, fenced by lease and by
// the launch versions the world read before its records. It returns the
// records now launched, the offerings EC2 refused and how many NodeClaims
// partial fleets left out; state.ErrConflict when another launcher wrote
// records since they were read (nothing was launched).
func (r *Reconciler) launch(ctx context.Context, lease *state.Lease, w *world, plan *scheduling.Result, reason string, rep *Report) ([]*state.NodeClaim, []state.Offering, int, error) {
	if c := w.view.Karpenter; c != nil {
		r.standBy(ctx, w, plan, reason, rep, c)
		return nil, nil, 0, nil
	}
	versions := limitedVersions(w.pools, w.versions)
	res, err := r.launcher().Launch(ctx, lease, launch.Input{
		Plan: plan, Reason: reason, Pools: w.pools, Classes: w.classes, Records: w.records, Versions: &versions, Exclude: w.excluded(),
	})
	rep.Launches = append(rep.Launches, res.Launches...)
	r.capacityEvents(ctx, res.Launches)
	if err != nil {
		return nil, nil, 0, err
	}
	w.versions.Cluster = versions.Cluster
	for p, v := range versions.Pools {
		w.versions.Pools[p] = v
	}
	return res.Launched, res.Refused, res.Short, nil
}

// redrive re-drives the launches a dead invocation left (launch.Redrive)
// and takes the records it removed out of the world.
func (r *Reconciler) redrive(ctx context.Context, w *world, rep *Report) error {
	recovered, removed, err := r.launcher().Redrive(ctx, w.records, w.stale, w.classes)
	if err != nil {
		return err
	}
	rep.Recovered = append(rep.Recovered, recovered...)
	w.stale = nil
	if len(removed) > 0 {
		kept := w.records[:0]
		for _, rec := range w.records {
			if !removed[rec.Name] {
				kept = append(kept, rec)
			}
		}
		w.records = kept
	}
	return nil
}

// launchedEvent tells Kubernetes that a NodeClaim launched.
func (r *Reconciler) launchedEvent(ctx context.Context, rec *state.NodeClaim) {
	r.Events.Event(ctx, r.nodeClaimRef(ctx, rec), corev1.EventTypeNormal, string(EventLaunched),
		fmt.Sprintf("Launched NodeClaim %s (%s, %s, %s, $%.4f/h) as instance %s for %d pods of NodePool %s",
			rec.Name, rec.InstanceType, rec.CapacityType, rec.Zone, rec.PricePerHour, rec.InstanceID, len(rec.Claim.Pods), rec.NodePool))
}

// capacityEvents records, on each NodeClaim whose launch EC2 refused for
// want of capacity, Karpenter's InsufficientCapacityError. Its record is
// gone (the round solves again under new names) and it never had an
// object, so the event names it without a UID.
func (r *Reconciler) capacityEvents(ctx context.Context, launches []launch.Launch) {
	for _, l := range launches {
		if l.InsufficientCapacity {
			r.Events.Event(ctx, NodeClaimRef(l.NodeClaim), corev1.EventTypeWarning, string(EventInsufficientCapacityError),
				fmt.Sprintf("NodeClaim %s of NodePool %s could not launch: EC2 has no capacity for its offerings (%s); the round solves again without them",
					l.NodeClaim, l.Claim.NodePool, l.Error))
		}
	}
}

// LaunchClaims launches planned NodeClaims as they are (a consolidation's
// replacements, whose options the decision already limited), fenced by
// lease and the launch fence, through the same records and fleets as a
// round. When another launcher's records were written since they were
// read, it reads them again and launches the claims again, unless one of
// their pods is now on another launch's in-flight NodeClaim (ErrConflict:
// the caller decides again). It returns the report and the records
// launched; offerings EC2 refused are marked and the claims that failed
// are not retried (the caller decides again).
func (r *Reconciler) LaunchClaims(ctx context.Context, lease *state.Lease, claims []scheduling.NodeClaim, reason string) (*Report, []*state.NodeClaim, error) {
	if err := r.init(); err != nil {
		return nil, nil, err
	}
	rep := &Report{}
	w, err := r.read(ctx, rep)
	if err != nil {
		return rep, nil, err
	}
	plan := &scheduling.Result{NodeClaims: claims}
	rep.Plan = plan
	start := r.Now()
	defer func() { rep.Launch = r.Now().Sub(start) }()
	for attempt := 1; ; attempt++ {
		launched, _, _, err := r.launch(ctx, lease, w, plan, reason, rep)
		if !errors.Is(err, state.ErrConflict) || attempt == r.Options.MaxAttempts {
			return rep, launched, err
		}
		if err := r.readRecordsAgain(ctx, w); err != nil {
			return rep, nil, err
		}
		if pod, nc := takenPod(claims, w.records); pod != "" {
			return rep, nil, fmt.Errorf("pod %s is on NodeClaim %s launched meanwhile: %w", pod, nc, state.ErrConflict)
		}
		r.Log.Info("another launcher launched since the records were read: launching the claims again", "attempt", attempt)
	}
}

// readRecordsAgain reads the launch versions and the live records into w
// after a launch lost the fence: versions first, as read does, so that a
// launch between the two reads shows in the records and fails the next
// commit.
func (r *Reconciler) readRecordsAgain(ctx context.Context, w *world) error {
	v, err := r.Store.Versions(ctx)
	if err != nil {
		return fmt.Errorf("read state again: %w", err)
	}
	recs, err := r.Store.NodeClaims(ctx)
	if err != nil {
		return fmt.Errorf("read state again: %w", err)
	}
	w.versions = v
	w.records, _ = r.splitStale(recs)
	return nil
}

// takenPod names a pod of claims that an in-flight NodeClaim of records
// was launched for, and that NodeClaim ("": none).
func takenPod(claims []scheduling.NodeClaim, records []*state.NodeClaim) (string, string) {
	on := map[string]string{}
	for _, rec := range records {
		if rec.Phase.InFlight() {
			for _, p := range rec.Claim.Pods {
				on[p] = rec.Name
			}
		}
	}
	for _, c := range claims {
		for _, p := range c.Pods {
			if nc, ok := on[p]; ok {
				return p, nc
			}
		}
	}
	return "", ""
}

// limitedVersions returns the cluster's launch version and those of the
// pools with limits.
func limitedVersions(pools []*apis.NodePool, versions state.Versions) state.Versions {
	out := state.Versions{Cluster: versions.Cluster, Pools: map[string]int64{}}
	for _, p := range pools {
		if len(p.Spec.Limits) > 0 {
			out.Pools[p.Name] = versions.Pools[p.Name]
		}
	}
	return out
}
