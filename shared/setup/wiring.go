package setup

import (
	"context"
	"log/slog"
	"time"

	"github.com/nodewright/nodewright/shared/disruption"
	"github.com/nodewright/nodewright/shared/interruption"
	"github.com/nodewright/nodewright/shared/orchestration"
	"github.com/nodewright/nodewright/shared/provision"
)

// Interruption builds the interruption function's dependencies over the
// shared controller.
func Interruption(ctx context.Context, o Options) (*interruption.Deps, error) {
	o.defaults()
	r, err := Controller(ctx, o)
	if err != nil {
		return nil, err
	}
	return InterruptionDeps(r), nil
}

// InterruptionDeps wires the interruption handler to what the controller
// holds: its state table, its launches (replacements), the terminator, its
// cluster view, Node writes, events, metrics and the launcher's Node
// names. The reconciler's cluster reads and the handler's share
// (interruption.SharedReads: a batch's messages read in parallel); the
// reconciler is the interruption function's own, which never batches
// pending pods (provision.Expecter and PodSource go unused).
func InterruptionDeps(r *provision.Reconciler) *interruption.Deps {
	shared := interruption.ShareReads(r.Source)
	r.Source = shared
	d := &interruption.Deps{
		Store: r.Store, Capacity: r, Terminator: r.Terminator(), Source: shared,
		NodePools: r.NodePools, NodeClasses: r.NodeClasses,
	}
	if r.Nodes != nil {
		d.Nodes = r.Nodes
	}
	if r.Events != nil {
		d.Events = r.Events
	}
	if r.Metrics != nil {
		d.Metrics = r.Metrics
	}
	if nn, ok := r.Fleet.(interruption.NodeNamer); ok {
		d.Names = nn
	}
	return d
}

// Executor wires consolidation's executor to what the controller holds:
// its state table, its launches and registrations, the terminator, its
// cluster view, Node writes, events and metrics.
func Executor(r *provision.Reconciler, now func() time.Time, log *slog.Logger) *orchestration.Executor {
	e := &orchestration.Executor{
		Store: r.Store, Capacity: r, Terminator: r.Terminator(), Source: r.Source, Events: r.Events, Claims: r, Metrics: r.Metrics,
		NodePools: r.NodePools, NodeClasses: r.NodeClasses, NodeOverlays: r.NodeOverlays, Now: now, Log: log, Validate: disruption.Validate,
		ReadyTimeout: r.RegistrationTimeout(),
	}
	if r.Nodes != nil {
		e.Nodes = r.Nodes
	}
	return e.WithDefaults()
}
