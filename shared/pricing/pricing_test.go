package pricing

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/nodewright/nodewright/shared/catalog"
)

func TestModelIsDeterministicAndBounded(t *testing.T) {
	m := Model{Catalog: catalog.Default()}
	zones := []string{"us-east-1a", "us-east-1b", "us-east-1c"}
	distinct := map[float64]bool{}
	for _, it := range catalog.Default().Types() {
		for _, z := range zones {
			p, ok := m.SpotPrice(it.Name, z)
			if it.OnDemandPrice <= 0 {
				if ok {
					t.Fatalf("%s has no on-demand price but a spot price %v", it.Name, p)
				}
				continue
			}
			if !ok || p < it.OnDemandPrice*0.21 || p > it.OnDemandPrice*0.61 {
				t.Fatalf("%s/%s spot %v outside 0.22..0.60 of on-demand %v", it.Name, z, p, it.OnDemandPrice)
			}
			if again, _ := m.SpotPrice(it.Name, z); again != p {
				t.Fatalf("%s/%s not deterministic: %v then %v", it.Name, z, p, again)
			}
			distinct[p/it.OnDemandPrice] = true
		}
	}
	if len(distinct) < 1000 {
		t.Fatalf("only %d distinct spot discounts: the model should vary by type and zone", len(distinct))
	}
	a, _ := m.SpotPrice("m5.large", "us-east-1a")
	b, _ := Model{Catalog: catalog.Default(), Seed: 7}.SpotPrice("m5.large", "us-east-1a")
	if a == b {
		t.Fatal("seed does not change prices")
	}
	if _, ok := m.SpotPrice("m5.huge", "us-east-1a"); ok {
		t.Fatal("unknown type has a price")
	}
}

func TestModelKeepsFamiliesConsistent(t *testing.T) {
	m := Model{Catalog: catalog.Default()}
	small, _ := m.SpotPrice("m5.large", "us-east-1a")
	big, _ := m.SpotPrice("m5.4xlarge", "us-east-1a")
	// m5.4xlarge is 8 x m5.large on demand; the spot ratio may differ by the
	// per-type share of the factor only (±0.05 of on-demand).
	if ratio := big / small; ratio < 7 || ratio > 9.2 {
		t.Fatalf("m5.4xlarge/m5.large spot ratio %.2f, want about 8", ratio)
	}
}

type fakeHistory struct {
	pages [][]ec2types.SpotPrice
	calls int
	err   error
	input *ec2.DescribeSpotPriceHistoryInput
}

func (f *fakeHistory) DescribeSpotPriceHistory(_ context.Context, in *ec2.DescribeSpotPriceHistoryInput, _ ...func(*ec2.Options)) (*ec2.DescribeSpotPriceHistoryOutput, error) {
	if f.err != nil {
		return nil, f.err
	}
	f.input = in
	out := &ec2.DescribeSpotPriceHistoryOutput{SpotPriceHistory: f.pages[f.calls]}
	f.calls++
	if f.calls < len(f.pages) {
		out.NextToken = aws.String("next")
	}
	return out, nil
}

func price(typ, zone, p string, ts time.Time) ec2types.SpotPrice {
	return ec2types.SpotPrice{InstanceType: ec2types.InstanceType(typ), AvailabilityZone: aws.String(zone), SpotPrice: aws.String(p), Timestamp: aws.Time(ts)}
}

func TestEC2PricesRefresh(t *testing.T) {
	now := time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)
	api := &fakeHistory{pages: [][]ec2types.SpotPrice{
		{price("m5.large", "us-east-1a", "0.0400", now.Add(-time.Hour)), price("m5.large", "us-east-1a", "0.0350", now.Add(-time.Minute))},
		{price("m5.large", "us-east-1a", "0.0500", now.Add(-2*time.Hour)), price("c5.large", "us-east-1b", "bogus", now), price("c5.large", "us-east-1c", "0.03", now)},
	}}
	e := NewEC2Prices(api, func() time.Time { return now })
	if err := e.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if api.calls != 2 {
		t.Fatalf("read %d pages, want 2", api.calls)
	}
	if !aws.ToTime(api.input.StartTime).Equal(now) {
		t.Fatalf("StartTime = %v, want now", api.input.StartTime)
	}
	if p, ok := e.SpotPrice("m5.large", "us-east-1a"); !ok || p != 0.035 {
		t.Fatalf("m5.large/us-east-1a = %v %v, want the newest 0.035", p, ok)
	}
	if _, ok := e.SpotPrice("c5.large", "us-east-1b"); ok {
		t.Fatal("an unparsable price was kept")
	}
	if e.Len() != 2 || !e.UpdatedAt().Equal(now) {
		t.Fatalf("Len %d UpdatedAt %v", e.Len(), e.UpdatedAt())
	}
	api.err = errors.New("throttled")
	if err := e.Refresh(context.Background()); err == nil {
		t.Fatal("want an error")
	}
	if p, ok := e.SpotPrice("c5.large", "us-east-1c"); !ok || p != 0.03 {
		t.Fatal("a failed refresh dropped the previous prices")
	}
}

var _ catalog.SpotPricer = Model{}
var _ catalog.SpotPricer = (*EC2Prices)(nil)
