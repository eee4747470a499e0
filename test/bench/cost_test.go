package bench

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodewright/nodewright/shared/scheduling"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
)

// karpenterRecord is what `make bench-karpenter` (the test/karpenter module)
// records of Karpenter's plans for the cost suite's shapes.
const karpenterRecord = "testdata/karpenter.json"

type record struct {
	Karpenter string `json:"karpenter"`
	// Catalog is the catalog fingerprint the shapes were recorded with.
	Catalog string `json:"catalog"`
	Shapes  map[string]struct {
		// Fingerprint is the shape's input when it was recorded.
		Fingerprint      string  `json:"fingerprint"`
		KarpenterPrice   float64 `json:"karpenterPrice"`
		KarpenterSeconds float64 `json:"karpenterSeconds"`
	} `json:"shapes"`
}

// recorded returns Karpenter's figures for shape s, failing the test with
// what to do when the record cannot be used for it (see check).
func (r record) recorded(tb testing.TB, s st.Shape) (price, seconds float64) {
	tb.Helper()
	if err := r.check(s); err != nil {
		tb.Fatal(err)
	}
	k := r.Shapes[s.Name]
	return k.KarpenterPrice, k.KarpenterSeconds
}

// check says why the record cannot be used for shape s: it lacks the shape,
// or was made from another input (the shape's pods, DaemonSets or pool, or
// the catalog's types or prices, changed since).
func (r record) check(s st.Shape) error {
	k, ok := r.Shapes[s.Name]
	switch {
	case !ok:
		return fmt.Errorf("shape %s is not in %s: the suite changed since it was recorded (run make bench-karpenter)", s.Name, karpenterRecord)
	case k.Fingerprint != s.Fingerprint():
		return fmt.Errorf("shape %s changed since %s was recorded (its pods, DaemonSets or pool: fingerprint %s, recorded %q): run make bench-karpenter",
			s.Name, karpenterRecord, s.Fingerprint(), k.Fingerprint)
	case r.Catalog != s.CatalogFingerprint():
		return fmt.Errorf("the catalog (instance types or prices) changed since %s was recorded (fingerprint %s, recorded %q): run make bench-karpenter",
			karpenterRecord, s.CatalogFingerprint(), r.Catalog)
	}
	return nil
}

// TestRecordRefusesChangedShapes: the record serves a shape only as it was
// recorded: another request, another pool requirement, another price or a
// shape it lacks is refused, with what to do.
func TestRecordRefusesChangedShapes(t *testing.T) {
	rec := readRecord(t)
	shapes, err := st.Shapes()
	if err != nil {
		t.Fatal(err)
	}
	s := shapes[0]
	if err := rec.check(s); err != nil {
		t.Fatalf("the recorded shape itself: %v", err)
	}
	fresh := func() st.Shape {
		w := st.ShapeWorkloads()[0]
		c, err := st.NewShape(w, s.Pool, s.Spot)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	pods := fresh()
	pods.Pods[0].Spec.Containers[0].Resources.Requests[corev1.ResourceCPU] = resource.MustParse("101m")
	pool := fresh()
	pool.NodePools[0].Spec.Template.Spec.Requirements = pool.NodePools[0].Spec.Template.Spec.Requirements[1:]
	price := fresh()
	price.Types = slices.Clone(price.Types)
	it := *price.Types[0]
	it.OnDemandPrice *= 1.01
	price.Types[0] = &it
	renamed := fresh()
	renamed.Name = "not-a-shape/production-ondemand"
	for name, tc := range map[string]struct {
		shape st.Shape
		want  string
	}{
		"a pod's request": {pods, "changed since"}, "the pool": {pool, "changed since"},
		"a price": {price, "the catalog"}, "a shape not recorded": {renamed, "is not in"},
	} {
		err := rec.check(tc.shape)
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "make bench-karpenter") {
			t.Errorf("%s changed: %v, want an error saying %q and what to run", name, err, tc.want)
		}
	}
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
// which runs Karpenter at the version it names). Each recorded shape carries
// its input's fingerprint, and the record the catalog's: a shape missing,
// or one whose pods, pool, types or prices changed since, fails with what
// to do (make the record again).
func TestCostAgainstKarpenter(t *testing.T) {
	rec := readRecord(t)
	shapes, err := st.Shapes()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range shapes {
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel()
			karpenter, _ := rec.recorded(t, s)
			r, err := scheduling.Solve(s.Input())
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Unschedulable) > 0 || r.PricePerHour > karpenter+1e-6 {
				t.Errorf("Nodewright %.4f/h (%d pods unschedulable), Karpenter %s %.4f/h", r.PricePerHour, len(r.Unschedulable), rec.Karpenter, karpenter)
			}
		})
	}
}

// BenchmarkCostShapes solves every shape of the cost suite. Metrics per
// solve: the plan's price and lower bound, the price of the best fixed node
// group of one instance type and Karpenter's recorded price, each in
// micro-dollars per hour (u$/h: go test prints a metric to four significant
// digits, and the summary must not round one price below another), the
// plan's price over its bound, Karpenter's solve time (karpenter-s) and the
// solve's own cpu-s.
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
			karpenter, karpenterSeconds := rec.recorded(b, s)
			micro := func(usd float64) float64 { return math.Round(usd * 1e6) }
			b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
			b.ReportMetric(micro(res.PricePerHour), "price-u$/h")
			b.ReportMetric(micro(res.LowerBoundPricePerHour), "lowerbound-u$/h")
			b.ReportMetric(res.PricePerHour/res.LowerBoundPricePerHour, "price/lowerbound")
			b.ReportMetric(micro(baseline), "nodegroup-u$/h")
			b.ReportMetric(micro(karpenter), "karpenter-u$/h")
			b.ReportMetric(karpenterSeconds, "karpenter-s")
		})
	}
}
