package drain

import (
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// deletingSince: deleted at start with a grace period of period, as the API
// server records it (DeletionTimestamp = start + period).
func deletingSince(start time.Time, period int64) podOpt {
	return func(p *corev1.Pod) {
		t := metav1.NewTime(start.Add(time.Duration(period) * time.Second))
		p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &t, &period
	}
}

// TestDeadlineGrace: with a deadline, each pod is deleted no later than the
// deadline less its own grace period, so that it gets all of it; a pod whose
// grace no longer fits gets the time left, rounded up; gracePeriodSeconds=0
// (a force delete) is never sent.
func TestDeadlineGrace(t *testing.T) {
	s := time.Second
	for _, c := range []struct {
		name     string
		pods     []corev1.Pod
		blocked  []string
		deadline time.Duration  // from now
		max      *time.Duration // MaxGracePeriod
		calls    string         // sorted, "; "-separated
		deleteBy time.Duration  // Result.DeleteBy from now; 0: none
	}{
		{name: "at the deadline a pod is deleted with 1 s, not 0", pods: []corev1.Pod{mkPod("a")},
			deadline: 0, calls: "delete a 1s"},
		{name: "past the deadline too", pods: []corev1.Pod{mkPod("a", graceSeconds(600))},
			deadline: -5 * s, calls: "delete a 1s"},
		{name: "0.9 s left rounds up to 1 s", pods: []corev1.Pod{mkPod("a", graceSeconds(30))},
			deadline: 900 * time.Millisecond, calls: "delete a 1s"},
		{name: "29.1 s left rounds up to 30 s", pods: []corev1.Pod{mkPod("a", graceSeconds(60))},
			deadline: 29100 * time.Millisecond, calls: "delete a 30s"},
		{name: "a pod whose grace fits is evicted, budgets honoured", pods: []corev1.Pod{mkPod("a", graceSeconds(30))},
			deadline: 31 * s, calls: "evict a own"},
		{name: "a pod with 30 s is deleted at deadline-30s with its 30", pods: []corev1.Pod{mkPod("a", graceSeconds(30))},
			deadline: 30 * s, calls: "delete a 30s"},
		{name: "the default grace (30 s) counts when the spec has none", pods: []corev1.Pod{mkPod("a")},
			deadline: 30 * s, calls: "delete a 30s"},
		{name: "a pod whose grace outlasts the deadline is deleted at once with the time left",
			pods: []corev1.Pod{mkPod("long", graceSeconds(600))}, deadline: 120 * s, calls: "delete long 2m0s"},
		{name: "a budget holds a pod until its delete time", pods: []corev1.Pod{mkPod("a", graceSeconds(30))}, blocked: []string{"a"},
			deadline: 60 * s, deleteBy: 30 * s},
		{name: "then it is deleted, budget or not", pods: []corev1.Pod{mkPod("a", graceSeconds(30))}, blocked: []string{"a"},
			deadline: 10 * s, calls: "delete a 10s"},
		{name: "do-not-disrupt holds a pod until its delete time", pods: []corev1.Pod{mkPod("a", doNotDisrupt, graceSeconds(30))},
			deadline: 45 * s, deleteBy: 15 * s},
		{name: "then it is deleted with its full grace", pods: []corev1.Pod{mkPod("a", doNotDisrupt, graceSeconds(30))},
			deadline: 30 * s, calls: "delete a 30s"},
		{name: "a critical pod due for deletion does not wait for the others",
			pods:     []corev1.Pod{mkPod("a", graceSeconds(5)), mkPod("dns", critical, graceSeconds(30))},
			deadline: 20 * s, calls: "delete dns 20s; evict a own"},
		{name: "a critical pod not yet due still waits", pods: []corev1.Pod{mkPod("a", graceSeconds(5)), mkPod("dns", critical, graceSeconds(30))},
			deadline: 40 * s, calls: "evict a own", deleteBy: 10 * s},
		{name: "MaxGracePeriod caps the eviction and moves the delete time", pods: []corev1.Pod{mkPod("long", graceSeconds(600))},
			deadline: 120 * s, max: ptr(90 * s), calls: "evict long 1m30s"},
		{name: "MaxGracePeriod: due", pods: []corev1.Pod{mkPod("long", graceSeconds(600))},
			deadline: 80 * s, max: ptr(90 * s), calls: "delete long 1m20s"},
		{name: "a MaxGracePeriod of 0 is 1 s", pods: []corev1.Pod{mkPod("a", graceSeconds(30))},
			deadline: time.Hour, max: ptr(time.Duration(0)), calls: "evict a 1s"},
		{name: "a MaxGracePeriod of 0.9 s is 1 s", pods: []corev1.Pod{mkPod("a", graceSeconds(30))},
			deadline: 900 * time.Millisecond, max: ptr(900 * time.Millisecond), calls: "delete a 1s"},
		{name: "a pod with a grace of 0 is evicted with it until the deadline", pods: []corev1.Pod{mkPod("zero", graceSeconds(0))},
			deadline: 10 * s, calls: "evict zero own"},
		{name: "and deleted with 1 s at it", pods: []corev1.Pod{mkPod("zero", graceSeconds(0))},
			deadline: 0, calls: "delete zero 1s"},
		{name: "a terminating pod that would outlast the deadline: its deletion is moved to the deadline",
			// Deleted 200 s ago with 600 s; 100 s left. The API server
			// counts a shortened grace from the deletion's start and makes
			// one that ends in the past 1 s: 200+100 s, not 100 s.
			pods:     []corev1.Pod{mkPod("slow", deletingSince(now.Add(-200*s), 600))},
			deadline: 100 * s, calls: "delete slow 5m0s"},
		{name: "a terminating pod without a recorded grace gets the time left",
			pods: []corev1.Pod{mkPod("slow", deleting(now.Add(10*time.Minute)))}, deadline: 99500 * time.Millisecond, calls: "delete slow 1m40s"},
		{name: "a terminating pod with 0.9 s left gets 1 s, not 0",
			pods: []corev1.Pod{mkPod("slow", deleting(now.Add(10*time.Minute)))}, deadline: 900 * time.Millisecond, calls: "delete slow 1s"},
		{name: "a terminating pod past the deadline is cut to 1 s, not 0",
			pods: []corev1.Pod{mkPod("slow", deletingSince(now.Add(-200*s), 600))}, deadline: -1 * s, calls: "delete slow 1s"},
		{name: "a terminating pod already shortened is not deleted again",
			pods:     []corev1.Pod{mkPod("slow", deletingSince(now.Add(-200*s), 300))},
			deadline: 99500 * time.Millisecond},
		{name: "a terminating pod already at 1 s is not deleted again",
			pods:     []corev1.Pod{mkPod("slow", deletingSince(now.Add(-s/2), 1))},
			deadline: -10 * s},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeCluster{pods: c.pods, blocked: map[string]bool{}}
			for _, b := range c.blocked {
				f.blocked[b] = true
			}
			opts := Options{Deadline: now.Add(c.deadline)}
			opts.MaxGracePeriod = c.max
			res := run1(t, f, opts)
			sort.Strings(f.calls)
			if got := strings.Join(f.calls, "; "); got != c.calls {
				t.Errorf("calls %q, want %q", got, c.calls)
			}
			var want time.Time
			if c.deleteBy != 0 {
				want = now.Add(c.deleteBy)
			}
			if !res.DeleteBy.Equal(want) {
				t.Errorf("DeleteBy %v, want %v", res.DeleteBy, want)
			}
		})
	}
}

// TestMinGrace: the floor the fault suite holds every deletion to.
func TestMinGrace(t *testing.T) {
	s := time.Second
	for _, c := range []struct {
		name     string
		pod      corev1.Pod
		deadline time.Time
		want     time.Duration
	}{
		{"no deadline: its own", mkPod("a", graceSeconds(45)), time.Time{}, 45 * s},
		{"no deadline, no spec: the default", mkPod("a"), time.Time{}, 30 * s},
		{"its own when it fits", mkPod("a", graceSeconds(45)), now.Add(time.Hour), 45 * s},
		{"the time left, rounded up", mkPod("a", graceSeconds(45)), now.Add(900 * time.Millisecond), s},
		{"at the deadline: 1 s", mkPod("a", graceSeconds(45)), now, s},
		{"past it: 1 s", mkPod("a", graceSeconds(45)), now.Add(-time.Hour), s},
		{"a pod that asks for 0 may get 0", mkPod("a", graceSeconds(0)), now, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := c.pod
			if got := MinGrace(&p, c.deadline, now); got != c.want {
				t.Errorf("MinGrace %v, want %v", got, c.want)
			}
		})
	}
}

// TestDeleteAt: when a budget stops holding a pod.
func TestDeleteAt(t *testing.T) {
	s := time.Second
	d := now.Add(time.Hour)
	for _, c := range []struct {
		name string
		pod  corev1.Pod
		max  *time.Duration
		want time.Time
	}{
		{"its own grace before the deadline", mkPod("a", graceSeconds(45)), nil, d.Add(-45 * s)},
		{"the default grace", mkPod("a"), nil, d.Add(-30 * s)},
		{"capped", mkPod("a", graceSeconds(600)), ptr(90 * s), d.Add(-90 * s)},
		{"a grace of 0: at the deadline", mkPod("a", graceSeconds(0)), nil, d},
	} {
		t.Run(c.name, func(t *testing.T) {
			p := c.pod
			if got := DeleteAt(&p, d, c.max); !got.Equal(c.want) {
				t.Errorf("DeleteAt %v, want %v", got, c.want)
			}
		})
	}
}

// Deletions due before the deadline are sent before any eviction, whose
// calls may take up to EvictionTimeout each.
func TestDeletionsGoFirst(t *testing.T) {
	f := &fakeCluster{pods: []corev1.Pod{mkPod("a", graceSeconds(5)), mkPod("b", graceSeconds(30)), mkPod("c", graceSeconds(5))}}
	run1(t, f, Options{Deadline: now.Add(20 * time.Second)})
	if len(f.calls) != 3 || f.calls[0] != "delete b 20s" {
		t.Fatalf("calls %v, want the deletion of b first", f.calls)
	}
}
