package player

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/podstate"
	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/test/localcloud"
	"github.com/nodewright/nodewright/test/report"
)

// observer watches the cluster and the state table while a scenario plays
// and keeps what the report needs: the timeline, samples, every pod's time
// to Running, every launched NodeClaim and the pods bound to its node, the
// actions, the PDBs' violations and the peak's pods.
type observer struct {
	lc    *localcloud.Cloud
	store *state.Store
	start time.Time
	now   func() time.Time

	factory informers.SharedInformerFactory
	pods    cache.SharedIndexInformer
	nodes   cache.SharedIndexInformer
	pdbs    cache.SharedIndexInformer

	mu         sync.Mutex
	timeline   []report.Event
	samples    []report.Sample
	created    map[types.UID]time.Time // pod -> first seen
	toRunning  map[types.UID]float64   // pod -> seconds from creation to Running
	boundTo    map[string]map[types.UID]bool
	claims     map[string]*claimSeen
	actions    map[string][2]string     // action id -> kind, step seen
	refused    map[string]bool          // offerings EC2 refused, seen
	nodeOf     map[string]string        // instance id -> the name of its Node (once seen)
	evicted    map[types.UID]labels.Set // pods evicted through the Eviction API -> their labels
	pdb        *pdbTracker
	peakPods   []*corev1.Pod
	lastCounts [2]int
	onEvent    func(report.Event)
}

// claimSeen is one NodeClaim record as the observer saw it.
type claimSeen struct {
	rec        state.NodeClaim
	launched   float64
	gone       float64
	registered bool
}

func newObserver(lc *localcloud.Cloud, store *state.Store, now func() time.Time, onEvent func(report.Event)) *observer {
	o := &observer{
		lc: lc, store: store, now: now, start: now(), onEvent: onEvent,
		created: map[types.UID]time.Time{}, toRunning: map[types.UID]float64{}, boundTo: map[string]map[types.UID]bool{},
		claims: map[string]*claimSeen{}, actions: map[string][2]string{}, refused: map[string]bool{}, nodeOf: map[string]string{}, evicted: map[types.UID]labels.Set{}, pdb: newPDBTracker(),
	}
	o.factory = informers.NewSharedInformerFactory(lc.Kube, 0)
	o.pods = o.factory.Core().V1().Pods().Informer()
	o.nodes = o.factory.Core().V1().Nodes().Informer()
	o.pdbs = o.factory.Policy().V1().PodDisruptionBudgets().Informer()
	handler := cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { o.pod(obj) },
		UpdateFunc: func(_, obj any) { o.pod(obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			o.pod(obj)
		},
	}
	_, _ = o.pods.AddEventHandler(handler)
	_, _ = o.nodes.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { o.node(obj) },
		UpdateFunc: func(_, obj any) { o.node(obj) },
		DeleteFunc: func(obj any) { o.node(obj) },
	})
	return o
}

// run starts the informers and samples every interval until ctx ends.
func (o *observer) run(ctx context.Context, every time.Duration) error {
	o.factory.Start(ctx.Done())
	for typ, ok := range o.factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("observe: %v cache did not sync", typ)
		}
	}
	go func() {
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				o.sample(ctx)
			}
		}
	}()
	return nil
}

func (o *observer) since(t time.Time) float64 { return t.Sub(o.start).Seconds() }

// event adds a timeline entry now.
func (o *observer) event(kind, object, format string, args ...any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.eventLocked(kind, object, format, args...)
}

func (o *observer) eventLocked(kind, object, format string, args ...any) {
	ev := report.Event{Time: round1(o.since(o.now())), Kind: kind, Object: object, Detail: fmt.Sprintf(format, args...)}
	o.timeline = append(o.timeline, ev)
	if o.onEvent != nil {
		o.onEvent(ev)
	}
}

func round1(f float64) float64 { return float64(int64(f*10+0.5)) / 10 }

// workload reports whether a pod is one of the scenario's (not the
// control plane's, not a DaemonSet's).
func workload(p *corev1.Pod) bool {
	if p.Namespace == metav1.NamespaceSystem {
		return false
	}
	return !podstate.OwnedBy(p, "DaemonSet", "Node")
}

func runningReady(p *corev1.Pod) bool {
	if p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// node records which instance a Node is.
func (o *observer) node(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	n, ok := obj.(*corev1.Node)
	if !ok || n.Spec.ProviderID == "" {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.nodeOf[n.Spec.ProviderID[strings.LastIndexByte(n.Spec.ProviderID, '/')+1:]] = n.Name
}

// running reports whether a pod runs: Running and Ready on a Node that
// still exists (a pod on a Node that is gone stays Running in the API
// until it is garbage-collected).
func (o *observer) running(p *corev1.Pod) bool {
	if !runningReady(p) {
		return false
	}
	_, exists, err := o.nodes.GetStore().GetByKey(p.Spec.NodeName)
	return err == nil && exists
}

// podsOnClaim is how many pods were ever bound to a NodeClaim's node.
func (o *observer) podsOnClaim(c *claimSeen) int {
	if name := o.nodeOf[c.rec.InstanceID]; name != "" {
		return len(o.boundTo[name])
	}
	return 0
}

// pod records a pod's creation, its binding and its first Running.
func (o *observer) pod(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok || !workload(p) {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if _, seen := o.created[p.UID]; !seen {
		o.created[p.UID] = o.now()
	}
	if evictedByAPI(p) {
		o.evicted[p.UID] = labels.Set(p.Labels)
	}
	if p.Spec.NodeName != "" {
		if o.boundTo[p.Spec.NodeName] == nil {
			o.boundTo[p.Spec.NodeName] = map[types.UID]bool{}
		}
		o.boundTo[p.Spec.NodeName][p.UID] = true
	}
	if _, done := o.toRunning[p.UID]; !done && o.running(p) {
		o.toRunning[p.UID] = o.now().Sub(o.created[p.UID]).Seconds()
	}
}

// evictedByAPI reports whether the API server marked the pod for an
// eviction (the DisruptionTarget condition it sets before deleting an
// evicted pod); a Deployment's scale-down deletes pods without it.
func evictedByAPI(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue && c.Reason == "EvictionByEvictionAPI" {
			return true
		}
	}
	return false
}

// evictedMatching counts the evicted pods whose labels match selector.
func (o *observer) evictedMatching(selector string) (int, error) {
	sel, err := labels.Parse(selector)
	if err != nil {
		return 0, fmt.Errorf("podsEvicted selector %q: %w", selector, err)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	n := 0
	for _, l := range o.evicted {
		if sel.Matches(l) {
			n++
		}
	}
	return n, nil
}

// livePods are the workload pods not being deleted.
func (o *observer) livePods() []*corev1.Pod {
	var out []*corev1.Pod
	for _, obj := range o.pods.GetStore().List() {
		p := obj.(*corev1.Pod)
		if workload(p) && podstate.Active(p) {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Namespace+"/"+out[i].Name < out[j].Namespace+"/"+out[j].Name })
	return out
}

// ourNodes are the Nodewright nodes (carrying a NodePool label) not being
// deleted.
func (o *observer) ourNodes() []*corev1.Node {
	var out []*corev1.Node
	for _, obj := range o.nodes.GetStore().List() {
		n := obj.(*corev1.Node)
		if n.Labels[apis.LabelNodePool] != "" && n.DeletionTimestamp == nil {
			out = append(out, n)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// sample reads the state table and adds one sample and the timeline
// entries for what changed.
func (o *observer) sample(ctx context.Context) {
	recs, rerr := o.store.NodeClaims(ctx)
	acts, aerr := o.store.Actions(ctx)
	offs, oerr := o.store.Unavailable(ctx)
	pods := o.livePods()
	var pdbs []*policyv1.PodDisruptionBudget
	for _, obj := range o.pdbs.GetStore().List() {
		pdbs = append(pdbs, obj.(*policyv1.PodDisruptionBudget))
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	now := o.now()
	s := report.Sample{Time: round1(o.since(now))}
	for _, p := range pods {
		switch {
		case o.running(p):
			s.PodsRunning++
		case p.Status.Phase == corev1.PodPending:
			s.PodsPending++
		}
	}
	if len(pods) > len(o.peakPods) {
		o.peakPods = make([]*corev1.Pod, len(pods))
		for i, p := range pods {
			o.peakPods[i] = p.DeepCopy()
		}
	}
	if c := [2]int{s.PodsPending, s.PodsRunning}; c != o.lastCounts {
		o.lastCounts = c
		o.eventLocked(report.KindPods, "pods", "%d pending, %d running", c[0], c[1])
	}
	if rerr == nil {
		o.claimsLocked(recs)
	} else {
		o.eventLocked(report.KindWarning, "state table", "read NodeClaims: %v", rerr)
	}
	for _, c := range o.claims {
		if c.gone != 0 || c.rec.InstanceID == "" {
			continue
		}
		s.PricePerHour += c.rec.PricePerHour
		if c.rec.CapacityType == "spot" {
			s.NodesSpot++
		} else {
			s.NodesOnDemand++
		}
	}
	s.PricePerHour = float64(int64(s.PricePerHour*1e6+0.5)) / 1e6
	if aerr == nil {
		o.actionsLocked(acts)
	}
	if oerr == nil {
		o.refusedLocked(offs)
	}
	for _, b := range pdbs {
		if o.pdb.observe(b) {
			o.eventLocked(report.KindWarning, "pdb "+b.Namespace+"/"+b.Name, "PDB violated: %d healthy, %d desired, %d expected",
				b.Status.CurrentHealthy, b.Status.DesiredHealthy, b.Status.ExpectedPods)
		}
	}
	o.samples = append(o.samples, s)
}

// claimsLocked notes launches, registrations and departures.
func (o *observer) claimsLocked(recs []*state.NodeClaim) {
	live := map[string]bool{}
	for _, r := range recs {
		live[r.Name] = true
		c := o.claims[r.Name]
		if c == nil && r.InstanceID == "" {
			continue // not launched yet
		}
		if c == nil {
			c = &claimSeen{rec: *r, launched: round1(o.since(o.now()))}
			o.claims[r.Name] = c
			o.eventLocked(report.KindLaunch, r.Name, "%s %s %s $%.4f/h, NodePool %s, instance %s (%s)",
				r.InstanceType, r.Zone, r.CapacityType, r.PricePerHour, r.NodePool, r.InstanceID, reason(r.Reason))
		}
		if c.gone != 0 {
			continue
		}
		c.rec = *r
		o.registeredLocked(c)
		if r.Phase == state.Terminating {
			o.goneLocked(c, "terminating")
		}
	}
	for name, c := range o.claims {
		o.registeredLocked(c)
		if c.gone == 0 && !live[name] {
			o.goneLocked(c, "record removed")
		}
	}
}

// registeredLocked notes a NodeClaim's Node when it first appears.
func (o *observer) registeredLocked(c *claimSeen) {
	if name := o.nodeOf[c.rec.InstanceID]; name != "" && !c.registered {
		c.registered = true
		o.eventLocked(report.KindNode, name, "registered (NodeClaim %s, %s)", c.rec.Name, c.rec.InstanceType)
	}
}

func reason(r string) string {
	if r == "" {
		return "provisioning"
	}
	return r
}

func (o *observer) goneLocked(c *claimSeen, why string) {
	c.gone = round1(o.since(o.now()))
	if c.gone == 0 {
		c.gone = 0.1
	}
	o.eventLocked(report.KindTerminate, c.rec.Name, "%s %s %s (%s), %d pods ran on it", c.rec.InstanceType, c.rec.CapacityType, c.rec.InstanceID, why, o.podsOnClaim(c))
}

// actionsLocked notes actions as they start and end.
func (o *observer) actionsLocked(acts []*state.Action) {
	for _, a := range acts {
		if o.actions[a.ID][1] == a.Step {
			continue
		}
		prev := o.actions[a.ID][1]
		o.actions[a.ID] = [2]string{a.Kind, a.Step}
		kind := report.KindConsolidation
		if a.Kind == state.KindInterruption {
			kind = report.KindInterruption
		}
		switch {
		case prev == "":
			what := a.Kind
			if a.Method != "" {
				what += " " + a.Method
			}
			detail := fmt.Sprintf("%s: %s; nodes %s", what, a.Reason, strings.Join(a.Nodes, ","))
			if a.PriceBefore > 0 || a.PriceAfter > 0 {
				detail += fmt.Sprintf("; $%.4f/h -> $%.4f/h", a.PriceBefore, a.PriceAfter)
			}
			o.eventLocked(kind, a.ID, "%s (step %s)", detail, a.Step)
		case a.Step == state.StepDone || a.Step == state.StepAbandoned:
			detail := fmt.Sprintf("%s %s", a.Kind, a.Step)
			if len(a.Replacements) > 0 {
				detail += ", replacements " + strings.Join(a.Replacements, ",")
			}
			if a.Evicted > 0 {
				detail += fmt.Sprintf(", %d pods evicted", a.Evicted)
			}
			if a.Cause != "" {
				detail += ": " + a.Cause
			}
			o.eventLocked(kind, a.ID, "%s", detail)
		}
	}
}

// counts are the actions done by kind group.
func (o *observer) counts() (interruptions, consolidations int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, ks := range o.actions {
		if ks[1] != state.StepDone {
			continue
		}
		if ks[0] == state.KindInterruption {
			interruptions++
		} else {
			consolidations++
		}
	}
	return interruptions, consolidations
}

// unschedulable counts live workload pods kube-scheduler found no node for.
func (o *observer) unschedulable() int {
	n := 0
	for _, p := range o.livePods() {
		if podstate.Provisionable(p) {
			n++
		}
	}
	return n
}

// refusedLocked notes offerings EC2 refused (the functions mark them
// unavailable for a while and solve again without them), one event per
// sample that saw new ones.
func (o *observer) refusedLocked(offs []state.Offering) {
	var fresh []state.Offering
	for _, off := range offs {
		k := off.InstanceType + "/" + off.Zone + "/" + off.CapacityType
		if !o.refused[k] {
			o.refused[k] = true
			fresh = append(fresh, off)
		}
	}
	if len(fresh) == 0 {
		return
	}
	byType, codes := map[string]int{}, map[string]bool{}
	for _, off := range fresh {
		byType[off.CapacityType]++
		if off.Code != "" {
			codes[off.Code] = true
		}
	}
	var parts []string
	for _, ct := range slices.Sorted(maps.Keys(byType)) {
		parts = append(parts, fmt.Sprintf("%d %s", byType[ct], ct))
	}
	f := fresh[0]
	o.eventLocked(report.KindCapacity, "offerings", "CreateFleet refused %d offerings (%s; %s), e.g. %s %s %s: marked unavailable, solved again without them",
		len(fresh), strings.Join(parts, ", "), strings.Join(slices.Sorted(maps.Keys(codes)), ","), f.InstanceType, f.Zone, f.CapacityType)
}

// price is the live nodes' price per hour in the latest sample.
func (o *observer) price() float64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.samples) == 0 {
		return 0
	}
	return o.samples[len(o.samples)-1].PricePerHour
}
