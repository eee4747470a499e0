package bench

import (
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/nodewright/nodewright/shared/scheduling"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
)

// karpenterRecord is what `make bench-karpenter` (the test/karpenter module)
// records of Karpenter's plans for the cost suite's shapes.
const karpenterRecord = "testdata/karpenter.json"

type record struct {
	Karpenter string `json:"karpenter"`
	Shapes    map[string]struct {
		KarpenterPrice   float64 `json:"karpenterPrice"`
		KarpenterSeconds float64 `json:"karpenterSeconds"`
	} `json:"shapes"`
}

func readRecord(tb testing.TB) record {
	data, err := os.ReadFile(karpenterRecord)
	if err != nil {
		tb.Fatalf("%v (run make bench-karpenter)", err)
	}
	var r record
	if err := json.Unmarshal(data, &r); err != nil {
		tb.Fatalf("%s: %v", karpenterRecord, err)
	}
	return r
}

// TestCostAgainstKarpenter: on every shape of the cost suite, Nodewright's
// plan costs no more than the plan Karpenter's own scheduler made for the
// same pods, pools and instance types (recorded by make bench-karpenter,
// which runs Karpenter at the version it names; a shape missing from the
// record means the suite changed and the record must be made again).
func TestCostAgainstKarpenter(t *testing.T) {
	rec := readRecord(t)
	shapes, err := st.Shapes()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range shapes {
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel()
			k, ok := rec.Shapes[s.Name]
			if !ok {
				t.Fatalf("not in %s (run make bench-karpenter)", karpenterRecord)
			}
			r, err := scheduling.Solve(s.Input())
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Unschedulable) > 0 || r.PricePerHour > k.KarpenterPrice+1e-6 {
				t.Errorf("Nodewright %.4f/h (%d pods unschedulable), Karpenter %s %.4f/h", r.PricePerHour, len(r.Unschedulable), rec.Karpenter, k.KarpenterPrice)
			}
		})
	}
}

// BenchmarkCostShapes solves every shape of the cost suite. Metrics per
// solve: price/h and lowerbound/h of the plan, their ratio, the price of the
// best fixed node group of one instance type (nodegroup/h), Karpenter's
// recorded price (karpenter/h) and solve time (karpenter-s), and the solve's
// own cpu-s.
func BenchmarkCostShapes(b *testing.B) {
	rec := readRecord(b)
	shapes, err := st.Shapes()
	if err != nil {
		b.Fatal(err)
	}
	for _, s := range shapes {
		b.Run(s.Name, func(b *testing.B) {
			in := s.Input()
			var res *scheduling.Result
			var cpu time.Duration
			b.ResetTimer()
			for range b.N {
				cpu0 := cpuTime()
				r, err := scheduling.Solve(in)
				cpu += cpuTime() - cpu0
				if err != nil {
					b.Fatal(err)
				}
				res = r
			}
			b.StopTimer()
			baseline, _, err := st.NodeGroupBaseline(s)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
			b.ReportMetric(res.PricePerHour, "price/h")
			b.ReportMetric(res.LowerBoundPricePerHour, "lowerbound/h")
			b.ReportMetric(res.PricePerHour/res.LowerBoundPricePerHour, "price/lowerbound")
			b.ReportMetric(baseline, "nodegroup/h")
			if k, ok := rec.Shapes[s.Name]; ok {
				b.ReportMetric(k.KarpenterPrice, "karpenter/h")
				b.ReportMetric(k.KarpenterSeconds, "karpenter-s")
			}
		})
	}
}
