package provision_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/nodewright/nodewright/shared/provision"
	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/test/harness"
)

// hintEvery is how often the pending-pod webhook hints the provision
// function at most (it coalesces hints per cluster over 10 s).
const hintEvery = 10 * time.Second

// BenchmarkScaleOut measures the provision function's answer to a
// scale-out on the local cloud, driven as on AWS: the pending-pod webhook
// hints the function as the first pod appears, and again at most once per
// 10 s while pods keep appearing; the function batches (1 s idle, 10 s at
// most), solves and launches. Figures per run:
//   - create->fleet p50/p99: a pod's creation (when a watch first sees it)
//     to the CreateFleet call for its NodeClaim (its record is written just
//     before the call), over the pods planned onto new NodeClaims (the
//     others were placed in room that earlier NodeClaims left);
//   - scale->launched: the scale command to the last NodeClaim launched;
//   - fleets: CreateFleet calls (distinct client tokens; identical
//     NodeClaims of one solve share a call);
//   - scale->running: the scale command to every pod Running;
//   - batch: the first round's batching wait, how many looks at the
//     cluster it took and their mean duration (each look is a read of the
//     cluster), and the first round's read before its solve.
//
// `make bench-e2e` runs it; the README quotes it.
func BenchmarkScaleOut(b *testing.B) {
	for _, n := range []int{100, 1000} {
		b.Run(fmt.Sprintf("pods=%d", n), func(b *testing.B) {
			for range b.N {
				scaleOut(b, n)
			}
		})
	}
}

// scaleOuts numbers the runs (each has a pool of its own).
var scaleOuts atomic.Int64

func scaleOut(b *testing.B, n int) {
	c := harness.Ctx(b)
	pool := fmt.Sprintf("lat%d-%d", n, scaleOuts.Add(1))
	suite.Pool(b, pool, nil)
	h := suite.Harness(b, harness.Options{})
	var rounds []*provision.Report
	var roundsMu sync.Mutex
	h.Provision.AfterRound = func(rep *provision.Report, _ *provision.SweepReport) {
		if rep != nil {
			roundsMu.Lock()
			rounds = append(rounds, rep)
			roundsMu.Unlock()
		}
	}
	app := pool + "app"
	w := harness.OnPool(pool, app, n, "1", "1Gi")

	seen := map[string]time.Time{}
	var mu sync.Mutex
	wctx, stop := context.WithCancel(c)
	defer stop()
	watcher, err := lc.Kube.CoreV1().Pods("default").Watch(wctx, metav1.ListOptions{LabelSelector: "app=" + app})
	if err != nil {
		b.Fatal(err)
	}
	hintErrs := make(chan error, 256)
	var hints sync.WaitGroup
	go func() {
		var last time.Time
		for ev := range watcher.ResultChan() {
			p, ok := ev.Object.(*corev1.Pod)
			if !ok || ev.Type != watch.Added {
				continue
			}
			now := time.Now()
			mu.Lock()
			if _, dup := seen[p.Name]; !dup {
				seen[p.Name] = now
			}
			mu.Unlock()
			if now.Sub(last) >= hintEvery {
				last = now
				hints.Add(1)
				go func(name string) {
					defer hints.Done()
					if err := h.Hint(c, "default", name); err != nil {
						hintErrs <- err
					}
				}(p.Name)
			}
		}
	}()

	b.ResetTimer()
	start := time.Now()
	if err := harness.Deploy(c, lc, w); err != nil {
		b.Fatal(err)
	}
	// Every pod on a launched NodeClaim, or bound to a node already up
	// (the solver places pods on room that earlier NodeClaims left).
	st, err := harness.Store(lc)
	if err != nil {
		b.Fatal(err)
	}
	var recs []*state.NodeClaim
	if err := harness.Poll(c, 3*time.Minute, fmt.Sprintf("%d pods on launched NodeClaims or nodes", n), func() (bool, string, error) {
		recs, err = harness.PoolRecords(c, st, pool)
		if err != nil {
			return false, "", err
		}
		covered := map[string]bool{}
		for _, r := range recs {
			if r.Phase != state.Launching {
				for _, p := range r.Claim.Pods {
					covered[p[strings.LastIndex(p, "/")+1:]] = true
				}
			}
		}
		pods, err := harness.Pods(c, lc, "default", app)
		if err != nil {
			return false, "", err
		}
		for _, p := range pods {
			if p.Spec.NodeName != "" {
				covered[p.Name] = true
			}
		}
		return len(covered) >= n, fmt.Sprintf("%d pods covered by %d NodeClaims and their nodes", len(covered), len(recs)), nil
	}); err != nil {
		b.Fatal(err)
	}
	if err := harness.WaitRunning(c, lc, "default", app, n, 5*time.Minute); err != nil {
		b.Fatal(err)
	}
	running := time.Since(start)
	b.StopTimer()
	stop()
	hints.Wait()
	close(hintErrs)
	for err := range hintErrs {
		b.Errorf("webhook hint: %v", err)
	}

	// Latencies: pod first seen -> its NodeClaim's record (written just
	// before CreateFleet).
	var lat []time.Duration
	groups := map[string]bool{}
	var lastLaunch time.Time
	mu.Lock()
	for _, r := range recs {
		groups[r.Group] = true
		if r.LaunchedAt.After(lastLaunch) {
			lastLaunch = r.LaunchedAt
		}
		for _, p := range r.Claim.Pods {
			name := p[strings.LastIndex(p, "/")+1:]
			if t0, ok := seen[name]; ok {
				lat = append(lat, r.CreatedAt.Sub(t0))
			}
		}
	}
	mu.Unlock()
	if len(lat) < n/2 {
		b.Fatalf("only %d of %d pods have a creation time and a NodeClaim", len(lat), n)
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	p50, p99 := lat[len(lat)/2], lat[(len(lat)*99+99)/100-1]
	b.ReportMetric(p50.Seconds(), "create->fleet-p50-s")
	b.ReportMetric(p99.Seconds(), "create->fleet-p99-s")
	b.ReportMetric(lastLaunch.Sub(start).Seconds(), "scale->launched-s")
	b.ReportMetric(float64(len(groups)), "fleets")
	b.ReportMetric(float64(len(recs)), "nodeclaims")
	b.ReportMetric(float64(len(lat)), "pods-on-new-claims")
	b.ReportMetric(running.Seconds(), "scale->running-s")
	roundsMu.Lock()
	defer roundsMu.Unlock()
	for _, rep := range rounds {
		if rep.Batch.Looks == 0 || rep.Pending == 0 {
			continue
		}
		// The first round that found pods pending.
		b.ReportMetric(rep.Batch.Waited.Seconds(), "batch-wait-s")
		b.ReportMetric(float64(rep.Batch.Looks), "batch-looks")
		b.ReportMetric(float64(rep.Batch.Looking.Milliseconds())/float64(rep.Batch.Looks), "batch-look-ms")
		b.ReportMetric(float64(rep.Read.Milliseconds()), "read-ms")
		break
	}
}

// BenchmarkColdStart measures the provision function's first invocation in
// a new container, a schedule sweep (the handler's set-up: clients and the
// role's credentials, the warm cache's first LIST of the cluster, spot
// prices; then the round and the sweep), against the next invocation in
// the same container, in-process on the local cloud.
func BenchmarkColdStart(b *testing.B) {
	for range b.N {
		h := suite.Harness(b, harness.Options{})
		c := harness.Ctx(b)
		t0 := time.Now()
		if err := h.Sweep(c); err != nil {
			b.Fatal(err)
		}
		cold := time.Since(t0)
		t1 := time.Now()
		if err := h.Sweep(c); err != nil {
			b.Fatal(err)
		}
		warm := time.Since(t1)
		b.ReportMetric(float64(cold.Milliseconds()), "cold-invocation-ms")
		b.ReportMetric(float64(warm.Milliseconds()), "warm-invocation-ms")
	}
}
