package cost

import (
	"math"
	"testing"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

// The bills below are computed by hand from USEast1's prices; each line's
// arithmetic is in its comment.
func TestMonthly(t *testing.T) {
	const gib = 1 << 30
	for _, tc := range []struct {
		name  string
		usage Usage
		lines map[string]float64 // Service/Item -> USD (every line not listed is 0)
		total float64
	}{
		{
			name: "one function, one of everything",
			usage: Usage{
				Functions: []Function{{Name: "provision", Invocations: 1e6, MeanBilledMillis: 100, MemoryMB: 1024,
					LogBytes: gib / 1e6}}, // 1 GiB of logs in all
				ReadUnits: 10e6, WriteUnits: 2e6, TableGB: 4,
				CustomMetrics: 50, Alarms: 13, Dashboards: 1, GetMetricDataMetrics: 100000, LogRetentionDays: 30,
			},
			lines: map[string]float64{
				"Lambda/provision requests":    0.20,    // 1e6 x $0.20 per million
				"Lambda/provision duration":    1.33334, // 1e6 x 0.1 s x 1 GB = 100,000 GB-s x $0.0000133334
				"DynamoDB/read request units":  1.25,    // 10e6 x $0.125 per million
				"DynamoDB/write request units": 1.25,    // 2e6 x $0.625 per million
				"DynamoDB/storage":             1.00,    // 4 GB x $0.25
				"CloudWatch/custom metrics":    15.00,   // 50 x $0.30
				"CloudWatch/alarms":            1.30,    // 13 x $0.10
				"CloudWatch/dashboards":        3.00,
				"CloudWatch/GetMetricData":     1.00, // 100,000 x $0.01 per 1,000
				"CloudWatch/log ingestion":     0.50, // 1 GB x $0.50
				// 30 of the month's 30.4167 days kept: 0.98630 GB x $0.03
				"CloudWatch/log storage": 0.029589041095890413,
			},
			total: 0.20 + 1.33334 + 1.25 + 1.25 + 1.00 + 15.00 + 1.30 + 3.00 + 1.00 + 0.50 + 0.029589041095890413,
		},
		{
			name: "five functions at a steady state",
			usage: Usage{
				Functions: []Function{
					{Name: "provision", Invocations: 43800, MeanBilledMillis: 1500, MemoryMB: 2176, LogBytes: 4096},
					{Name: "consolidation", Invocations: 8760, MeanBilledMillis: 20000, MemoryMB: 2176, LogBytes: 16384},
					{Name: "interruption", Invocations: 3000, MeanBilledMillis: 2000, MemoryMB: 2176, LogBytes: 8192},
					{Name: "webhook", Invocations: 500000, MeanBilledMillis: 20, MemoryMB: 256, LogBytes: 1024},
					{Name: "rotation", Invocations: 4, MeanBilledMillis: 500, MemoryMB: 128, LogBytes: 2048},
				},
				ReadUnits: 20e6, WriteUnits: 10e6, TableGB: 0.01,
				CustomMetrics: 300, Alarms: 13, Dashboards: 1, GetMetricDataMetrics: 200000, LogRetentionDays: 30,
			},
			lines: map[string]float64{
				"Lambda/provision requests":     0.00876,      // 43,800 x $0.2e-6
				"Lambda/provision duration":     1.8615093075, // 43,800 x 1.5 s x 2.125 GB = 139,612.5 GB-s
				"Lambda/consolidation requests": 0.001752,     // 8,760 x $0.2e-6
				"Lambda/consolidation duration": 4.96402482,   // 8,760 x 20 s x 2.125 GB = 372,300 GB-s
				"Lambda/interruption requests":  0.0006,
				"Lambda/interruption duration":  0.17000085, // 3,000 x 2 s x 2.125 GB = 12,750 GB-s
				"Lambda/webhook requests":       0.1,
				"Lambda/webhook duration":       0.0333335, // 500,000 x 0.02 s x 0.25 GB = 2,500 GB-s
				"Lambda/rotation requests":      0.0000008,
				"Lambda/rotation duration":      0.00000333335, // 4 x 0.5 s x 0.125 GB = 0.25 GB-s
				"DynamoDB/read request units":   2.5,           // 20e6 x $0.125e-6
				"DynamoDB/write request units":  6.25,          // 10e6 x $0.625e-6
				"DynamoDB/storage":              0.0025,
				"CloudWatch/custom metrics":     90,
				"CloudWatch/alarms":             1.3,
				"CloudWatch/dashboards":         3,
				"CloudWatch/GetMetricData":      2,
				// 43,800x4,096 + 8,760x16,384 + 3,000x8,192 + 500,000x1,024 + 4x2,048
				// = 859,512,832 bytes = 0.80048370 GiB
				"CloudWatch/log ingestion": 0.4002418518066406,
				"CloudWatch/log storage":   0.8004837036132812 * 30 / (730.0 / 24) * 0.03,
			},
			total: 112.61641200785945,
		},
		{
			name:  "nothing used: every line is there, at 0",
			usage: Usage{},
			lines: map[string]float64{},
			total: 0,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := Monthly(tc.usage, USEast1)
			if err != nil {
				t.Fatal(err)
			}
			seen := map[string]bool{}
			var sum float64
			for _, l := range b.Lines {
				key := l.Service + "/" + l.Item
				seen[key] = true
				if want := tc.lines[key]; !near(l.USD, want) {
					t.Errorf("%s: $%.10f, want $%.10f", key, l.USD, want)
				}
				sum += l.USD
			}
			for key := range tc.lines {
				if !seen[key] {
					t.Errorf("no line %s", key)
				}
			}
			if len(b.Lines) != 2*len(tc.usage.Functions)+9 {
				t.Errorf("%d lines, want two per function and nine more", len(b.Lines))
			}
			if !near(b.Total, tc.total) || !near(sum, b.Total) {
				t.Errorf("total $%.10f (lines sum to $%.10f), want $%.10f", b.Total, sum, tc.total)
			}
			if got := b.Service("Lambda") + b.Service("DynamoDB") + b.Service("CloudWatch"); !near(got, b.Total) {
				t.Errorf("services sum to $%v, total $%v", got, b.Total)
			}
		})
	}
}

func TestMonthlyRefusesBadUsage(t *testing.T) {
	for name, u := range map[string]Usage{
		"memory under Lambda's 128 MB": {Functions: []Function{{Name: "f", MemoryMB: 64}}},
		"memory over 10,240 MB":        {Functions: []Function{{Name: "f", MemoryMB: 20480}}},
		"a function without a name":    {Functions: []Function{{MemoryMB: 256}}},
		"negative invocations":         {Functions: []Function{{Name: "f", MemoryMB: 256, Invocations: -1}}},
		"NaN read units":               {ReadUnits: math.NaN()},
		"negative alarms":              {Alarms: -1},
	} {
		if _, err := Monthly(u, USEast1); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// DynamoDB's on-demand prices are those after the cut of 2024-11-01.
func TestPricesAreDatedAndCut(t *testing.T) {
	p := USEast1
	if p.Date == "" || p.Source == "" || p.Region != "us-east-1" {
		t.Errorf("prices without a date, source or region: %+v", p)
	}
	if !near(p.DynamoWrite*1e6, 0.625) || !near(p.DynamoRead*1e6, 0.125) {
		t.Errorf("DynamoDB on-demand $%v / $%v per million, want $0.625 / $0.125 (after 2024-11-01)", p.DynamoWrite*1e6, p.DynamoRead*1e6)
	}
}
