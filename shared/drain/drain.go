// Package drain empties a node of its pods through the Eviction API, the way
// Karpenter's terminator does, for the three functions that remove nodes:
// provision (the termination finalizer behind `kubectl delete node`),
// interruption (a spot instance with two minutes' notice) and consolidation.
//
// A Lambda invocation is short and a drain may not be, so Drain is one
// resumable step: each call reads the node's current pods, evicts what can go
// now, and reports what was evicted, what a PodDisruptionBudget blocked, what
// is still terminating and what is left alone. The caller calls again (the
// next invocation, after its state machine in DynamoDB says so) until
// Result.Done. Nothing is remembered between calls: the pods themselves are
// the state.
//
// Rules (Karpenter's, with kubectl drain's --ignore-daemonsets):
//   - left alone: DaemonSet pods (their controller would recreate them on the
//     node), mirror pods (the Eviction API cannot remove them), terminal pods
//     (Succeeded, Failed), pods that tolerate karpenter.sh/disrupted:NoSchedule
//     (they would land on the node again), and pods stuck terminating past
//     their grace period (the node's end will end them);
//   - non-critical pods are evicted before system-cluster-critical and
//     system-node-critical ones, which wait until the others are gone (or
//     until their own time to be deleted, below);
//   - pods annotated karpenter.sh/do-not-disrupt are not evicted (they block
//     the drain) until their time to be deleted before the deadline, unless
//     Options.IgnoreDoNotDisrupt;
//   - every eviction is one bounded call (Options.EvictionTimeout): a
//     budget's refusal comes back at once as Blocked, never a 100 s retry;
//   - Options.Deadline (a NodePool's terminationGracePeriod, or the moment a
//     spot instance dies) is when every pod must be gone. As Karpenter's
//     terminator does, each pod is deleted, bypassing budgets and
//     do-not-disrupt, no later than the deadline less its own grace period
//     (terminationGracePeriodSeconds, 30 s when unset, capped by
//     Options.MaxGracePeriod), so that it gets all of it: from then on it is
//     deleted with the time left, rounded up to whole seconds. Until then it
//     is evicted. Result.DeleteBy says when the next call is due so that a
//     pod still held gets its full grace;
//   - a pod already terminating whose deletion would outlast the deadline is
//     deleted again, shorter: the API server counts the new grace period
//     from when the deletion began (and turns one that would end in the past
//     into 1 s), so the grace sent is the time already spent plus the time
//     left. A pod whose recorded grace is already that short is left to
//     finish;
//   - gracePeriodSeconds=0, a force delete, is never sent: it removes the
//     pod from the API while its containers may still run, so a StatefulSet
//     could start the same pod elsewhere. At or after the deadline a pod
//     still there is deleted with 1 s, the shortest graceful delete; the
//     instance's end stops what is left, and the API server removes the pod
//     once its kubelet or the pod garbage collector confirms it stopped.
//     MinGrace states the floor every deletion is held to, DeleteAt when a
//     budget stops holding a pod;
//   - Options.MaxGracePeriod caps every pod's grace period (an interruption's
//     notice is shorter than some pods' terminationGracePeriodSeconds: they
//     are still removed, with the time there is). Grace periods are sent in
//     whole seconds, rounded up.
package drain

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodewright/nodewright/shared/kube"
	"github.com/nodewright/nodewright/shared/podstate"
)

// Cluster is what Drain needs of the API server (*kube.Client has it).
type Cluster interface {
	// PodsOnNode lists the node's pods with a consistent read.
	PodsOnNode(ctx context.Context, node string) ([]corev1.Pod, error)
	// Evict evicts through the Eviction API; a budget's refusal satisfies
	// errors.Is(err, kube.ErrBlockedByPDB).
	Evict(ctx context.Context, namespace, name string, opts kube.EvictOptions) error
	// DeletePod deletes, bypassing budgets.
	DeletePod(ctx context.Context, namespace, name string, opts kube.DeleteOptions) error
}

// Options tune one Drain call.
type Options struct {
	// EvictionTimeout bounds each eviction call (default 10s).
	EvictionTimeout time.Duration
	// Deadline, when set, is when the drain stops asking: from then on
	// remaining pods are deleted, PodDisruptionBudgets notwithstanding.
	Deadline time.Time
	// MaxGracePeriod, when set, caps each pod's termination grace period in
	// evictions and deletions.
	MaxGracePeriod *time.Duration
	// IgnoreDoNotDisrupt evicts pods annotated karpenter.sh/do-not-disrupt
	// too (the instance is going whatever they say: an interruption).
	IgnoreDoNotDisrupt bool
	// Parallelism is how many evictions run at once (default 8).
	Parallelism int
	// Now is the clock (default time.Now).
	Now func() time.Time
}

// Pod names a pod.
type Pod struct {
	Namespace, Name string
}

func (p Pod) String() string { return p.Namespace + "/" + p.Name }

// Reasons a pod was not removed in this call.
const (
	ReasonPDB          = "PodDisruptionBudget"  // the Eviction API refused: try again later
	ReasonDoNotDisrupt = "DoNotDisrupt"         // annotated karpenter.sh/do-not-disrupt
	ReasonCritical     = "WaitingForOthers"     // a critical pod waits for the non-critical ones
	ReasonError        = "Error"                // the call failed otherwise (Err says how)
	ReasonDaemonSet    = "DaemonSet"            // left: owned by a DaemonSet
	ReasonMirror       = "MirrorPod"            // left: a static pod's mirror
	ReasonTerminal     = "Terminal"             // left: Succeeded or Failed
	ReasonTolerates    = "ToleratesDisruption"  // left: tolerates karpenter.sh/disrupted:NoSchedule
	ReasonStuck        = "StuckTerminating"     // left: terminating past its grace period
	ReasonTerminating  = "Terminating"          // waiting: already terminating
	ReasonForced       = "DeletedForDeadline"   // deleted: its grace would otherwise end past the deadline
	ReasonShortened    = "GracePeriodShortened" // deleted again: its grace would outlast the deadline
	ReasonEvicted      = "Evicted"              // evicted
)

// Outcome is what happened to one pod in this call.
type Outcome struct {
	Pod    Pod
	Reason string
	Err    error // for ReasonPDB and ReasonError: the API server's answer
	// UID is the pod's, where the drain acted on it (evicted, deleted, or
	// refused): the events about the pod name it.
	UID types.UID
}

// Result is one Drain call's account.
type Result struct {
	Node string
	// Evicted were accepted by the Eviction API in this call; Deleted were
	// deleted because the deadline was near (or deleted again, shorter).
	Evicted, Deleted []Outcome
	// Blocked could not go in this call (budget, do-not-disrupt, waiting
	// for others, errors).
	Blocked []Outcome
	// Terminating are already on their way out; the drain waits for them.
	Terminating []Outcome
	// Left are not the drain's to remove (DaemonSet, mirror, terminal...).
	Left []Outcome
	// Done: nothing is left to wait for (every remaining pod is Left).
	Done bool
	// DeleteBy, when set, is the earliest moment a Blocked pod must be
	// deleted to get its full grace period before Options.Deadline: call
	// Drain again by then.
	DeleteBy time.Time
}

// Waiting is how many pods still keep the drain from being done.
func (r *Result) Waiting() int {
	return len(r.Evicted) + len(r.Deleted) + len(r.Blocked) + len(r.Terminating)
}

// Drain takes one step of draining node (see the package doc). The error is
// for a failure to read the node's pods; failures of single pods are in
// Result.Blocked with ReasonError.
func Drain(ctx context.Context, c Cluster, node string, opts Options) (*Result, error) {
	if opts.EvictionTimeout <= 0 {
		opts.EvictionTimeout = kube.DefaultEvictionTimeout
	}
	if opts.Parallelism <= 0 {
		opts.Parallelism = 8
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	pods, err := c.PodsOnNode(ctx, node)
	if err != nil {
		return nil, fmt.Errorf("drain %s: %w", node, err)
	}
	sort.Slice(pods, func(i, j int) bool {
		if pods[i].Namespace != pods[j].Namespace {
			return pods[i].Namespace < pods[j].Namespace
		}
		return pods[i].Name < pods[j].Name
	})
	now := opts.Now()
	res := &Result{Node: node}

	// deleteAt: when each pod still running must be deleted to get its
	// grace before the deadline (none without a deadline).
	deleteAt := map[Pod]time.Time{}
	var evict, critical, due []*corev1.Pod
	var shorten []shortening
	for i := range pods {
		p := &pods[i]
		ref := Pod{p.Namespace, p.Name}
		if reason := leftAlone(p, now); reason != "" {
			res.Left = append(res.Left, Outcome{Pod: ref, Reason: reason})
			continue
		}
		if p.DeletionTimestamp != nil {
			if g, ok := shortened(p, opts.Deadline, opts.MaxGracePeriod, now); ok {
				shorten = append(shorten, shortening{p, g})
			} else {
				res.Terminating = append(res.Terminating, Outcome{Pod: ref, Reason: ReasonTerminating})
			}
			continue
		}
		if !opts.Deadline.IsZero() {
			deleteAt[ref] = DeleteAt(p, opts.Deadline, opts.MaxGracePeriod)
		}
		switch {
		case !opts.Deadline.IsZero() && !now.Before(deleteAt[ref]):
			due = append(due, p)
		case podstate.DoNotDisrupt(p) && !opts.IgnoreDoNotDisrupt:
			res.Blocked = append(res.Blocked, Outcome{Pod: ref, Reason: ReasonDoNotDisrupt})
		case isCritical(p):
			critical = append(critical, p)
		default:
			evict = append(evict, p)
		}
	}
	// Critical pods go only when nothing else is left to evict or wait for.
	if len(evict) > 0 || len(due) > 0 || len(res.Terminating) > 0 || len(res.Blocked) > 0 || len(shorten) > 0 {
		for _, p := range critical {
			res.Blocked = append(res.Blocked, Outcome{Pod: Pod{p.Namespace, p.Name}, Reason: ReasonCritical})
		}
	} else {
		evict = critical
	}

	var mu sync.Mutex
	add := func(list *[]Outcome, o Outcome) {
		mu.Lock()
		*list = append(*list, o)
		mu.Unlock()
	}
	// Deletions first: their time is counted against the deadline.
	del := func(p *corev1.Pod, grace time.Duration, reason string) {
		ref := Pod{p.Namespace, p.Name}
		if err := c.DeletePod(ctx, p.Namespace, p.Name, kube.DeleteOptions{GracePeriod: &grace, UID: p.UID}); err != nil {
			add(&res.Blocked, Outcome{Pod: ref, Reason: ReasonError, Err: err, UID: p.UID})
			return
		}
		add(&res.Deleted, Outcome{Pod: ref, Reason: reason, UID: p.UID})
	}
	run(opts.Parallelism, due, func(p *corev1.Pod) {
		del(p, deadlineGrace(p, opts.Deadline, opts.MaxGracePeriod, now), ReasonForced)
	})
	run(opts.Parallelism, shorten, func(s shortening) { del(s.pod, s.grace, ReasonShortened) })
	run(opts.Parallelism, evict, func(p *corev1.Pod) {
		ref := Pod{p.Namespace, p.Name}
		err := c.Evict(ctx, p.Namespace, p.Name, kube.EvictOptions{
			Timeout: opts.EvictionTimeout, GracePeriod: evictionGrace(p, opts.MaxGracePeriod), UID: p.UID,
		})
		switch {
		case err == nil:
			add(&res.Evicted, Outcome{Pod: ref, Reason: ReasonEvicted, UID: p.UID})
		case errors.Is(err, kube.ErrBlockedByPDB):
			add(&res.Blocked, Outcome{Pod: ref, Reason: ReasonPDB, Err: err, UID: p.UID})
		default:
			add(&res.Blocked, Outcome{Pod: ref, Reason: ReasonError, Err: err, UID: p.UID})
		}
	})
	for _, l := range [][]Outcome{res.Evicted, res.Deleted, res.Blocked, res.Terminating} {
		sortOutcomes(l)
	}
	for _, o := range res.Blocked {
		if at, ok := deleteAt[o.Pod]; ok && (res.DeleteBy.IsZero() || at.Before(res.DeleteBy)) {
			res.DeleteBy = at
		}
	}
	res.Done = res.Waiting() == 0
	return res, nil
}

// leftAlone says why the drain does not touch p, or "".
func leftAlone(p *corev1.Pod, now time.Time) string {
	switch {
	case podstate.Terminal(p):
		return ReasonTerminal
	case podstate.Mirror(p):
		return ReasonMirror
	case podstate.OwnedBy(p, "DaemonSet"):
		return ReasonDaemonSet
	case podstate.ToleratesDisrupted(p):
		return ReasonTolerates
	case stuckTerminating(p, now):
		return ReasonStuck
	}
	return ""
}

// stuckTerminating: deleted, and its deletion time (which already includes
// its grace period) passed a minute ago, as Karpenter judges it.
func stuckTerminating(p *corev1.Pod, now time.Time) bool {
	return p.DeletionTimestamp != nil && now.Sub(p.DeletionTimestamp.Time) > time.Minute
}

func isCritical(p *corev1.Pod) bool {
	return p.Spec.PriorityClassName == "system-cluster-critical" || p.Spec.PriorityClassName == "system-node-critical"
}

// ownGrace is the grace period p asks for: its terminationGracePeriodSeconds,
// or the API server's default when unset.
func ownGrace(p *corev1.Pod) time.Duration {
	if s := p.Spec.TerminationGracePeriodSeconds; s != nil {
		return max(time.Duration(*s)*time.Second, 0)
	}
	return time.Duration(corev1.DefaultTerminationGracePeriodSeconds) * time.Second
}

// capped is g, at most maxGrace (when set) rounded up to whole seconds; a
// cap is never under the 1 s of a graceful delete.
func capped(g time.Duration, maxGrace *time.Duration) time.Duration {
	if maxGrace != nil && *maxGrace < g {
		return max1s(ceilSeconds(*maxGrace))
	}
	return g
}

// MinGrace is the least grace period a deletion (or eviction) of p at now
// may carry under deadline (zero: none): its own grace period, or the time
// left before the deadline rounded up to whole seconds if that is shorter,
// and never under 1 s unless p itself asks for 0. It is the floor Drain
// holds every removal to when Options.MaxGracePeriod is unset or no shorter
// than the time left (as an interruption sets it); a shorter MaxGracePeriod
// is the caller's explicit cap.
func MinGrace(p *corev1.Pod, deadline, now time.Time) time.Duration {
	own := ownGrace(p)
	if deadline.IsZero() {
		return own
	}
	return min(own, max(ceilSeconds(deadline.Sub(now)), time.Second))
}

// DeleteAt is the moment from which Drain deletes p, budgets and
// do-not-disrupt notwithstanding, so that it gets its whole grace period
// (capped by maxGrace, when set) before deadline, which must be set. Before
// it, p is only evicted: a budget holds it.
func DeleteAt(p *corev1.Pod, deadline time.Time, maxGrace *time.Duration) time.Time {
	return deadline.Add(-capped(ownGrace(p), maxGrace))
}

// evictionGrace is the grace period to evict p with: nil to keep its own,
// else the cap.
func evictionGrace(p *corev1.Pod, maxGrace *time.Duration) *time.Duration {
	own := ownGrace(p)
	if g := capped(own, maxGrace); g != own {
		return &g
	}
	return nil
}

// deadlineGrace is the grace period to delete p with when its time to go
// before deadline has come: its own (capped), or the time left if shorter,
// in whole seconds rounded up, and at least 1 s.
func deadlineGrace(p *corev1.Pod, deadline time.Time, maxGrace *time.Duration, now time.Time) time.Duration {
	return max1s(min(capped(ownGrace(p), maxGrace), ceilSeconds(deadline.Sub(now))))
}

// shortening is a terminating pod to delete again with a shorter grace.
type shortening struct {
	pod   *corev1.Pod
	grace time.Duration
}

// shortened says whether terminating p must be deleted again so that it
// ends by deadline, and with what grace period. The API server counts a
// shortened grace period from the deletion's start (DeletionTimestamp less
// DeletionGracePeriodSeconds) and turns one that would end in the past
// into 1 s; so the pod is given the time it already had plus the time left
// (capped by maxGrace), which puts its deletion at the deadline. At or after
// the deadline it is 1 s. A new grace no shorter than the recorded one
// would be ignored by the API server: the pod is left to finish.
func shortened(p *corev1.Pod, deadline time.Time, maxGrace *time.Duration, now time.Time) (time.Duration, bool) {
	if deadline.IsZero() || !p.DeletionTimestamp.After(deadline) {
		return 0, false
	}
	g := time.Second
	if left := deadline.Sub(now); left > 0 {
		var spent time.Duration
		if s := p.DeletionGracePeriodSeconds; s != nil {
			start := p.DeletionTimestamp.Add(-time.Duration(*s) * time.Second)
			spent = max0(now.Sub(start))
		}
		g = max1s(ceilSeconds(spent + capped(left, maxGrace)))
	}
	if s := p.DeletionGracePeriodSeconds; s != nil && g >= time.Duration(*s)*time.Second {
		return 0, false
	}
	return g, true
}

// ceilSeconds rounds d up to whole seconds (the API takes seconds, and a pod
// given less than it is owed is the worse error).
func ceilSeconds(d time.Duration) time.Duration {
	if t := d.Truncate(time.Second); t < d {
		return t + time.Second
	}
	return d.Truncate(time.Second)
}

func max1s(d time.Duration) time.Duration { return max(d, time.Second) }

func max0(d time.Duration) time.Duration {
	if d < 0 {
		return 0
	}
	return d
}

// run calls f for each item with at most n at once.
func run[T any](n int, pods []T, f func(T)) {
	sem := make(chan struct{}, n)
	var wg sync.WaitGroup
	for _, p := range pods {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			f(p)
		}()
	}
	wg.Wait()
}

func sortOutcomes(l []Outcome) {
	sort.Slice(l, func(i, j int) bool {
		if l[i].Pod.Namespace != l[j].Pod.Namespace {
			return l[i].Pod.Namespace < l[j].Pod.Namespace
		}
		return l[i].Pod.Name < l[j].Pod.Name
	})
}

// Compile-time check that the kube client is a Cluster.
var _ Cluster = (*kube.Client)(nil)
