package drain

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/kube"
)

// apiServer is a fake that deletes as the API server does: a first deletion
// sets DeletionTimestamp = now + grace; a second one may only shorten it,
// counted from the deletion's start, and one that would end in the past
// becomes "now, 1 s". The kubelet removes a pod at its DeletionTimestamp.
// Every removal is checked against MinGrace; violations are kept.
type apiServer struct {
	mu         sync.Mutex
	now        time.Time
	deadline   time.Time
	pods       map[string]*corev1.Pod
	blocked    map[string]bool
	sent       map[string][]time.Duration // each removal's grace, by pod
	violations []string
}

func (a *apiServer) PodsOnNode(context.Context, string) ([]corev1.Pod, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []corev1.Pod
	for _, p := range a.pods {
		out = append(out, *p.DeepCopy())
	}
	return out, nil
}

func (a *apiServer) Evict(_ context.Context, ns, name string, o kube.EvictOptions) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.blocked[name] {
		return &kube.EvictionError{Namespace: ns, Name: name, BlockedByPDB: true, Err: errors.New("429")}
	}
	a.remove(name, o.GracePeriod)
	return nil
}

func (a *apiServer) DeletePod(_ context.Context, _, name string, o kube.DeleteOptions) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.remove(name, o.GracePeriod)
	return nil
}

func (a *apiServer) remove(name string, g *time.Duration) {
	p := a.pods[name]
	if p == nil {
		return
	}
	grace := ownGrace(p)
	if g != nil {
		grace = *g
	}
	a.sent[name] = append(a.sent[name], grace)
	if floor := MinGrace(p, a.deadline, a.now); grace < floor || (grace <= 0 && ownGrace(p) > 0) {
		a.violations = append(a.violations, fmt.Sprintf("%s at deadline%+v: grace %v under %v", name, a.now.Sub(a.deadline), grace, floor))
	}
	period := int64(grace / time.Second)
	if p.DeletionTimestamp == nil {
		t := metav1.NewTime(a.now.Add(time.Duration(period) * time.Second))
		p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &t, &period
		return
	}
	cur := *p.DeletionGracePeriodSeconds
	if period >= cur {
		return
	}
	old := p.DeletionTimestamp.Time
	end := old.Add(time.Duration(period-cur) * time.Second)
	if end.Before(a.now) {
		end, period = a.now, 1
	}
	if old.After(a.deadline) && end.Before(a.deadline) {
		a.violations = append(a.violations, fmt.Sprintf("%s at deadline%+v: its end moved to deadline%+v", name, a.now.Sub(a.deadline), end.Sub(a.deadline)))
	}
	t := metav1.NewTime(end)
	p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &t, &period
}

// kubelet removes the pods whose deletion time has come.
func (a *apiServer) kubelet() {
	a.mu.Lock()
	defer a.mu.Unlock()
	for n, p := range a.pods {
		if p.DeletionTimestamp != nil && !a.now.Before(p.DeletionTimestamp.Time) {
			delete(a.pods, n)
		}
	}
}

// TestDrainHoldsMinGrace drains a node over time, the caller calling again
// on its own cadence (or by Result.DeleteBy), as the terminator does: no
// removal carries less than MinGrace, none is a force delete, no terminating
// pod's end is moved before the deadline, and pods held by a budget or
// do-not-disrupt get their whole grace when the caller honours DeleteBy.
func TestDrainHoldsMinGrace(t *testing.T) {
	s := time.Second
	for _, c := range []struct {
		name         string
		step         time.Duration
		deleteBy     bool // the caller comes back by Result.DeleteBy
		interruption bool // MaxGracePeriod = the time left, do-not-disrupt ignored
		whole        map[string]time.Duration
	}{
		{name: "by DeleteBy", step: 7300 * time.Millisecond, deleteBy: true,
			whole: map[string]time.Duration{"web": 30 * s, "keep": 45 * s, "dns": 30 * s, "db": 300 * s, "old": 400 * s}},
		{name: "every 7.3 s", step: 7300 * time.Millisecond},
		{name: "every 0.4 s", step: 400 * time.Millisecond},
		{name: "an interruption, by DeleteBy", step: 7300 * time.Millisecond, deleteBy: true, interruption: true,
			whole: map[string]time.Duration{"web": 30 * s, "dns": 30 * s, "db": 300 * s, "old": 400 * s}},
		{name: "an interruption, every 3.1 s", step: 3100 * time.Millisecond, interruption: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			start := now
			old := mkPod("old", deletingSince(start.Add(-100*s), 3600))
			a := &apiServer{now: start, deadline: start.Add(300 * s), pods: map[string]*corev1.Pod{}, sent: map[string][]time.Duration{},
				blocked: map[string]bool{"web": true}}
			for _, p := range []corev1.Pod{mkPod("web", graceSeconds(30)), mkPod("db", graceSeconds(600)),
				mkPod("keep", doNotDisrupt, graceSeconds(45)), mkPod("dns", critical, graceSeconds(30)), old,
				mkPod("zero", graceSeconds(0)), mkPod("quick", graceSeconds(10)), mkPod("ds", daemon)} {
				a.pods[p.Name] = &p
			}
			for calls := 0; ; calls++ {
				opts := Options{Deadline: a.deadline, Now: func() time.Time { return a.now }}
				if c.interruption {
					left := max(a.deadline.Sub(a.now), s)
					opts.MaxGracePeriod, opts.IgnoreDoNotDisrupt = &left, true
				}
				res, err := Drain(context.Background(), a, "n", opts)
				if err != nil {
					t.Fatal(err)
				}
				if res.Done {
					break
				}
				if calls > 10000 || a.now.After(a.deadline.Add(5*time.Minute)) {
					t.Fatalf("not done at deadline%+v: %+v", a.now.Sub(a.deadline), res)
				}
				next := a.now.Add(c.step)
				if c.deleteBy && !res.DeleteBy.IsZero() && res.DeleteBy.Before(next) {
					next = res.DeleteBy
					if next.Before(a.now) {
						next = a.now
					}
				}
				a.now = next
				a.kubelet()
			}
			for _, v := range a.violations {
				t.Error(v)
			}
			if len(a.pods) != 1 || a.pods["ds"] == nil {
				t.Errorf("left on the node: %v", a.pods)
			}
			for name, want := range c.whole {
				if got := a.sent[name]; len(got) != 1 || got[0] != want {
					t.Errorf("%s: removed with %v, want once with %v", name, got, want)
				}
			}
		})
	}
}
