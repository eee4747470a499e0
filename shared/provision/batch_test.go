package provision

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
)

// arrival is a pod that appears in the cluster's view at offset after
// Settle starts (negative: already there), built by pod at the time it
// appears (Settle's start for pods already there).
type arrival struct {
	at  time.Duration
	pod func(name string, start time.Time) *corev1.Pod
}

// every makes n arrivals, step apart from first.
func every(n int, first, step time.Duration, pod func(string, time.Time) *corev1.Pod) []arrival {
	var out []arrival
	for i := range n {
		out = append(out, arrival{at: first + time.Duration(i)*step, pod: pod})
	}
	return out
}

// Settle starts half a second into a second, as the API server's
// timestamps (whole seconds) rarely line up with anything.
var settleStart = t0.Add(500 * time.Millisecond)

func TestSettle(t *testing.T) {
	// Pod builders, relative to Settle's start.
	markedAgo := func(ago time.Duration) func(string, time.Time) *corev1.Pod {
		return func(name string, start time.Time) *corev1.Pod {
			return unschedulableAt(name, start.Add(-ago-time.Second), start.Add(-ago))
		}
	}
	// A pod created long ago that kube-scheduler marked only now (a busy
	// machine): its timestamps are old, it arrives when it appears.
	lateMarked := func(name string, start time.Time) *corev1.Pod {
		return unschedulableAt(name, start.Add(-5*time.Second), start.Add(-5*time.Second))
	}
	fresh := func(name string, start time.Time) *corev1.Pod { return unevaluated(name, start) }
	bound := func(name string, start time.Time) *corev1.Pod {
		p := unevaluated(name, start)
		p.Spec.NodeName = "ip-1"
		return p
	}
	daemon := func(name string, start time.Time) *corev1.Pod {
		p := unevaluated(name, start)
		p.OwnerReferences = []metav1.OwnerReference{{Kind: "DaemonSet", Name: "ds", Controller: ptr(true)}}
		return p
	}
	gated := func(name string, start time.Time) *corev1.Pod {
		p := unevaluated(name, start)
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonSchedulingGated}}
		return p
	}
	for _, tc := range []struct {
		name     string
		arrivals []arrival
		idle     time.Duration
		max      time.Duration
		want     time.Duration
	}{
		{name: "nothing pending", want: 0},
		{name: "only bound, DaemonSet and gated pods", arrivals: []arrival{{-time.Second, bound}, {-time.Second, daemon}, {-time.Second, gated}}, want: 0},
		{name: "a sweep over old pending pods solves at once", arrivals: every(5, -time.Minute, 0, markedAgo(30*time.Second)), want: 0},
		// Timestamps are whole seconds: a pod marked at t0-1s (1.5 s before
		// the start) arrived before t0, so idle runs out at t0+1s.
		{name: "a pod marked 2.5 s ago is past the window", arrivals: []arrival{{-time.Second, markedAgo(2500 * time.Millisecond)}}, want: 0},
		{name: "a pod marked 1.5 s ago waits out the rest of its window", arrivals: []arrival{{-time.Second, markedAgo(1500 * time.Millisecond)}}, want: 500 * time.Millisecond},
		{name: "a pod marked this second opens a full window", arrivals: []arrival{{-time.Second, markedAgo(100 * time.Millisecond)}}, want: time.Second},
		{name: "a pod not yet evaluated by kube-scheduler is an arrival", arrivals: []arrival{{0, fresh}}, want: time.Second},
		{name: "new unevaluated pods keep the window open", arrivals: every(7, 0, 500*time.Millisecond, fresh), want: 4 * time.Second},
		// The bug: a pod created long ago that kube-scheduler marked late
		// counted at its creation and never extended the window.
		{name: "a late-marked pod counts when it appears", arrivals: append([]arrival{{0, fresh}}, every(3, 600*time.Millisecond, 600*time.Millisecond, lateMarked)...),
			want: 1800*time.Millisecond + time.Second},
		{name: "late-marked pods alone, appearing after the first look", arrivals: []arrival{{-time.Second, markedAgo(0)}, {700 * time.Millisecond, lateMarked}}, want: 1700 * time.Millisecond},
		{name: "the window is bounded by max", arrivals: every(100, 0, 300*time.Millisecond, fresh), max: 3 * time.Second, want: 3 * time.Second},
		{name: "a custom idle", arrivals: []arrival{{0, fresh}, {200 * time.Millisecond, fresh}}, idle: 2 * time.Second, want: 2200 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := testingclock.NewFakeClock(settleStart)
			pods := map[int]*corev1.Pod{}
			view := func(now time.Time) (*View, error) {
				v := &View{}
				for i, a := range tc.arrivals {
					if settleStart.Add(a.at).After(now) {
						continue
					}
					if pods[i] == nil {
						pods[i] = a.pod(fmt.Sprintf("p%d", i), settleStart.Add(max(a.at, 0)))
					}
					v.Pods = append(v.Pods, pods[i])
				}
				return v, nil
			}
			r, _, _, _ := testReconciler(t, clock, view)
			b, err := r.Settle(context.Background(), tc.idle, tc.max)
			if err != nil {
				t.Fatal(err)
			}
			got := b.Waited
			if got != tc.want {
				t.Errorf("waited %v, want %v", got, tc.want)
			}
			if elapsed := clock.Now().Sub(settleStart); elapsed != got {
				t.Errorf("reported %v, the clock moved %v", got, elapsed)
			}
		})
	}
}

// Settle looks at the cluster every 100 ms at most while it waits, and
// passes on the view's error and the context's end.
func TestSettlePollsAndStops(t *testing.T) {
	clock := testingclock.NewFakeClock(settleStart)
	src := func(now time.Time) (*View, error) {
		return &View{Pods: []*corev1.Pod{unevaluated("a", settleStart)}}, nil
	}
	r, _, _, _ := testReconciler(t, clock, src)
	var waits []time.Duration
	r.wait = func(_ context.Context, d time.Duration) error {
		waits = append(waits, d)
		clock.Step(d)
		return nil
	}
	b, err := r.Settle(context.Background(), 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if b.Looks != 11 || b.Pending != 1 || b.Waited != time.Second {
		t.Errorf("%+v, want 11 looks over 1 s with 1 pod pending", b)
	}
	if len(waits) != 10 {
		t.Errorf("%d waits %v, want 10 of at most 100 ms for the 1 s default idle", len(waits), waits)
	}
	for _, w := range waits {
		if w <= 0 || w > batchPoll {
			t.Errorf("wait %v outside (0, %v]", w, batchPoll)
		}
	}

	broken := errors.New("api server gone")
	r.Source = &fakeSource{clock: clock, fn: func(time.Time) (*View, error) { return nil, broken }}
	if _, err := r.Settle(context.Background(), 0, 0); !errors.Is(err, broken) {
		t.Errorf("view error: got %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	r.wait = func(context.Context, time.Duration) error { cancel(); return ctx.Err() }
	r.Source = &fakeSource{clock: clock, fn: func(now time.Time) (*View, error) {
		return &View{Pods: []*corev1.Pod{unevaluated("b", now)}}, nil
	}}
	if _, err := r.Settle(ctx, 0, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: got %v", err)
	}
}

func TestPendingSince(t *testing.T) {
	created := t0.Add(-time.Minute)
	marked := t0.Add(-10 * time.Second)
	terminating := unevaluated("t", created)
	terminating.DeletionTimestamp = &metav1.Time{Time: t0}
	done := unevaluated("d", created)
	done.Status.Phase = corev1.PodSucceeded
	nominated := unschedulableAt("n", created, marked)
	nominated.Status.NominatedNodeName = "ip-1"
	scheduled := unevaluated("s", created)
	scheduled.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}
	for _, tc := range []struct {
		pod  *corev1.Pod
		want time.Time
		ok   bool
	}{
		{unschedulableAt("u", created, marked), marked, true},
		{unevaluated("e", created), created, true},
		{terminating, time.Time{}, false},
		{done, time.Time{}, false},
		{nominated, time.Time{}, false},
		{scheduled, time.Time{}, false},
		{st.Pod(st.PodOptions{Name: "b", NodeName: "ip-1"}), time.Time{}, false},
	} {
		got, ok := pendingSince(tc.pod)
		if ok != tc.ok || !got.Equal(tc.want) {
			t.Errorf("%s: %v %v, want %v %v", tc.pod.Name, got, ok, tc.want, tc.ok)
		}
	}
}

// Backlog counts the pods kube-scheduler has not evaluated though they
// were created before the cut: not the marked, the just created, the
// scheduled or the bound.
func TestBacklog(t *testing.T) {
	cut := t0.Add(-time.Second)
	old, fresh := t0.Add(-time.Minute), t0
	scheduled := unevaluated("s", old)
	scheduled.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}}
	for _, tc := range []struct {
		name string
		pods []*corev1.Pod
		want int
	}{
		{"none", nil, 0},
		{"unevaluated for a minute", []*corev1.Pod{unevaluated("a", old), unevaluated("b", old)}, 2},
		{"just created", []*corev1.Pod{unevaluated("a", fresh)}, 0},
		{"marked Unschedulable", []*corev1.Pod{unschedulableAt("u", old, old)}, 0},
		{"scheduled or bound", []*corev1.Pod{scheduled, st.Pod(st.PodOptions{Name: "b", NodeName: "ip-1"})}, 0},
		{"a mix", []*corev1.Pod{unevaluated("a", old), unevaluated("f", fresh), unschedulableAt("u", old, old)}, 1},
	} {
		if got := Backlog(tc.pods, cut); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

func ptr[T any](v T) *T { return &v }

// Looks that take time (a busy API server): each look counts as of its
// start, so the window closes idle after the look that saw the last pod
// began, plus the closing look's own duration, and looks start 100 ms
// apart however long they take (back to back when longer).
func TestSettleWithSlowLooks(t *testing.T) {
	for _, tc := range []struct {
		name      string
		look      time.Duration
		arrivals  []time.Duration // offsets at which a new pod is there
		want      time.Duration
		wantLooks int
	}{
		// Looks at 0, 0.1, ..., 1.0 (30 ms each): the one starting at 1.0
		// closes the window.
		{name: "30 ms looks", look: 30 * time.Millisecond, arrivals: []time.Duration{0}, want: 1030 * time.Millisecond, wantLooks: 11},
		// Looks back to back every 250 ms: starts 0, 0.25, ..., 1.0.
		{name: "250 ms looks", look: 250 * time.Millisecond, arrivals: []time.Duration{0}, want: 1250 * time.Millisecond, wantLooks: 5},
		// A second pod seen by the look starting at 0.5 (looks of 250
		// ms): the window closes at the look starting at 1.5.
		{name: "250 ms looks, a later pod", look: 250 * time.Millisecond, arrivals: []time.Duration{0, 400 * time.Millisecond},
			want: 1750 * time.Millisecond, wantLooks: 7},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := testingclock.NewFakeClock(settleStart)
			src := func(now time.Time) (*View, error) {
				v := &View{}
				for i, at := range tc.arrivals {
					if !settleStart.Add(at).After(now) {
						v.Pods = append(v.Pods, unevaluated(fmt.Sprintf("p%d", i), settleStart))
					}
				}
				clock.Step(tc.look) // the look takes its time
				return v, nil
			}
			r, _, _, _ := testReconciler(t, clock, src)
			b, err := r.Settle(context.Background(), 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			if b.Waited != tc.want || b.Looks != tc.wantLooks || b.Looking != time.Duration(tc.wantLooks)*tc.look {
				t.Errorf("%+v, want %v waited over %d looks", b, tc.want, tc.wantLooks)
			}
		})
	}
}

// podsOnly is a source that can bring only the pods up to date; its full
// view fails, so a Settle that used it would fail.
type podsOnly struct{ pods []*corev1.Pod }

func (s podsOnly) View(context.Context) (*View, error) {
	return nil, errors.New("a full read while settling")
}
func (s podsOnly) Pods(context.Context) ([]*corev1.Pod, error) {
	return s.pods, nil
}

// Settle's looks read only the pods when the source can.
func TestSettleLooksAtPodsOnly(t *testing.T) {
	clock := testingclock.NewFakeClock(settleStart)
	r, _, _, _ := testReconciler(t, clock, nil)
	r.Source = podsOnly{pods: []*corev1.Pod{unevaluated("a", settleStart)}}
	b, err := r.Settle(context.Background(), 0, 0)
	if err != nil || b.Waited != time.Second || b.Pending != 1 {
		t.Errorf("%+v, %v: want a 1 s wait on the pods-only looks", b, err)
	}
}
