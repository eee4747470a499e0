package scale

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/nodewright/nodewright/infra/stack"
	"github.com/nodewright/nodewright/shared/metrics"
	"github.com/nodewright/nodewright/test/scale/cost"
)

var printBill = flag.Bool("print-bill", false, "print the monthly bill at the design point as markdown (for docs/benchmarks.md)")

// Steady churn at the design point (1% of 150,000 pods replaced a minute),
// as invocations a month. The schedules fix the sweeps and ticks; the rest
// are stated assumptions, each an upper end of what such a cluster sees.
const (
	sweepsPerMonth = cost.MinutesPerMonth     // the one-minute sweep
	ticksPerMonth  = cost.MinutesPerMonth / 5 // consolidation every 5 minutes
	// coldPerHour: a function's container is replaced about twice an hour
	// (Lambda recycles environments; every such start reads everything).
	coldPerHour = 2
	// hintRoundsPerMonth: a provision round per webhook hint window (10 s)
	// all month, the most the webhook's gate lets through: 1,500 pods
	// replaced a minute keep some pod pending in every window.
	hintRoundsPerMonth = 6 * cost.MinutesPerMonth
	// webhookPerMonth: one review per replaced pod that goes pending, all
	// 1,500 a minute (an upper end: most land on room the pods they
	// replace left); the gate writes at most once a window and once a
	// second while another container holds it.
	webhookPerMonth      = 1500 * cost.MinutesPerMonth
	webhookWritesPerHour = 3600
	// nodesReplacedPerHour: 1% of the nodes launched (and as many
	// terminated) an hour, consolidation's and interruption's together.
	nodesReplacedPerHour = 50
	// lifecycleWriteUnits: one record's life (create, launched,
	// registered, initialized, disrupting, terminating, delete), measured
	// by shared/state's TestLifecycleWriteUnits.
	lifecycleWriteUnits = 118
	// spotWarningsPerMonth: 2% of 5,000 spot nodes interrupted a day.
	spotWarningsPerMonth = 100 * 30
	hoursPerMonth        = 730
	// bookmarkWait is a read's wait for the API server's bookmark when no
	// pod changed (docs/benchmarks.md, Cluster reads).
	bookmarkWait = 1.2
)

// designPoint extrapolates a pass's figure to 100%: the two largest sizes
// measured give the slope (a figure that does not grow stays flat); the
// larger of that line at 100% and the largest measured figure.
func designPoint(t *testing.T, figs *Figures, key string, of func(Pass) float64) float64 {
	t.Helper()
	var xs, ys []float64
	for _, s := range figs.Sizes {
		for _, p := range s.Passes {
			if p.Key() == key {
				xs, ys = append(xs, s.Size.Percent), append(ys, of(p))
			}
		}
	}
	switch len(xs) {
	case 0:
		t.Fatalf("figures.json has no pass %q", key)
	case 1:
		return ys[0] * 100 / xs[0]
	}
	n := len(xs)
	if xs[n-1] == 100 {
		return ys[n-1]
	}
	slope := math.Max(0, (ys[n-1]-ys[n-2])/(xs[n-1]-xs[n-2]))
	return math.Max(ys[n-1], ys[n-1]+slope*(100-xs[n-1]))
}

func loadFigures(t *testing.T) *Figures {
	t.Helper()
	b, err := os.ReadFile("testdata/figures.json")
	if err != nil {
		t.Fatal(err)
	}
	var f Figures
	if err := json.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	return &f
}

// monthlyPasses are a month at the design point under steady churn, from
// the passes `make bench-scale` measured (testdata/figures.json).
func monthlyPasses(t *testing.T, figs *Figures) []cost.Pass {
	t.Helper()
	// Billed time: this machine's wall times are the local cloud's (moto,
	// etcd and the API server on the same two busy cores), so a read or
	// tick is billed its CPU time plus the wait a Lambda does see, the API
	// server's bookmark (about 1.2 s) when it reads without a hinted pod;
	// a spot warning is billed its wall time (a drain waits on evictions).
	wall := func(p Pass) float64 { return p.WallS }
	cpuPlus := func(wait float64) func(Pass) float64 { return func(p Pass) float64 { return p.CPUS + wait } }
	pass := func(fn, kind, key string, perMonth float64, perPass float64, billed func(Pass) float64) cost.Pass {
		return cost.Pass{Function: fn, Kind: kind, PerMonth: perMonth,
			BilledMillis: 1000 * designPoint(t, figs, key, billed) / perPass,
			ReadUnits:    designPoint(t, figs, key, func(p Pass) float64 { return p.ReadUnits }) / perPass,
			WriteUnits:   designPoint(t, figs, key, func(p Pass) float64 { return p.WriteUnits }) / perPass,
			LogBytes:     cost.FunctionLogBytes[fn] + cost.PlatformLogBytes}
	}
	cold := float64(coldPerHour * hoursPerMonth)
	warnings := designPoint(t, figs, "interruption warnings warm", func(p Pass) float64 { return p.Extra["messages"] })
	ps := []cost.Pass{
		pass("provision", "sweep", "provision sweep warm", sweepsPerMonth-cold, 1, cpuPlus(bookmarkWait)),
		pass("provision", "sweep, new container", "provision sweep cold", cold, 1, cpuPlus(bookmarkWait)),
		// A hint round reads as a warm sweep does, without the bookmark
		// wait (its hinted pod ends the read).
		pass("provision", "hint round", "provision sweep warm", hintRoundsPerMonth, 1, cpuPlus(0.2)),
		pass("consolidation", "tick", "consolidation tick warm", ticksPerMonth-cold, 1, cpuPlus(bookmarkWait)),
		pass("consolidation", "tick, new container", "consolidation tick cold", cold, 1, cpuPlus(bookmarkWait)),
		pass("interruption", "spot warning", "interruption warnings warm", spotWarningsPerMonth, warnings, wall),
		// Node lifecycles' record writes, and each container's reading
		// them once (three functions, a 7 KB record two read units, each
		// of the seven writes read).
		{Function: "provision", Kind: "node lifecycle", PerMonth: nodesReplacedPerHour * hoursPerMonth,
			WriteUnits: lifecycleWriteUnits, ReadUnits: 3 * 2 * 7},
		{Function: "webhook", Kind: "review", PerMonth: webhookPerMonth, BilledMillis: 20,
			WriteUnits: float64(webhookWritesPerHour*hoursPerMonth) / webhookPerMonth,
			LogBytes:   cost.FunctionLogBytes["webhook"] + cost.PlatformLogBytes},
	}
	return ps
}

func designPointBill(t *testing.T) (cost.Bill, cost.Usage, []cost.Pass) {
	figs := loadFigures(t)
	passes := monthlyPasses(t, figs)
	memory := map[string]int{}
	for fn, m := range stack.MemoryTable() {
		memory[fn] = m.SettingMB
	}
	series, err := cost.Series(append(metrics.Definitions(), metrics.KarpenterDefinitions()...), cost.DesignPointValues)
	if err != nil {
		t.Fatal(err)
	}
	u := cost.FromPasses(passes, memory, cost.Usage{
		TableGB:       5000 * 7000 / 1e9, // the records; every other item is small or expires
		CustomMetrics: series, Alarms: cost.Alarms(), Dashboards: 1,
		GetMetricDataMetrics: 8 * 30 * 40, // the dashboard opened 8 times a day, 40 metrics
		LogRetentionDays:     30,
	})
	bill, err := cost.Monthly(u, cost.USEast1)
	if err != nil {
		t.Fatal(err)
	}
	return bill, u, passes
}

// TestDesignPointBill is the hard gate on the state table: at
// 5,000 nodes and 150,000 pods under steady churn, DynamoDB costs at most
// $20 a month, computed from the units the AWS front metered in
// `make bench-scale`'s passes (testdata/figures.json) and the month's
// invocations above. -print-bill prints the bill for the docs.
func TestDesignPointBill(t *testing.T) {
	bill, u, passes := designPointBill(t)
	if d := bill.Service("DynamoDB"); d > 20 {
		t.Errorf("DynamoDB at the design point: $%.2f a month, over the $20 goal (read units %.3g, write units %.3g)", d, u.ReadUnits, u.WriteUnits)
	}
	if *printBill {
		var b strings.Builder
		b.WriteString("| function | invocation | a month | billed ms each | read units each | write units each |\n|---|---|---:|---:|---:|---:|\n")
		for _, p := range passes {
			fmt.Fprintf(&b, "| %s | %s | %.0f | %.0f | %.1f | %.1f |\n", p.Function, p.Kind, p.PerMonth, p.BilledMillis, p.ReadUnits, p.WriteUnits)
		}
		b.WriteString("\n| service | item | quantity | unit | USD a month |\n|---|---|---:|---|---:|\n")
		for _, l := range bill.Lines {
			fmt.Fprintf(&b, "| %s | %s | %.4g | %s | %.2f |\n", l.Service, l.Item, l.Quantity, l.Unit, l.USD)
		}
		fmt.Fprintf(&b, "| **total** | | | | **%.2f** |\n", bill.Total)
		fmt.Println(b.String())
	}
}

// TestDesignPointMemory is the hard gate on memory: each
// function's peak heap at the design point (measured, or extrapolated from
// the largest sizes measured) is within the peak its memory setting is
// sized from (infra/stack's MemoryTable), so the setting keeps its stated
// headroom.
func TestDesignPointMemory(t *testing.T) {
	figs := loadFigures(t)
	table := stack.MemoryTable()
	for _, tc := range []struct{ fn, key string }{
		{stack.FnProvision, "provision sweep cold"},
		{stack.FnProvision, "provision burst warm"},
		{stack.FnConsolidation, "consolidation tick cold"},
		{stack.FnInterruption, "interruption warnings cold"},
		{stack.FnInterruption, "interruption warnings warm"},
	} {
		peak := designPoint(t, figs, tc.key, func(p Pass) float64 { return p.PeakHeapMiB })
		sized := table[tc.fn]
		t.Logf("%s (%s): %.0f MiB at the design point; sized for %d MiB, setting %d MB", tc.fn, tc.key, peak, sized.PeakMiB, sized.SettingMB)
		if math.Round(peak) > float64(sized.PeakMiB) { // MiB resolution
			t.Errorf("%s: %s peaks at %.0f MiB at the design point, over the %d MiB its memory (%d MB) is sized for", tc.fn, tc.key, peak, sized.PeakMiB, sized.SettingMB)
		}
	}
}
