package provision

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	testingclock "k8s.io/utils/clock/testing"

	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
)

// TestNominatedEventsAreRateLimited: a burst's pods get Nominated events at
// most nominatedBurst at once and nominatedPerSecond after that, across
// rounds (Karpenter's pod-nomination limiter), so that a round for 1,000
// pods does not spend its API server budget, and the next round's time,
// on one event per pod. Each NodeClaim still gets its Launched event.
func TestNominatedEventsAreRateLimited(t *testing.T) {
	clock := testingclock.NewFakeClock(t0)
	var pods []*corev1.Pod
	for i := range 60 {
		p := unschedulableAt(fmt.Sprintf("small-%02d", i), t0.Add(-time.Minute), t0.Add(-time.Minute))
		p.Spec.Containers[0].Resources.Requests = st.Resources{"cpu": "1", "memory": "1Gi"}.List()
		pods = append(pods, p)
	}
	shown := pods[:30]
	r, _, _, _ := testReconciler(t, clock, func(time.Time) (*View, error) { return &View{Pods: shown}, nil })
	ev := &fakeEvents{}
	r.Events = ev
	ctx := context.Background()
	count := func() (nominated, launched int) {
		for _, e := range ev.All() {
			switch {
			case strings.Contains(e, " Nominated: "):
				nominated++
			case strings.Contains(e, " Launched: "):
				launched++
			}
		}
		return nominated, launched
	}

	rep, err := r.Round(ctx, testLease(clock))
	if err != nil {
		t.Fatal(err)
	}
	nominated, launched := count()
	if nominated != nominatedBurst {
		t.Errorf("first round for 30 pods: %d Nominated events, want the burst of %d", nominated, nominatedBurst)
	}
	if launched < len(rep.Launched()) || len(rep.Launched()) == 0 {
		t.Errorf("%d Launched events for %d launches: want one each", launched, len(rep.Launched()))
	}

	// Two seconds on, the next 30 pods: the bucket has refilled by two
	// seconds' worth.
	clock.Step(2 * time.Second)
	shown = pods
	if _, err := r.Round(ctx, testLease(clock)); err != nil {
		t.Fatal(err)
	}
	if nominated2, _ := count(); nominated2-nominated != 2*nominatedPerSecond {
		t.Errorf("second round, 2 s later: %d more Nominated events, want %d", nominated2-nominated, 2*nominatedPerSecond)
	}
}

// barrierEvents holds each Launched event until want of them are being
// written at once (or a deadline passes), and records the most at once.
type barrierEvents struct {
	fakeEvents
	want    int
	mu      sync.Mutex
	cond    *sync.Cond
	now, hi int
}

func (e *barrierEvents) Event(ctx context.Context, ref Ref, typ, reason, msg string) {
	if reason == string(EventLaunched) {
		e.mu.Lock()
		e.now++
		e.hi = max(e.hi, e.now)
		e.cond.Broadcast()
		deadline := time.AfterFunc(2*time.Second, func() {
			e.mu.Lock()
			defer e.mu.Unlock()
			e.cond.Broadcast()
		})
		start := time.Now()
		for e.hi < e.want && time.Since(start) < 2*time.Second {
			e.cond.Wait()
		}
		deadline.Stop()
		e.now--
		e.mu.Unlock()
	}
	e.fakeEvents.Event(ctx, ref, typ, reason, msg)
}

// TestLaunchedNodeClaimsAreSettledAtOnce: once CreateFleet answered, each
// NodeClaim's record, object and Launched event are written at once (up to
// Options.Parallelism), not one NodeClaim after another: a round of 16
// NodeClaims took 5 s of sequential writes before its next round could
// start.
func TestLaunchedNodeClaimsAreSettledAtOnce(t *testing.T) {
	clock := testingclock.NewFakeClock(t0)
	pods := bigPods(4, t0)
	r, _, _, _ := testReconciler(t, clock, func(time.Time) (*View, error) { return &View{Pods: pods}, nil })
	ev := &barrierEvents{want: 4}
	ev.cond = sync.NewCond(&ev.mu)
	r.Events = ev
	rep, err := r.Round(context.Background(), testLease(clock))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Launched()) != 4 {
		t.Fatalf("%d launched, want 4", len(rep.Launched()))
	}
	if ev.hi != 4 {
		t.Errorf("at most %d NodeClaims settled at once, want all 4", ev.hi)
	}
}

// TestConcurrentFirstUseSharesOneLimiter: a container's concurrent
// invocations may be the first to use a reconciler; they fill its defaults
// once, so every one of them draws Nominated events from the same bucket
// (go test -race reported the unguarded fill).
func TestConcurrentFirstUseSharesOneLimiter(t *testing.T) {
	clock := testingclock.NewFakeClock(t0)
	base, _, _, _ := testReconciler(t, clock, func(time.Time) (*View, error) { return &View{}, nil })
	r := &Reconciler{Store: base.Store, Source: base.Source, Fleet: base.Fleet, Catalog: base.Catalog}
	const n = 8
	seen := make([]*rate.Limiter, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.init(); err != nil {
				t.Error(err)
			}
			seen[i] = r.nominations
		}()
	}
	wg.Wait()
	for i, l := range seen {
		if l == nil || l != r.nominations {
			t.Fatalf("invocation %d drew from limiter %p, the reconciler holds %p: want one", i, l, r.nominations)
		}
	}
	if r.Now == nil || r.Names == nil || r.Events == nil {
		t.Error("defaults unset after first use")
	}
}
