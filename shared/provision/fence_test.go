package provision

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/scheduling"
	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/shared/state/statetest"
)

// markedNode is a node whose interruption marked its record (its n pods
// move in every solve), a round and a replacement reconciler over one
// store and the replacement's fleet, and the pods' keys.
type markedNode struct {
	store          *state.Store
	round, replace *Reconciler
	fl             *fakeFleet
	old            *state.NodeClaim
	keys           []string
}

func newMarkedNode(t *testing.T, clock *testingclock.FakeClock, n int) *markedNode {
	t.Helper()
	nd := node("ip-old", "i-old")
	var pods []*corev1.Pod
	m := &markedNode{}
	for i := range n {
		p := bound(fmt.Sprintf("web-%d", i), nd.Name)
		pods = append(pods, p)
		m.keys = append(m.keys, p.Namespace+"/"+p.Name)
	}
	view := func(time.Time) (*View, error) { return &View{Pods: pods, Nodes: []*corev1.Node{nd}}, nil }
	m.round, m.fl, _, _ = testReconciler(t, clock, view)
	m.replace, _, _, _ = testReconciler(t, clock, view)
	store, err := state.New(statetest.NewChecked(), "nodewright-state", "test-cluster", clock.Now)
	if err != nil {
		t.Fatal(err)
	}
	m.store = store
	m.round.Store, m.replace.Store, m.replace.Fleet = store, store, m.fl
	m.old = record("default-old00", state.Initialized, "i-old")
	m.old.Zone, m.old.NodeName = "us-east-1a", nd.Name
	m.old.Disruption = &state.Disruption{Action: "interruption-i-old", Reason: "SpotInterruption", Since: t0, Reschedule: true}
	if err := store.PutNodeClaim(context.Background(), m.old); err != nil {
		t.Fatal(err)
	}
	return m
}

// Two launchers never buy for the same pods: a provision round that read
// the state after an interruption marked a node disrupting, and before
// the replacement's records were written, solves for the node's six pods
// too. Its commit then fails on the launch fence; it reads the records
// again, finds the pods on the replacement's in-flight NodeClaims, and
// launches nothing. One fleet, for one launcher.
func TestRoundAndReplacementDoNotBuyForTheSamePods(t *testing.T) {
	clock := testingclock.NewFakeClock(t0)
	ctx := context.Background()
	m := newMarkedNode(t, clock, 6)
	round, replace, fl, store, old, keys := m.round, m.replace, m.fl, m.store, m.old, m.keys
	replaced := 0
	replace.Names = func(pool string) (string, error) {
		replaced++
		return fmt.Sprintf("%s-r%04d", pool, replaced), nil
	}
	// The round has solved; before it records its NodeClaims, the
	// replacement launches for the same pods.
	fl.onPrepare = func(call int) {
		if call != 1 {
			return
		}
		nodeLease, err := store.Acquire(ctx, state.LeaseNode(old.Name), "interruption", time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		rep, err := replace.Replace(ctx, nodeLease, keys, "replacement for default-old00: SpotInterruption")
		if err != nil || len(rep.Launched()) == 0 {
			t.Errorf("replacement: %v, launched %d", err, len(rep.Launched()))
		}
	}
	lease, err := store.Acquire(ctx, state.LeaseProvision, "provision", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := round.Round(ctx, lease); err != nil {
		t.Fatal(err)
	}
	recs, err := store.NodeClaims(ctx)
	if err != nil {
		t.Fatal(err)
	}
	bought := map[string][]string{} // pod -> NodeClaims launched for it
	for _, rec := range recs {
		if rec.Name == old.Name {
			continue
		}
		for _, p := range rec.Claim.Pods {
			bought[p] = append(bought[p], rec.Name)
		}
	}
	for _, k := range keys {
		if len(bought[k]) != 1 {
			t.Errorf("pod %s: NodeClaims %v launched for it, want exactly one", k, bought[k])
		}
	}
	fleets := map[string]bool{}
	for _, c := range fl.Calls() {
		fleets[c.Token] = true
	}
	if len(fleets) != 1 {
		t.Errorf("%d fleets launched (%d calls), want one: the replacement's", len(fleets), len(fl.Calls()))
	}
}

// A consolidation's replacements (LaunchClaims) whose commit lost the
// launch fence to a round that launched for other pods are launched on
// the next attempt; when the round took their pods, nothing is launched
// and the caller is told (ErrConflict), so it decides again.
func TestLaunchClaimsAfterAnotherLauncherCommitted(t *testing.T) {
	for _, tc := range []struct {
		name       string
		samePods   bool
		wantErr    bool
		wantFleets int
	}{
		{name: "other pods", wantFleets: 2},
		{name: "the same pods", samePods: true, wantErr: true, wantFleets: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := testingclock.NewFakeClock(t0)
			ctx := context.Background()
			roundPod := unschedulableAt("web-0", t0.Add(-time.Minute), t0.Add(-time.Minute))
			if tc.samePods {
				roundPod = unschedulableAt("moved-0", t0.Add(-time.Minute), t0.Add(-time.Minute))
			}
			view := func(time.Time) (*View, error) { return &View{Pods: []*corev1.Pod{roundPod}}, nil }
			consolidation, fl, _, _ := testReconciler(t, clock, view)
			round, _, _, _ := testReconciler(t, clock, view)
			store, err := state.New(statetest.NewChecked(), "nodewright-state", "test-cluster", clock.Now)
			if err != nil {
				t.Fatal(err)
			}
			consolidation.Store, round.Store, round.Fleet = store, store, fl
			consolidation.Names = func(pool string) (string, error) { return pool + "-c0001", nil }
			// The replacement claim for the consolidated node's pod.
			claim := scheduling.NodeClaim{NodePool: "default", NodeClass: "default", InstanceTypes: []string{"m6g.large"},
				Zones: []string{"us-east-1a"}, CapacityType: "on-demand", CapacityTypes: []string{"on-demand"}, Pods: []string{"default/moved-0"}}
			fl.onPrepare = func(call int) {
				if call != 1 {
					return
				}
				lease, err := store.Acquire(ctx, state.LeaseProvision, "provision", time.Minute)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := round.Round(ctx, lease); err != nil {
					t.Errorf("round: %v", err)
				}
			}
			lease, err := store.Acquire(ctx, state.LeaseNode("default-old00"), "consolidation", time.Minute)
			if err != nil {
				t.Fatal(err)
			}
			_, launched, err := consolidation.LaunchClaims(ctx, lease, []scheduling.NodeClaim{claim}, "consolidation")
			if tc.wantErr != (err != nil) || (err != nil && !errors.Is(err, state.ErrConflict)) {
				t.Fatalf("LaunchClaims: %v (want an error: %v, a conflict)", err, tc.wantErr)
			}
			if !tc.wantErr && len(launched) != 1 {
				t.Errorf("launched %d, want the replacement", len(launched))
			}
			if n := len(fl.Calls()); n != tc.wantFleets {
				t.Errorf("%d fleets, want %d", n, tc.wantFleets)
			}
		})
	}
}

// A replacement whose pods a round already launched for (the intent
// marked them, and the round's solve moved them first) launches nothing,
// and names the round's in-flight NodeClaims as where its pods go.
func TestReplacementNamesTheNodeClaimsItsPodsGoTo(t *testing.T) {
	clock := testingclock.NewFakeClock(t0)
	ctx := context.Background()
	m := newMarkedNode(t, clock, 6)
	round, replace, store, old, keys := m.round, m.replace, m.store, m.old, m.keys
	lease, err := store.Acquire(ctx, state.LeaseProvision, "provision", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	rr, err := round.Round(ctx, lease)
	if err != nil || len(rr.Launched()) == 0 {
		t.Fatalf("round: %v, launched %d; want it to launch for the marked node's pods", err, len(rr.Launched()))
	}
	var roundClaims []string
	for _, in := range rr.Launched() {
		roundClaims = append(roundClaims, in.NodeClaim)
	}
	slices.Sort(roundClaims)
	nodeLease, err := store.Acquire(ctx, state.LeaseNode(old.Name), "interruption", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := replace.Replace(ctx, nodeLease, keys, "replacement for default-old00: SpotInterruption")
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Launched()) != 0 {
		t.Errorf("the replacement launched %d NodeClaims for pods a round launched for", len(rep.Launched()))
	}
	if got := rep.InFlightTo(); !slices.Equal(got, roundClaims) {
		t.Errorf("the replacement's pods go to %v, want the round's NodeClaims %v", got, roundClaims)
	}
}

// A replacement that keeps losing the launch fence to other launchers
// (each buying for other pods) solves again while they make progress, and
// launches once they let it; one that loses every time says so
// (ErrConflict) rather than reporting nothing launched as done.
func TestReplacementOutlastsOtherLaunchers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		others int // launches of other pods, one before each of ours
		want   error
	}{
		{name: "five others first", others: 5},
		{name: "others without end", others: 1000, want: state.ErrConflict},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := testingclock.NewFakeClock(t0)
			ctx := context.Background()
			m := newMarkedNode(t, clock, 3)
			replace, fl, store, old, keys := m.replace, m.fl, m.store, m.old, m.keys
			other, err := store.Acquire(ctx, state.LeaseProvision, "provision", time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			// Between our read and our write, another launcher records a
			// NodeClaim for pods of its own.
			fl.onPrepare = func(call int) {
				if call > tc.others {
					return
				}
				v, err := store.Versions(ctx)
				if err != nil {
					t.Fatal(err)
				}
				rec := record(fmt.Sprintf("other-%04d", call), state.Launching, "")
				rec.Claim.Pods = []string{fmt.Sprintf("default/other-%d", call)}
				if err := store.CreateNodeClaims(ctx, other, []*state.NodeClaim{rec}, &v); err != nil {
					t.Fatal(err)
				}
			}
			nodeLease, err := store.Acquire(ctx, state.LeaseNode(old.Name), "interruption", time.Hour)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := replace.Replace(ctx, nodeLease, keys, "replacement for default-old00: SpotInterruption")
			if !errors.Is(err, tc.want) {
				t.Fatalf("replace: %v, want %v", err, tc.want)
			}
			if got := len(rep.Launched()); (tc.want == nil) != (got == 1) {
				t.Errorf("launched %d NodeClaims; want one unless every attempt lost", got)
			}
		})
	}
}
