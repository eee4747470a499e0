package drain

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodewright/nodewright/shared/kube"
)

// fakeCluster records evictions and deletions; blocked pods' evictions are
// refused as a PodDisruptionBudget refuses them.
type fakeCluster struct {
	mu      sync.Mutex
	pods    []corev1.Pod
	blocked map[string]bool
	failing map[string]bool
	evicted map[string]*time.Duration
	deleted map[string]*time.Duration
	calls   []string // "evict <name> <grace>" or "delete <name> <grace>", grace "own" when unset
	listErr error
}

func graceString(g *time.Duration) string {
	if g == nil {
		return "own"
	}
	return g.String()
}

func (f *fakeCluster) PodsOnNode(context.Context, string) ([]corev1.Pod, error) {
	return append([]corev1.Pod(nil), f.pods...), f.listErr
}

func (f *fakeCluster) Evict(_ context.Context, ns, name string, o kube.EvictOptions) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch {
	case f.blocked[name]:
		return &kube.EvictionError{Namespace: ns, Name: name, BlockedByPDB: true, Err: errors.New("429")}
	case f.failing[name]:
		return &kube.EvictionError{Namespace: ns, Name: name, Err: errors.New("500")}
	}
	if o.Timeout <= 0 || o.UID == "" {
		return fmt.Errorf("unbounded eviction or no UID: %+v", o)
	}
	f.evicted[name] = o.GracePeriod
	f.calls = append(f.calls, "evict "+name+" "+graceString(o.GracePeriod))
	return nil
}

func (f *fakeCluster) DeletePod(_ context.Context, ns, name string, o kube.DeleteOptions) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.deleted[name] = o.GracePeriod
	f.calls = append(f.calls, "delete "+name+" "+graceString(o.GracePeriod))
	return nil
}

var now = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

type podOpt func(*corev1.Pod)

func mkPod(name string, opts ...podOpt) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PodSpec{NodeName: "n"}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	p.UID = types.UID("uid-" + p.Name)
	for _, o := range opts {
		o(&p)
	}
	return p
}

func daemon(p *corev1.Pod) {
	p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "ds", Controller: ptr(true)}}
}
func mirror(p *corev1.Pod)    { p.Annotations = map[string]string{kube.AnnotationMirrorPod: "x"} }
func succeeded(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }
func critical(p *corev1.Pod)  { p.Spec.PriorityClassName = "system-cluster-critical" }
func doNotDisrupt(p *corev1.Pod) {
	p.Annotations = map[string]string{kube.AnnotationDoNotDisrupt: "true"}
}
func tolerant(p *corev1.Pod) {
	p.Spec.Tolerations = []corev1.Toleration{{Key: "karpenter.sh/disrupted", Operator: corev1.TolerationOpExists}}
}
func graceSeconds(s int64) podOpt {
	return func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = &s }
}
func deleting(at time.Time) podOpt {
	return func(p *corev1.Pod) { t := metav1.NewTime(at); p.DeletionTimestamp = &t }
}

func ptr[T any](v T) *T { return &v }

func outcomes(l []Outcome) string {
	var out []string
	for _, o := range l {
		out = append(out, o.Pod.Name+":"+o.Reason)
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

func run1(t *testing.T, f *fakeCluster, opts Options) *Result {
	t.Helper()
	if f.evicted == nil {
		f.evicted, f.deleted = map[string]*time.Duration{}, map[string]*time.Duration{}
	}
	opts.Now = func() time.Time { return now }
	res, err := Drain(context.Background(), f, "n", opts)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestDrain(t *testing.T) {
	for _, c := range []struct {
		name                                          string
		pods                                          []corev1.Pod
		blocked                                       []string
		opts                                          Options
		evicted, deleted, blocked_, terminating, left string
		done                                          bool
	}{
		{name: "empty node", done: true},
		{
			name:    "plain pods evicted, the rest left alone",
			pods:    []corev1.Pod{mkPod("a"), mkPod("b"), mkPod("ds", daemon), mkPod("static", mirror), mkPod("job", succeeded), mkPod("tol", tolerant)},
			evicted: "a:Evicted b:Evicted", left: "ds:DaemonSet job:Terminal static:MirrorPod tol:ToleratesDisruption",
		},
		{
			name: "a budget blocks one", pods: []corev1.Pod{mkPod("a"), mkPod("b")}, blocked: []string{"b"},
			evicted: "a:Evicted", blocked_: "b:PodDisruptionBudget",
		},
		{
			name: "critical pods wait for the others", pods: []corev1.Pod{mkPod("a"), mkPod("dns", critical)},
			evicted: "a:Evicted", blocked_: "dns:WaitingForOthers",
		},
		{
			name: "critical pods go when alone", pods: []corev1.Pod{mkPod("dns", critical), mkPod("ds", daemon)},
			evicted: "dns:Evicted", left: "ds:DaemonSet",
		},
		{
			name: "critical pods wait for terminating ones", pods: []corev1.Pod{mkPod("dns", critical), mkPod("old", deleting(now.Add(20*time.Second)))},
			blocked_: "dns:WaitingForOthers", terminating: "old:Terminating",
		},
		{
			name: "do-not-disrupt blocks until the deadline", pods: []corev1.Pod{mkPod("keep", doNotDisrupt)},
			blocked_: "keep:DoNotDisrupt",
		},
		{
			name: "do-not-disrupt ignored for an interruption", pods: []corev1.Pod{mkPod("keep", doNotDisrupt)},
			opts: Options{IgnoreDoNotDisrupt: true}, evicted: "keep:Evicted",
		},
		{
			name: "past the deadline everything is deleted", pods: []corev1.Pod{mkPod("a"), mkPod("keep", doNotDisrupt), mkPod("b")}, blocked: []string{"b"},
			opts: Options{Deadline: now.Add(-time.Second)}, deleted: "a:DeletedForDeadline b:DeletedForDeadline keep:DeletedForDeadline",
		},
		{
			name: "a terminating pod that would outlast the deadline is deleted again",
			pods: []corev1.Pod{mkPod("slow", deleting(now.Add(10*time.Minute))), mkPod("fast", deleting(now.Add(10*time.Second)))},
			opts: Options{Deadline: now.Add(time.Minute)}, deleted: "slow:GracePeriodShortened", terminating: "fast:Terminating",
		},
		{
			name: "stuck terminating pods are left", pods: []corev1.Pod{mkPod("stuck", deleting(now.Add(-5*time.Minute)))},
			left: "stuck:StuckTerminating", done: true,
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeCluster{pods: c.pods, blocked: map[string]bool{}}
			for _, b := range c.blocked {
				f.blocked[b] = true
			}
			res := run1(t, f, c.opts)
			for what, pair := range map[string][2]string{
				"evicted": {outcomes(res.Evicted), c.evicted}, "deleted": {outcomes(res.Deleted), c.deleted},
				"blocked": {outcomes(res.Blocked), c.blocked_}, "terminating": {outcomes(res.Terminating), c.terminating},
				"left": {outcomes(res.Left), c.left},
			} {
				if pair[0] != pair[1] {
					t.Errorf("%s: %q, want %q", what, pair[0], pair[1])
				}
			}
			if res.Done != c.done {
				t.Errorf("done %v, want %v", res.Done, c.done)
			}
		})
	}
}

// An interruption's notice is shorter than a pod's grace period: the
// eviction carries the notice; at the deadline a deletion carries 1 s.
func TestGracePeriodCapped(t *testing.T) {
	notice := 90 * time.Second
	f := &fakeCluster{pods: []corev1.Pod{mkPod("long", graceSeconds(600)), mkPod("short", graceSeconds(5)), mkPod("default")}}
	run1(t, f, Options{MaxGracePeriod: &notice})
	if g := f.evicted["long"]; g == nil || *g != notice {
		t.Errorf("long: grace %v, want %s", g, notice)
	}
	if g := f.evicted["short"]; g != nil {
		t.Errorf("short: grace %v, want its own", *g)
	}
	if g := f.evicted["default"]; g != nil {
		t.Errorf("default (30 s): grace %v, want its own", *g)
	}
	f = &fakeCluster{pods: []corev1.Pod{mkPod("long", graceSeconds(600))}}
	run1(t, f, Options{Deadline: now, MaxGracePeriod: &notice})
	if g := f.deleted["long"]; g == nil || *g != time.Second {
		t.Errorf("at the deadline: grace %v, want 1s (never 0, a force delete)", g)
	}
}

// Drain is resumable: each call acts on the node's current pods.
func TestDrainResumes(t *testing.T) {
	f := &fakeCluster{pods: []corev1.Pod{mkPod("a"), mkPod("b"), mkPod("ds", daemon)}, blocked: map[string]bool{"b": true}}
	res := run1(t, f, Options{})
	if res.Done || outcomes(res.Evicted) != "a:Evicted" || outcomes(res.Blocked) != "b:PodDisruptionBudget" {
		t.Fatalf("first call %+v", res)
	}
	if res.Evicted[0].UID != "uid-a" || res.Blocked[0].UID != "uid-b" {
		t.Errorf("UIDs %q, %q: want the pods' own (their events name them)", res.Evicted[0].UID, res.Blocked[0].UID)
	}
	f.pods = []corev1.Pod{mkPod("b"), mkPod("ds", daemon)} // a is gone
	f.blocked = map[string]bool{}
	res = run1(t, f, Options{})
	if res.Done || outcomes(res.Evicted) != "b:Evicted" {
		t.Fatalf("second call %+v", res)
	}
	f.pods = []corev1.Pod{mkPod("ds", daemon)}
	if res = run1(t, f, Options{}); !res.Done || res.Waiting() != 0 {
		t.Fatalf("third call %+v", res)
	}
}

func TestDrainErrors(t *testing.T) {
	f := &fakeCluster{listErr: errors.New("forbidden")}
	if _, err := Drain(context.Background(), f, "n", Options{}); err == nil || !strings.Contains(err.Error(), "drain n: forbidden") {
		t.Fatalf("err %v", err)
	}
	f = &fakeCluster{pods: []corev1.Pod{mkPod("a")}, failing: map[string]bool{"a": true}}
	res := run1(t, f, Options{})
	if len(res.Blocked) != 1 || res.Blocked[0].Reason != ReasonError || res.Blocked[0].Err == nil || res.Done {
		t.Fatalf("a failing eviction: %+v", res)
	}
}
