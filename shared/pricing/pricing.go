// Package pricing supplies spot prices to the catalog's offerings: from EC2's
// DescribeSpotPriceHistory in AWS, and from a deterministic model for the local
// cloud, the CLI and tests, where no spot market exists.
package pricing

import (
	"context"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/nodewright/nodewright/shared/catalog"
)

// Model is the deterministic spot price model: the spot price of a type in a
// zone is its on-demand price times a factor between 0.22 and 0.60. Most of
// the factor comes from a hash of (family, zone), so the sizes of a family
// cost about the same per vCPU in a zone as they do in EC2, and a little from
// a hash of (type, zone); Seed shifts every hash. Types without an on-demand
// price have no spot price.
type Model struct {
	Catalog *catalog.Catalog
	Seed    uint64
}

// SpotPrice implements catalog.SpotPricer.
func (m Model) SpotPrice(instanceType, zone string) (float64, bool) {
	it, ok := m.Catalog.Get(instanceType)
	if !ok || it.OnDemandPrice <= 0 {
		return 0, false
	}
	factor := 0.22 + 0.33*m.unit(it.Family, zone) + 0.05*m.unit(it.Name, zone)
	return roundPrice(it.OnDemandPrice * factor), true
}

// unit maps (key, zone, seed) to [0, 1).
func (m Model) unit(key, zone string) float64 {
	h := fnv.New64a()
	fmt.Fprintf(h, "%s/%s", key, zone)
	// FNV barely moves its high bits for a change in the last bytes: mix
	// the seed in with splitmix64's finalizer.
	x := h.Sum64() ^ (m.Seed * 0x9e3779b97f4a7c15)
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return float64(x>>11) / float64(uint64(1)<<53)
}

// roundPrice keeps prices to EC2's precision of a millionth of a dollar.
func roundPrice(p float64) float64 {
	v, _ := strconv.ParseFloat(strconv.FormatFloat(p, 'f', 6, 64), 64)
	return v
}

// SpotPriceHistoryAPI is the EC2 call EC2Prices needs.
type SpotPriceHistoryAPI interface {
	DescribeSpotPriceHistory(ctx context.Context, in *ec2.DescribeSpotPriceHistoryInput, optFns ...func(*ec2.Options)) (*ec2.DescribeSpotPriceHistoryOutput, error)
}

// EC2Prices holds the current spot prices of a region as EC2 reports them.
// Refresh loads them; SpotPrice reads the last loaded set. It is safe for
// concurrent use.
type EC2Prices struct {
	api SpotPriceHistoryAPI
	now func() time.Time

	mu      sync.RWMutex
	prices  map[priceKey]float64
	updated time.Time
}

type priceKey struct{ instanceType, zone string }

// NewEC2Prices returns an empty price set that Refresh fills.
func NewEC2Prices(api SpotPriceHistoryAPI, now func() time.Time) *EC2Prices {
	return &EC2Prices{api: api, now: now, prices: map[priceKey]float64{}}
}

// Refresh loads the current spot price of every type in every zone (EC2 answers
// the price in effect at StartTime for each pair), keeping the newest entry
// per pair. On error the previous prices stay.
func (e *EC2Prices) Refresh(ctx context.Context) error {
	now := e.now()
	in := &ec2.DescribeSpotPriceHistoryInput{
		StartTime:           aws.Time(now),
		ProductDescriptions: []string{"Linux/UNIX", "Linux/UNIX (Amazon VPC)"},
		MaxResults:          aws.Int32(1000),
	}
	prices := map[priceKey]float64{}
	stamps := map[priceKey]time.Time{}
	pages := ec2.NewDescribeSpotPriceHistoryPaginator(e.api, in)
	for pages.HasMorePages() {
		out, err := pages.NextPage(ctx)
		if err != nil {
			return fmt.Errorf("describe spot price history: %w", err)
		}
		for _, sp := range out.SpotPriceHistory {
			addPrice(prices, stamps, sp)
		}
	}
	e.mu.Lock()
	e.prices, e.updated = prices, now
	e.mu.Unlock()
	return nil
}

func addPrice(prices map[priceKey]float64, stamps map[priceKey]time.Time, sp ec2types.SpotPrice) {
	if sp.SpotPrice == nil || sp.AvailabilityZone == nil {
		return
	}
	p, err := strconv.ParseFloat(*sp.SpotPrice, 64)
	if err != nil || p <= 0 {
		return
	}
	k := priceKey{string(sp.InstanceType), *sp.AvailabilityZone}
	ts := aws.ToTime(sp.Timestamp)
	if old, ok := stamps[k]; ok && !ts.After(old) {
		return
	}
	prices[k], stamps[k] = p, ts
}

// SpotPrice implements catalog.SpotPricer.
func (e *EC2Prices) SpotPrice(instanceType, zone string) (float64, bool) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	p, ok := e.prices[priceKey{instanceType, zone}]
	return p, ok
}

// UpdatedAt is when the prices were last loaded (zero before the first load).
func (e *EC2Prices) UpdatedAt() time.Time {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return e.updated
}

// Len is the number of (type, zone) prices held.
func (e *EC2Prices) Len() int {
	e.mu.RLock()
	defer e.mu.RUnlock()
	return len(e.prices)
}

// Export writes the prices as lines of "type zone price", sorted, for a
// cache shared by invocations (the state table's spot price item).
func (e *EC2Prices) Export() []byte {
	e.mu.RLock()
	defer e.mu.RUnlock()
	lines := make([]string, 0, len(e.prices))
	for k, p := range e.prices {
		lines = append(lines, k.instanceType+" "+k.zone+" "+strconv.FormatFloat(p, 'f', -1, 64))
	}
	sort.Strings(lines)
	return []byte(strings.Join(lines, "\n"))
}

// Import replaces the prices with what Export wrote, as of updated. Lines
// that do not parse are skipped and counted.
func (e *EC2Prices) Import(data []byte, updated time.Time) (skipped int) {
	prices := map[priceKey]float64{}
	for _, line := range strings.Split(string(data), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			if line != "" {
				skipped++
			}
			continue
		}
		p, err := strconv.ParseFloat(f[2], 64)
		if err != nil || p <= 0 {
			skipped++
			continue
		}
		prices[priceKey{f[0], f[1]}] = p
	}
	e.mu.Lock()
	e.prices, e.updated = prices, updated
	e.mu.Unlock()
	return skipped
}
