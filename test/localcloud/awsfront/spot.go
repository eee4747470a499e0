package awsfront

import (
	"context"
	"encoding/xml"
	"hash/fnv"
	"math"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// SpotPrice is the deterministic spot price model: a hash of (type, zone)
// picks a discount between 50% and 85% off the on-demand price, so prices
// differ by type and zone the way a real spot market does, and every run
// sees the same market.
func SpotPrice(onDemand float64, instanceType, zone string) float64 {
	h := fnv.New32a()
	_, _ = h.Write([]byte(instanceType + "/" + zone))
	u := float64(h.Sum32()) / float64(math.MaxUint32) // [0,1]
	discount := 0.50 + 0.35*u
	return math.Round(onDemand*(1-discount)*1e6) / 1e6
}

// price returns the hourly price of a pool.
func (f *Front) price(instanceType, zone, capacityType string) (float64, bool) {
	od, ok := f.cfg.Prices.OnDemandPrice(instanceType)
	if !ok {
		return 0, false
	}
	if capacityType == Spot {
		return SpotPrice(od, instanceType, zone), true
	}
	return od, true
}

type spotPriceHistoryResponse struct {
	XMLName   xml.Name        `xml:"DescribeSpotPriceHistoryResponse"`
	Xmlns     string          `xml:"xmlns,attr"`
	RequestID string          `xml:"requestId"`
	Items     []spotPriceItem `xml:"spotPriceHistorySet>item"`
	NextToken string          `xml:"nextToken"`
}

type spotPriceItem struct {
	AvailabilityZone   string `xml:"availabilityZone"`
	InstanceType       string `xml:"instanceType"`
	ProductDescription string `xml:"productDescription"`
	SpotPrice          string `xml:"spotPrice"`
	Timestamp          string `xml:"timestamp"`
}

// describeSpotPriceHistory answers with the model's current price of every
// requested type (all priced types when none is named) in every zone,
// filtered by AvailabilityZone, paginated by MaxResults/NextToken.
func (f *Front) describeSpotPriceHistory(w http.ResponseWriter, req request) {
	types := listParam(req.form, "InstanceType")
	if len(types) == 0 {
		types = f.cfg.Prices.TypeNames()
	}
	zones := f.cfg.Zones
	if z := req.form.Get("AvailabilityZone"); z != "" {
		zones = []string{z}
	}
	if fz := filterValues(req.form, "availability-zone"); len(fz) > 0 {
		zones = slices.DeleteFunc(slices.Clone(zones), func(z string) bool { return !slices.Contains(fz, z) })
	}
	products := listParam(req.form, "ProductDescription")
	if len(products) == 0 {
		products = []string{"Linux/UNIX"}
	}
	ts := f.cfg.Now().UTC().Truncate(time.Hour).Format(time.RFC3339)
	var items []spotPriceItem
	for _, t := range types {
		od, ok := f.cfg.Prices.OnDemandPrice(t)
		if !ok {
			continue
		}
		for _, z := range zones {
			for _, p := range products {
				items = append(items, spotPriceItem{z, t, p, strconv.FormatFloat(SpotPrice(od, t, z), 'f', 6, 64), ts})
			}
		}
	}
	start, _ := strconv.Atoi(req.form.Get("NextToken"))
	limit, err := strconv.Atoi(req.form.Get("MaxResults"))
	if err != nil || limit <= 0 || limit > 1000 {
		limit = 1000
	}
	resp := spotPriceHistoryResponse{Xmlns: ec2Namespace, RequestID: requestID()}
	if start < len(items) {
		end := min(start+limit, len(items))
		resp.Items = items[start:end]
		if end < len(items) {
			resp.NextToken = strconv.Itoa(end)
		}
	}
	b, err := xml.Marshal(resp)
	if err != nil {
		writeEC2Error(w, http.StatusInternalServerError, "InternalError", err.Error())
		return
	}
	writeXML(w, append([]byte(xml.Header), b...))
}

// subnetZone looks up (and caches) a subnet's zone in moto.
func (f *Front) subnetZone(ctx context.Context, subnet string) string {
	f.mu.Lock()
	z, ok := f.zoneOf[subnet]
	f.mu.Unlock()
	if ok {
		return z
	}
	out, err := f.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{SubnetIds: []string{subnet}})
	if err != nil || len(out.Subnets) == 0 {
		f.log.Warn("subnet zone unknown", "subnet", subnet, "err", err)
		return ""
	}
	z = *out.Subnets[0].AvailabilityZone
	f.mu.Lock()
	f.zoneOf[subnet] = z
	f.mu.Unlock()
	return z
}
