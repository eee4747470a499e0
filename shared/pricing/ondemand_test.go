package pricing

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	awspricing "github.com/aws/aws-sdk-go-v2/service/pricing"

	"github.com/nodewright/nodewright/shared/catalog"
)

// priceDoc is a PriceList entry as the Pricing API writes it (trimmed to
// the fields that matter, plus a few that do not).
func priceDoc(typ, usd string) string {
	return fmt.Sprintf(`{"product":{"productFamily":"Compute Instance","attributes":{"instanceType":%q,"regionCode":"eu-west-1","operatingSystem":"Linux","tenancy":"Shared"},"sku":"SKU%s"},
"serviceCode":"AmazonEC2","terms":{"OnDemand":{"SKU%s.JRTCKXETXF":{"priceDimensions":{"SKU%s.JRTCKXETXF.6YS6EN2CT7":{"unit":"Hrs","endRange":"Inf","pricePerUnit":{"USD":%q},"description":"$ per On Demand Linux instance hour"}},"sku":"SKU%s","effectiveDate":"2026-11-01T00:00:00Z"}}},"version":"20261101","publicationDate":"2026-11-01T00:00:00Z"}`,
		typ, typ, typ, typ, usd, typ)
}

func TestParsePriceListItem(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		typ       string
		price     float64
		err       string
	}{
		{"hourly USD", priceDoc("m5.large", "0.1070000000"), "m5.large", 0.107, ""},
		{"zero price", priceDoc("m5.large", "0.0000000000"), "m5.large", 0, ""},
		{"no terms", `{"product":{"attributes":{"instanceType":"c5.xlarge"}}}`, "c5.xlarge", 0, ""},
		{"not hourly", strings.Replace(priceDoc("m5.large", "1.5"), `"unit":"Hrs"`, `"unit":"Quantity"`, 1), "m5.large", 0, ""},
		{"bad number", priceDoc("m5.large", "one"), "m5.large", 0, `USD price "one"`},
		{"not JSON", `{"product":`, "", 0, "price list entry"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			typ, p, err := ParsePriceListItem(tc.doc)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want one containing %q", err, tc.err)
				}
				return
			}
			if err != nil || typ != tc.typ || p != tc.price {
				t.Fatalf("got %q %v %v, want %q %v", typ, p, err, tc.typ, tc.price)
			}
		})
	}
}

// fakePricing answers GetProducts from docs by tenancy, two per page.
type fakePricing struct {
	docs map[string][]string // tenancy -> PriceList
	// windows answers operatingSystem Windows (licence included) by
	// tenancy; nil: docs answers every operating system.
	windows map[string][]string
	err     error
	calls   int
	seen    []string // the regionCode filters asked for
	hook    func()   // called on each call, when set
}

func (f *fakePricing) GetProducts(_ context.Context, in *awspricing.GetProductsInput, _ ...func(*awspricing.Options)) (*awspricing.GetProductsOutput, error) {
	f.calls++
	if f.hook != nil {
		f.hook()
	}
	if f.err != nil {
		return nil, f.err
	}
	var tenancy string
	docsOf := f.docs
	for _, fl := range in.Filters {
		switch aws.ToString(fl.Field) {
		case "operatingSystem":
			if aws.ToString(fl.Value) == OSWindows && f.windows != nil {
				docsOf = f.windows
			}
		case "tenancy":
			tenancy = aws.ToString(fl.Value)
		case "regionCode":
			f.seen = append(f.seen, aws.ToString(fl.Value))
		}
	}
	docs := docsOf[tenancy]
	start := 0
	if in.NextToken != nil {
		fmt.Sscan(*in.NextToken, &start)
	}
	end := min(start+2, len(docs))
	out := &awspricing.GetProductsOutput{PriceList: docs[start:end]}
	if end < len(docs) {
		out.NextToken = aws.String(fmt.Sprint(end))
	}
	return out, nil
}

func TestOnDemandPricesReadsEveryPageOfBothQueries(t *testing.T) {
	f := &fakePricing{docs: map[string][]string{
		"Shared":    {priceDoc("m5.large", "0.107"), priceDoc("m5.xlarge", "0.214"), priceDoc("c5.large", "0.096"), priceDoc("t3.micro", "0")},
		"Dedicated": {priceDoc("m5.metal", "5.376")},
	}}
	got, err := OnDemandPrices(context.Background(), f, "eu-west-1")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"m5.large": 0.107, "m5.xlarge": 0.214, "c5.large": 0.096, "m5.metal": 5.376}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("prices %v, want %v", got, want)
	}
	for _, r := range f.seen {
		if r != "eu-west-1" {
			t.Fatalf("asked for region %q, want eu-west-1", r)
		}
	}
	if _, err := OnDemandPrices(context.Background(), &fakePricing{}, "xx-nowhere-1"); err == nil || !strings.Contains(err.Error(), "no on-demand prices") {
		t.Fatalf("an empty answer: error %v, want 'no on-demand prices'", err)
	}
}

// fakeOfferings answers DescribeInstanceTypeOfferings from pairs.
type fakeOfferings struct {
	pairs [][2]string // type, zone
	err   error
	calls int
}

func (f *fakeOfferings) DescribeInstanceTypeOfferings(_ context.Context, in *ec2.DescribeInstanceTypeOfferingsInput, _ ...func(*ec2.Options)) (*ec2.DescribeInstanceTypeOfferingsOutput, error) {
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	if in.LocationType != ec2types.LocationTypeAvailabilityZone {
		return nil, fmt.Errorf("location type %q", in.LocationType)
	}
	out := &ec2.DescribeInstanceTypeOfferingsOutput{}
	for _, p := range f.pairs {
		out.InstanceTypeOfferings = append(out.InstanceTypeOfferings, ec2types.InstanceTypeOffering{
			InstanceType: ec2types.InstanceType(p[0]), Location: aws.String(p[1]), LocationType: ec2types.LocationTypeAvailabilityZone})
	}
	return out, nil
}

func TestZoneOfferings(t *testing.T) {
	f := &fakeOfferings{pairs: [][2]string{{"m5.large", "eu-west-1b"}, {"m5.large", "eu-west-1a"}, {"p5.48xlarge", "eu-west-1a"}, {"m5.large", "eu-west-1a"}}}
	got, err := ZoneOfferings(context.Background(), f)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{"m5.large": {"eu-west-1a", "eu-west-1b"}, "p5.48xlarge": {"eu-west-1a"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("zones %v, want %v", got, want)
	}
}

func TestChoose(t *testing.T) {
	read := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	euw1 := &Figures{Region: "eu-west-1", OnDemand: map[string]float64{"m5.large": 0.107}, PricesRead: read}
	zonesOnly := &Figures{Region: "eu-west-1", Zones: map[string][]string{"m5.large": {"eu-west-1a"}}, ZonesRead: read}
	for _, tc := range []struct {
		name     string
		region   string
		read     *Figures
		source   Source
		pricesOf string
		missing  bool
		zones    bool
	}{
		{"the region's read figures", "eu-west-1", euw1, SourcePricingAPI, "eu-west-1", false, false},
		{"shipped region, nothing read", "us-east-1", nil, SourceShipped, "us-east-1", false, false},
		{"other region, nothing read", "eu-west-1", nil, SourceShipped, "us-east-1", true, false},
		{"another region's figures are not used", "ap-southeast-2", euw1, SourceShipped, "us-east-1", true, false},
		{"zones read, prices not", "eu-west-1", zonesOnly, SourceShipped, "us-east-1", true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := Choose(tc.region, tc.read)
			if c.Source != tc.source || c.PricesOf != tc.pricesOf || c.Missing != tc.missing || c.ZonesKnown != tc.zones {
				t.Fatalf("choice %+v, want source %s of %s, missing %v, zones %v", c, tc.source, tc.pricesOf, tc.missing, tc.zones)
			}
			if w := c.Warning(); (w != "") != tc.missing || (tc.missing && !strings.Contains(w, tc.region)) {
				t.Fatalf("warning %q (missing %v)", w, tc.missing)
			}
		})
	}
	cat := Choose("eu-west-1", euw1).Catalog(catalog.Default())
	if it, _ := cat.Get("m5.large"); it.OnDemandPrice != 0.107 {
		t.Fatalf("m5.large priced %v in eu-west-1, want 0.107", it.OnDemandPrice)
	}
	if it, _ := cat.Get("m5.xlarge"); it.OnDemandPrice != 0 {
		t.Fatalf("m5.xlarge, with no eu-west-1 price read, priced %v: another region's price", it.OnDemandPrice)
	}
}

func TestFiguresRoundTripAndMerge(t *testing.T) {
	t0 := time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC)
	old := &Figures{Region: "eu-west-1", OnDemand: map[string]float64{"m5.large": 0.1}, PricesRead: t0,
		Zones: map[string][]string{"m5.large": {"eu-west-1a"}}, ZonesRead: t0}
	next := &Figures{Region: "eu-west-1", Zones: map[string][]string{"m5.large": {"eu-west-1a", "eu-west-1b"}}, ZonesRead: t0.Add(time.Hour)}
	m := old.Merge(next)
	if m.OnDemand["m5.large"] != 0.1 || !m.PricesRead.Equal(t0) || len(m.Zones["m5.large"]) != 2 {
		t.Fatalf("merge kept %+v", m)
	}
	data, err := m.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeFigures(data)
	if err != nil || !reflect.DeepEqual(back, m) {
		t.Fatalf("round trip: %+v %v, want %+v", back, err, m)
	}
	for _, bad := range []string{`{}`, `{"region":"eu-west-1","onDemand":{"m5.large":-1}}`, `[`} {
		if _, err := DecodeFigures([]byte(bad)); err == nil {
			t.Fatalf("%s decoded without error", bad)
		}
	}
}

func TestPricingEndpointRegion(t *testing.T) {
	for region, want := range map[string]string{"us-west-2": "us-east-1", "eu-west-1": "eu-central-1", "ap-southeast-2": "ap-south-1", "cn-north-1": "cn-northwest-1", "me-south-1": "eu-central-1"} {
		if got := PricingEndpointRegion(region); got != want {
			t.Errorf("%s: %s, want %s", region, got, want)
		}
	}
}

// memStore is a FiguresStore in memory.
type memStore struct {
	mu     sync.Mutex
	data   map[string][]byte
	getErr error
	putErr error
	puts   int
}

func (m *memStore) RegionFigures(_ context.Context, region string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.data[region], m.getErr
}

func (m *memStore) PutRegionFigures(_ context.Context, region string, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.puts++
	if m.putErr != nil {
		return m.putErr
	}
	if m.data == nil {
		m.data = map[string][]byte{}
	}
	m.data[region] = data
	return nil
}

func TestRegionalRefreshesInTheBackgroundAtMostDaily(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	pr := &fakePricing{docs: map[string][]string{"Shared": {priceDoc("m5.large", "0.107")}}}
	oa := &fakeOfferings{pairs: [][2]string{{"m5.large", "eu-west-1a"}}}
	st := &memStore{}
	r := &Regional{Region: "eu-west-1", Base: catalog.Default(), Store: st, Pricing: pr, Offerings: oa, Now: clock}
	if c := r.Choice(); !c.Missing {
		t.Fatalf("before any read: %+v, want Missing", c)
	}
	ctx := context.Background()
	r.Refresh(ctx)
	r.Wait(ctx)
	if c := r.Choice(); c.Source != SourcePricingAPI || c.Missing || !c.ZonesKnown {
		t.Fatalf("after a refresh: %+v", c)
	}
	it, _ := r.Catalog().Get("m5.large")
	if it.OnDemandPrice != 0.107 || !reflect.DeepEqual(it.Zones, []string{"eu-west-1a"}) {
		t.Fatalf("m5.large: %v %v", it.OnDemandPrice, it.Zones)
	}
	if st.puts != 1 {
		t.Fatalf("%d table writes, want 1", st.puts)
	}
	// Within the day, no refresh asks AWS again, even after the table is
	// read again.
	now = now.Add(2 * time.Hour)
	r.Refresh(ctx)
	r.Wait(ctx)
	if pr.calls != 4 || oa.calls != 1 {
		t.Fatalf("within a day: %d GetProducts, %d DescribeInstanceTypeOfferings calls, want 4 (Linux and Windows, two product sets each) and 1 (one refresh)", pr.calls, oa.calls)
	}
	// A cold container reads the table, never AWS.
	cold := &Regional{Region: "eu-west-1", Base: catalog.Default(), Store: st, Pricing: pr, Offerings: oa, Now: clock}
	if err := cold.Load(ctx); err != nil {
		t.Fatal(err)
	}
	if it, _ := cold.Catalog().Get("m5.large"); it.OnDemandPrice != 0.107 {
		t.Fatalf("cold container: m5.large at %v", it.OnDemandPrice)
	}
	// A day on, the next refresh reads AWS again.
	now = now.Add(DefaultFiguresMaxAge)
	r.Refresh(ctx)
	r.Wait(ctx)
	if pr.calls != 8 {
		t.Fatalf("a day later: %d GetProducts calls, want 8", pr.calls)
	}
}

func TestRegionalRefreshFailureKeepsFiguresAndNeverBlocks(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	known := &Figures{Region: "eu-west-1", OnDemand: map[string]float64{"m5.large": 0.107}, PricesRead: now.Add(-48 * time.Hour)}
	data, _ := known.Encode()
	st := &memStore{data: map[string][]byte{"eu-west-1": data}}
	for _, tc := range []struct {
		name string
		pr   *fakePricing
		oa   *fakeOfferings
		put  error
	}{
		{"GetProducts fails", &fakePricing{err: errors.New("AccessDeniedException")}, &fakeOfferings{err: errors.New("UnauthorizedOperation")}, nil},
		{"the state write fails", &fakePricing{docs: map[string][]string{"Shared": {priceDoc("m5.large", "0.2")}}}, nil, errors.New("throttled")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			release := make(chan struct{})
			st.putErr = tc.put
			r := &Regional{Region: "eu-west-1", Base: catalog.Default(), Store: st, Pricing: tc.pr, Now: clock}
			if tc.oa != nil {
				r.Offerings = tc.oa
			}
			if err := r.Load(context.Background()); err != nil {
				t.Fatal(err)
			}
			// The refresh's first call to the Pricing API hangs until
			// released: Catalog and Choice answer meanwhile.
			tc.pr.hook = func() { <-release }
			r.Refresh(context.Background())
			if it, _ := r.Catalog().Get("m5.large"); it.OnDemandPrice != 0.107 {
				t.Fatalf("during the refresh: m5.large at %v, want the last known 0.107", it.OnDemandPrice)
			}
			close(release)
			r.Wait(context.Background())
			c := r.Choice()
			if c.Source != SourcePricingAPI || c.Missing {
				t.Fatalf("after a failed refresh: %+v, want the last known figures", c)
			}
		})
	}
}

// TestWindowsLicencesFromThePricingAPI: Read reads Windows prices (licence
// included) beside Linux ones, and the choice prices each type's licence as
// their difference; a Windows read that fails keeps the Linux prices.
func TestWindowsLicencesFromThePricingAPI(t *testing.T) {
	f := &fakePricing{
		docs:    map[string][]string{"Shared": {priceDoc("m5.large", "0.096"), priceDoc("c5.large", "0.085")}},
		windows: map[string][]string{"Shared": {priceDoc("m5.large", "0.188"), priceDoc("c5.large", "0.085"), priceDoc("r5.large", "0.218")}},
	}
	now := func() time.Time { return time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC) }
	fig, err := Read(context.Background(), f, nil, "eu-west-1", now)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]float64{"m5.large": 0.188, "c5.large": 0.085, "r5.large": 0.218}; !reflect.DeepEqual(fig.WindowsOnDemand, want) {
		t.Fatalf("Windows prices %v, want %v", fig.WindowsOnDemand, want)
	}
	data, err := fig.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeFigures(data)
	if err != nil {
		t.Fatal(err)
	}
	got := Choose("eu-west-1", back).WindowsLicences()
	// c5.large: no dearer Windows price; r5.large: no Linux price.
	if len(got) != 1 || math.Abs(got["m5.large"]-0.092) > 1e-9 {
		t.Fatalf("licences %v, want m5.large 0.092 only", got)
	}
	cat := Choose("eu-west-1", back).Catalog(catalog.Default())
	if m5, _ := cat.Get("m5.large"); math.Abs(m5.WindowsLicence-0.092) > 1e-9 || m5.OnDemandPrice != 0.096 {
		t.Fatalf("regional m5.large: licence %v price %v, want 0.092 and 0.096", m5.WindowsLicence, m5.OnDemandPrice)
	}
	if c5, _ := cat.Get("c5.large"); c5.WindowsLicence != 0 {
		t.Fatalf("c5.large licence %v, want none read", c5.WindowsLicence)
	}
	if l := Choose("us-east-1", nil).WindowsLicences(); l != nil {
		t.Fatalf("shipped figures give licences %v, want none (the estimate applies)", l)
	}
	f.windows = map[string][]string{}
	fig, err = Read(context.Background(), f, nil, "eu-west-1", now)
	if err == nil || !strings.Contains(err.Error(), "Windows") || fig.OnDemand["m5.large"] != 0.096 || fig.WindowsOnDemand != nil {
		t.Fatalf("a failed Windows read: %v, figures %+v; want the error and the Linux prices kept", err, fig)
	}
}
