// Package bench holds the scheduler's benchmarks: Karpenter's diverse
// workload (plain pods, zonal and hostname spread, zonal self-affinity,
// hostname anti-affinity) of 1k to 20k pods, solved against the 400 synthetic
// instance types and against the real catalog, reporting throughput, the
// plan's size and price, its lower bound and the heap the solve needs.
// `make bench` runs them and prints a summary.
package bench

import (
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/pricing"
	"github.com/nodewright/nodewright/shared/provision"
	"github.com/nodewright/nodewright/shared/scheduling"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
)

// seed fixes the workload, as Karpenter's benchmark fixes its random source.
const seed = 42

// workloads are the catalogs and NodePools the diverse pods are solved
// against: the 400 synthetic types with a pool that allows them all, and the
// real catalog with the users' production pool
// (shared/examples/nodepool-default.yaml: c/m/r, medium..8xlarge, spot and
// on-demand, three zones) and its EC2NodeClass, as it is and narrowed to
// on-demand; its limits (1000 cpu) are lifted, since the 20k workload needs
// some 13,000 cpu.
func workloads(tb testing.TB) []workload {
	synth := st.SyntheticTypes(400)
	return []workload{
		{"synthetic400", synth, st.SyntheticSpot(synth), []*apis.NodePool{st.NodePool(st.NodePoolOptions{Requirements: []apis.NodeSelectorRequirementWithMinValues{
			st.PoolReq(apis.LabelCapacityType, corev1.NodeSelectorOpIn, apis.CapacityTypeSpot, apis.CapacityTypeOnDemand),
			st.PoolReq(apis.LabelZone, corev1.NodeSelectorOpIn, st.Zones()...),
		}})}, []*apis.EC2NodeClass{st.NodeClass("default")}},
		productionPool(tb, "catalog"),
		productionPool(tb, "catalog-ondemand", apis.CapacityTypeOnDemand),
	}
}

type workload struct {
	name    string
	types   []*catalog.InstanceType
	spot    catalog.SpotPricer
	pools   []*apis.NodePool
	classes []*apis.EC2NodeClass
}

// productionPool is the production pool on the real catalog, optionally
// narrowed to some capacity types.
func productionPool(tb testing.TB, name string, capacityTypes ...string) workload {
	pools, classes, err := st.ProductionPool()
	if err != nil {
		tb.Fatal(err)
	}
	if len(capacityTypes) > 0 {
		for _, np := range pools {
			for i, r := range np.Spec.Template.Spec.Requirements {
				if r.Key == apis.LabelCapacityType {
					np.Spec.Template.Spec.Requirements[i].Values = capacityTypes
				}
			}
		}
	}
	return workload{name, catalog.Default().Types(), pricing.Model{Catalog: catalog.Default(), Seed: 0}, pools, classes}
}

// input is the workload on a cluster with no nodes.
func (w workload) input(pods []*corev1.Pod) scheduling.Input {
	return scheduling.Input{Pods: pods, NodePools: w.pools, NodeClasses: w.classes,
		InstanceTypes: w.types, Zones: st.Zones(), Spot: w.spot}
}

// BenchmarkSolveDiverse solves the diverse workload. Metrics per solve:
// pods/s (wall clock), cpu-s/op (the process's CPU time: on a shared machine
// the steadier figure), nodes (new NodeClaims), unschedulable pods, price/h and
// lowerbound/h of the plan (USD), their ratio, peak-heap-MiB (live heap
// sampled during the solve) and heap-MiB (live heap after it, the plan kept).
func BenchmarkSolveDiverse(b *testing.B) {
	for _, w := range workloads(b) {
		for _, n := range []int{1000, 5000, 10000, 20000} {
			b.Run(fmt.Sprintf("%s/pods=%d", w.name, n), func(b *testing.B) {
				benchmarkSolve(b, w.input(st.DiversePods(n, seed)))
			})
		}
	}
}

func benchmarkSolve(b *testing.B, in scheduling.Input) {
	runtime.GC()
	base := liveHeap()
	peak := startPeakSampler()
	var res *scheduling.Result
	var elapsed, cpu time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start, cpu0 := time.Now(), cpuTime()
		r, err := scheduling.Solve(in)
		elapsed, cpu = elapsed+time.Since(start), cpu+cpuTime()-cpu0
		if err != nil {
			b.Fatal(err)
		}
		res = r
	}
	b.StopTimer()
	peakBytes := peak.stop()
	runtime.GC()
	after := liveHeap()
	runtime.KeepAlive(res)

	const mib = 1 << 20
	b.ReportMetric(float64(len(in.Pods))/(elapsed.Seconds()/float64(b.N)), "pods/s")
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
	b.ReportMetric(float64(len(res.NodeClaims)), "nodes")
	b.ReportMetric(float64(len(res.Unschedulable)), "unschedulable")
	b.ReportMetric(float64(len(res.Deferred)), "deferred")
	b.ReportMetric(res.PricePerHour, "price/h")
	b.ReportMetric(res.LowerBoundPricePerHour, "lowerbound/h")
	if res.LowerBoundPricePerHour > 0 {
		b.ReportMetric(res.PricePerHour/res.LowerBoundPricePerHour, "price/lowerbound")
	}
	b.ReportMetric(float64(peakBytes-min(base, peakBytes))/mib, "peak-heap-MiB")
	b.ReportMetric(float64(after-min(base, after))/mib, "heap-MiB")
}

// heapMetric is the bytes held by live and not yet swept heap objects.
const heapMetric = "/memory/classes/heap/objects:bytes"

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func liveHeap() uint64 {
	s := []metrics.Sample{{Name: heapMetric}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// peakSampler reads the heap every millisecond (runtime/metrics does not
// stop the world) and keeps the highest value.
type peakSampler struct {
	done chan struct{}
	wg   sync.WaitGroup
	peak uint64
}

func startPeakSampler() *peakSampler {
	p := &peakSampler{done: make(chan struct{}), peak: liveHeap()}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-p.done:
				return
			case <-tick.C:
				p.peak = max(p.peak, liveHeap())
			}
		}
	}()
	return p
}

func (p *peakSampler) stop() uint64 {
	close(p.done)
	p.wg.Wait()
	return max(p.peak, liveHeap())
}

// BenchmarkSolveAtLimit solves 10,000 diverse pods against the production
// pool with its limits (1000 cpu): most pods cannot be placed, and a pool at
// its limit must say so quickly rather than try every type for every pod.
func BenchmarkSolveAtLimit(b *testing.B) {
	pools, classes, err := st.ProductionPool()
	if err != nil {
		b.Fatal(err)
	}
	for _, np := range pools {
		np.Spec.Limits = apis.Limits{corev1.ResourceCPU: resource.MustParse("1000")}
	}
	w := workload{"catalog-limited", catalog.Default().Types(), pricing.Model{Catalog: catalog.Default()}, pools, classes}
	benchmarkSolve(b, w.input(st.DiversePods(10000, seed)))
}

// BenchmarkSolveAllDistinct solves the worst case for grouping: pods that
// each carry their own label and a hostname anti-affinity to it
// (schedtest.DistinctPods), so every pod is a group of its own, on the real
// catalog with the production pool.
//
// Unbudgeted for 1,000 and 10,000 pods; 100,000 with the provision
// function's budget (provision.DefaultSolveGroups group placements), which
// places that many and defers the rest to the next round.
func BenchmarkSolveAllDistinct(b *testing.B) {
	w := productionPool(b, "catalog")
	for _, n := range []int{1000, 10000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			benchmarkSolve(b, w.input(st.DistinctPods(n, seed)))
		})
	}
	b.Run("pods=100000/budgeted", func(b *testing.B) {
		in := w.input(st.DistinctPods(100000, seed))
		in.Budget = scheduling.Budget{MaxGroups: provision.DefaultSolveGroups}
		benchmarkSolve(b, in)
	})
}

// BenchmarkSolveManyPools solves 1,000 diverse pods against the most
// NodePools a configuration may hold (apis.MaxNodePools copies of the
// production pool, each with its own weight): each pool is prepared against
// the whole catalog, which is what the cap bounds.
func BenchmarkSolveManyPools(b *testing.B) {
	w := productionPool(b, "catalog")
	base := w.pools[0]
	w.pools = nil
	for i := 0; i < apis.MaxNodePools; i++ {
		np := *base // the pools share their requirements, which a solve only reads
		np.Name = fmt.Sprintf("pool-%03d", i)
		weight := int32(i % 100)
		np.Spec.Weight = &weight
		w.pools = append(w.pools, &np)
	}
	benchmarkSolve(b, w.input(st.DiversePods(1000, seed)))
}
