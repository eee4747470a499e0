package disruption

import (
	"flag"
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// convergeFor bounds each size's convergence run on the wall clock.
var convergeFor = 30 * time.Minute

func init() {
	flag.DurationVar(&convergeFor, "converge-for", convergeFor, "BenchmarkConsolidationConvergence: the most wall time each size's run takes")
}

// scaleSizes are the fractions of the design point the benchmarks run at.
var scaleSizes = []float64{0.02, 0.10, 0.30, 1}

// usage is what a piece of work cost: wall time, the process's CPU time,
// the live heap before it (after a collection) and its peak during it.
type usage struct {
	wall, cpu      time.Duration
	before, peakMB float64
}

// measure runs f and samples the live heap every millisecond meanwhile.
func measure(f func()) usage {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	before := read()
	var peak atomic.Uint64
	peak.Store(before)
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				if h := read(); h > peak.Load() {
					peak.Store(h)
				}
			}
		}
	}()
	cpu0, t0 := cpuTime(), time.Now()
	f()
	u := usage{wall: time.Since(t0), cpu: cpuTime() - cpu0}
	close(done)
	<-stopped
	if h := read(); h > peak.Load() {
		peak.Store(h)
	}
	u.before, u.peakMB = float64(before)/(1<<20), float64(peak.Load())/(1<<20)
	return u
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func sizeName(f float64) string { return fmt.Sprintf("%g%%", f*100) }

// BenchmarkConsolidationScale measures one consolidation decision (a
// tick's Decide) at 2%, 10%, 30% and 100% of 5,000 nodes and 150,000 pods
// (newScaleModel): "underutilized", 5% of the nodes left with three pods
// (issue 22's tick), and "packed", the cluster as provision launched it,
// where nothing can be done and single-node simulates candidates until
// the work budget (5,000 solves, 5 minutes) stops it. Run with
// -benchtime=1x; the heap figures are the live heap with the cluster
// read (before) and its peak during the decision.
func BenchmarkConsolidationScale(b *testing.B) {
	for _, f := range scaleSizes {
		for _, scenario := range []string{"underutilized", "packed"} {
			b.Run(sizeName(f)+"/"+scenario, func(b *testing.B) {
				m := newScaleModel(b, f)
				if scenario == "underutilized" {
					m.underuse()
				}
				in := m.inputs()
				b.ResetTimer()
				for range b.N {
					var cmds []Command
					var rep Report
					u := measure(func() { cmds, rep = Decide(in) })
					decided, method, repl := 0, Method("none"), 0
					if len(cmds) > 0 {
						decided, method, repl = len(cmds[0].Nodes), cmds[0].Method, len(cmds[0].Replacements)
					}
					b.ReportMetric(float64(len(in.Nodes)), "nodes")
					b.ReportMetric(float64(len(in.Pods)), "pods")
					b.ReportMetric(float64(rep.Candidates), "candidates")
					b.ReportMetric(float64(rep.Solves), "solves")
					b.ReportMetric(float64(len(rep.Rejected)), "rejected")
					b.ReportMetric(float64(len(rep.Unreached)), "unreached")
					b.ReportMetric(float64(decided), "decided-nodes")
					b.ReportMetric(u.cpu.Seconds(), "cpu-s")
					b.ReportMetric(u.before, "heap-before-MB")
					b.ReportMetric(u.peakMB, "heap-peak-MB")
					b.Logf("%s %s: %d nodes, %d pods: %d candidates, %d solves, %d rejected, %d unreached (budget %q); %s of %d nodes, %d replacements; wall %s, cpu %s, heap %.0f MB -> peak %.0f MB",
						sizeName(f), scenario, len(in.Nodes), len(in.Pods), rep.Candidates, rep.Solves, len(rep.Rejected), len(rep.Unreached), rep.BudgetSpent,
						method, decided, repl, u.wall.Round(time.Millisecond), u.cpu.Round(time.Millisecond), u.before, u.peakMB)
				}
			})
		}
	}
}

// BenchmarkConsolidationConvergence is issue 22's convergence run: the
// cluster at each size, then half of every Deployment's replicas removed,
// then ticks (decide, carry out the first command, clock on by
// scaleTickEvery) until one decides nothing, 200 have run or convergeFor
// has passed (-converge-for). It logs each
// tick's price, lower bound and their ratio, and reports the ticks it took
// to come within 1.10x of the bound (-1: never) and the ratio it ended at.
func BenchmarkConsolidationConvergence(b *testing.B) {
	for _, f := range scaleSizes {
		b.Run(sizeName(f), func(b *testing.B) {
			for range b.N {
				b.StopTimer()
				m := newScaleModel(b, f)
				bound0, plan0 := m.lowerBound(b)
				fmt.Printf("%s built: %d nodes, %d pods, %d Deployments: $%.2f/h, lower bound $%.2f/h (%.3fx), a fresh plan $%.2f/h (%.3fx)\n",
					sizeName(f), len(m.nodes), len(m.pods), len(m.deps), m.price(), bound0, m.price()/bound0, plan0, plan0/bound0)
				m.scaleDown()
				bound, plan := m.lowerBound(b)
				fmt.Printf("%s scaled down: %d pods on %d nodes: $%.2f/h, lower bound $%.2f/h (%.3fx), a fresh plan $%.2f/h (%.3fx)\n", sizeName(f),
					len(m.pods), len(m.nodes), m.price(), bound, m.price()/bound, plan, plan/bound)
				b.StartTimer()
				m.until = time.Now().Add(convergeFor)
				// Each tick's line is printed as it ends (a run at 100% takes
				// minutes; b.Logf would hold them to the end).
				ticks := m.converge(b, 200, func(i int, t scaleTick) {
					fmt.Printf("%s tick %3d: %-11s %3d nodes -> %d replacements; %4d candidates, %4d solves %-8s wall %7s; %5d nodes, $%9.2f/h, bound $%9.2f/h, ratio %.3f\n",
						sizeName(f), i, t.Method, t.Nodes, t.Replacements, t.Candidates, t.Solves, t.BudgetSpent, t.Wall.Round(time.Millisecond), t.ClusterNodes, t.Price, t.LowerBound, t.Ratio)
				})
				within := -1
				for i, t := range ticks {
					if within < 0 && t.Ratio <= 1.10 {
						within = i + 1
					}
				}
				last := ticks[len(ticks)-1]
				b.ReportMetric(float64(within), "ticks-to-1.10x")
				b.ReportMetric(float64(len(ticks)), "ticks")
				b.ReportMetric(last.Ratio, "final-ratio")
				b.ReportMetric(last.Plan/last.LowerBound, "fresh-plan-ratio")
			}
		})
	}
}
