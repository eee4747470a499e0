// Package cost is Nodewright's monthly bill as a function of what it uses:
// each function's invocations, billed duration and memory (Lambda), the
// state table's request units and storage (DynamoDB on-demand), and the
// metrics, alarms, dashboard and logs the stack creates (CloudWatch). The
// scale benchmark measures the usage at 5,000 nodes and 150,000 pods; this
// package prices it, item by item, with dated us-east-1 prices, and prices
// Karpenter's controller at the same size for comparison
// (docs/concepts/cost.md explains the model). Everything here is pure:
// usage and prices in, an itemised bill out.
package cost

import (
	"errors"
	"fmt"
	"math"
)

// Function is one Lambda function's month.
type Function struct {
	Name string
	// Invocations per month.
	Invocations float64
	// MeanBilledMillis is the mean billed duration of an invocation in ms
	// (Lambda bills each invocation rounded up to 1 ms).
	MeanBilledMillis float64
	// MemoryMB is the function's memory setting (Lambda's MB: 1,024 to the
	// GB).
	MemoryMB int
	// LogBytes is what one invocation writes to its log group: Lambda's
	// own platform records, the function's JSON log lines and its EMF
	// metric records.
	LogBytes float64
}

// Usage is a month of Nodewright at one cluster size.
type Usage struct {
	Functions []Function
	// DynamoDB request units per month (the front's DynamoDBUnits over
	// the month), index writes included in WriteUnits.
	ReadUnits, WriteUnits float64
	// TableGB is the state table's size with its indexes, as DynamoDB
	// bills storage (items plus 100 bytes each, per table and index).
	TableGB float64
	// CustomMetrics is how many metric series (name and dimension values)
	// the functions publish in the month.
	CustomMetrics int
	// Alarms are the stack's standard-resolution alarms (one metric each).
	Alarms int
	// Dashboards are the stack's dashboards.
	Dashboards int
	// GetMetricDataMetrics is how many metrics dashboard views and other
	// GetMetricData calls request in the month (a dashboard refresh
	// requests each of its metrics once).
	GetMetricDataMetrics float64
	// LogRetentionDays is how long the log groups keep what they ingest:
	// in a steady month, the stored logs are that many days of ingestion.
	LogRetentionDays int
}

// Line is one item of the bill.
type Line struct {
	Service  string // Lambda, DynamoDB or CloudWatch
	Item     string
	Quantity float64
	Unit     string
	USD      float64
}

// Bill is the itemised monthly bill.
type Bill struct {
	Lines []Line
	Total float64
}

// Service is the sum of one service's lines.
func (b Bill) Service(name string) float64 {
	var s float64
	for _, l := range b.Lines {
		if l.Service == name {
			s += l.USD
		}
	}
	return s
}

const (
	bytesPerGB   = 1 << 30
	daysPerMonth = 730.0 / 24 // AWS's month: 730 hours
)

// Monthly prices a month of usage. Free tiers are left out: they are per
// account and shared with whatever else runs there.
func Monthly(u Usage, p Prices) (Bill, error) {
	if err := u.validate(); err != nil {
		return Bill{}, err
	}
	var b Bill
	add := func(service, item string, qty float64, unit string, price float64) {
		b.Lines = append(b.Lines, Line{Service: service, Item: item, Quantity: qty, Unit: unit, USD: qty * price})
	}
	var logBytes float64
	for _, f := range u.Functions {
		gbs := f.Invocations * f.MeanBilledMillis / 1000 * float64(f.MemoryMB) / 1024
		add("Lambda", f.Name+" requests", f.Invocations, "requests", p.LambdaRequest)
		add("Lambda", f.Name+" duration", gbs, "GB-s", p.LambdaGBSecond)
		logBytes += f.Invocations * f.LogBytes
	}
	add("DynamoDB", "read request units", u.ReadUnits, "RRU", p.DynamoRead)
	add("DynamoDB", "write request units", u.WriteUnits, "WRU", p.DynamoWrite)
	add("DynamoDB", "storage", u.TableGB, "GB-month", p.DynamoStorageGBMonth)
	ingested := logBytes / bytesPerGB
	add("CloudWatch", "custom metrics", float64(u.CustomMetrics), "metrics", p.MetricMonth)
	add("CloudWatch", "alarms", float64(u.Alarms), "alarm metrics", p.AlarmMonth)
	add("CloudWatch", "dashboards", float64(u.Dashboards), "dashboards", p.DashboardMonth)
	add("CloudWatch", "GetMetricData", u.GetMetricDataMetrics, "metrics requested", p.GetMetricDataMetric)
	add("CloudWatch", "log ingestion", ingested, "GB", p.LogIngestGB)
	add("CloudWatch", "log storage", ingested*float64(u.LogRetentionDays)/daysPerMonth, "GB-month", p.LogStorageGBMonth)
	for _, l := range b.Lines {
		b.Total += l.USD
	}
	return b, nil
}

func (u Usage) validate() error {
	var errs []error
	for _, f := range u.Functions {
		if f.Name == "" || f.MemoryMB < 128 || f.MemoryMB > 10240 {
			errs = append(errs, fmt.Errorf("function %q: memory %d MB outside Lambda's 128-10,240", f.Name, f.MemoryMB))
		}
		if !nonNegative(f.Invocations, f.MeanBilledMillis, f.LogBytes) {
			errs = append(errs, fmt.Errorf("function %q: negative or not finite usage", f.Name))
		}
	}
	if !nonNegative(u.ReadUnits, u.WriteUnits, u.TableGB, u.GetMetricDataMetrics) ||
		u.CustomMetrics < 0 || u.Alarms < 0 || u.Dashboards < 0 || u.LogRetentionDays < 0 {
		errs = append(errs, errors.New("negative or not finite usage"))
	}
	return errors.Join(errs...)
}

func nonNegative(vs ...float64) bool {
	for _, v := range vs {
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}
