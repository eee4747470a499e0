package awsfront

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// The Pricing API and the zones of instance types, which moto lacks or
// does not fit: moto has no Pricing API, and its DescribeInstanceTypeOfferings
// data is a snapshot of AWS's that misses types of the catalog (129 in
// us-east-1, 380 in eu-west-1), which would then be offered nowhere. So the
// front answers both from its PriceBook: GetProducts with the on-demand
// prices of its own region (none for another), in the Pricing API's JSON
// (each PriceList entry a JSON document in a string), and
// DescribeInstanceTypeOfferings by availability zone with every type in
// every zone, except the offerings RemoveOffering took away.

// RemoveOffering makes EC2 no longer offer the type in the zone:
// DescribeInstanceTypeOfferings leaves it out (CreateFleet still launches
// it, so a plan that ignores the offerings shows).
func (f *Front) RemoveOffering(instanceType, zone string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.removed == nil {
		f.removed = map[[2]string]bool{}
	}
	f.removed[[2]string{instanceType, zone}] = true
}

func (f *Front) offered(instanceType, zone string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return !f.removed[[2]string{instanceType, zone}]
}

type getProductsInput struct {
	ServiceCode string `json:"ServiceCode"`
	Filters     []struct {
		Field string `json:"Field"`
		Type  string `json:"Type"`
		Value string `json:"Value"`
	} `json:"Filters"`
	MaxResults int    `json:"MaxResults"`
	NextToken  string `json:"NextToken"`
}

// getProducts answers the Pricing API's GetProducts for AmazonEC2: one
// entry per priced type of the PriceBook when the regionCode filter is the
// front's region, bare-metal types for the bare-metal product family and
// the others for the rest; nothing for another region.
func (f *Front) getProducts(w http.ResponseWriter, req request) {
	var in getProductsInput
	if err := json.Unmarshal(req.body, &in); err != nil {
		writeJSONError(w, http.StatusBadRequest, "InvalidParameterException", err.Error())
		return
	}
	if in.ServiceCode != "AmazonEC2" {
		writeJSON(w, map[string]any{"FormatVersion": "aws_v1", "PriceList": []string{}})
		return
	}
	filters := map[string]string{}
	for _, fl := range in.Filters {
		filters[fl.Field] = fl.Value
	}
	var docs []string
	if region := filters["regionCode"]; region == f.cfg.Region {
		metal := strings.Contains(filters["productFamily"], "bare metal")
		price, os := f.cfg.Prices.OnDemandPrice, "Linux"
		if filters["operatingSystem"] == "Windows" {
			// Windows figures when the price book has them, else none.
			price, os = func(string) (float64, bool) { return 0, false }, "Windows"
			if w, ok := f.cfg.Prices.(WindowsPriceBook); ok {
				price = w.WindowsOnDemandPrice
			}
		}
		for _, t := range f.cfg.Prices.TypeNames() {
			if strings.Contains(t, ".metal") != metal {
				continue
			}
			if p, ok := price(t); ok {
				docs = append(docs, priceListEntry(region, t, os, p))
			}
		}
	}
	start, _ := strconv.Atoi(in.NextToken)
	limit := in.MaxResults
	if limit <= 0 || limit > 100 {
		limit = 100
	}
	out := map[string]any{"FormatVersion": "aws_v1", "PriceList": []string{}}
	if start < len(docs) {
		end := min(start+limit, len(docs))
		out["PriceList"] = docs[start:end]
		if end < len(docs) {
			out["NextToken"] = strconv.Itoa(end)
		}
	}
	writeJSON(w, out)
}

// WindowsPriceBook is a PriceBook that also prices Windows Server (its
// licence included), which GetProducts serves for operatingSystem Windows.
type WindowsPriceBook interface {
	WindowsOnDemandPrice(instanceType string) (float64, bool)
}

// PriceListEntry is the Pricing API's document of a Linux on-demand type
// in a region at price USD per hour.
func PriceListEntry(region, instanceType string, price float64) string {
	return priceListEntry(region, instanceType, "Linux", price)
}

func priceListEntry(region, instanceType, os string, price float64) string {
	licence := "No License required"
	if os == "Windows" {
		licence = "License Included"
	}
	sku := fmt.Sprintf("LC%X", fnv32(region+"/"+instanceType+"/"+os))
	doc := map[string]any{
		"product": map[string]any{
			"productFamily": "Compute Instance",
			"attributes": map[string]string{
				"instanceType": instanceType, "regionCode": region, "operatingSystem": os, "licenseModel": licence,
				"tenancy": "Shared", "preInstalledSw": "NA", "capacitystatus": "Used", "marketoption": "OnDemand",
			},
			"sku": sku,
		},
		"serviceCode": "AmazonEC2",
		"terms": map[string]any{"OnDemand": map[string]any{
			sku + ".JRTCKXETXF": map[string]any{
				"sku": sku, "offerTermCode": "JRTCKXETXF", "effectiveDate": "2026-11-01T00:00:00Z",
				"priceDimensions": map[string]any{sku + ".JRTCKXETXF.6YS6EN2CT7": map[string]any{
					"unit": "Hrs", "beginRange": "0", "endRange": "Inf",
					"description":  fmt.Sprintf("$%.4f per On Demand %s %s Instance Hour", price, os, instanceType),
					"pricePerUnit": map[string]string{"USD": strconv.FormatFloat(price, 'f', 10, 64)},
				}},
			},
		}},
		"version": "20261101000000", "publicationDate": "2026-11-01T00:00:00Z",
	}
	b, _ := json.Marshal(doc)
	return string(b)
}

func fnv32(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

type typeOfferingsResponse struct {
	XMLName   xml.Name            `xml:"DescribeInstanceTypeOfferingsResponse"`
	Xmlns     string              `xml:"xmlns,attr"`
	RequestID string              `xml:"requestId"`
	Items     []typeOfferingsItem `xml:"instanceTypeOfferingSet>item"`
	NextToken string              `xml:"nextToken,omitempty"`
}

type typeOfferingsItem struct {
	InstanceType string `xml:"instanceType"`
	LocationType string `xml:"locationType"`
	Location     string `xml:"location"`
}

// describeTypeOfferings answers DescribeInstanceTypeOfferings by
// availability zone (false, to forward to moto, for another location
// type): every type in every zone of the front's, less the removed, with
// the instance-type and location filters, paginated.
func (f *Front) describeTypeOfferings(w http.ResponseWriter, req request) bool {
	if req.form.Get("LocationType") != "availability-zone" {
		return false
	}
	types, zones := filterValues(req.form, "instance-type"), filterValues(req.form, "location")
	var items []typeOfferingsItem
	for _, t := range f.cfg.Prices.TypeNames() {
		if len(types) > 0 && !slices.Contains(types, t) {
			continue
		}
		for _, z := range f.cfg.Zones {
			if (len(zones) > 0 && !slices.Contains(zones, z)) || !f.offered(t, z) {
				continue
			}
			items = append(items, typeOfferingsItem{t, "availability-zone", z})
		}
	}
	resp := typeOfferingsResponse{Xmlns: ec2Namespace, RequestID: requestID()}
	resp.Items, resp.NextToken = page(items, req.form)
	b, err := xml.Marshal(resp)
	if err != nil {
		writeEC2Error(w, http.StatusInternalServerError, "InternalError", err.Error())
		return true
	}
	writeXML(w, append([]byte(xml.Header), b...))
	return true
}
