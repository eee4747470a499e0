package provision

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nodewright/nodewright/shared/pricing"
	"github.com/nodewright/nodewright/shared/state"
)

// DefaultSpotMaxAge is how old spot prices may be before a refresh.
const DefaultSpotMaxAge = time.Hour

// SpotCache keeps spot prices in the warm container and in one state-table
// item shared by invocations, so a solve never waits on a full
// DescribeSpotPriceHistory over 1,000+ types: a cold container reads the
// item; prices older than MaxAge are used while one refresh runs in the
// background (one per container at a time): it reads the item again, since
// another container may have refreshed it, and only when that is stale too
// asks EC2 and rewrites the item. Only a cluster that never had prices
// waits for EC2.
type SpotCache struct {
	Prices *pricing.EC2Prices
	Store  *state.Store
	MaxAge time.Duration
	Now    func() time.Time
	Log    *slog.Logger

	mu         sync.Mutex
	loading    chan struct{} // closed when the cold container's table read ended
	lastRead   time.Time     // when the table item was last read
	refreshing bool
	done       chan struct{}
}

// SpotPrice implements catalog.SpotPricer.
func (c *SpotCache) SpotPrice(instanceType, zone string) (float64, bool) {
	return c.Prices.SpotPrice(instanceType, zone)
}

func (c *SpotCache) maxAge() time.Duration {
	if c.MaxAge <= 0 {
		return DefaultSpotMaxAge
	}
	return c.MaxAge
}

// Ensure implements SpotPrices.
func (c *SpotCache) Ensure(ctx context.Context) error {
	c.mu.Lock()
	if c.loading == nil {
		loading := make(chan struct{})
		c.loading = loading
		c.mu.Unlock()
		data, at, err := c.Store.GetBlob(ctx, state.KeySpotPrices)
		switch {
		case err == nil:
			c.Prices.Import(data, at)
		case !errors.Is(err, state.ErrNotFound):
			c.Log.Warn("read cached spot prices", "error", err)
		}
		c.mu.Lock()
		c.lastRead = c.Now()
		close(loading)
	} else if loading := c.loading; !isClosed(loading) {
		// A concurrent round is reading the table: wait for that read (one
		// item), not for EC2.
		c.mu.Unlock()
		select {
		case <-loading:
		case <-ctx.Done():
			return ctx.Err()
		}
		c.mu.Lock()
	}
	have := c.Prices.Len() > 0
	if have && c.Now().Sub(c.Prices.UpdatedAt()) < c.maxAge() {
		c.mu.Unlock()
		return nil
	}
	if !c.refreshing {
		c.refreshing = true
		c.done = make(chan struct{})
		// Read the table again first unless it was read since these
		// prices went stale (a cold container that found the item stale).
		checkTable := c.lastRead.Before(c.Prices.UpdatedAt().Add(c.maxAge()))
		go c.refresh(checkTable)
	}
	done := c.done
	c.mu.Unlock()
	if have {
		return nil // stale prices now, fresh ones for a later round
	}
	select {
	case <-done:
	case <-ctx.Done():
		return ctx.Err()
	}
	if c.Prices.Len() == 0 {
		return fmt.Errorf("no spot prices: the refresh from EC2 failed")
	}
	return nil
}

// Wait blocks until a refresh in progress ends (or ctx does): a handler
// calls it before it returns, so a frozen container does not hold a
// half-done refresh.
func (c *SpotCache) Wait(ctx context.Context) {
	c.mu.Lock()
	done, running := c.done, c.refreshing
	c.mu.Unlock()
	if !running {
		return
	}
	select {
	case <-done:
	case <-ctx.Done():
	}
}

func (c *SpotCache) refresh(checkTable bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	defer func() {
		c.mu.Lock()
		c.refreshing = false
		close(c.done)
		c.mu.Unlock()
	}()
	if checkTable {
		data, at, err := c.Store.GetBlob(ctx, state.KeySpotPrices)
		c.mu.Lock()
		c.lastRead = c.Now()
		c.mu.Unlock()
		if err == nil && c.Now().Sub(at) < c.maxAge() && at.After(c.Prices.UpdatedAt()) {
			c.Prices.Import(data, at)
			c.Log.Info("spot prices taken from the state table (refreshed by another container)", "prices", c.Prices.Len(), "age", c.Now().Sub(at).String())
			return
		}
	}
	start := time.Now()
	err := c.Prices.Refresh(ctx)
	if err == nil {
		if perr := c.Store.PutBlob(ctx, state.KeySpotPrices, c.Prices.Export()); perr != nil {
			c.Log.Warn("store spot prices", "error", perr)
		}
		c.Log.Info("spot prices refreshed", "prices", c.Prices.Len(), "took", time.Since(start).String())
	} else {
		c.Log.Warn("refresh spot prices", "error", err)
	}
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}
