package scale

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/nodewright/nodewright/events"
	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/test/harness"
	"github.com/nodewright/nodewright/test/localcloud"
)

// Burst and disruption sizes of the passes.
const (
	burstPods = 1000 // the default
	// underutilized is one node in 20 (5%): 24 of its 28 app pods go.
	underutilized = 20
	keptPods      = 4
	spotWarnings  = 100
	// visibility is the queue's visibility timeout for the passes.
	visibility = 3 * time.Minute
)

// SizeFigures are one size's figures.
type SizeFigures struct {
	Size               Size    `json:"size"`
	BuildSeconds       float64 `json:"buildSeconds"`
	BuildPodsPerSecond float64 `json:"buildPodsPerSecond"` // into etcd
	APIPodsPerSecond   float64 `json:"apiPodsPerSecond"`   // through the API server, 16 clients, protobuf
	RecordsPerSecond   float64 `json:"recordsPerSecond"`
	InstancesPerSecond float64 `json:"instancesPerSecond"`
	SnapshotMiB        float64 `json:"snapshotMiB"`
	RestoreSeconds     float64 `json:"restoreSeconds"`
	Passes             []Pass  `json:"passes"`
}

// Measure runs every pass on the restored cluster (which it changes: the
// passes run in order, each on what the one before left).
// Options choose the passes.
type Options struct {
	// Interruption runs the spot warnings (the smoke run leaves them out:
	// their drains take most of a minute at any size).
	Interruption bool
	// Burst is the pending pods of the burst (0: 1,000).
	Burst int
	// Only, when set, runs only the passes of these groups ("sweep",
	// "consolidation", "interruption", "burst"): to measure one pass again
	// without the others (the -passes flag).
	Only map[string]bool
}

// runs is whether o runs the passes of group.
func (o Options) runs(group string) bool { return o.Only == nil || o.Only[group] }

// Measure runs the passes on the restored cluster.
func Measure(ctx context.Context, r *Restored, log *slog.Logger, o Options) (*SizeFigures, error) {
	if o.Burst == 0 {
		o.Burst = burstPods
	}
	lc, plan := r.LC, r.Plan
	u, err := units(lc)
	if err != nil {
		return nil, err
	}
	fig := &SizeFigures{Size: plan.Size, BuildSeconds: plan.BuildSeconds, BuildPodsPerSecond: plan.PodsPerSecond, APIPodsPerSecond: plan.APIPodsPerSec,
		RecordsPerSecond: plan.RecordsPerSec, InstancesPerSecond: plan.InstancesPerSc, SnapshotMiB: float64(r.Snapshot) / mib, RestoreSeconds: r.Took.Seconds()}
	cfg, err := deployed()
	if err != nil {
		return nil, err
	}
	m := &meter{kube: &kubeCounter{}, dynamo: &dynamoCalls{}, units: u, breakdown: func(p Pass, kube, calls, bytes []string) {
		log.Info("pass breakdown", "size", plan.Size.Name(), "pass", p.Key(), "kube", kube, "dynamoCalls", calls, "dynamoRequestBytes", bytes)
	}}
	fleets := &fleetCalls{}
	flog, err := os.Create(filepath.Join(lc.StateDir, "logs", "functions.log"))
	if err != nil {
		return nil, err
	}
	defer flog.Close()
	container := func() (*harness.Harness, error) {
		return newHarness(ctx, lc, cfg, flog, m.kube.wrap, func(rt http.RoundTripper) http.RoundTripper { return m.dynamo.wrap(fleets.wrap(rt)) })
	}
	add := func(p Pass, err error) error {
		if err != nil {
			return err
		}
		fig.Passes = append(fig.Passes, p)
		log.Info("pass", "size", plan.Size.Name(), "pass", p.Key(), "wall", fmt.Sprintf("%.2fs", p.WallS), "cpu", fmt.Sprintf("%.2fs", p.CPUS),
			"heapMiB", fmt.Sprintf("%.0f", p.PeakHeapMiB), "kubeRequests", p.KubeRequests, "kubeMiB", fmt.Sprintf("%.1f", p.KubeMiB),
			"RCU", fmt.Sprintf("%.1f", p.ReadUnits), "WCU", fmt.Sprintf("%.1f", p.WriteUnits), "extra", p.Extra)
		return nil
	}
	kc, _, err := kubeFor(lc)
	if err != nil {
		return nil, err
	}

	// Provision: the one-minute sweep with nothing changed, cold and warm.
	prov, err := container()
	if err != nil {
		return nil, err
	}
	for _, mode := range []string{"cold", "warm"} {
		if !o.runs("sweep") {
			break
		}
		if err := add(m.measure("provision", "sweep", mode, func() error { return prov.Sweep(ctx) })); err != nil {
			return nil, err
		}
	}

	// Consolidation: 5% of the nodes underutilized.
	if o.runs("consolidation") {
		if err := underutilize(ctx, lc.EtcdURL, kc, plan); err != nil {
			return nil, err
		}
	}
	cons, err := container()
	if err != nil {
		return nil, err
	}
	cons.Clock.Advance(2 * time.Minute) // past the pool's consolidateAfter
	for _, mode := range []string{"cold", "warm"} {
		if !o.runs("consolidation") {
			break
		}
		if err := add(m.measure("consolidation", "tick", mode, func() error { return cons.Tick(ctx) })); err != nil {
			return nil, err
		}
	}

	// Interruption: spot warnings, each pass to nodes of its own.
	intr, err := container()
	if err != nil {
		return nil, err
	}
	// Cold: the new container's first invocation, one batch of 10;
	// warm: 100 warnings at once (10 batches) to the same container.
	for b, mode := range []string{"cold", "warm"} {
		if !o.Interruption || !o.runs("interruption") {
			break
		}
		n := min(spotWarnings, len(plan.Nodes)/5)
		if mode == "cold" {
			n = min(10, n)
		}
		var targets []Node
		for i, nd := range plan.Nodes {
			if i%underutilized != 0 && i%5 == 1+2*b && nd.Spot && len(targets) < n {
				targets = append(targets, nd)
			}
		}
		for k, nd := range targets {
			body, err := harness.Event(events.SpotInterruptionWarning, fmt.Sprintf("scale-%s-%d", mode, k), intr.Clock.Now(), "", nd.Instance)
			if err != nil {
				return nil, err
			}
			if err := intr.Send(ctx, body); err != nil {
				return nil, err
			}
		}
		var handled, failed int
		p, err := m.measure("interruption", "warnings", mode, func() error {
			// As Lambda's event source, with a visibility timeout
			// longer than any batch takes here: a failed message comes
			// back only after it, past the pass.
			var err error
			handled, failed, err = intr.DrainQueue(ctx, visibility)
			return err
		})
		p.Extra = map[string]float64{"messages": float64(len(targets)), "handled": float64(handled), "failed": float64(failed)}
		if err == nil {
			err = purge(ctx, lc)
		}
		if err := add(p, err); err != nil {
			return nil, err
		}
	}

	// Provision: a burst of pending pods on the warm container.
	if o.runs("burst") {
		p, err := burst(ctx, m, fleets, prov, kc, o.Burst, r)
		if err := add(p, err); err != nil {
			return nil, err
		}
	}
	// The functions' log (each round's timings) outlives the cloud's
	// state directory.
	keep := filepath.Join(os.TempDir(), "nodewright-scale-"+strings.TrimSuffix(plan.Size.Name(), "%")+"pct-functions.log")
	if err := flog.Sync(); err == nil {
		if err := copyFile(flog.Name(), keep); err != nil {
			return nil, err
		}
		log.Info("functions' log", "path", keep)
	}
	return fig, nil
}

func copyFile(from, to string) error {
	b, err := os.ReadFile(from)
	if err != nil {
		return err
	}
	return os.WriteFile(to, b, 0o644)
}

// purge empties the interruption queue (the failed messages of a pass,
// which would come back into the next).
func purge(ctx context.Context, lc *localcloud.Cloud) error {
	_, err := sqs.NewFromConfig(lc.AWSConfig()).PurgeQueue(ctx, &sqs.PurgeQueueInput{QueueUrl: aws.String(lc.Seeded.QueueURL)})
	if err != nil {
		return fmt.Errorf("purge the interruption queue: %w", err)
	}
	return nil
}

// underutilize removes 24 of the 28 app pods of one node in 20, straight
// from etcd, and waits until the API server no longer serves them.
func underutilize(ctx context.Context, etcdURL string, kc kubernetes.Interface, plan *Plan) error {
	w := newEtcdWriter(etcdURL)
	var del []kv
	var last string
	for k := range len(plan.Nodes) * appPerNode {
		name, _, ni := plan.appPod(k)
		if ni%underutilized == 0 && k/len(plan.Nodes) >= keptPods {
			del = append(del, kv{key: "/registry/pods/" + appNS + "/" + name})
			last = name
		}
	}
	if err := w.writeAll(ctx, del, 4); err != nil {
		return err
	}
	return harness.Poll(ctx, time.Minute, "the underutilized nodes' pods gone", func() (bool, string, error) {
		_, err := kc.CoreV1().Pods(appNS).Get(ctx, last, metav1.GetOptions{})
		return err != nil && strings.Contains(err.Error(), "not found"), fmt.Sprint(err), nil
	})
}

// burst creates burstPods pending pods (1 CPU each, on-demand only: no node has room)
// with 16 clients, as production sees them: the webhook function served
// and registered in the API server (harness.ServeWebhook: its token, its
// DynamoDB hint gate on the state table), so that each pod kube-scheduler
// marks Unschedulable passes the gate with its resourceVersion, and an
// admitted hint invokes the provision function asynchronously (a goroutine:
// one that arrives while the lease is held asks the holder for a rerun and
// returns, as a concurrent Lambda invocation does). Once no invocation has
// run for quietFor and pods are left, it sweeps (the one-minute schedule,
// the fallback). Figures: pod created (its Create returned) -> the
// CreateFleet call that launched its NodeClaim, p50 and p99; first pod
// created -> every NodeClaim launched; CreateFleet calls; hints admitted
// (invocations); sweeps needed.
func burst(ctx context.Context, m *meter, fleets *fleetCalls, h *harness.Harness, kc kubernetes.Interface, burstPods int, r *Restored) (Pass, error) {
	st, _, err := directStore(r.LC)
	if err != nil {
		return Pass{}, err
	}
	var inv invocations
	wh, err := h.ServeWebhook(ctx, func(payload []byte) { inv.start(ctx, h, payload) })
	if err != nil {
		return Pass{}, err
	}
	defer func() {
		if err := wh.Close(context.WithoutCancel(ctx)); err != nil {
			slog.Warn("remove the webhook's registration", "error", err)
		}
	}()
	created := make([]time.Time, burstPods)
	coveredPods, sweeps := 0, 0
	var start time.Time
	p, err := m.measure("provision", "burst", "warm", func() error {
		start = time.Now()
		err := parallel(burstPods, 16, func(i int) error {
			req := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("burst-%04d", i), Namespace: appNS, Labels: map[string]string{"app": "burst"}},
				Spec: podSpec(req, "registry.example.com/burst:v1")}
			// On-demand capacity only: the cluster's nodes are spot, and the
			// room the consolidation pass left on 5% of them (about 1,000
			// CPUs at 100%) would otherwise take the burst without a launch.
			pod.Spec.NodeSelector = map[string]string{apis.LabelCapacityType: "on-demand"}
			if _, err := kc.CoreV1().Pods(appNS).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
				return err
			}
			created[i] = time.Now()
			return nil
		})
		if err != nil {
			return err
		}
		// Done when every pod is on a launched NodeClaim or bound, or
		// when a sweep (the one-minute schedule) launches nothing more:
		// the rest are planned into room of NodeClaims still in flight
		// (their nodes do not register here: no node bridge).
		before := -1
		for attempt := 0; ; {
			covered, launching, recs, err := burstCovered(ctx, st, kc)
			if err != nil {
				return err
			}
			coveredPods = len(covered)
			if coveredPods >= burstPods || (recs == before && launching == 0) {
				return inv.wait(ctx)
			}
			if !inv.quiet(quietFor) {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(200 * time.Millisecond):
				}
				continue
			}
			if err := inv.err(); err != nil {
				return err
			}
			if attempt == 3 {
				return fmt.Errorf("burst: %d of %d pods on launched NodeClaims after %d sweeps", coveredPods, burstPods, attempt)
			}
			attempt++
			before = recs
			sweeps++
			if err := h.Sweep(ctx); err != nil {
				return err
			}
		}
	})
	if err != nil {
		return p, err
	}
	recs, err := st.NodeClaims(ctx)
	if err != nil {
		return p, err
	}
	calls := fleets.since(start)
	marked, err := unschedulableMarks(ctx, kc)
	if err != nil {
		return p, err
	}
	var lat, fromMark []time.Duration
	var lastLaunch, lastMark time.Time
	for _, t := range marked {
		lastMark = maxTime(lastMark, t)
	}
	for _, rec := range recs {
		if rec.CreatedAt.Before(start) || rec.Phase == state.Launching {
			continue
		}
		lastLaunch = maxTime(lastLaunch, rec.LaunchedAt)
		i := sort.Search(len(calls), func(i int) bool { return !calls[i].Before(rec.CreatedAt) })
		if i == len(calls) {
			continue
		}
		for _, pod := range rec.Claim.Pods {
			var k int
			if _, err := fmt.Sscanf(pod, appNS+"/burst-%d", &k); err == nil && k < burstPods {
				lat = append(lat, calls[i].Sub(created[k]))
				if t, ok := marked[pod]; ok {
					fromMark = append(fromMark, calls[i].Sub(t))
				}
			}
		}
	}
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	slices.Sort(fromMark)
	p.Extra = map[string]float64{
		"createToFleetP50s": percentile(lat, 50).Seconds(), "createToFleetP99s": percentile(lat, 99).Seconds(),
		"markToFleetP50s": percentile(fromMark, 50).Seconds(), "markToFleetP99s": percentile(fromMark, 99).Seconds(), "firstCreatedToLastMarkS": lastMark.Sub(created[0]).Seconds(),
		"pods": float64(burstPods), "firstCreatedToLaunchedS": lastLaunch.Sub(created[0]).Seconds(), "createFleetCalls": float64(len(calls)), "podsTimed": float64(len(lat)), "podsCovered": float64(coveredPods),
		"hints": float64(inv.count()), "webhookRequests": float64(wh.Requests()), "sweeps": float64(sweeps),
	}
	return p, nil
}

// unschedulableMarks is when kube-scheduler marked each burst pod
// Unschedulable (namespace/name: its PodScheduled condition's transition,
// which the API server stamps to the second: a pod marked late in its
// second counts up to a second early).
func unschedulableMarks(ctx context.Context, kc kubernetes.Interface) (map[string]time.Time, error) {
	pods, err := kc.CoreV1().Pods(appNS).List(ctx, metav1.ListOptions{LabelSelector: "app=burst"})
	if err != nil {
		return nil, fmt.Errorf("burst pods: %w", err)
	}
	out := map[string]time.Time{}
	for _, p := range pods.Items {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Reason == corev1.PodReasonUnschedulable {
				out[p.Namespace+"/"+p.Name] = c.LastTransitionTime.Time
			}
		}
	}
	return out, nil
}

// quietFor is how long the burst waits with no provision invocation
// running before it takes the pods left for the sweep's.
const quietFor = 3 * time.Second

// invocations are the provision function's asynchronous invocations the
// webhook made.
type invocations struct {
	mu      sync.Mutex
	running int
	n       int
	last    time.Time // when the last one ended (or started)
	errs    []error
}

func (v *invocations) start(ctx context.Context, h *harness.Harness, payload []byte) {
	v.mu.Lock()
	v.running++
	v.n++
	v.last = time.Now()
	v.mu.Unlock()
	go func() {
		err := h.Invoke(ctx, payload)
		v.mu.Lock()
		defer v.mu.Unlock()
		v.running--
		v.last = time.Now()
		if err != nil {
			v.errs = append(v.errs, err)
		}
	}()
}

// quiet says whether none has run for d.
func (v *invocations) quiet(d time.Duration) bool {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.running == 0 && time.Since(v.last) >= d
}

func (v *invocations) count() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.n
}

func (v *invocations) err() error {
	v.mu.Lock()
	defer v.mu.Unlock()
	return errors.Join(v.errs...)
}

// wait waits for those running and returns their errors.
func (v *invocations) wait(ctx context.Context) error {
	for !v.quiet(0) {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
	return v.err()
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// burstCovered is the burst pods on launched NodeClaims (read straight
// from moto: the driver's reads are not the functions') or bound to a node
// that had room (the underutilized ones).
func burstCovered(ctx context.Context, st *state.Store, kc kubernetes.Interface) (covered map[string]bool, launching, records int, err error) {
	recs, err := st.NodeClaims(ctx)
	if err != nil {
		return nil, 0, 0, err
	}
	covered = map[string]bool{}
	pods, err := kc.CoreV1().Pods(appNS).List(ctx, metav1.ListOptions{LabelSelector: "app=burst"})
	if err != nil {
		return nil, 0, 0, err
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName != "" {
			covered[appNS+"/"+p.Name] = true
		}
	}
	for _, rec := range recs {
		if rec.Phase == state.Launching {
			launching++
			continue
		}
		for _, p := range rec.Claim.Pods {
			if strings.HasPrefix(p, appNS+"/burst-") {
				covered[p] = true
			}
		}
	}
	return covered, launching, len(recs), nil
}
