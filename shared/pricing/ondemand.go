package pricing

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	awspricing "github.com/aws/aws-sdk-go-v2/service/pricing"
	pricingtypes "github.com/aws/aws-sdk-go-v2/service/pricing/types"
)

// Figures are one region's on-demand prices and the zones each instance type
// is offered in, as last read from AWS: the Pricing API's GetProducts and
// EC2's DescribeInstanceTypeOfferings. They are what the state table caches
// for the functions and what `nodewright prices` writes for `plan --prices`.
type Figures struct {
	Region string `json:"region"`
	// OnDemand is USD per hour by instance type (Linux, shared tenancy);
	// nil when never read. PricesRead is when it was read.
	OnDemand   map[string]float64 `json:"onDemand,omitempty"`
	PricesRead time.Time          `json:"pricesRead,omitzero"`
	// WindowsOnDemand is USD per hour by instance type of Windows Server
	// with its licence included (shared tenancy), read with OnDemand; nil
	// when never read.
	WindowsOnDemand map[string]float64 `json:"windowsOnDemand,omitempty"`
	// Zones lists, by instance type, the availability zones EC2 offers it
	// in (sorted); nil when never read. ZonesRead is when it was read.
	Zones     map[string][]string `json:"zones,omitempty"`
	ZonesRead time.Time           `json:"zonesRead,omitzero"`
}

// Encode writes the figures as JSON (maps in key order: deterministic).
func (f *Figures) Encode() ([]byte, error) {
	return json.Marshal(f)
}

// DecodeFigures reads what Encode wrote. Figures without a region, or with
// a price that is not positive, are refused.
func DecodeFigures(data []byte) (*Figures, error) {
	var f Figures
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("region figures: %w", err)
	}
	if f.Region == "" {
		return nil, fmt.Errorf("region figures: no region")
	}
	for _, prices := range []map[string]float64{f.OnDemand, f.WindowsOnDemand} {
		for typ, p := range prices {
			if p <= 0 {
				return nil, fmt.Errorf("region figures for %s: %s costs %v (want a positive USD price per hour)", f.Region, typ, p)
			}
		}
	}
	return &f, nil
}

// Merge returns the figures with what next read replacing what it holds:
// a part (prices or zones) next did not read is kept from f.
func (f *Figures) Merge(next *Figures) *Figures {
	out := &Figures{Region: next.Region}
	if f != nil && f.Region == next.Region {
		*out = *f
	}
	if next.OnDemand != nil {
		out.OnDemand, out.PricesRead, out.WindowsOnDemand = next.OnDemand, next.PricesRead, next.WindowsOnDemand
	}
	if next.Zones != nil {
		out.Zones, out.ZonesRead = next.Zones, next.ZonesRead
	}
	return out
}

// PricingAPI is the Pricing API call OnDemandPrices makes.
type PricingAPI interface {
	GetProducts(ctx context.Context, in *awspricing.GetProductsInput, optFns ...func(*awspricing.Options)) (*awspricing.GetProductsOutput, error)
}

// OfferingsAPI is the EC2 call ZoneOfferings makes.
type OfferingsAPI interface {
	DescribeInstanceTypeOfferings(ctx context.Context, in *ec2.DescribeInstanceTypeOfferingsInput, optFns ...func(*ec2.Options)) (*ec2.DescribeInstanceTypeOfferingsOutput, error)
}

// PricingEndpointRegion is the region whose Pricing API endpoint serves
// region's figures: the API answers from us-east-1, eu-central-1 and
// ap-south-1 only (any of them knows every region; the nearest is used), and
// from cn-northwest-1 for the China partition.
func PricingEndpointRegion(region string) string {
	switch {
	case strings.HasPrefix(region, "cn-"):
		return "cn-northwest-1"
	case strings.HasPrefix(region, "ap-"):
		return "ap-south-1"
	case strings.HasPrefix(region, "eu-"), strings.HasPrefix(region, "me-"), strings.HasPrefix(region, "af-"), strings.HasPrefix(region, "il-"):
		return "eu-central-1"
	}
	return "us-east-1"
}

// onDemandQueries are the product sets priced: instances on shared
// tenancy, and bare-metal instances, which the Pricing API files as
// dedicated tenancy.
var onDemandQueries = [][2]string{
	{"Shared", "Compute Instance"},
	{"Dedicated", "Compute Instance (bare metal)"},
}

// Operating systems and licence models of the Pricing API's EC2 products.
const (
	OSLinux          = "Linux"
	OSWindows        = "Windows"
	licenceNone      = "No License required"
	licenceIncluded  = "License Included"
	licenceModelTerm = "licenseModel"
)

// OnDemandPrices reads the region's hourly on-demand Linux prices from the
// Pricing API, by instance type.
func OnDemandPrices(ctx context.Context, api PricingAPI, region string) (map[string]float64, error) {
	return onDemandPrices(ctx, api, region, OSLinux, licenceNone)
}

// WindowsOnDemandPrices reads the region's hourly on-demand prices of
// Windows Server with its licence included (what a Windows node is
// charged), by instance type.
func WindowsOnDemandPrices(ctx context.Context, api PricingAPI, region string) (map[string]float64, error) {
	return onDemandPrices(ctx, api, region, OSWindows, licenceIncluded)
}

func onDemandPrices(ctx context.Context, api PricingAPI, region, os, licence string) (map[string]float64, error) {
	prices := map[string]float64{}
	for _, q := range onDemandQueries {
		in := &awspricing.GetProductsInput{
			ServiceCode:   aws.String("AmazonEC2"),
			FormatVersion: aws.String("aws_v1"),
			Filters: []pricingtypes.Filter{
				term("regionCode", region), term("serviceCode", "AmazonEC2"), term("preInstalledSw", "NA"),
				term("operatingSystem", os), term(licenceModelTerm, licence), term("capacitystatus", "Used"), term("marketoption", "OnDemand"),
				term("tenancy", q[0]), term("productFamily", q[1]),
			},
		}
		pages := awspricing.NewGetProductsPaginator(api, in)
		for pages.HasMorePages() {
			out, err := pages.NextPage(ctx)
			if err != nil {
				return nil, fmt.Errorf("pricing GetProducts for %s (%s): %w", region, os, err)
			}
			for _, doc := range out.PriceList {
				typ, p, err := ParsePriceListItem(doc)
				if err != nil {
					return nil, fmt.Errorf("pricing GetProducts for %s (%s): %w", region, os, err)
				}
				if typ == "" || p <= 0 {
					continue
				}
				// Several SKUs may price a type (rare): keep the dearest, as a
				// conservative estimate.
				prices[typ] = max(prices[typ], p)
			}
		}
	}
	if len(prices) == 0 {
		return nil, fmt.Errorf("pricing GetProducts for %s: no on-demand prices for %s (is %s a region?)", region, os, region)
	}
	return prices, nil
}

func term(field, value string) pricingtypes.Filter {
	return pricingtypes.Filter{Type: pricingtypes.FilterTypeTermMatch, Field: aws.String(field), Value: aws.String(value)}
}

// priceListItem is the part of a PriceList entry read: the product's
// instance type and its on-demand terms' USD price per hour.
type priceListItem struct {
	Product struct {
		Attributes struct {
			InstanceType string `json:"instanceType"`
		} `json:"attributes"`
	} `json:"product"`
	Terms struct {
		OnDemand map[string]struct {
			PriceDimensions map[string]struct {
				Unit         string            `json:"unit"`
				PricePerUnit map[string]string `json:"pricePerUnit"`
			} `json:"priceDimensions"`
		} `json:"OnDemand"`
	} `json:"terms"`
}

// ParsePriceListItem reads one entry of GetProducts' PriceList (a JSON
// document as a string): the instance type and its hourly USD price. An
// entry without an instance type or an hourly USD price yields "" or 0 and
// no error; a document that is not the Pricing API's JSON is an error.
func ParsePriceListItem(doc string) (instanceType string, price float64, err error) {
	var it priceListItem
	if err := json.Unmarshal([]byte(doc), &it); err != nil {
		return "", 0, fmt.Errorf("price list entry: %w", err)
	}
	instanceType = it.Product.Attributes.InstanceType
	// Terms and dimensions are keyed by SKU-derived codes: read them in key
	// order so that the answer does not depend on map order.
	for _, tk := range sortedKeys(it.Terms.OnDemand) {
		dims := it.Terms.OnDemand[tk].PriceDimensions
		for _, dk := range sortedKeys(dims) {
			d := dims[dk]
			if !strings.HasPrefix(d.Unit, "Hr") {
				continue
			}
			usd, ok := d.PricePerUnit["USD"]
			if !ok {
				continue
			}
			p, err := strconv.ParseFloat(usd, 64)
			if err != nil {
				return instanceType, 0, fmt.Errorf("price list entry for %s: USD price %q: %w", instanceType, usd, err)
			}
			if p > 0 {
				return instanceType, roundPrice(p), nil
			}
		}
	}
	return instanceType, 0, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// ZoneOfferings reads the availability zones EC2 offers each instance type
// in, from DescribeInstanceTypeOfferings (location type availability-zone).
func ZoneOfferings(ctx context.Context, api OfferingsAPI) (map[string][]string, error) {
	in := &ec2.DescribeInstanceTypeOfferingsInput{LocationType: ec2types.LocationTypeAvailabilityZone, MaxResults: aws.Int32(1000)}
	zones := map[string][]string{}
	pages := ec2.NewDescribeInstanceTypeOfferingsPaginator(api, in)
	for pages.HasMorePages() {
		out, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("describe instance type offerings: %w", err)
		}
		for _, o := range out.InstanceTypeOfferings {
			typ, zone := string(o.InstanceType), aws.ToString(o.Location)
			if typ == "" || zone == "" {
				continue
			}
			zones[typ] = append(zones[typ], zone)
		}
	}
	if len(zones) == 0 {
		return nil, fmt.Errorf("describe instance type offerings: no offerings")
	}
	for typ, zs := range zones {
		sort.Strings(zs)
		zones[typ] = compact(zs)
	}
	return zones, nil
}

func compact(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// Read reads the region's figures from AWS: prices when pr is not nil,
// zones when oa is not nil. A part that fails is left unread (nil) and its
// error returned beside what was read, so a caller can keep the part it
// had.
func Read(ctx context.Context, pr PricingAPI, oa OfferingsAPI, region string, now func() time.Time) (*Figures, error) {
	f := &Figures{Region: region}
	var errs []error
	if pr != nil {
		p, err := OnDemandPrices(ctx, pr, region)
		if err != nil {
			errs = append(errs, err)
		} else {
			f.OnDemand, f.PricesRead = p, now().UTC()
			// Windows prices are read with Linux ones; without them a
			// Windows node is priced with the shipped licence estimate.
			if w, err := WindowsOnDemandPrices(ctx, pr, region); err != nil {
				errs = append(errs, err)
			} else {
				f.WindowsOnDemand = w
			}
		}
	}
	if oa != nil {
		z, err := ZoneOfferings(ctx, oa)
		if err != nil {
			errs = append(errs, err)
		} else {
			f.Zones, f.ZonesRead = z, now().UTC()
		}
	}
	return f, joinErrs(errs)
}

func joinErrs(errs []error) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	return fmt.Errorf("%w; %w", errs[0], errs[1])
}
