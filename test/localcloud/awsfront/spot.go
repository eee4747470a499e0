package awsfront

import (
	"context"
	"encoding/xml"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ec2"
)

// price returns the hourly price of a pool.
func (f *Front) price(instanceType, zone, capacityType string) (float64, bool) {
	if capacityType == Spot {
		return f.cfg.Prices.SpotPrice(instanceType, zone)
	}
	return f.cfg.Prices.OnDemandPrice(instanceType)
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
		for _, z := range zones {
			sp, ok := f.cfg.Prices.SpotPrice(t, z)
			if !ok {
				continue
			}
			for _, p := range products {
				items = append(items, spotPriceItem{z, t, p, strconv.FormatFloat(sp, 'f', 6, 64), ts})
			}
		}
	}
	resp := spotPriceHistoryResponse{Xmlns: ec2Namespace, RequestID: requestID()}
	resp.Items, resp.NextToken = page(items, req.form)
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

// page is the page of items an EC2 Describe call's NextToken (an offset)
// and MaxResults (at most 1,000) ask for, and the next page's token ("":
// the last page).
func page[T any](items []T, form url.Values) ([]T, string) {
	start, _ := strconv.Atoi(form.Get("NextToken"))
	limit, err := strconv.Atoi(form.Get("MaxResults"))
	if err != nil || limit <= 0 || limit > 1000 {
		limit = 1000
	}
	if start < 0 || start >= len(items) {
		return nil, ""
	}
	end := min(start+limit, len(items))
	if end < len(items) {
		return items[start:end], strconv.Itoa(end)
	}
	return items[start:end], ""
}
