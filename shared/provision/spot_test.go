package provision

import (
	"context"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/nodewright/nodewright/shared/pricing"
	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/shared/state/statetest"
)

// fakeSpotAPI answers DescribeSpotPriceHistory with one price, counting
// calls; gate, when set, holds each call until it is closed; fail makes
// calls fail.
type fakeSpotAPI struct {
	mu    sync.Mutex
	calls int
	price float64
	gate  chan struct{}
	fail  bool
}

func (f *fakeSpotAPI) DescribeSpotPriceHistory(ctx context.Context, _ *ec2.DescribeSpotPriceHistoryInput, _ ...func(*ec2.Options)) (*ec2.DescribeSpotPriceHistoryOutput, error) {
	f.mu.Lock()
	f.calls++
	gate, price, fail := f.gate, f.price, f.fail
	f.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if fail {
		return nil, errors.New("ec2 unavailable")
	}
	return &ec2.DescribeSpotPriceHistoryOutput{SpotPriceHistory: []ec2types.SpotPrice{{
		InstanceType: "m6g.large", AvailabilityZone: aws.String("us-east-1a"),
		SpotPrice: aws.String(strconv.FormatFloat(price, 'f', 4, 64)), Timestamp: aws.Time(t0),
	}}}, nil
}

func (f *fakeSpotAPI) Calls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// spotCache is a cold container's cache on a shared table.
func spotCache(t *testing.T, clock *testingclock.FakeClock, store *state.Store, api *fakeSpotAPI) *SpotCache {
	t.Helper()
	return &SpotCache{Prices: pricing.NewEC2Prices(api, clock.Now), Store: store, Now: clock.Now, Log: slog.New(slog.DiscardHandler)}
}

// storeItem writes the shared price item as a container that refreshed at
// at would have.
func storeItem(t *testing.T, db *statetest.DB, at time.Time, price float64) {
	t.Helper()
	st, err := state.New(db, "nodewright-state", "test-cluster", func() time.Time { return at })
	if err != nil {
		t.Fatal(err)
	}
	if err := st.PutBlob(context.Background(), state.KeySpotPrices, []byte("m6g.large us-east-1a "+strconv.FormatFloat(price, 'f', -1, 64))); err != nil {
		t.Fatal(err)
	}
}

func priceOf(t *testing.T, c *SpotCache) float64 {
	t.Helper()
	p, ok := c.SpotPrice("m6g.large", "us-east-1a")
	if !ok {
		t.Fatal("no price for m6g.large in us-east-1a")
	}
	return p
}

// A cold container takes the table's item when it is fresh: no EC2 call;
// the warm container then answers from memory (no more reads) until the
// prices are an hour old.
func TestSpotCacheColdContainerReadsTheTableItem(t *testing.T) {
	clock := testingclock.NewFakeClock(t0.Add(10 * time.Minute))
	store, db := testStore(t, clock)
	storeItem(t, db, t0, 0.03)
	api := &fakeSpotAPI{price: 0.05}
	c := spotCache(t, clock, store, api)
	ctx := context.Background()
	for range 3 {
		if err := c.Ensure(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if p := priceOf(t, c); p != 0.03 || api.Calls() != 0 || db.Calls("GetItem") != 1 {
		t.Errorf("price %v, %d EC2 calls, %d table reads: want the item's 0.03, no EC2 call, one read", p, api.Calls(), db.Calls("GetItem"))
	}
	clock.Step(49 * time.Minute) // 59 minutes old
	if err := c.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	c.Wait(ctx)
	if api.Calls() != 0 || db.Calls("GetItem") != 1 {
		t.Errorf("within the hour: %d EC2 calls, %d table reads, want none more", api.Calls(), db.Calls("GetItem"))
	}
}

// A cluster that never had prices is the one case that waits for EC2; the
// result is written to the table for every other container.
func TestSpotCacheFirstPricesWaitForEC2(t *testing.T) {
	clock := testingclock.NewFakeClock(t0)
	store, db := testStore(t, clock)
	api := &fakeSpotAPI{price: 0.04}
	c := spotCache(t, clock, store, api)
	if err := c.Ensure(context.Background()); err != nil {
		t.Fatal(err)
	}
	if p := priceOf(t, c); p != 0.04 || api.Calls() != 1 {
		t.Errorf("price %v after %d EC2 calls, want 0.04 after one", p, api.Calls())
	}
	data, at, err := store.GetBlob(context.Background(), state.KeySpotPrices)
	if err != nil || string(data) != "m6g.large us-east-1a 0.04" || !at.Equal(t0) {
		t.Errorf("table item %q at %v (%v), want the refreshed prices at %v", data, at, err, t0)
	}
	// EC2 failing with nothing to fall back on: an error (the round plans
	// on-demand only and says so).
	empty, _ := testStore(t, clock)
	bad := spotCache(t, clock, empty, &fakeSpotAPI{fail: true})
	if err := bad.Ensure(context.Background()); err == nil {
		t.Error("no prices anywhere and EC2 failing: no error")
	}
	if db.Calls("PutItem") != 1 {
		t.Errorf("%d table writes, want the one item", db.Calls("PutItem"))
	}
}

// Prices over an hour old are used at once while one refresh runs in the
// background: Ensure never waits for it, concurrent rounds start no second
// refresh, and the refresh rewrites the item.
func TestSpotCacheStalePricesRefreshInTheBackground(t *testing.T) {
	clock := testingclock.NewFakeClock(t0.Add(61 * time.Minute))
	store, db := testStore(t, clock)
	storeItem(t, db, t0, 0.03)
	api := &fakeSpotAPI{price: 0.05, gate: make(chan struct{})}
	c := spotCache(t, clock, store, api)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make([]error, 5)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = c.Ensure(ctx)
		}()
	}
	wg.Wait() // returns although EC2 has not answered (the gate is shut)
	if n := db.Calls("GetItem"); n != 1 {
		t.Errorf("%d table reads by 5 concurrent rounds of a cold container, want 1", n)
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if p := priceOf(t, c); p != 0.03 {
		t.Errorf("during the refresh: price %v, want the stale 0.03", p)
	}
	close(api.gate)
	c.Wait(ctx)
	if p := priceOf(t, c); p != 0.05 || api.Calls() != 1 {
		t.Errorf("after the refresh: price %v after %d EC2 calls, want 0.05 after one", p, api.Calls())
	}
	data, at, err := store.GetBlob(ctx, state.KeySpotPrices)
	if err != nil || string(data) != "m6g.large us-east-1a 0.05" || !at.Equal(clock.Now()) {
		t.Errorf("table item %q at %v (%v), want the new prices", data, at, err)
	}
}

// A warm container whose prices went stale first reads the table again:
// another container that refreshed it within the hour saves the EC2 call.
func TestSpotCacheWarmContainerTakesAnotherContainersRefresh(t *testing.T) {
	clock := testingclock.NewFakeClock(t0)
	store, db := testStore(t, clock)
	storeItem(t, db, t0, 0.03)
	api := &fakeSpotAPI{price: 0.05}
	c := spotCache(t, clock, store, api)
	ctx := context.Background()
	if err := c.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	clock.Step(70 * time.Minute)
	storeItem(t, db, t0.Add(65*time.Minute), 0.02) // another container's refresh
	if err := c.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	c.Wait(ctx)
	if p := priceOf(t, c); p != 0.02 || api.Calls() != 0 {
		t.Errorf("price %v after %d EC2 calls, want the other container's 0.02 and no call", p, api.Calls())
	}
	// An hour after that refresh, nobody refreshed: this container does.
	clock.Step(61 * time.Minute)
	if err := c.Ensure(ctx); err != nil {
		t.Fatal(err)
	}
	c.Wait(ctx)
	if p := priceOf(t, c); p != 0.05 || api.Calls() != 1 {
		t.Errorf("price %v after %d EC2 calls, want 0.05 after one", p, api.Calls())
	}
}
