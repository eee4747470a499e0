package scale

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"runtime/metrics"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nodewright/nodewright/test/localcloud"
	"github.com/nodewright/nodewright/test/localcloud/awsfront"
)

// Pass is one function's pass, measured.
type Pass struct {
	Function string  `json:"function"` // provision, consolidation, interruption
	Pass     string  `json:"pass"`     // sweep, burst, tick, warnings
	Mode     string  `json:"mode"`     // cold (a new container), warm (the next invocation)
	WallS    float64 `json:"wallSeconds"`
	CPUS     float64 `json:"cpuSeconds"`
	// PeakHeapMiB is the Go heap's peak during the pass above the live
	// heap before it (the test process: the functions, the AWS front and
	// the driver, idle).
	PeakHeapMiB  float64 `json:"peakHeapMiB"`
	KubeRequests int64   `json:"kubeRequests"`
	KubeMiB      float64 `json:"kubeMiB"` // response bytes read
	ReadUnits    float64 `json:"readUnits"`
	WriteUnits   float64 `json:"writeUnits"`
	// Extra figures of the pass (burst latencies, messages, ...).
	Extra map[string]float64 `json:"extra,omitempty"`
}

// Key names the pass in tables and plots.
func (p Pass) Key() string { return p.Function + " " + p.Pass + " " + p.Mode }

// unitCounter is the AWS front's DynamoDB capacity units (running
// totals), computed from item sizes as DynamoDB bills them.
type unitCounter interface {
	DynamoDBUnits() (read, write float64)
}

// units finds the AWS front's counter; the benchmark fails without it.
func units(lc *localcloud.Cloud) (unitCounter, error) {
	u, ok := any(lc.AWS).(unitCounter)
	if !ok {
		return nil, fmt.Errorf("the AWS front (test/localcloud/awsfront) has no DynamoDBUnits() (read, write float64): the scale benchmark needs its DynamoDB capacity units")
	}
	return u, nil
}

// kubeCounter counts the requests of the functions' Kubernetes clients and
// the bytes of their responses, and the requests by verb and resource
// (logged with each pass: where its requests go).
type kubeCounter struct {
	reqs, bytes atomic.Int64
	by          tally
}

func (c *kubeCounter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		c.reqs.Add(1)
		c.by.add(kubeKind(r))
		resp, err := rt.RoundTrip(r)
		if resp != nil && resp.Body != nil {
			resp.Body = &countedBody{ReadCloser: resp.Body, n: &c.bytes}
		}
		return resp, err
	})
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

type countedBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// kubeKind is a request's verb and resource ("list pods", "create
// pods/eviction", "patch nodes").
func kubeKind(r *http.Request) string {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		parts = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		parts = parts[3:]
	default:
		return r.Method + " " + r.URL.Path
	}
	if len(parts) >= 3 && parts[0] == "namespaces" {
		parts = parts[2:]
	}
	verb := map[string]string{http.MethodGet: "get", http.MethodPost: "create", http.MethodPut: "update", http.MethodPatch: "patch", http.MethodDelete: "delete"}[r.Method]
	if len(parts) == 0 {
		return verb + " ?"
	}
	res := parts[0]
	if len(parts) >= 3 {
		res += "/" + parts[2]
	}
	if r.Method == http.MethodGet && len(parts) == 1 {
		verb = "list"
		if r.URL.Query().Get("watch") == "true" {
			verb = "watch"
		}
	}
	return verb + " " + res
}

// tally counts by key (safe for concurrent use).
type tally struct {
	mu sync.Mutex
	n  map[string]float64
}

func (t *tally) add(key string) { t.addN(key, 1) }

func (t *tally) addN(key string, v float64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.n == nil {
		t.n = map[string]float64{}
	}
	t.n[key] += v
}

func (t *tally) snapshot() map[string]float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	out := make(map[string]float64, len(t.n))
	for k, v := range t.n {
		out[k] = v
	}
	return out
}

// since is the counts added since before (a snapshot), largest first, as
// "key=n" strings.
func (t *tally) since(before map[string]float64) []string {
	now := t.snapshot()
	var keys []string
	for k, v := range now {
		if v-before[k] != 0 {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := now[keys[i]]-before[keys[i]], now[keys[j]]-before[keys[j]]
		if a != b {
			return a > b
		}
		return keys[i] < keys[j]
	})
	out := make([]string, len(keys))
	for i, k := range keys {
		out[i] = fmt.Sprintf("%s=%.0f", k, now[k]-before[k])
	}
	return out
}

// dynamoCalls counts the functions' DynamoDB calls by operation and the
// request bytes they send (a write's units follow its item's size).
type dynamoCalls struct{ calls, bytes tally }

func (d *dynamoCalls) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		if op, ok := strings.CutPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB_20120810."); ok {
			key := op
			if r.Body != nil {
				b, err := peekBody(r)
				if err != nil {
					return nil, err
				}
				key += " " + itemKind(b)
				d.bytes.addN(key, float64(len(b)))
			}
			d.calls.add(key)
		}
		return rt.RoundTrip(r)
	})
}

// peekBody reads a request's body and puts it back, for the transport
// below to send.
func peekBody(r *http.Request) ([]byte, error) {
	b, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	r.Body = io.NopCloser(bytes.NewReader(b))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(b)), nil }
	return b, nil
}

// itemKind is the kinds of item a DynamoDB request names: the prefixes
// of its sort keys (the state table's "nodeclaim#", "lease#", ...),
// joined by "+" when a transaction writes several.
func itemKind(body []byte) string {
	const at = `"sk":{"S":"`
	var kinds []string
	for rest := body; ; {
		i := bytes.Index(rest, []byte(at))
		if i < 0 {
			break
		}
		rest = rest[i+len(at):]
		v := rest
		if j := bytes.IndexAny(v, `#"`); j >= 0 {
			v = v[:j]
		}
		if k := string(v); !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	if len(kinds) == 0 {
		return "-"
	}
	sort.Strings(kinds)
	return strings.Join(kinds, "+")
}

// fleetCalls records when the functions call CreateFleet.
type fleetCalls struct {
	mu    sync.Mutex
	times []time.Time
}

func (f *fleetCalls) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		if r.Body != nil && r.Method == http.MethodPost {
			b, err := peekBody(r)
			if err != nil {
				return nil, err
			}
			if bytes.Contains(b, []byte("Action=CreateFleet")) {
				f.mu.Lock()
				f.times = append(f.times, time.Now())
				f.mu.Unlock()
			}
		}
		return rt.RoundTrip(r)
	})
}

func (f *fleetCalls) since(t time.Time) []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []time.Time
	for _, x := range f.times {
		if !x.Before(t) {
			out = append(out, x)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Before(out[j]) })
	return out
}

// meter measures passes.
type meter struct {
	kube   *kubeCounter
	dynamo *dynamoCalls
	units  unitCounter
	// breakdown, when set, sees each pass's requests by kind (logged).
	breakdown func(p Pass, kube, dynamoCalls, dynamoBytes []string)
}

const mib = 1 << 20

// writeUnitsByOp is the AWS front's write units (index writes included) by
// DynamoDB operation so far (none if the front does not break them down).
func (m *meter) writeUnitsByOp() map[string]float64 {
	out := map[string]float64{}
	u, ok := m.units.(interface {
		DynamoDBUsage() []awsfront.DynamoDBOpUnits
	})
	if !ok {
		return out
	}
	for _, o := range u.DynamoDBUsage() {
		out[o.Operation] = o.Write + o.IndexWrite
	}
	return out
}

// measure runs f as one pass.
func (m *meter) measure(fn, pass, mode string, f func() error) (Pass, error) {
	runtime.GC()
	base := heapNow()
	r0, w0 := m.units.DynamoDBUnits()
	q0, b0 := m.kube.reqs.Load(), m.kube.bytes.Load()
	k0 := m.kube.by.snapshot()
	u0 := m.writeUnitsByOp()
	var d0, db0 map[string]float64
	if m.dynamo != nil {
		d0, db0 = m.dynamo.calls.snapshot(), m.dynamo.bytes.snapshot()
	}
	c0 := cpuTime()
	t0 := time.Now()
	var err error
	peak := heapPeak(func() { err = f() })
	p := Pass{Function: fn, Pass: pass, Mode: mode, WallS: time.Since(t0).Seconds(), CPUS: (cpuTime() - c0).Seconds()}
	if peak > base {
		p.PeakHeapMiB = float64(peak-base) / mib
	}
	r1, w1 := m.units.DynamoDBUnits()
	p.ReadUnits, p.WriteUnits = r1-r0, w1-w0
	p.KubeRequests, p.KubeMiB = m.kube.reqs.Load()-q0, float64(m.kube.bytes.Load()-b0)/mib
	if m.breakdown != nil {
		var dc, db []string
		if m.dynamo != nil {
			dc, db = m.dynamo.calls.since(d0), m.dynamo.bytes.since(db0)
		}
		for op, w := range m.writeUnitsByOp() {
			if w -= u0[op]; w != 0 {
				dc = append(dc, fmt.Sprintf("%s WCU=%.0f", op, w))
			}
		}
		m.breakdown(p, m.kube.by.since(k0), dc, db)
	}
	if err != nil {
		return p, fmt.Errorf("%s %s (%s): %w", fn, pass, mode, err)
	}
	return p, nil
}

func heapNow() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// heapPeak samples the live heap every few milliseconds while f runs.
func heapPeak(f func()) (peak uint64) {
	stop, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			peak = max(peak, heapNow())
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
	return max(peak, heapNow())
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// percentile is the p-th percentile (0-100) of sorted durations.
func percentile(d []time.Duration, p float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	i := int(float64(len(d))*p/100+0.999999) - 1
	return d[min(max(i, 0), len(d)-1)]
}

var _ = strings.Contains
