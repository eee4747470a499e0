package pricing

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/nodewright/nodewright/shared/catalog"
)

// Refresh periods of Regional.
const (
	// DefaultFiguresMaxAge is how old a region's figures may be before a
	// refresh reads AWS again: the Pricing API's prices change rarely, and
	// it is read at most daily.
	DefaultFiguresMaxAge = 24 * time.Hour
	// DefaultFiguresReread is how often a warm container reads the state
	// table's item again (another container may have refreshed it).
	DefaultFiguresReread = time.Hour
)

// FiguresStore keeps a region's encoded figures (the state table).
type FiguresStore interface {
	// RegionFigures returns what PutRegionFigures stored, or nil data and
	// no error when nothing is.
	RegionFigures(ctx context.Context, region string) ([]byte, error)
	PutRegionFigures(ctx context.Context, region string, data []byte) error
}

// Regional keeps a region's catalog for the functions: priced and placed
// with the figures the state table holds, and refreshed from AWS at most
// every MaxAge in the background, so that a solve never waits on the
// Pricing API or EC2. Catalog and Choice answer at once; Load reads the
// table (a cold start); Refresh starts a refresh unless one runs; Wait
// waits for it (before an invocation ends). Safe for concurrent use.
type Regional struct {
	Region string
	Base   *catalog.Catalog
	Store  FiguresStore
	// Pricing and Offerings read AWS (nil: that part is never read).
	Pricing   PricingAPI
	Offerings OfferingsAPI
	MaxAge    time.Duration // 0: DefaultFiguresMaxAge
	Reread    time.Duration // 0: DefaultFiguresReread
	Now       func() time.Time
	Log       *slog.Logger
	// Go runs a refresh (nil: in a goroutine of its own). The fault suite
	// runs it in the caller, so that a seed replays exactly.
	Go func(fn func())

	mu         sync.Mutex
	figures    *Figures // as last read from the table or AWS
	choice     Choice
	cat        *catalog.Catalog
	lastRead   time.Time // when the table was last read
	lastAWS    time.Time // when AWS was last asked
	refreshing bool
	done       chan struct{}
}

func (r *Regional) now() time.Time {
	if r.Now == nil {
		return time.Now()
	}
	return r.Now()
}

func (r *Regional) log() *slog.Logger {
	if r.Log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return r.Log
}

// Catalog is the region's catalog as the held figures make it (the
// shipped figures before any were read). It never blocks on I/O.
func (r *Regional) Catalog() *catalog.Catalog {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.applyLocked()
	return r.cat
}

// Choice says where the catalog's figures come from.
func (r *Regional) Choice() Choice {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.applyLocked()
	return r.choice
}

// applyLocked builds the catalog on first use.
func (r *Regional) applyLocked() {
	if r.cat == nil {
		r.choice = Choose(r.Region, r.figures)
		r.cat = r.choice.Catalog(r.Base)
	}
}

// Warning is what a plan says of the held figures ("" when they are the
// region's own).
func (r *Regional) Warning() string { return r.Choice().Warning() }

// set replaces the held figures (and the catalog made of them).
func (r *Regional) set(f *Figures) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.figures = f
	r.choice = Choose(r.Region, f)
	r.cat = r.choice.Catalog(r.Base)
}

// Load reads the region's figures from the table; on error (or when there
// are none) the held figures stay.
func (r *Regional) Load(ctx context.Context) error {
	f, err := r.readTable(ctx)
	if err != nil {
		return err
	}
	if f != nil {
		r.set(f)
	}
	return nil
}

func (r *Regional) readTable(ctx context.Context) (*Figures, error) {
	data, err := r.Store.RegionFigures(ctx, r.Region)
	r.mu.Lock()
	r.lastRead = r.now()
	r.mu.Unlock()
	if err != nil || data == nil {
		return nil, err
	}
	return DecodeFigures(data)
}

// Due says what a refresh would do now: read the table again (it was read
// longer than Reread ago), and read AWS (the held figures are missing or
// older than MaxAge).
func (r *Regional) Due() (table, aws bool) {
	maxAge, reread := r.MaxAge, r.Reread
	if maxAge <= 0 {
		maxAge = DefaultFiguresMaxAge
	}
	if reread <= 0 {
		reread = DefaultFiguresReread
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	// After a failed read, AWS is asked again only after reread.
	asked := !r.lastAWS.IsZero() && now.Sub(r.lastAWS) < reread
	return now.Sub(r.lastRead) >= reread, !asked && stale(r.figures, r.Pricing != nil, r.Offerings != nil, now, maxAge)
}

// stale says whether figures lack a part that can be read, or hold one
// older than maxAge.
func stale(f *Figures, prices, zones bool, now time.Time, maxAge time.Duration) bool {
	if f == nil {
		return prices || zones
	}
	return (prices && (f.OnDemand == nil || now.Sub(f.PricesRead) >= maxAge)) ||
		(zones && (f.Zones == nil || now.Sub(f.ZonesRead) >= maxAge))
}

// Refresh starts, in the background, what Due says is due, unless a
// refresh runs: read the table again, and when its figures are stale too,
// read AWS and write the table. It returns at once; errors are logged and
// the held figures stay.
func (r *Regional) Refresh(ctx context.Context) {
	table, aws := r.Due()
	if !table && !aws {
		return
	}
	r.mu.Lock()
	if r.refreshing {
		r.mu.Unlock()
		return
	}
	r.refreshing = true
	r.done = make(chan struct{})
	r.mu.Unlock()
	fn := func() { r.refresh(context.WithoutCancel(ctx), table || aws, aws) }
	if r.Go != nil {
		r.Go(fn)
		return
	}
	go fn()
}

// Wait blocks until a refresh in progress ends, or ctx does.
func (r *Regional) Wait(ctx context.Context) {
	r.mu.Lock()
	done, running := r.done, r.refreshing
	r.mu.Unlock()
	if !running {
		return
	}
	select {
	case <-done:
	case <-ctx.Done():
	}
}

func (r *Regional) refresh(ctx context.Context, readTable, readAWS bool) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			r.log().Error("refresh region figures: panic", "region", r.Region, "panic", p)
		}
		r.mu.Lock()
		r.refreshing = false
		close(r.done)
		r.mu.Unlock()
	}()
	log := r.log().With("region", r.Region)
	if readTable {
		f, err := r.readTable(ctx)
		switch {
		case err != nil:
			log.Warn("read cached region figures", "error", err)
		case f != nil:
			r.set(f)
		}
		// Another container may have refreshed the item: read AWS only
		// when the table's figures are stale too.
		_, readAWS = r.Due()
	}
	if !readAWS {
		return
	}
	start := time.Now()
	r.mu.Lock()
	r.lastAWS = r.now()
	r.mu.Unlock()
	read, err := Read(ctx, r.Pricing, r.Offerings, r.Region, r.now)
	if err != nil {
		log.Warn("read region figures from AWS", "error", err)
	}
	if read.OnDemand == nil && read.Zones == nil {
		return
	}
	r.mu.Lock()
	merged := r.figures.Merge(read)
	r.mu.Unlock()
	data, err := merged.Encode()
	if err == nil {
		err = r.Store.PutRegionFigures(ctx, r.Region, data)
	}
	if err != nil {
		log.Warn("store region figures", "error", err)
	}
	r.set(merged)
	log.Info("region figures refreshed", "prices", len(merged.OnDemand), "types placed", len(merged.Zones), "took", time.Since(start).String())
}
