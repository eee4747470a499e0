package awsfront

import (
	"context"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
	awspricing "github.com/aws/aws-sdk-go-v2/service/pricing"

	"github.com/nodewright/nodewright/shared/pricing"
)

// The functions' own reader (shared/pricing) reads the front's figures
// through the SDK: GetProducts in the Pricing API's JSON for the front's
// region only, and DescribeInstanceTypeOfferings by zone without the
// offering taken away.
func TestFrontServesRegionFigures(t *testing.T) {
	f, _ := newTestFront(t)
	f.RemoveOffering("c5.large", "us-east-1b")
	cfg := DirectConfig(f.URL(), "us-east-1")
	pc := awspricing.NewFromConfig(cfg, func(o *awspricing.Options) { o.Region = pricing.PricingEndpointRegion("us-east-1") })
	now := func() time.Time { return time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC) }
	got, err := pricing.Read(context.Background(), pc, ec2.NewFromConfig(cfg), "us-east-1", now)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]float64{"m5.large": 0.096, "c5.large": 0.085, "r5.large": 0.126}; !reflect.DeepEqual(got.OnDemand, want) {
		t.Errorf("prices %v, want %v", got.OnDemand, want)
	}
	if m5 := got.WindowsOnDemand["m5.large"]; math.Abs(m5-0.188) > 1e-9 || len(got.WindowsOnDemand) != 3 {
		t.Errorf("Windows prices %v, want m5.large at 0.188 and three types", got.WindowsOnDemand)
	}
	want := map[string][]string{"c5.large": {"us-east-1a"}, "m5.large": {"us-east-1a", "us-east-1b"}, "r5.large": {"us-east-1a", "us-east-1b"}}
	if !reflect.DeepEqual(got.Zones, want) {
		t.Errorf("zones %v, want %v", got.Zones, want)
	}
	if _, err := pricing.OnDemandPrices(context.Background(), pc, "eu-west-1"); err == nil {
		t.Error("prices for eu-west-1 from a us-east-1 front: want none")
	}
}
