// Package player plays a scenario (package scenario) on the local cloud the
// way AWS runs Nodewright, with the same handler code as in Lambda
// (package harness): kube-scheduler's Unschedulable verdicts reach the
// provision function through the pending-pod webhook (served over HTTPS
// and registered in the API server as the stack's
// ValidatingWebhookConfiguration; its hint invokes provision
// asynchronously) and as CloudWatch Logs subscription batches of the
// audit log, the provision sweep and the consolidation timer are
// tickers (consolidation sees the functions' clock, which the scenario's
// advance steps move on), and the interruption queue, fed by the AWS
// front's EventBridge-shaped events, is handed to the interruption
// function in SQS batch form. While it plays it observes the cluster and
// the state table, and in the end it returns the report (package report).
package player

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/podstate"
	"github.com/nodewright/nodewright/shared/provision"
	"github.com/nodewright/nodewright/shared/refdata"
	"github.com/nodewright/nodewright/shared/webhookconfig"
	"github.com/nodewright/nodewright/test/harness"
	"github.com/nodewright/nodewright/test/localcloud"
	"github.com/nodewright/nodewright/test/localcloud/awsfront"
	"github.com/nodewright/nodewright/test/localcloud/cloudfault"
	"github.com/nodewright/nodewright/test/report"
	"github.com/nodewright/nodewright/test/run"
	"github.com/nodewright/nodewright/test/scenario"
)

// Options tune how a scenario is played.
type Options struct {
	// Progress receives the live progress lines (nil: none).
	Progress *run.Progress
	// Log receives every function's JSON log (nil: discarded).
	Log io.Writer
	// SweepEvery is the provision schedule's period (EventBridge: a
	// minute; default 15 s here, so that a short scenario sees sweeps).
	SweepEvery time.Duration
	// TickEvery is the consolidation timer's period (default 5 s).
	TickEvery time.Duration
	// DrainEvery is how often the interruption queue is polled (Lambda's
	// event source mapping long-polls; default 1 s).
	DrainEvery time.Duration
	// SampleEvery is how often the observer samples (default 500 ms).
	SampleEvery time.Duration
	// HintWindow gathers Unschedulable pods into one audit-log batch, as
	// a subscription filter delivers them (default 1 s).
	HintWindow time.Duration
	// ValidationWait is consolidation's wait before it acts (default 3 s;
	// 15 s in Lambda).
	ValidationWait time.Duration
}

func (o *Options) defaults() {
	if o.Progress == nil {
		o.Progress = run.NewProgress(io.Discard, time.Now)
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	set := func(d *time.Duration, v time.Duration) {
		if *d <= 0 {
			*d = v
		}
	}
	set(&o.SweepEvery, 15*time.Second)
	set(&o.TickEvery, 5*time.Second)
	set(&o.DrainEvery, time.Second)
	set(&o.SampleEvery, 500*time.Millisecond)
	set(&o.HintWindow, time.Second)
	set(&o.ValidationWait, 3*time.Second)
}

// DefaultConfig are the example files a scenario without config loads.
var DefaultConfig = []string{"nodepool-default.yaml", "ec2nodeclass-default.yaml"}

// Config is a scenario's NodePools and EC2NodeClasses and the cluster
// their EC2NodeClasses discover.
type Config struct {
	*apis.Config
	Cluster string
	Files   []string
}

// LoadConfig loads the scenario's configuration with the functions' loader
// (the shared examples when it names none).
func LoadConfig(sc *scenario.Scenario) (*Config, error) {
	files := sc.Config
	if len(files) == 0 {
		for _, f := range DefaultConfig {
			p, err := refdata.Example(f)
			if err != nil {
				return nil, err
			}
			files = append(files, p)
		}
	}
	cfg, err := apis.LoadFiles(files...)
	if err != nil {
		return nil, fmt.Errorf("%s: config: %w", sc.File, err)
	}
	if len(cfg.NodePools) == 0 || len(cfg.NodeClasses) == 0 {
		return nil, fmt.Errorf("%s: config %v: want at least one NodePool and one EC2NodeClass", sc.File, files)
	}
	cluster := ""
	for _, nc := range cfg.NodeClasses {
		for _, t := range nc.Spec.SubnetSelectorTerms {
			if v := t.Tags[run.DiscoveryTag]; v != "" && v != "*" && cluster == "" {
				cluster = v
			}
		}
	}
	if cluster == "" {
		return nil, fmt.Errorf("%s: no EC2NodeClass selects subnets by %s: cannot tell the cluster", sc.File, run.DiscoveryTag)
	}
	return &Config{Config: cfg, Cluster: cluster, Files: files}, nil
}

// CloudOptions are the local cloud's options for a scenario.
func CloudOptions(sc *scenario.Scenario, cfg *Config) localcloud.Options {
	o := localcloud.Options{Cluster: cfg.Cluster, Region: sc.Cloud.Region, Zones: sc.Cloud.Zones, BootDelay: sc.Cloud.BootDelay, PriceSeed: sc.Cloud.Seed, InstallCRDs: true}
	for _, m := range sc.Cloud.MissingOfferings {
		o.MissingOfferings = append(o.MissingOfferings, localcloud.Offering{InstanceType: m.InstanceType, Zone: m.Zone})
	}
	for _, r := range sc.Cloud.Reservations {
		res := awsfront.Reservation{ID: r.ID, InstanceType: r.InstanceType, Zone: r.Zone, Count: r.Count, Type: awsfront.ReservationDefault}
		if r.Block {
			res.Type = awsfront.ReservationCapacityBlock
		}
		if r.EndsAfter > 0 {
			res.End = time.Now().Add(r.EndsAfter)
		}
		o.Reservations = append(o.Reservations, res)
	}
	return o
}

// player is one scenario being played.
type player struct {
	sc  *scenario.Scenario
	cfg *Config
	lc  *localcloud.Cloud
	// faults takes interrupt steps' faults: the local cloud's AWS front.
	faults cloudfault.Cloud
	h      *harness.Harness
	obs    *observer
	app    *applier
	opts   Options
	p      *run.Progress

	kick      chan struct{} // consolidation: tick now
	invoked   chan struct{} // the webhook invoked provision
	invokes   [][]byte      // queued asynchronous invocations
	done      chan struct{} // closed: the loops end
	hints     chan struct{}
	mu        sync.Mutex
	pending   map[string]map[string]bool // namespace -> pods to hint
	hinted    map[string]bool            // pod uid already hinted
	exhausted map[[3]string]bool
}

// Play plays the scenario on a running local cloud (started with
// CloudOptions) and returns its report; err is set when the scenario
// could not be played to the end (the report then says how far it got).
// Failed expectations are not an error: the report's Passed says.
func Play(ctx context.Context, lc *localcloud.Cloud, sc *scenario.Scenario, cfg *Config, opts Options) (*report.Report, error) {
	opts.defaults()
	pl := &player{sc: sc, cfg: cfg, lc: lc, faults: lc.AWS, opts: opts, p: opts.Progress,
		kick: make(chan struct{}, 1), hints: make(chan struct{}, 1), invoked: make(chan struct{}, 1),
		pending: map[string]map[string]bool{}, hinted: map[string]bool{}, exhausted: map[[3]string]bool{}}
	rep := &report.Report{Scenario: sc.Name, File: sc.File, Started: time.Now().UTC()}
	err := pl.play(ctx, rep)
	if err != nil {
		rep.Error = err.Error()
	}
	rep.Passed = err == nil && report.Passed(rep.Expect)
	return rep, err
}

func (pl *player) play(ctx context.Context, rep *report.Report) error {
	var err error
	pl.h, err = harness.New(ctx, pl.lc, harness.Options{
		NodePools: pl.cfg.NodePools, NodeClasses: pl.cfg.NodeClasses, NodeOverlays: pl.cfg.NodeOverlays, Log: pl.opts.Log,
		ValidationWait: pl.opts.ValidationWait, Provision: provision.Options{RedriveAfter: 2 * time.Second},
	})
	if err != nil {
		return fmt.Errorf("functions: %w", err)
	}
	store, err := harness.Store(pl.lc)
	if err != nil {
		return err
	}
	if pl.app, err = newApplier(pl.lc); err != nil {
		return err
	}
	pl.obs = newObserver(pl.lc, store, time.Now, pl.print)
	// The loops end when done is closed, after the invocation under way
	// (their context is cancelled only if that takes too long, or on
	// Ctrl-C), so that no request is cut off in the middle.
	loops, cancel := context.WithCancel(ctx)
	pl.done = make(chan struct{})
	var wg sync.WaitGroup
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		close(pl.done)
		finished := make(chan struct{})
		go func() { wg.Wait(); close(finished) }()
		select {
		case <-finished:
		case <-time.After(30 * time.Second):
			cancel()
			<-finished
		}
		cancel()
	}
	defer stop()
	if err := pl.obs.run(loops, pl.opts.SampleEvery); err != nil {
		return err
	}
	_, _ = pl.obs.pods.AddEventHandler(podHandler(pl.podChanged))
	wh, err := pl.h.ServeWebhook(ctx, pl.invokeAsync)
	if err != nil {
		return fmt.Errorf("webhook: %w", err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = wh.Close(cctx)
	}()
	pl.obs.event(report.KindStep, "webhook", "pending-pod webhook registered (%s, the stack's ValidatingWebhookConfiguration) at %s", webhookconfig.Name, wh.URL)
	for _, loop := range []func(context.Context){pl.provisionLoop, pl.consolidationLoop, pl.interruptionLoop} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			loop(loops)
		}()
	}

	playErr := pl.steps(ctx)
	// The end: the functions stop, the last sample, then the figures.
	stop()
	pl.obs.sample(ctx)
	if err := pl.finish(ctx, rep); err != nil && playErr == nil {
		playErr = err
	}
	return playErr
}

// print shows a timeline event as a progress line.
func (pl *player) print(ev report.Event) {
	if ev.Kind == report.KindPods {
		pl.p.Printf("%-13s %s", ev.Kind, ev.Detail)
		return
	}
	pl.p.Printf("%-13s %s: %s", ev.Kind, ev.Object, ev.Detail)
}

// steps applies the manifests and plays each step in order.
func (pl *player) steps(ctx context.Context) error {
	for _, m := range pl.sc.Manifests {
		done, err := pl.app.Apply(ctx, m)
		if err != nil {
			return err
		}
		pl.obs.event(report.KindStep, "manifests", "applied %s: %s", shortPath(m), strings.Join(done, ", "))
	}
	for i, st := range pl.sc.Steps {
		pl.obs.event(report.KindStep, fmt.Sprintf("step %d", i+1), "%s (line %d)", st.String(), st.Line)
		if err := st.Play(ctx, pl); err != nil {
			return fmt.Errorf("%s:%d: step %d (%s): %w", pl.sc.File, st.Line, i+1, st.Kind, err)
		}
	}
	return nil
}

func shortPath(p string) string {
	parts := strings.Split(p, "/")
	if len(parts) > 2 {
		return strings.Join(parts[len(parts)-2:], "/")
	}
	return p
}

// podHandler calls fn for every added or updated pod.
func podHandler(fn func(*corev1.Pod)) cacheHandler {
	return cacheHandler{fn: fn}
}

// podChanged queues a hint for a pod kube-scheduler just found no node for.
func (pl *player) podChanged(p *corev1.Pod) {
	if !workload(p) || !podstate.Provisionable(p) {
		return
	}
	pl.mu.Lock()
	key := string(p.UID)
	if pl.hinted[key] {
		pl.mu.Unlock()
		return
	}
	pl.hinted[key] = true
	if pl.pending[p.Namespace] == nil {
		pl.pending[p.Namespace] = map[string]bool{}
	}
	pl.pending[p.Namespace][p.Name] = true
	pl.mu.Unlock()
	select {
	case pl.hints <- struct{}{}:
	default:
	}
}

// invokeAsync queues an asynchronous invocation of the provision function
// (the webhook's hint), as Lambda's event queue does.
func (pl *player) invokeAsync(payload []byte) {
	pl.mu.Lock()
	pl.invokes = append(pl.invokes, payload)
	pl.mu.Unlock()
	select {
	case pl.invoked <- struct{}{}:
	default:
	}
}

// provisionLoop invokes the provision function: the audit-log batches of
// Unschedulable pods, and the sweep schedule. One at a time, as one warm
// container (concurrent invocations would meet at the provision lease).
func (pl *player) provisionLoop(ctx context.Context) {
	sweep := time.NewTicker(pl.opts.SweepEvery)
	defer sweep.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-pl.done:
			return
		case <-sweep.C:
			if err := pl.h.Sweep(ctx); err != nil && ctx.Err() == nil {
				pl.obs.event(report.KindWarning, "provision", "sweep: %v", err)
			}
		case <-pl.invoked:
			pl.mu.Lock()
			queued := pl.invokes
			pl.invokes = nil
			pl.mu.Unlock()
			for _, payload := range queued {
				pl.obs.event(report.KindTrigger, "webhook", "pending-pod webhook hint: provision invoked (%s)", hintPod(payload))
				if err := pl.h.Invoke(ctx, payload); err != nil && ctx.Err() == nil {
					pl.obs.event(report.KindWarning, "provision", "webhook hint: %v", err)
				}
			}
		case <-pl.hints:
			select { // gather the batch, as the subscription filter does
			case <-ctx.Done():
				return
			case <-pl.done:
				return
			case <-time.After(pl.opts.HintWindow):
			}
			pl.mu.Lock()
			batch := pl.pending
			pl.pending = map[string]map[string]bool{}
			pl.mu.Unlock()
			for _, ns := range slices.Sorted(maps.Keys(batch)) {
				pods := slices.Sorted(maps.Keys(batch[ns]))
				pl.obs.event(report.KindTrigger, "audit log", "a CloudWatch Logs batch of %d Unschedulable pods in %s: provision invoked", len(pods), ns)
				if err := pl.h.AuditLog(ctx, ns, pods...); err != nil && ctx.Err() == nil {
					pl.obs.event(report.KindWarning, "provision", "audit-log batch of %d pods: %v", len(pods), err)
				}
			}
		}
	}
}

// consolidationLoop ticks the consolidation timer (and at once after the
// clock is advanced).
func (pl *player) consolidationLoop(ctx context.Context) {
	t := time.NewTicker(pl.opts.TickEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-pl.done:
			return
		case <-t.C:
		case <-pl.kick:
		}
		if err := pl.h.Tick(ctx); err != nil && ctx.Err() == nil {
			pl.obs.event(report.KindWarning, "consolidation", "tick: %v", err)
		}
	}
}

// interruptionLoop hands the queue's messages to the interruption
// function in SQS batches.
func (pl *player) interruptionLoop(ctx context.Context) {
	t := time.NewTicker(pl.opts.DrainEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-pl.done:
			return
		case <-t.C:
		}
		handled, failed, err := pl.h.DrainQueue(ctx, 10*time.Second)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			pl.obs.event(report.KindWarning, "interruption", "queue: %v", err)
		}
		if handled+failed > 0 {
			pl.obs.event(report.KindInterruption, "queue", "%d messages handed over in SQS batches, %d failed", handled+failed, failed)
		}
	}
}

// finish computes the summary and checks the expectations.
func (pl *player) finish(ctx context.Context, rep *report.Report) error {
	o := pl.obs
	launches, err := pl.launches(ctx)
	if err != nil {
		return err
	}
	interruptions, consolidations := o.counts()
	o.mu.Lock()
	rep.Seconds = round1(o.since(o.now()))
	rep.Timeline = append([]report.Event(nil), o.timeline...)
	rep.Samples = append([]report.Sample(nil), o.samples...)
	var times []float64
	for _, d := range o.toRunning {
		times = append(times, d)
	}
	s := report.Summary{
		PodsToRunningP50Seconds: round1(report.Percentile(times, 50)),
		PodsToRunningP99Seconds: round1(report.Percentile(times, 99)),
		PodsMeasured:            len(times),
		PDBViolations:           o.pdb.Violations,
		InterruptionsHandled:    interruptions,
		ConsolidationActions:    consolidations,
	}
	for _, c := range o.claims {
		s.NodesLaunched++
		rep.Nodes = append(rep.Nodes, report.Node{
			NodeClaim: c.rec.Name, NodePool: c.rec.NodePool, InstanceID: c.rec.InstanceID, InstanceType: c.rec.InstanceType,
			Zone: c.rec.Zone, CapacityType: c.rec.CapacityType, PricePerHour: c.rec.PricePerHour, Reason: reason(c.rec.Reason),
			Launched: c.launched, Gone: c.gone, Pods: o.podsOnClaim(c),
		})
	}
	for _, smp := range rep.Samples {
		s.PricePerHourPeak = max(s.PricePerHourPeak, smp.PricePerHour)
	}
	if n := len(rep.Samples); n > 0 {
		s.PricePerHourEnd = rep.Samples[n-1].PricePerHour
	}
	peak := o.peakPods
	o.mu.Unlock()
	sort.Slice(rep.Nodes, func(i, j int) bool {
		if rep.Nodes[i].Launched != rep.Nodes[j].Launched {
			return rep.Nodes[i].Launched < rep.Nodes[j].Launched
		}
		return rep.Nodes[i].NodeClaim < rep.Nodes[j].NodeClaim
	})
	s.DuplicateLaunches = report.Duplicates(launches)
	s.Unschedulable = o.unschedulable()
	nodes := o.ourNodes()
	s.NodesAtEnd = len(nodes)
	fixed, err := FixedNodeGroup(peak, pl.cfg.NodeClasses[0], pl.lc.Options.Zones)
	if err != nil {
		return err
	}
	s.FixedNodeGroupPricePerHourPeak = round4(fixed.PricePerHour)
	s.FixedNodeGroupNodesPeak, s.FixedNodeGroupUnplaced = fixed.Nodes, fixed.Unplaced
	s.PricePerHourPeak, s.PricePerHourEnd = round4(s.PricePerHourPeak), round4(s.PricePerHourEnd)
	rep.Summary = s
	if rep.NodeClaims, err = nodeClaims(ctx, pl.lc); err != nil {
		return err
	}

	facts := report.Facts{}
	if e := pl.sc.Expect.PodsRunningAtEnd; e != nil {
		n, err := pl.countPods(ctx, e.Selector)
		if err != nil {
			return err
		}
		facts.PodsRunning = n.running
	}
	if e := pl.sc.Expect.NodesAtEnd; e != nil {
		facts.NodesAtEnd = len(filterNodes(nodes, e))
	}
	for _, e := range pl.sc.Expect.Launched {
		n := 0
		for _, node := range rep.Nodes {
			if e.Matches(node.InstanceType, node.Zone, node.CapacityType, node.PricePerHour) {
				n++
			}
		}
		facts.Launched = append(facts.Launched, n)
	}
	if e := pl.sc.Expect.PodsEvicted; e != nil {
		n, err := o.evictedMatching(e.Selector)
		if err != nil {
			return err
		}
		facts.PodsEvicted = n
	}
	rep.Expect = report.Check(pl.sc.Expect, s, facts)
	return nil
}

// hintPod names the pod of a webhook hint payload.
func hintPod(payload []byte) string {
	var h struct{ Namespace, Name string }
	if json.Unmarshal(payload, &h) != nil || h.Name == "" {
		return "a pod"
	}
	return h.Namespace + "/" + h.Name
}

func round4(f float64) float64 { return float64(int64(f*1e4+0.5)) / 1e4 }

// filterNodes keeps the nodes of the condition's NodePool and capacity
// type.
func filterNodes(nodes []*corev1.Node, c *scenario.NodesCondition) []*corev1.Node {
	var out []*corev1.Node
	for _, n := range nodes {
		if c.NodePool != "" && n.Labels[apis.LabelNodePool] != c.NodePool {
			continue
		}
		if c.CapacityType != "" && n.Labels[apis.LabelCapacityType] != c.CapacityType {
			continue
		}
		out = append(out, n)
	}
	return out
}
