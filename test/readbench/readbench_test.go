// Package readbench measures the provision function's read of the cluster
// (shared/kube's Cache) on the local cloud at 1,000, 10,000 and 50,000 pods:
// cold (a new container's first Sync: a full paginated list, decoded and
// trimmed one pod at a time) and warm (the next invocation's Sync: a watch
// from the last revision to a barrier), the warm one four ways: idle
// (nothing in the cluster changed since the last read), quiet (pods
// unchanged while a Lease-like object is renewed every 100 ms, as kubelets
// keep a cluster's revision moving), churn (50 pod updates a second) and
// hinted (quiet, but one pod changed and the trigger names it, as a webhook
// hint or an audit event does: Cache.Expect). It reports the time per read,
// the process's CPU time per read (steadier on a shared machine), the peak Go
// heap during the read and the heap the cache keeps, and logs the rate at
// which it created the pods.
//
//	make bench-read      # or: go test -run '^$' -bench . -benchtime 3x -timeout 60m ./test/readbench
//
// NODEWRIGHT_READBENCH_SIZES overrides the sizes (comma-separated, e.g.
// 50000,100000,150000: creating 150,000 pods takes about ten minutes here).
// NODEWRIGHT_READBENCH_PROFILE names a directory for a CPU and a heap
// profile of each size's first cold read (cold-<pods>.cpu.pprof, .heap.pprof).
package readbench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/nodewright/nodewright/shared/kube"
	"github.com/nodewright/nodewright/test/localcloud"
)

func sizes() []int {
	s := os.Getenv("NODEWRIGHT_READBENCH_SIZES")
	if s == "" {
		return []int{1000, 10000, 50000}
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err == nil && n > 0 {
			out = append(out, n)
		}
	}
	return out
}

// lastApplied stands for the kubectl.kubernetes.io/last-applied-configuration
// annotation most Deployments' pods do not have but many other objects do;
// with it and the environment, a pod is about 2.5 KB of protobuf, as the
// pods of the 50,000-pod measurement (124 MB).
var lastApplied = strings.Repeat(`{"apiVersion":"v1","kind":"Pod","metadata":{"labels":{"app":"web"}},"spec":{}}`, 8)

// pod is a realistic pending pod: labels, annotations, two containers with
// requests, limits, environment, ports, probes and volume mounts,
// tolerations, a zone spread and node affinity. schedulerName "nobody" keeps
// kube-scheduler from touching it, so the cluster stays quiet unless the
// benchmark writes.
func pod(i int) *corev1.Pod {
	app := fmt.Sprintf("app-%d", i%200)
	env := make([]corev1.EnvVar, 12)
	for j := range env {
		env[j] = corev1.EnvVar{Name: fmt.Sprintf("SETTING_%d", j), Value: fmt.Sprintf("value-%d-%d", i, j)}
	}
	c := corev1.Container{
		Name: "main", Image: "registry.example.com/team/" + app + ":v1.2.3", Env: env,
		Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
		},
		VolumeMounts:   []corev1.VolumeMount{{Name: "config", MountPath: "/etc/app"}, {Name: "cache", MountPath: "/var/cache/app"}},
		ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}}},
	}
	sidecar := corev1.Container{Name: "proxy", Image: "registry.example.com/proxy:v2", Env: env[:4],
		Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")}}}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("%s-%07d", app, i), Namespace: "bench",
			Labels: map[string]string{"app": app, "team": fmt.Sprintf("team-%d", i%17), "pod-template-hash": "5d8f7c9b4", "tier": "backend"},
			Annotations: map[string]string{
				"kubectl.kubernetes.io/last-applied-configuration": lastApplied,
				"prometheus.io/scrape":                             "true", "prometheus.io/port": "9090",
			},
		},
		Spec: corev1.PodSpec{
			SchedulerName: "nobody",
			Containers:    []corev1.Container{c, sidecar},
			Volumes: []corev1.Volume{
				{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: app}}}},
				{Name: "cache", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
			},
			Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "backend", Effect: corev1.TaintEffectNoSchedule}},
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
				WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}}},
			Affinity: &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
				NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: "kubernetes.io/arch", Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64", "arm64"}}}}}}}},
		},
	}
}

// creators is how many pods fill creates at once: the API server's
// admission and etcd's commits overlap across requests.
const creators = 48

// fill creates pods up to n in the bench namespace, with parallel writers
// (kc speaks protobuf, the API server's cheapest encoding).
func fill(b *testing.B, kc kubernetes.Interface, from, to int) {
	b.Helper()
	start := time.Now()
	var next atomic.Int64
	next.Store(int64(from))
	var wg sync.WaitGroup
	errs := make(chan error, creators)
	for w := 0; w < creators; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= to {
					return
				}
				if _, err := kc.CoreV1().Pods("bench").Create(context.Background(), pod(i), metav1.CreateOptions{}); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatalf("create pods: %v", err)
	}
	took := time.Since(start)
	// Printed, not logged: a parent benchmark's log does not reach the output.
	fmt.Printf("created pods %d..%d in %s: %.0f pods/s\n", from, to, took.Round(time.Millisecond), float64(to-from)/took.Seconds())
}

// podLists reads the API server's count of pod lists it served from its
// watch cache and of those it sent to etcd.
func podLists(b *testing.B, kc kubernetes.Interface) (cache, etcd float64) {
	raw, err := kc.CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		b.Fatalf("API server metrics: %v", err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		name, rest, ok := strings.Cut(line, "{")
		if !ok || !strings.Contains(rest, `group="",`) || !strings.Contains(rest, `resource="pods"`) {
			continue
		}
		labels, value, _ := strings.Cut(rest, "} ")
		v, err := strconv.ParseFloat(strings.TrimSpace(value), 64)
		if err != nil {
			continue
		}
		switch {
		case name == "apiserver_cache_list_total":
			cache += v
		case name == "etcd_requests_total" && strings.Contains(labels, `operation="list"`):
			etcd += v
		}
	}
	return cache, etcd
}

// heapPeak samples the live heap every few milliseconds while f runs.
func heapPeak(f func()) (peak uint64) {
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(2 * time.Millisecond)
		defer t.Stop()
		for {
			metrics.Read(sample)
			peak = max(peak, sample[0].Value.Uint64())
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	f()
	close(stop)
	<-done
	metrics.Read(sample)
	return max(peak, sample[0].Value.Uint64())
}

func liveHeap() uint64 {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(sample)
	return sample[0].Value.Uint64()
}

const mib = 1 << 20

// above is a-b, or 0 (the heap may shrink while a read runs).
func above(a, b uint64) uint64 {
	if a < b {
		return 0
	}
	return a - b
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// once makes a stop safe to call twice (a sub-benchmark's own call and its
// Cleanup's, which covers a Fatal on the way).
func once(stop func() int) func() int {
	var o sync.Once
	var n int
	return func() int { o.Do(func() { n = stop() }); return n }
}

// leases renews a Lease every 100 ms until stopped, as kubelets keep a
// cluster's revision moving while its pods stay unchanged.
func leases(kc kubernetes.Interface) (stop func() int) {
	ctx := context.Background() // not cancelled: a write in flight finishes
	stopping := make(chan struct{})
	var count atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-stopping:
				return
			case <-t.C:
			}
			patch := fmt.Sprintf(`{"data":{"renewed":"%d"}}`, i)
			if _, err := kc.CoreV1().ConfigMaps("bench").Patch(ctx, "lease", types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err == nil {
				count.Add(1)
			}
		}
	}()
	return func() int { close(stopping); <-done; return int(count.Load()) }
}

// churn updates pods' labels at rate per second until stopped, as kubelets
// and controllers keep a large cluster's pods changing.
func churn(kc kubernetes.Interface, n, rate int) (stop func() int) {
	ctx := context.Background() // not cancelled: a write in flight finishes
	stopping := make(chan struct{})
	var count atomic.Int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(time.Second / time.Duration(rate))
		defer t.Stop()
		for i := 0; ; i++ {
			select {
			case <-stopping:
				return
			case <-t.C:
			}
			p := pod(i % n)
			patch := fmt.Sprintf(`{"metadata":{"labels":{"revision":"r%d"}}}`, i)
			if _, err := kc.CoreV1().Pods("bench").Patch(ctx, p.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err == nil {
				count.Add(1)
			}
		}
	}()
	return func() int { close(stopping); <-done; return int(count.Load()) }
}

func BenchmarkRead(b *testing.B) {
	lc := localcloud.StartForTest(b, localcloud.Options{})
	admin := rest.CopyConfig(lc.REST)
	admin.QPS, admin.Burst = 2000, 4000
	admin.ContentType = kruntime.ContentTypeProtobuf
	admin.AcceptContentTypes = kruntime.ContentTypeProtobuf + "," + kruntime.ContentTypeJSON
	kc, err := kubernetes.NewForConfig(admin)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := kc.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	if _, err := kc.CoreV1().ConfigMaps("bench").Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "lease"}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	fn := *rest.CopyConfig(lc.REST)
	fn.DisableCompression = true // as eksauth configures the functions' client,
	fn.QPS, fn.Burst = 50, 100   // with its client rate limits
	client, err := kube.New(&fn)
	if err != nil {
		b.Fatal(err)
	}
	have := 0
	for _, n := range sizes() {
		fill(b, kc, have, n)
		have = n
		ctx := context.Background()
		cold := func(pageSize int, profile string) func(b *testing.B) {
			return func(b *testing.B) {
				var peak, kept uint64
				var cpu time.Duration
				var fromCache, fromEtcd float64
				for i := 0; i < b.N; i++ {
					c := kube.NewCache(client, kube.CacheOptions{PageSize: pageSize})
					b.StopTimer() // the collections that measure the heap are not the read's
					base := liveHeap()
					stopProfile := startProfile(b, profile, i)
					cache0, etcd0 := podLists(b, kc)
					b.StartTimer()
					var v *kube.View
					cpu0 := cpuTime()
					peak = max(peak, above(heapPeak(func() {
						if v, err = c.Sync(ctx); err != nil {
							b.Fatal(err)
						}
					}), base))
					cpu += cpuTime() - cpu0
					b.StopTimer()
					stopProfile()
					cache1, etcd1 := podLists(b, kc)
					fromCache += cache1 - cache0
					fromEtcd += etcd1 - etcd0
					if len(v.Pods) < n {
						b.Fatalf("read %d pods, want %d", len(v.Pods), n)
					}
					kept = above(liveHeap(), base)
					runtime.KeepAlive(c)
					b.StartTimer()
				}
				b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
				b.ReportMetric(float64(peak)/mib, "peak-MiB")
				b.ReportMetric(float64(kept)/mib, "cache-MiB")
				// Requests for pod lists (pages included) the API server
				// served from its watch cache and from etcd, per read.
				b.ReportMetric(fromCache/float64(b.N), "lists-from-cache")
				b.ReportMetric(fromEtcd/float64(b.N), "lists-from-etcd")
			}
		}
		b.Run(fmt.Sprintf("pods=%d/cold", n), cold(0, fmt.Sprintf("cold-%d", n)))
		b.Run(fmt.Sprintf("pods=%d/cold-page500", n), cold(500, ""))
		warm := kube.NewCache(client, kube.CacheOptions{})
		if _, err := warm.Sync(ctx); err != nil {
			b.Fatal(err)
		}
		for _, mode := range []string{"idle", "quiet", "churn", "hinted"} {
			b.Run(fmt.Sprintf("pods=%d/warm-%s", n, mode), func(b *testing.B) {
				stop := func() int { return 0 }
				switch mode {
				case "quiet", "hinted":
					stop = leases(kc)
				case "churn":
					stop = churn(kc, n, 50)
				}
				stop = once(stop)
				b.Cleanup(func() { stop() })
				time.Sleep(200 * time.Millisecond)
				var peak uint64
				var cpu, slowest time.Duration
				hinted := 0
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					b.StopTimer()
					base := liveHeap()
					if mode == "hinted" {
						// The trigger's pod: one changed pod, named (as an
						// audit event names it, without its revision).
						name := pod((i * 7919) % n).Name
						// (a value never used before: a patch that changes
						// nothing writes no revision)
						patch := fmt.Sprintf(`{"metadata":{"labels":{"hinted":"h%d"}}}`, time.Now().UnixNano())
						if _, err := kc.CoreV1().Pods("bench").Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
							b.Fatal(err)
						}
						// Then another object changes, as a Lease renewal
						// does: the barrier is past the pod's change.
						renew := fmt.Sprintf(`{"data":{"hinted":"h%d"}}`, time.Now().UnixNano())
						if _, err := kc.CoreV1().ConfigMaps("bench").Patch(ctx, "lease", types.MergePatchType, []byte(renew), metav1.PatchOptions{}); err != nil {
							b.Fatal(err)
						}
						warm.Expect([]kube.PodHint{{Namespace: "bench", Name: name}})
					}
					b.StartTimer()
					cpu0, t0 := cpuTime(), time.Now()
					peak = max(peak, above(heapPeak(func() {
						v, err := warm.Sync(ctx)
						if err != nil {
							b.Fatal(err)
						}
						if len(v.Pods) < n {
							b.Fatalf("read %d pods, want %d", len(v.Pods), n)
						}
						if st := v.Stats.Resources["pods"]; mode == "hinted" {
							if st.Mode != "watch" {
								b.Fatalf("hinted read: pods %+v", st)
							}
							if st.Hinted {
								hinted++
							}
						}
					}), base))
					cpu += cpuTime() - cpu0
					slowest = max(slowest, time.Since(t0))
				}
				b.StopTimer()
				warm.Expect(nil)
				b.ReportMetric(float64(slowest.Milliseconds()), "slowest-ms")
				if mode == "hinted" {
					// Reads whose pods ended on the hinted pod, short of the
					// barrier (the others reached it first).
					b.ReportMetric(float64(hinted), "hinted-reads")
				}
				b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
				b.ReportMetric(float64(peak)/mib, "peak-MiB")
				if updates := stop(); mode != "idle" {
					b.ReportMetric(float64(updates), "updates")
				}
			})
		}
	}
}

// startProfile starts a CPU profile of the read when
// NODEWRIGHT_READBENCH_PROFILE names a directory (the first iteration
// only); the returned stop ends it and writes a heap profile.
func startProfile(b *testing.B, name string, i int) (stop func()) {
	dir := os.Getenv("NODEWRIGHT_READBENCH_PROFILE")
	if dir == "" || name == "" || i > 0 {
		return func() {}
	}
	f, err := os.Create(filepath.Join(dir, name+".cpu.pprof"))
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			b.Fatal(err)
		}
		h, err := os.Create(filepath.Join(dir, name+".heap.pprof"))
		if err != nil {
			b.Fatal(err)
		}
		defer h.Close()
		if err := pprof.Lookup("allocs").WriteTo(h, 0); err != nil {
			b.Fatal(err)
		}
	}
}
