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
// background and rewrites the item. Only a cluster that never had prices
// waits for EC2.
type SpotCache struct {
	Prices *pricing.EC2Prices
	Store  *state.Store
	MaxAge time.Duration
	Now    func() time.Time
	Log    *slog.Logger

	mu         sync.Mutex
	loaded     bool
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
	if !c.loaded {
		c.loaded = true
		c.mu.Unlock()
		data, at, err := c.Store.GetBlob(ctx, state.KeySpotPrices)
		switch {
		case err == nil:
			c.Prices.Import(data, at)
		case !errors.Is(err, state.ErrNotFound):
			c.Log.Warn("read cached spot prices", "error", err)
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
		go c.refresh()
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

func (c *SpotCache) refresh() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
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
	c.mu.Lock()
	c.refreshing = false
	close(c.done)
	c.mu.Unlock()
}
