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
//     system-node-critical ones, which wait until the others are gone;
//   - pods annotated karpenter.sh/do-not-disrupt are not evicted (they block
//     the drain) until the deadline, unless Options.IgnoreDoNotDisrupt;
//   - every eviction is one bounded call (Options.EvictionTimeout): a
//     budget's refusal comes back at once as Blocked, never a 100 s retry;
//   - past Options.Deadline (a NodePool's terminationGracePeriod, or the
//     moment a spot instance dies) every remaining pod is deleted, bypassing
//     budgets, and a pod already terminating whose grace period would outlast
//     the deadline is deleted again with the time that is left;
//   - Options.MaxGracePeriod caps every pod's grace period (an interruption's
//     notice is shorter than some pods' terminationGracePeriodSeconds: they
//     are still evicted, with the time there is).
package drain

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	"github.com/nodewright/nodewright/shared/kube"
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
	ReasonForced       = "DeletedAfterDeadline" // deleted: the deadline passed
	ReasonShortened    = "GracePeriodShortened" // deleted again: its grace would outlast the deadline
	ReasonEvicted      = "Evicted"              // evicted
)

// Outcome is what happened to one pod in this call.
type Outcome struct {
	Pod    Pod
	Reason string
	Err    error // for ReasonPDB and ReasonError: the API server's answer
}

// Result is one Drain call's account.
type Result struct {
	Node string
	// Evicted were accepted by the Eviction API in this call; Deleted were
	// deleted because the deadline passed (or deleted again, shorter).
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
	pastDeadline := !opts.Deadline.IsZero() && !now.Before(opts.Deadline)
	res := &Result{Node: node}

	var evict, critical, forceDelete, shorten []*corev1.Pod
	for i := range pods {
		p := &pods[i]
		ref := Pod{p.Namespace, p.Name}
		if reason := leftAlone(p, now); reason != "" {
			res.Left = append(res.Left, Outcome{Pod: ref, Reason: reason})
			continue
		}
		if p.DeletionTimestamp != nil {
			if !opts.Deadline.IsZero() && p.DeletionTimestamp.After(opts.Deadline) {
				shorten = append(shorten, p)
			} else {
				res.Terminating = append(res.Terminating, Outcome{Pod: ref, Reason: ReasonTerminating})
			}
			continue
		}
		switch {
		case pastDeadline:
			forceDelete = append(forceDelete, p)
		case p.Annotations[kube.AnnotationDoNotDisrupt] == "true" && !opts.IgnoreDoNotDisrupt:
			res.Blocked = append(res.Blocked, Outcome{Pod: ref, Reason: ReasonDoNotDisrupt})
		case isCritical(p):
			critical = append(critical, p)
		default:
			evict = append(evict, p)
		}
	}
	// Critical pods go only when nothing else is left to evict or wait for.
	if len(evict) > 0 || len(res.Terminating) > 0 || len(res.Blocked) > 0 || len(shorten) > 0 {
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
	run(opts.Parallelism, evict, func(p *corev1.Pod) {
		ref := Pod{p.Namespace, p.Name}
		err := c.Evict(ctx, p.Namespace, p.Name, kube.EvictOptions{
			Timeout: opts.EvictionTimeout, GracePeriod: grace(p, opts.MaxGracePeriod, time.Time{}, now), UID: p.UID,
		})
		switch {
		case err == nil:
			add(&res.Evicted, Outcome{Pod: ref, Reason: ReasonEvicted})
		case errors.Is(err, kube.ErrBlockedByPDB):
			add(&res.Blocked, Outcome{Pod: ref, Reason: ReasonPDB, Err: err})
		default:
			add(&res.Blocked, Outcome{Pod: ref, Reason: ReasonError, Err: err})
		}
	})
	del := func(reason string) func(p *corev1.Pod) {
		return func(p *corev1.Pod) {
			ref := Pod{p.Namespace, p.Name}
			err := c.DeletePod(ctx, p.Namespace, p.Name, kube.DeleteOptions{GracePeriod: grace(p, opts.MaxGracePeriod, opts.Deadline, now), UID: p.UID})
			if err != nil {
				add(&res.Blocked, Outcome{Pod: ref, Reason: ReasonError, Err: err})
				return
			}
			add(&res.Deleted, Outcome{Pod: ref, Reason: reason})
		}
	}
	run(opts.Parallelism, forceDelete, del(ReasonForced))
	run(opts.Parallelism, shorten, del(ReasonShortened))
	for _, l := range [][]Outcome{res.Evicted, res.Deleted, res.Blocked, res.Terminating} {
		sortOutcomes(l)
	}
	res.Done = res.Waiting() == 0
	return res, nil
}

// leftAlone says why the drain does not touch p, or "".
func leftAlone(p *corev1.Pod, now time.Time) string {
	switch {
	case p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed:
		return ReasonTerminal
	case p.Annotations[kube.AnnotationMirrorPod] != "":
		return ReasonMirror
	case ownedByDaemonSet(p):
		return ReasonDaemonSet
	case toleratesDisrupted(p):
		return ReasonTolerates
	case stuckTerminating(p, now):
		return ReasonStuck
	}
	return ""
}

func ownedByDaemonSet(p *corev1.Pod) bool {
	for _, o := range p.OwnerReferences {
		if o.Kind == "DaemonSet" && o.Controller != nil && *o.Controller {
			return true
		}
	}
	return false
}

// disruptedTaint is the taint Nodewright puts on nodes it is removing.
var disruptedTaint = corev1.Taint{Key: "karpenter.sh/disrupted", Effect: corev1.TaintEffectNoSchedule}

func toleratesDisrupted(p *corev1.Pod) bool {
	for i := range p.Spec.Tolerations {
		if p.Spec.Tolerations[i].ToleratesTaint(klog.Background(), &disruptedTaint, false) {
			return true
		}
	}
	return false
}

// stuckTerminating: deleted, and its deletion time (which already includes
// its grace period) passed a minute ago, as Karpenter judges it.
func stuckTerminating(p *corev1.Pod, now time.Time) bool {
	return p.DeletionTimestamp != nil && now.Sub(p.DeletionTimestamp.Time) > time.Minute
}

func isCritical(p *corev1.Pod) bool {
	return p.Spec.PriorityClassName == "system-cluster-critical" || p.Spec.PriorityClassName == "system-node-critical"
}

// grace is the grace period to pass for p: nil to keep the pod's own, else
// the smallest of its own, max and the time left until deadline.
func grace(p *corev1.Pod, max *time.Duration, deadline, now time.Time) *time.Duration {
	own := time.Duration(corev1.DefaultTerminationGracePeriodSeconds) * time.Second
	if p.Spec.TerminationGracePeriodSeconds != nil {
		own = time.Duration(*p.Spec.TerminationGracePeriodSeconds) * time.Second
	}
	g, changed := own, false
	if max != nil && *max < g {
		g, changed = *max, true
	}
	if !deadline.IsZero() {
		left := max0(deadline.Sub(now))
		if left < g {
			g, changed = left, true
		}
	}
	if !changed {
		return nil
	}
	g = g.Truncate(time.Second)
	return &g
}

func max0(d time.Duration) time.Duration {
	if d < 0 {
		return 0
	}
	return d
}

// run calls f for each pod with at most n at once.
func run(n int, pods []*corev1.Pod, f func(*corev1.Pod)) {
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
