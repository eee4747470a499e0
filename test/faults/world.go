package faults

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	corev1 "k8s.io/api/core/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/drain"
	"github.com/nodewright/nodewright/shared/names"
	"github.com/nodewright/nodewright/shared/podstate"
	"github.com/nodewright/nodewright/shared/state"
)

// World is everything outside the functions: AWS, the cluster, and what
// the invariants watch.
type World struct {
	mu       sync.Mutex
	clock    *testingclock.FakeClock
	began    time.Time
	sim      *Sim
	changed  bool
	dynamo   *Dynamo
	ec2      *EC2
	ssm      *SSM
	pricing  *Pricing
	sqs      *SQS
	kube     *Kube
	catalog  *catalog.Catalog
	settings catalog.NodeSettings

	// warned are spot instances EC2 warned, with when it takes them back.
	warned map[string]time.Time
	// unhealthy are instances node repair may replace, with when their
	// toleration ends: from then on their pods may be deleted, PDBs
	// notwithstanding (Karpenter's repair sets the termination timestamp
	// to now).
	unhealthy map[string]time.Time
	// foreign are Nodes and instances Nodewright did not launch.
	foreign map[string]bool
	// adoptable are instances Karpenter launched into a configured
	// NodePool before the switch: Nodewright adopts them (invariant 13).
	adoptable map[string]bool
	// karpenterDeleting are those of them whose NodeClaim Karpenter was
	// deleting: they are to go through the termination path.
	karpenterDeleting map[string]bool
	// limits are the NodePools' CPU limits (millicores).
	limits map[string]int64
	// static are the static NodePools' replicas (their limits.nodes too).
	static map[string]int

	violations []violation
	seen       map[string]bool
	// direct: calls outside an invocation take effect at once (the
	// contract test drives the fakes as plain clients).
	direct bool
}

// violation is an invariant that did not hold. Check is the invariant's
// number, with a suffix where one invariant has several ways to fail.
type violation struct {
	Check string
	At    time.Duration
	What  string
}

func (v violation) String() string {
	return fmt.Sprintf("invariant %s at %s: %s", v.Check, v.At, v.What)
}

func (w *World) elapsed() time.Duration { return w.clock.Since(w.began).Round(time.Millisecond) }

func (w *World) violate(check, format string, args ...any) {
	what := fmt.Sprintf(format, args...)
	if w.seen[check+what] {
		return
	}
	w.seen[check+what] = true
	w.violations = append(w.violations, violation{Check: check, At: w.elapsed(), What: what})
}

// tick moves the world on to the clock's time (between calls).
func (w *World) tick() {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.clock.Now()
	for _, id := range slices.Sorted(maps.Keys(w.warned)) {
		in := w.ec2.instances[id]
		if in == nil || in.State == "shutting-down" || in.State == "terminated" || now.Before(w.warned[id]) {
			continue
		}
		// Invariant 5: the warning's deadline reached the drain: no pod
		// that must move is still running when EC2 takes the instance.
		var left []string
		for _, p := range w.podsOn(in.DNS) {
			if !podstate.Terminating(p) && !podstate.FollowsNode(p) {
				left = append(left, p.Namespace+"/"+p.Name)
			}
		}
		if len(left) > 0 {
			w.violate("5", "spot instance %s was reclaimed at its deadline with pods never deleted: %s", id, strings.Join(left, ", "))
		}
		w.end(in, "reclaim")
	}
	for _, id := range slices.Sorted(maps.Keys(w.ec2.instances)) {
		in := w.ec2.instances[id]
		if in.State == "terminated" {
			// The cloud controller deletes the Node of a gone instance.
			if n := w.kube.nodes[in.DNS]; n != nil && n.DeletionTimestamp == nil {
				w.kube.deleteNode(n)
			}
		}
	}
	w.kube.tick(now)
}

func (w *World) podsOn(node string) []*corev1.Pod {
	var out []*corev1.Pod
	for _, key := range slices.Sorted(maps.Keys(w.kube.pods)) {
		if p := w.kube.pods[key]; p.Spec.NodeName == node && node != "" {
			out = append(out, p)
		}
	}
	return out
}

// end ends an instance: its pods die with it.
func (w *World) end(in *instance, by string) {
	if in.State == "shutting-down" || in.State == "terminated" {
		return
	}
	w.touch(in.ID, "terminate")
	in.State, in.Ended, in.By = "shutting-down", w.clock.Now(), by
	w.changed = true
	var killed, protected []string
	for _, p := range w.podsOn(in.DNS) {
		if podstate.Terminating(p) || podstate.FollowsNode(p) {
			continue
		}
		killed = append(killed, p.Namespace+"/"+p.Name)
		if w.kube.protected(p) {
			protected = append(protected, p.Namespace+"/"+p.Name)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(w.kube.pods)) {
		if p := w.kube.pods[key]; p.Spec.NodeName == in.DNS && in.DNS != "" {
			w.kube.remove(key)
		}
	}
	if by == "nodewright" && w.adoptable[in.ID] {
		// Invariant 13: the switch terminates nothing; an adopted node
		// goes only through the termination path, for a reason of its own.
		if r := w.recordOf(in.ID); r == nil || r.Disruption == nil {
			w.violate("13.terminated", "instance %s, launched by Karpenter before the switch, was terminated with no termination intent on a record (record %v)", in.ID, r != nil)
		}
	}
	if by != "nodewright" || len(killed) == 0 {
		return
	}
	if w.recordOf(in.ID) == nil {
		// Invariant 1 (the orphan case of defect 7): an orphan that runs
		// pods is drained before it is terminated (invariant 4 follows).
		w.violate("1.orphan", "instance %s had no record and was terminated without a drain while it ran pods %s (%d of them protected by a PodDisruptionBudget)",
			in.ID, strings.Join(killed, ", "), len(protected))
		return
	}
	if len(protected) > 0 && !w.pastDeadline(in.ID) {
		w.violate("4", "instance %s was terminated with pods a PodDisruptionBudget protects still running: %s", in.ID, strings.Join(protected, ", "))
	}
}

// deadlineMargin is the interruption drain's margin before an instance's
// end (shared/interruption): the deadline pods are measured against.
const deadlineMargin = 15 * time.Second

// deadlineOf is the drain deadline of a node's instance (zero: none): a
// spot warning's, or the end of an unhealthy node's repair toleration,
// the earlier.
func (w *World) deadlineOf(instanceID string) time.Time {
	var dl time.Time
	if t, ok := w.warned[instanceID]; ok {
		dl = t.Add(-deadlineMargin)
	}
	return state.Earliest(dl, w.unhealthy[instanceID])
}

func (w *World) pastDeadline(instanceID string) bool {
	d := w.deadlineOf(instanceID)
	return !d.IsZero() && !w.clock.Now().Before(d)
}

// removal checks an eviction or deletion: invariants 4 (budgets) and 6
// (grace), against the pod's own deadline as shared/drain states it (as
// Karpenter's terminator does): a pod under a deadline may be deleted,
// its budget notwithstanding, from drain.DeleteAt (the deadline less its
// grace period, so that it gets all of it), and every deletion carries at
// least drain.MinGrace: its own grace period, or the time left before the
// deadline rounded up to whole seconds if shorter, never under 1 s (a
// force delete, defect 6).
func (w *World) removal(p *corev1.Pod, viaDelete bool, grace *time.Duration) {
	in := w.ec2.byDNS(p.Spec.NodeName)
	id := ""
	if in != nil {
		id = in.ID
	}
	now := w.clock.Now()
	dl := w.deadlineOf(id)
	if viaDelete && w.kube.protected(p) && (dl.IsZero() || now.Before(drain.DeleteAt(p, dl, nil))) {
		at := "with no deadline"
		if !dl.IsZero() {
			at = fmt.Sprintf("%s before its time to be deleted (the deadline less its grace period)", drain.DeleteAt(p, dl, nil).Sub(now))
		}
		w.violate("4", "pod %s/%s, which a PodDisruptionBudget protects, was deleted %s", p.Namespace, p.Name, at)
	}
	if grace == nil || p.DeletionTimestamp != nil {
		return
	}
	if want := drain.MinGrace(p, dl, now); *grace < want {
		w.violate("6", "pod %s/%s was given %s of grace, less than min(its own %s, the time left before the deadline rounded up, at least 1 s) = %s", p.Namespace, p.Name, *grace, ownGrace(p), want)
	}
}

// podGone is a pod removed with its Node.
func (w *World) podGone(p *corev1.Pod, why string) {
	if p.DeletionTimestamp == nil && w.kube.protected(p) {
		if in := w.ec2.byDNS(p.Spec.NodeName); in != nil && (in.State == "running" || in.State == "pending") {
			w.violate("4", "pod %s/%s, which a PodDisruptionBudget protects, was removed without eviction: %s", p.Namespace, p.Name, why)
		}
	}
}

// touch is a write to a Node or instance: invariant 8.
func (w *World) touch(name, what string) {
	if w.foreign[name] {
		w.violate("8", "%s of %s, which Nodewright did not launch", what, name)
	}
}

func (e *EC2) byDNS(dns string) *instance {
	for _, id := range slices.Sorted(maps.Keys(e.instances)) {
		if in := e.instances[id]; in.DNS == dns {
			return in
		}
	}
	return nil
}

// records decodes the NodeClaim records in the table.
func (w *World) records() []*state.NodeClaim {
	var out []*state.NodeClaim
	for _, key := range slices.Sorted(maps.Keys(w.dynamo.items)) {
		it := w.dynamo.items[key]
		if !strings.Contains(key, "\x00"+state.PrefixNodeClaim) {
			continue
		}
		if rec := decodeRecord(it); rec != nil {
			out = append(out, rec)
		}
	}
	return out
}

func decodeRecord(it item) *state.NodeClaim {
	d, ok := it["data"].(*types.AttributeValueMemberS)
	if !ok {
		return nil
	}
	rec := &state.NodeClaim{}
	if json.Unmarshal([]byte(d.Value), rec) != nil {
		return nil
	}
	return rec
}

func (w *World) recordOf(instanceID string) *state.NodeClaim {
	for _, rec := range w.records() {
		if rec.InstanceID == instanceID {
			return rec
		}
	}
	return nil
}

func (in *instance) live() bool { return in.State == "pending" || in.State == "running" }

// launched checks a fleet's instance as it launches: invariants 3, 7 and
// the reclaimed offering (defect 8).
func (w *World) launched(in *instance, token string) {
	recs := w.records()
	planned := map[string]bool{}
	for _, r := range recs {
		if r.Group == token || (r.Group == "" && r.Name == token) {
			for _, p := range r.Claim.Pods {
				planned[p] = true
			}
		}
	}
	for _, r := range recs {
		if r.Group == token || !r.Phase.InFlight() {
			continue
		}
		alive := false
		if i := w.ec2.instances[r.InstanceID]; i != nil && i.live() {
			alive = true
		}
		if prev, ok := w.ec2.tokens[r.Group]; ok && r.InstanceID == "" && prev.out != nil {
			for _, fi := range prev.out.Instances {
				for _, id := range fi.InstanceIds {
					if i := w.ec2.instances[id]; i != nil && i.live() {
						alive = true
					}
				}
			}
		}
		if !alive {
			continue
		}
		var both []string
		for _, p := range r.Claim.Pods {
			if planned[p] {
				both = append(both, p)
			}
		}
		if len(both) > 0 {
			w.violate("3", "launch %s (instance %s) bought capacity for pods %s, which the launch of %s (in flight) already bought for", token, in.ID, strings.Join(both, ", "), r.Name)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(w.warned)) {
		old := w.ec2.instances[id]
		// Once Nodewright has marked the reclaimed offering unavailable, no
		// launch may land on it.
		marked := w.dynamo.items[clusterName+"\x00"+state.Key(state.PrefixUnavailable, in.Type, in.Zone, in.CapacityType)] != nil
		if old != nil && old.ID != in.ID && marked && w.clock.Now().Before(w.warned[id].Add(time.Minute)) &&
			old.Type == in.Type && old.Zone == in.Zone && old.CapacityType == in.CapacityType {
			w.violate("9", "instance %s launched as %s %s %s, the offering EC2 is reclaiming from %s (marked unavailable)", in.ID, in.Type, in.Zone, in.CapacityType, id)
		}
	}
	pool := in.Tags[names.TagKeyNodePool]
	if lim, ok := w.limits[pool]; ok {
		var used int64
		for _, i := range w.ec2.instances {
			if i.live() && i.Tags[names.TagKeyNodePool] == pool {
				if it, ok := w.catalog.Get(i.Type); ok {
					used += int64(it.VCPU) * 1000
				}
			}
		}
		if used > lim {
			w.violate("7", "NodePool %s runs %dm CPU, over its limit of %dm", pool, used, lim)
		}
	}
	if want, ok := w.static[pool]; ok {
		if n := w.liveIn(pool); n > want {
			w.violate("7", "static NodePool %s runs %d instances, over its replicas and limits.nodes of %d", pool, n, want)
		}
	}
}

// liveIn counts the live instances of a NodePool.
func (w *World) liveIn(pool string) int {
	n := 0
	for _, i := range w.ec2.instances {
		if i.live() && i.Tags[names.TagKeyNodePool] == pool {
			n++
		}
	}
	return n
}

// settled checks what must hold once nothing changes: invariants 1, 2,
// 11, 12 and 13.
func (w *World) settled(registration, redrive time.Duration) {
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.clock.Now()
	claimed := map[string]bool{}
	for _, r := range w.records() {
		if r.InstanceID != "" {
			claimed[r.InstanceID] = true
		}
		if r.InstanceID == "" && now.Sub(r.CreatedAt) > redrive+registration+time.Minute {
			w.violate("2", "record %s (%s) has had no instance for %s", r.Name, r.Phase, now.Sub(r.CreatedAt).Round(time.Second))
		}
	}
	// Invariant 10: each record has its NodeClaim object, under the
	// termination finalizer, and each object of Nodewright's a record.
	objs := w.kube.nodeClaims()
	recs := map[string]bool{}
	for _, r := range w.records() {
		recs[r.Name] = true
		if o := objs[r.Name]; o == nil || !o.HasFinalizer() || o.DeletionTimestamp != nil {
			w.violate("11", "record %s (%s) has no NodeClaim object in step (%v)", r.Name, r.Phase, o != nil)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(objs)) {
		if !recs[name] && objs[name].Managed() {
			w.violate("11", "NodeClaim object %s has no record", name)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(w.ec2.instances)) {
		in := w.ec2.instances[id]
		if in.live() && in.Tags[names.TagKeyManagedBy] == names.TagValueManagedBy && !claimed[id] && now.Sub(in.Launched) > registration+time.Minute {
			w.violate("1.leak", "instance %s (nodeclaim tag %s) has had no record for %s and is still running", id, in.Tags[names.TagKeyNodeClaim], now.Sub(in.Launched).Round(time.Second))
		}
	}
	// Invariant 13: each instance adopted from Karpenter that still runs
	// has a record, and no instance has two.
	byInstance := map[string][]string{}
	for _, r := range w.records() {
		if r.InstanceID != "" {
			byInstance[r.InstanceID] = append(byInstance[r.InstanceID], r.Name)
		}
	}
	for _, id := range slices.Sorted(maps.Keys(byInstance)) {
		if len(byInstance[id]) > 1 {
			w.violate("13.double", "instance %s has %d records: %v", id, len(byInstance[id]), byInstance[id])
		}
	}
	for _, id := range slices.Sorted(maps.Keys(w.adoptable)) {
		switch live := w.ec2.instances[id].live(); {
		case live && w.karpenterDeleting[id]:
			w.violate("13.deletion", "instance %s, whose NodeClaim Karpenter was deleting, still runs", id)
		case live && !claimed[id]:
			w.violate("13.leak", "instance %s, launched by Karpenter into a configured NodePool, still runs with no record", id)
		case !live && objs[w.ec2.instances[id].Tags[names.TagKeyNodeClaim]] != nil:
			w.violate("13.released", "instance %s is gone, its NodeClaim object %s is still held", id, w.ec2.instances[id].Tags[names.TagKeyNodeClaim])
		}
	}
	w.checkFigures()
	for _, pool := range slices.Sorted(maps.Keys(w.static)) {
		if n := w.liveIn(pool); n != w.static[pool] {
			w.violate("12", "static NodePool %s runs %d instances once settled, want its replicas, %d", pool, n, w.static[pool])
		}
	}
}

// sortedViolations orders violations by check, then time.
func sortedViolations(vs []violation) []violation {
	out := append([]violation(nil), vs...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Check < out[j].Check })
	return out
}
