package handlers

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"

	"github.com/nodewright/nodewright/shared/logging"
	"github.com/nodewright/nodewright/shared/orchestration"
	"github.com/nodewright/nodewright/shared/trigger"
)

// Consolidation handles the consolidation schedule.
type Consolidation struct {
	Env Env
	Log *slog.Logger
	// Setup builds the run on the first invocation (kept warm); Holder is
	// set per invocation.
	Setup func(ctx context.Context) (*orchestration.Run, error)
	// AfterTick, when set, sees every tick's report (tests, `make run`).
	AfterTick func(*orchestration.TickReport)

	mu  sync.Mutex
	run *orchestration.Run
}

// Handle decodes the scheduled event and makes one consolidation tick.
func (h *Consolidation) Handle(ctx context.Context, raw json.RawMessage) (err error) {
	defer recovered(h.Log, &err)
	t, err := trigger.DecodeSchedule(raw)
	if err != nil {
		h.Log.Error("unreadable consolidation trigger", "error", logging.Err(err), "bytes", len(raw))
		return err
	}
	log := h.Log.With("requestId", requestID(ctx))
	log.Info("consolidation trigger", "time", t, "cluster", h.Env.Cluster, "configHash", h.Env.ConfigHash)
	h.mu.Lock()
	if h.run == nil {
		if h.Setup == nil {
			h.mu.Unlock()
			return errNoSetup
		}
		r, serr := h.Setup(ctx)
		if serr != nil {
			h.mu.Unlock()
			log.Error("consolidation set-up failed", "error", serr)
			return serr
		}
		h.run = r
	}
	run := *h.run
	h.mu.Unlock()
	run.Holder = requestID(ctx)
	rep, err := run.Tick(ctx)
	if h.AfterTick != nil && rep != nil {
		h.AfterTick(rep)
	}
	if err != nil {
		log.Error("consolidation tick failed", "error", err)
		return err
	}
	started := ""
	if rep.Started != nil {
		started = rep.Started.ID
	}
	log.Info("consolidation tick", "candidates", rep.Candidates, "resumed", len(rep.Resumed), "started", started, "finished", len(rep.Finished))
	return nil
}
