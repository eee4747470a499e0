package orchestration

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/disruption"
	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/provision"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/shared/termination"
)

// TestDecisionBudget: a decision gets the default bounds and a deadline
// that leaves the tick the time to carry its command out before the
// invocation ends (the consolidation function's 15-minute timeout).
func TestDecisionBudget(t *testing.T) {
	now := func() time.Time { return t0 }
	reserve := DefaultMaxWait + finishMargin
	for _, tc := range []struct {
		name    string
		set     disruption.Budget
		left    time.Duration
		bounded bool
		want    time.Duration // deadline after t0
		solves  int
	}{
		{"no invocation deadline", disruption.Budget{}, 0, false, DefaultDecideTime, DefaultDecideSolves},
		{"a full Lambda invocation", disruption.Budget{}, 15 * time.Minute, true, DefaultDecideTime, DefaultDecideSolves},
		{"an invocation nearly over", disruption.Budget{}, reserve + time.Minute, true, time.Minute, DefaultDecideSolves},
		{"past the reserve", disruption.Budget{}, reserve - time.Second, true, 0, DefaultDecideSolves},
		{"configured", disruption.Budget{MaxSolves: 7}, 15 * time.Minute, true, DefaultDecideTime, 7},
	} {
		b := budgetFor(tc.set, now, tc.left, tc.bounded, reserve)
		if !b.Deadline.Equal(t0.Add(tc.want)) || b.MaxSolves != tc.solves || b.MaxGroups != provision.DefaultSolveGroups || !b.Now().Equal(t0) {
			t.Errorf("%s: %+v, want deadline t0+%s, %d solves, %d groups", tc.name, b, tc.want, tc.solves, provision.DefaultSolveGroups)
		}
	}
}

// runStore is the tick's store over the executor's fake: records and
// lease renewals (the rest is not used by the code under test).
type runStore struct {
	RunStore
	s *fakeStore
	// ps holds the pods summary (nil: none is read, writes are dropped).
	ps *state.Store
}

func (s runStore) Renew(context.Context, *state.Lease, time.Duration) error { return nil }

func (s runStore) PutNodeClaim(ctx context.Context, nc *state.NodeClaim) error {
	return s.s.PutNodeClaim(ctx, nc)
}

// TestCarryWaitsOnTheInjectedClock: a tick carrying an action pauses on
// Run.Wait and measures its MaxWait on the executor's clock, so a fake
// clock drives it: through the validation wait to the end, and out of a
// drain a PDB blocks once MaxWait has passed on that clock.
func TestCarryWaitsOnTheInjectedClock(t *testing.T) {
	fresh := func(context.Context) (disruption.Inputs, error) { return disruption.Inputs{}, nil }
	for _, tc := range []struct {
		name     string
		blocked  bool
		step     string
		waited   time.Duration // on the fake clock
		maxPause time.Duration
	}{
		{"validated and carried out", false, state.StepDone, validationWait, 5 * time.Second},
		{"drain blocked past MaxWait", true, state.StepDraining, 31 * time.Second, 5 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			if tc.blocked {
				r.drainer.step = func(string, termination.DrainOptions, int) termination.DrainResult {
					return termination.DrainResult{Blocked: []string{"default/web-0"}, Remaining: []string{"default/web-0"}}
				}
				r.rebuild()
			}
			a := r.start(command(false))
			var waits []time.Duration
			run := &Run{Store: runStore{s: r.store}, Exec: r.e, MaxWait: 30 * time.Second, Wait: func(_ context.Context, d time.Duration) error {
				waits = append(waits, d)
				r.clock.Step(d)
				return nil
			}}
			if err := run.carry(context.Background(), &state.Lease{}, a, fresh, time.Minute); err != nil {
				t.Fatal(err)
			}
			if a.Step != tc.step || r.clock.Since(t0) != tc.waited || len(waits) == 0 || slices.Max(waits) > tc.maxPause {
				t.Errorf("step %s after %s on the fake clock in pauses %v; want %s after %s, pauses of at most %s",
					a.Step, r.clock.Since(t0), waits, tc.step, tc.waited, tc.maxPause)
			}
		})
	}
}

// TestFingerprintStampsTheInputsTime: a node whose pods changed is
// stamped with the time its inputs were read (the decision's Now), not
// the later time the stamp is written, so a pool with consolidateAfter 0s
// finds it a candidate on the same tick.
func TestFingerprintStampsTheInputsTime(t *testing.T) {
	r := newRig(t)
	rec := r.store.rec("nc-a")
	rec.PodsHash, rec.InitializedAt = "0123456789abcdef", t0.Add(-time.Hour)
	r.store.put(rec)
	yes := true
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web-0", UID: "u-web-0",
		OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web", Controller: &yes}}}}
	pod.Spec.NodeName = "ip-a"
	recs, _ := r.store.NodeClaims(context.Background())
	in := disruption.Inputs{Now: t0, Nodes: r.src.nodes, Pods: []*corev1.Pod{pod}, Records: recs}
	r.clock.Step(3 * time.Second) // reading the rest of the inputs took time
	ps := summaryStore(t, r.clock.Now)
	run := &Run{Store: runStore{s: r.store, ps: ps}, Exec: r.e}
	if err := run.fingerprint(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	sums, err := ps.PodSums(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := sums.Get("nc-a"); got.Hash == rec.PodsHash || !got.ChangedAt.Equal(t0) {
		t.Errorf("pods hash %q changed at %s; want a new hash stamped at the inputs' time %s", got.Hash, got.ChangedAt, t0)
	}
}

func (s runStore) NodeClaims(ctx context.Context) ([]*state.NodeClaim, error) {
	return s.s.NodeClaims(ctx)
}

func (s runStore) Actions(context.Context) ([]*state.Action, error) {
	s.s.mu.Lock()
	defer s.s.mu.Unlock()
	var out []*state.Action
	for _, a := range s.s.actions {
		out = append(out, clone(a))
	}
	return out, nil
}

func (s runStore) Unavailable(context.Context) ([]state.Offering, error) { return nil, nil }

// fakeClasses resolves node classes as configured (by name; a class not
// listed resolves whole in us-east-1a).
type fakeClasses map[string]fleet.Resolution

func (f fakeClasses) ResolveAll(_ context.Context, classes []*apis.EC2NodeClass) []fleet.Resolution {
	var out []fleet.Resolution
	for _, c := range classes {
		r, ok := f[c.Name]
		if !ok {
			r = fleet.Resolution{Class: &fleet.NodeClass{Name: c.Name, Subnets: []fleet.Subnet{{ID: "subnet-a", Zone: "us-east-1a"}},
				SecurityGroups: []string{"sg-1"}, AMIs: []fleet.AMI{{ID: "ami-1"}}}}
		}
		r.Name = c.Name
		out = append(out, r)
	}
	return out
}

// TestInputsMarkPoolsNotReady: the tick's inputs name the NodePools
// whose class is missing or resolves no subnet, security group or AMI
// (no replacement is planned into them, as provision leaves them out of
// its solves), and price replacements in the zones of the classes that
// resolved whole; when no class could be looked up at all, the tick fails.
func TestInputsMarkPoolsNotReady(t *testing.T) {
	for _, tc := range []struct {
		name     string
		classes  fakeClasses
		notReady map[string]bool
		zones    []string
		err      bool
	}{
		{"one pool ready", fakeClasses{"nosubnet": {Err: fmt.Errorf("EC2NodeClass nosubnet: %w", fleet.ErrNoSubnet)},
			"nosg": {Class: &fleet.NodeClass{Subnets: []fleet.Subnet{{ID: "subnet-b", Zone: "us-east-1b"}}, AMIs: []fleet.AMI{{ID: "ami-1"}}}}},
			map[string]bool{"missing": true, "nosubnet": true, "nosg": true}, []string{"us-east-1a"}, false},
		{"every class ready", fakeClasses{}, map[string]bool{"missing": true}, []string{"us-east-1a"}, false},
		{"the account unreadable", fakeClasses{"default": {Err: errors.New("throttled")}, "nosubnet": {Err: errors.New("throttled")},
			"nosg": {Err: errors.New("throttled")}}, nil, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			for _, name := range []string{"nosubnet", "nosg"} {
				r.e.NodePools = append(r.e.NodePools, st.NodePool(st.NodePoolOptions{Name: name, NodeClass: name}))
				r.e.NodeClasses = append(r.e.NodeClasses, st.NodeClass(name))
			}
			r.e.NodeClasses = append(r.e.NodeClasses, st.NodeClass("default"))
			r.e.NodePools = append(r.e.NodePools, st.NodePool(st.NodePoolOptions{Name: "missing", NodeClass: "gone"}))
			r.src.pools = []*apis.NodePool{st.NodePool(st.NodePoolOptions{Name: "default"})}
			run := &Run{Store: runStore{s: r.store}, Exec: r.e, Classes: tc.classes}
			in, err := run.Inputs(context.Background())
			if tc.err {
				if err == nil {
					t.Fatalf("inputs read with every class unresolved: want an error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(in.NotReady, tc.notReady) || !slices.Equal(in.Zones, tc.zones) || len(in.NodePools) != 4 {
				t.Errorf("not ready %v, zones %v, %d pools; want %v, %v, all 4 pools (their nodes stay candidates)", in.NotReady, in.Zones, len(in.NodePools), tc.notReady, tc.zones)
			}
		})
	}
}

// TestInputsCarryTheClassesPlacements: the tick's inputs hold, per class
// that resolved, every subnet and the security groups it selects now
// (subnet and security group drift); a class that did not resolve is left
// out, so its nodes do not drift on them.
func TestInputsCarryTheClassesPlacements(t *testing.T) {
	r := newRig(t)
	r.e.NodeClasses = []*apis.EC2NodeClass{st.NodeClass("default"), st.NodeClass("broken")}
	r.src.pools = []*apis.NodePool{st.NodePool(st.NodePoolOptions{Name: "default"})}
	classes := fakeClasses{
		"default": {Class: &fleet.NodeClass{Subnets: []fleet.Subnet{{ID: "subnet-a", Zone: "us-east-1a"}}, SubnetIDs: []string{"subnet-a", "subnet-b"},
			SecurityGroups: []string{"sg-1", "sg-2"}, AMIs: []fleet.AMI{{ID: "ami-1"}}}},
		"broken": {Err: errors.New("throttled")},
	}
	run := &Run{Store: runStore{s: r.store}, Exec: r.e, Classes: classes}
	in, err := run.Inputs(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	wantSubnets := map[string]map[string]bool{"default": {"subnet-a": true, "subnet-b": true}}
	wantSGs := map[string]map[string]bool{"default": {"sg-1": true, "sg-2": true}}
	if !reflect.DeepEqual(in.CurrentSubnets, wantSubnets) || !reflect.DeepEqual(in.CurrentSecurityGroups, wantSGs) {
		t.Errorf("subnets %v, security groups %v; want %v, %v", in.CurrentSubnets, in.CurrentSecurityGroups, wantSubnets, wantSGs)
	}
}

// TestCarryPassComesByDeleteBy: a drain pass a budget blocks says when the
// held pod must be deleted to keep its whole grace (DeleteBy): the tick's
// next pass comes then, not a poll later; and a tick past its MaxWait
// stays for a DeleteBy due before the next sweep could reach the node
// (its invocation has the time), rather than leave the pod less grace.
func TestCarryPassComesByDeleteBy(t *testing.T) {
	fresh := func(context.Context) (disruption.Inputs, error) { return disruption.Inputs{}, nil }
	for _, tc := range []struct {
		name    string
		by      time.Duration // after t0
		maxWait time.Duration
	}{
		{"between polls", validationWait + 2500*time.Millisecond, time.Minute},
		{"after MaxWait, before the next sweep", validationWait + 40*time.Second, 20 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			by := t0.Add(tc.by)
			var at []time.Time
			r.drainer.step = func(string, termination.DrainOptions, int) termination.DrainResult {
				now := r.clock.Now()
				at = append(at, now)
				if now.Before(by) {
					return termination.DrainResult{Blocked: []string{"default/web-0"}, Remaining: []string{"default/web-0"}, DeleteBy: by}
				}
				return termination.DrainResult{Done: true, Deleted: []string{"default/web-0"}}
			}
			r.rebuild()
			a := r.start(command(false))
			run := &Run{Store: runStore{s: r.store}, Exec: r.e, MaxWait: tc.maxWait, Wait: func(_ context.Context, d time.Duration) error {
				r.clock.Step(d)
				return nil
			}}
			if err := run.carry(context.Background(), &state.Lease{}, a, fresh, time.Minute); err != nil {
				t.Fatal(err)
			}
			if a.Step != state.StepDone || len(at) == 0 || !at[len(at)-1].Equal(by) {
				t.Errorf("step %s, drain passes at %v; want done, the last pass at DeleteBy %s", a.Step, at, by)
			}
		})
	}
}

// TestInputsPriceWithNodeOverlays: consolidation decides with the overlaid
// prices, the deployed NodeOverlays' and the cluster's (which replaces the
// deployed one of its name).
func TestInputsPriceWithNodeOverlays(t *testing.T) {
	priced := func(name, price string) *apis.NodeOverlay {
		o := &apis.NodeOverlay{}
		o.Name, o.Spec.Price = name, &price
		o.Spec.Requirements = []corev1.NodeSelectorRequirement{{Key: apis.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: []string{"m5.large"}}}
		return o
	}
	for _, tc := range []struct {
		name              string
		deployed, cluster []*apis.NodeOverlay
		want              float64
	}{
		{"published", nil, nil, 0.096},
		{"deployed", []*apis.NodeOverlay{priced("savings", "0.05")}, nil, 0.05},
		{"the cluster's wins", []*apis.NodeOverlay{priced("savings", "0.05")}, []*apis.NodeOverlay{priced("savings", "0.07")}, 0.07},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t)
			r.e.NodeClasses = append(r.e.NodeClasses, st.NodeClass("default"))
			r.e.NodeOverlays = tc.deployed
			r.src.pools = []*apis.NodePool{st.NodePool(st.NodePoolOptions{Name: "default"})}
			r.src.overlays = tc.cluster
			run := &Run{Store: runStore{s: r.store}, Exec: r.e, Classes: fakeClasses{}, Catalog: catalog.Default()}
			in, err := run.Inputs(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if it, ok := in.Catalog.Get("m5.large"); !ok || it.OnDemandPrice != tc.want {
				t.Fatalf("m5.large at %v, want %v", it.OnDemandPrice, tc.want)
			}
		})
	}
}

// fakeRegional is the region's catalog in the state table: Load reads
// what the table holds now.
type fakeRegional struct {
	loads       int
	held, table *catalog.Catalog
}

func (f *fakeRegional) Load(context.Context) error {
	f.loads++
	f.held = f.table
	return nil
}

func (f *fakeRegional) Catalog() *catalog.Catalog { return f.held }

// TestInputsReadTheRegionsCatalogEachTick: a consolidation container
// decides with the region's figures as the state table holds them at each
// tick (the provision sweep refreshes them), not its cold start's.
func TestInputsReadTheRegionsCatalogEachTick(t *testing.T) {
	r := newRig(t)
	r.e.NodeClasses = []*apis.EC2NodeClass{st.NodeClass("default")}
	coldStart, refreshed := catalog.Default(), catalog.Default().Regional(map[string]float64{"m5.large": 0.05}, nil)
	reg := &fakeRegional{held: coldStart, table: coldStart}
	run := &Run{Store: runStore{s: r.store}, Exec: r.e, Classes: fakeClasses{}, Catalog: coldStart, Regional: reg}
	in, err := run.Inputs(context.Background())
	if err != nil || in.Catalog != coldStart {
		t.Fatalf("first tick: catalog %p (%v), want the cold start's", in.Catalog, err)
	}
	reg.table = refreshed
	if in, err = run.Inputs(context.Background()); err != nil || in.Catalog != refreshed || reg.loads != 2 {
		t.Errorf("after the sweep refreshed the table: catalog %p, %d loads (%v); want the refreshed one, read again", in.Catalog, reg.loads, err)
	}
}
