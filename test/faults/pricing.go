package faults

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	awspricing "github.com/aws/aws-sdk-go-v2/service/pricing"

	"github.com/nodewright/nodewright/shared/pricing"
	"github.com/nodewright/nodewright/shared/state"
)

// The region's figures (shared/pricing.Regional): the provision sweep
// reads the Pricing API and EC2's instance type offerings and writes them
// to the state table, beside the rounds. Their calls are crash points like
// any other; the refresh runs inline in the suite (Regional.Go), so that a
// seed replays exactly (in Lambda it runs in the background of the sweep's
// invocation, and a round never waits on it).

// region is the suite's region.
const region = "us-east-1"

// Pricing is the fake Pricing API: the catalog's on-demand prices, in the
// API's JSON, paginated.
type Pricing struct{ w *World }

var (
	_ pricing.PricingAPI   = (*Pricing)(nil)
	_ pricing.OfferingsAPI = (*EC2)(nil)

	pricingThrottled = fault{name: "ThrottlingException", err: apiErr("ThrottlingException", "Rate exceeded")}
)

func (p *Pricing) GetProducts(ctx context.Context, in *awspricing.GetProductsInput, _ ...func(*awspricing.Options)) (*awspricing.GetProductsOutput, error) {
	var out *awspricing.GetProductsOutput
	err := p.w.call(ctx, "Pricing", "GetProducts", []fault{pricingThrottled}, func() error {
		metal, regionCode := false, ""
		for _, f := range in.Filters {
			switch aws.ToString(f.Field) {
			case "productFamily":
				metal = strings.Contains(aws.ToString(f.Value), "bare metal")
			case "regionCode":
				regionCode = aws.ToString(f.Value)
			}
		}
		var docs []string
		for _, it := range p.w.catalog.Types() {
			if regionCode != region || it.BareMetal != metal || it.OnDemandPrice <= 0 {
				continue
			}
			docs = append(docs, fmt.Sprintf(`{"product":{"attributes":{"instanceType":%q}},"terms":{"OnDemand":{"T":{"priceDimensions":{"D":{"unit":"Hrs","pricePerUnit":{"USD":%q}}}}}}}`,
				it.Name, strconv.FormatFloat(it.OnDemandPrice, 'f', 10, 64)))
		}
		start, _ := strconv.Atoi(aws.ToString(in.NextToken))
		end := min(start+100, len(docs))
		out = &awspricing.GetProductsOutput{}
		if start < len(docs) {
			out.PriceList = docs[start:end]
		}
		if end < len(docs) {
			out.NextToken = aws.String(strconv.Itoa(end))
		}
		return nil
	})
	return out, err
}

// DescribeInstanceTypeOfferings answers every type of the catalog in
// every zone of the fake (by availability zone).
func (e *EC2) DescribeInstanceTypeOfferings(ctx context.Context, in *ec2.DescribeInstanceTypeOfferingsInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstanceTypeOfferingsOutput, error) {
	var out *ec2.DescribeInstanceTypeOfferingsOutput
	err := e.w.call(ctx, "EC2", "DescribeInstanceTypeOfferings", []fault{ec2Throttled}, func() error {
		out = &ec2.DescribeInstanceTypeOfferingsOutput{}
		for _, it := range e.w.catalog.Types() {
			for _, s := range e.subnets {
				out.InstanceTypeOfferings = append(out.InstanceTypeOfferings, ec2types.InstanceTypeOffering{
					InstanceType: ec2types.InstanceType(it.Name), Location: s.AvailabilityZone, LocationType: ec2types.LocationTypeAvailabilityZone})
			}
		}
		return nil
	})
	return out, err
}

// regional is a container's region figures, loaded as set-up does (one
// table read), refreshing inline.
func (f *flows) regional(ctx context.Context, store *state.Store) *pricing.Regional {
	r := &pricing.Regional{
		Region: region, Base: f.cfg.cat, Store: store, Pricing: f.w.pricing, Offerings: f.w.ec2,
		Now: f.w.clock.Now, Log: quiet, Go: func(fn func()) { fn() },
	}
	_ = r.Load(ctx)
	return r
}

// checkFigures is invariant 10: crashes and errors while the figures are
// refreshed leave the state table's item whole, and the follow-up's sweeps
// (run clean) write it: the region's prices and offerings are read
// whatever died on the way. Called with w.mu held.
func (w *World) checkFigures() {
	it := w.dynamo.items[clusterName+"\x00"+state.Key(state.PrefixRegionFigures, region)]
	if it == nil {
		w.violate("10", "no region figures in the state table after the follow-up's sweeps")
		return
	}
	b, ok := it["blob"].(*types.AttributeValueMemberB)
	if !ok {
		w.violate("10", "the region figures item has no blob")
		return
	}
	zr, err := gzip.NewReader(bytes.NewReader(b.Value))
	var data []byte
	if err == nil {
		data, err = io.ReadAll(zr)
	}
	if err != nil {
		w.violate("10", "the region figures item is unreadable: %v", err)
		return
	}
	fig, err := pricing.DecodeFigures(data)
	switch {
	case err != nil:
		w.violate("10", "the region figures item does not decode: %v", err)
	case len(fig.OnDemand) == 0 || len(fig.Zones) == 0:
		w.violate("10", "the region figures item lacks a part: %d prices, %d types placed", len(fig.OnDemand), len(fig.Zones))
	}
}
