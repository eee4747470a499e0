package provision

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"

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
		OnLaunched: r.launchedEvent, AfterCreateFleet: r.AfterCreateFleet, Wait: r.sleep, Jitter: r.jitter,
	}
}

// launch launches a plan through shared/launch, fenced by lease and by
// the launch versions the world read before its records. It returns the
// records now launched, the offerings EC2 refused and how many NodeClaims
// partial fleets left out; state.ErrConflict when another launcher wrote
// records since they were read (nothing was launched).
func (r *Reconciler) launch(ctx context.Context, lease *state.Lease, w *world, plan *scheduling.Result, reason string, rep *Report) ([]*state.NodeClaim, []state.Offering, int, error) {
	versions := limitedVersions(w.pools, w.versions)
	res, err := r.launcher().Launch(ctx, lease, launch.Input{
		Plan: plan, Reason: reason, Pools: w.pools, Classes: w.classes, Records: w.records, Versions: &versions, Exclude: w.excluded(),
	})
	rep.Launches = append(rep.Launches, res.Launches...)
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
	r.Events.Event(ctx, NodeClaimRef(rec.Name), corev1.EventTypeNormal, "Launched",
		fmt.Sprintf("Launched NodeClaim %s (%s, %s, %s, $%.4f/h) as instance %s for %d pods of NodePool %s",
			rec.Name, rec.InstanceType, rec.CapacityType, rec.Zone, rec.PricePerHour, rec.InstanceID, len(rec.Claim.Pods), rec.NodePool))
}
