// Package state_test proves shared/state against DynamoDB as moto serves
// it: conditional writes, transactions, the indexes and paging, with one
// AWS-only local cloud for the package.
package state_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodewright/nodewright/shared/scheduling"
	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/test/localcloud"
)

var cloud *localcloud.Cloud

// runID makes every store's cluster new, also under -count=N.
var runID atomic.Int64

func TestMain(m *testing.M) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	c, err := localcloud.Start(ctx, localcloud.Options{AWSOnly: true, Cluster: "state-test"})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, "local cloud:", err)
		os.Exit(1)
	}
	cloud = c
	code := m.Run()
	c.Close()
	os.Exit(code)
}

// clock is a settable clock shared by a test's stores.
type clock struct{ t atomic.Int64 }

func newClock() *clock {
	c := &clock{}
	c.t.Store(time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC).UnixNano())
	return c
}
func (c *clock) Now() time.Time      { return time.Unix(0, c.t.Load()).UTC() }
func (c *clock) Add(d time.Duration) { c.t.Add(int64(d)) }

// newStore returns a store of a cluster of its own (so parallel tests do
// not see one another's items) on the shared table.
func newStore(t *testing.T, clk *clock) *state.Store {
	t.Helper()
	s, err := state.New(dynamodb.NewFromConfig(cloud.AWSConfig()), cloud.Names.Table, fmt.Sprintf("c%d-%s", runID.Add(1), t.Name()), clk.Now)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return c
}

func TestLeaseSingleFlightAndRerun(t *testing.T) {
	t.Parallel()
	clk := newClock()
	s := newStore(t, clk)
	c := ctx(t)
	a, err := s.Acquire(c, state.LeaseProvision, "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Acquire(c, state.LeaseProvision, "b", time.Minute)
	var held *state.HeldError
	if !errors.Is(err, state.ErrHeld) || !errors.As(err, &held) {
		t.Fatalf("second acquire: %v, want a *HeldError (ErrHeld)", err)
	}
	if held.Holder != "a" || !held.Until.Equal(a.Until.Truncate(time.Millisecond)) {
		t.Fatalf("held %+v: want holder a until %v (what a waiter sleeps to)", held, a.Until)
	}
	clk.Add(10 * time.Second)
	if err := s.Renew(c, a, time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err = s.Acquire(c, state.LeaseProvision, "b", time.Minute); !errors.As(err, &held) || !held.Until.Equal(a.Until.Truncate(time.Millisecond)) {
		t.Fatalf("acquire after a renewal: %v, want held until the renewed %v", err, a.Until)
	}
	st, err := s.ReadLease(c, state.LeaseProvision)
	if err != nil || !st.Rerun || st.Holder != "a" {
		t.Fatalf("lease after a held trigger: %+v %v, want holder a with rerun", st, err)
	}
	rerun, err := s.Release(c, a)
	if err != nil || !rerun {
		t.Fatalf("first release: rerun %v, %v; want another round", rerun, err)
	}
	rerun, err = s.Release(c, a)
	if err != nil || rerun {
		t.Fatalf("second release: rerun %v, %v; want released", rerun, err)
	}
	b, err := s.Acquire(c, state.LeaseProvision, "b", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	if b.Token != a.Token+1 {
		t.Fatalf("token %d after %d: want it to grow by one", b.Token, a.Token)
	}
}

func TestLeaseExpiryAndFencing(t *testing.T) {
	t.Parallel()
	clk := newClock()
	s := newStore(t, clk)
	c := ctx(t)
	a, err := s.Acquire(c, state.LeaseProvision, "a", 30*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	clk.Add(31 * time.Second) // a paused past its lease
	b, err := s.Acquire(c, state.LeaseProvision, "b", time.Minute)
	if err != nil {
		t.Fatalf("acquire an expired lease: %v", err)
	}
	if err := s.Renew(c, a, time.Minute); !errors.Is(err, state.ErrLeaseLost) {
		t.Fatalf("renew a lost lease: %v, want ErrLeaseLost", err)
	}
	nc := &state.NodeClaim{Name: "default-aaaaa", NodePool: "default", CreatedAt: clk.Now()}
	if err := s.CreateNodeClaims(c, a, []*state.NodeClaim{nc}, versionsNow(t, c, s)); !errors.Is(err, state.ErrLeaseLost) {
		t.Fatalf("create with a lost lease: %v, want ErrLeaseLost", err)
	}
	if _, err := s.GetNodeClaim(c, nc.Name); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("a fenced-out write left a record: %v", err)
	}
	if err := s.CreateNodeClaims(c, b, []*state.NodeClaim{nc}, versionsNow(t, c, s)); err != nil {
		t.Fatalf("create with the lease: %v", err)
	}
	if _, err := s.Release(c, a); !errors.Is(err, state.ErrLeaseLost) {
		t.Fatalf("release a lost lease: %v, want ErrLeaseLost", err)
	}
}

func TestLeaseConcurrentAcquire(t *testing.T) {
	t.Parallel()
	clk := newClock()
	s := newStore(t, clk)
	c := ctx(t)
	var wg sync.WaitGroup
	var held, refused atomic.Int32
	for i := range 10 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, err := s.Acquire(c, state.LeaseProvision, fmt.Sprint("inv-", i), time.Minute)
			switch {
			case err == nil:
				held.Add(1)
			case errors.Is(err, state.ErrHeld):
				refused.Add(1)
			default:
				t.Errorf("acquire: %v", err)
			}
		}()
	}
	wg.Wait()
	if held.Load() != 1 || refused.Load() != 9 {
		t.Fatalf("10 concurrent acquires: %d held, %d refused; want 1 and 9", held.Load(), refused.Load())
	}
}

func claim(name, pool string, pods ...string) *state.NodeClaim {
	return &state.NodeClaim{
		Name: name, NodePool: pool, NodeClass: "default",
		Claim: scheduling.NodeClaim{NodePool: pool, InstanceTypes: []string{"m6g.large", "m7g.large"}, Pods: pods,
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1500m")}},
		Capacity: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
	}
}

func TestNodeClaimRecords(t *testing.T) {
	t.Parallel()
	clk := newClock()
	s := newStore(t, clk)
	c := ctx(t)
	l, err := s.Acquire(c, state.LeaseProvision, "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	a, b := claim("default-bbbbb", "default", "default/p1"), claim("default-ccccc", "default", "default/p2")
	if err := s.CreateNodeClaims(c, l, []*state.NodeClaim{a, b}, versionsNow(t, c, s)); err != nil {
		t.Fatal(err)
	}
	if a.Version != 1 || a.Phase != state.Launching {
		t.Fatalf("created record: version %d phase %s", a.Version, a.Phase)
	}
	// The same name again (a retried launch must take a new name).
	again := claim("default-bbbbb", "default")
	if err := s.CreateNodeClaims(c, l, []*state.NodeClaim{again}, versionsNow(t, c, s)); !errors.Is(err, state.ErrConflict) {
		t.Fatalf("create an existing name: %v, want ErrConflict", err)
	}
	stale := *a
	a.Phase, a.InstanceID, a.InstanceType, a.Zone = state.Launched, "i-0123456789abcdef0", "m6g.large", "us-east-1a"
	if err := s.PutNodeClaim(c, a); err != nil {
		t.Fatal(err)
	}
	stale.Phase = state.Terminating
	if err := s.PutNodeClaim(c, &stale); !errors.Is(err, state.ErrConflict) {
		t.Fatalf("write from a stale read: %v, want ErrConflict", err)
	}
	got, err := s.NodeClaimByInstance(c, "i-0123456789abcdef0")
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != a.Name || got.Version != 2 || got.Claim.Pods[0] != "default/p1" || got.Capacity.Cpu().MilliValue() != 2000 {
		t.Fatalf("by instance: %+v", got)
	}
	if _, err := s.NodeClaimByInstance(c, "i-00000000000000000"); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("unknown instance: %v, want ErrNotFound", err)
	}
	all, err := s.NodeClaims(c)
	if err != nil || len(all) != 2 || all[0].Name != "default-bbbbb" {
		t.Fatalf("list: %d records, %v", len(all), err)
	}
	if err := s.DeleteNodeClaim(c, &stale); !errors.Is(err, state.ErrConflict) {
		t.Fatalf("delete from a stale read: %v", err)
	}
	if err := s.DeleteNodeClaim(c, a); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetNodeClaim(c, a.Name); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("after delete: %v", err)
	}
}

func TestPoolVersionsSerializeLimitedLaunches(t *testing.T) {
	t.Parallel()
	clk := newClock()
	s := newStore(t, clk)
	c := ctx(t)
	// Two launchers (a provision round and an interruption's replacement,
	// each with its own lease) count the same room under a limit.
	l1, err := s.Acquire(c, state.LeaseProvision, "p", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	l2, err := s.Acquire(c, state.LeaseNode("default-xxxxx"), "i", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	read, err := s.Versions(c)
	if err != nil {
		t.Fatal(err)
	}
	v1 := state.Versions{Cluster: read.Cluster, Pools: map[string]int64{"limited": read.Pools["limited"]}}
	v2 := state.Versions{Cluster: read.Cluster, Pools: map[string]int64{"limited": read.Pools["limited"]}}
	if err := s.CreateNodeClaims(c, l1, []*state.NodeClaim{claim("limited-ddddd", "limited")}, &v1); err != nil {
		t.Fatal(err)
	}
	if err := s.CreateNodeClaims(c, l2, []*state.NodeClaim{claim("limited-fffff", "limited")}, &v2); !errors.Is(err, state.ErrConflict) {
		t.Fatalf("second launcher on a stale pool version: %v, want ErrConflict", err)
	}
	fresh, err := s.PoolVersions(c)
	if err != nil || fresh["limited"] != 1 || v1.Pools["limited"] != 1 {
		t.Fatalf("pool version %d (caller's %d), %v; want 1", fresh["limited"], v1.Pools["limited"], err)
	}
	// A pool without limits is fenced by the cluster's launch version only.
	stale := state.Versions{Cluster: read.Cluster, Pools: map[string]int64{}}
	if err := s.CreateNodeClaims(c, l2, []*state.NodeClaim{claim("free-ggggg", "free")}, &stale); !errors.Is(err, state.ErrConflict) {
		t.Fatalf("launcher on a stale launch version: %v, want ErrConflict", err)
	}
	now := versionsNow(t, c, s)
	if err := s.CreateNodeClaims(c, l2, []*state.NodeClaim{claim("free-ggggg", "free")}, now); err != nil {
		t.Fatal(err)
	}
}

func TestCreateManyNodeClaimsSplitsTransactions(t *testing.T) {
	t.Parallel()
	clk := newClock()
	s := newStore(t, clk)
	c := ctx(t)
	l, err := s.Acquire(c, state.LeaseProvision, "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var claims []*state.NodeClaim
	for i := range 230 {
		claims = append(claims, claim(fmt.Sprintf("big-%05d", i), "big"))
	}
	v := versionsNow(t, c, s)
	v.Pools = map[string]int64{"big": 0}
	pools := v.Pools
	if err := s.CreateNodeClaims(c, l, claims, v); err != nil {
		t.Fatal(err)
	}
	all, err := s.NodeClaims(c)
	if err != nil || len(all) != 230 {
		t.Fatalf("%d records after creating 230 (paged query), %v", len(all), err)
	}
	got, _ := s.PoolVersions(c)
	if got["big"] != pools["big"] || got["big"] < 3 {
		t.Fatalf("pool version %d, caller's %d: want them equal and one per transaction", got["big"], pools["big"])
	}
}

func TestUnavailableOfferingsExpire(t *testing.T) {
	t.Parallel()
	clk := newClock()
	s := newStore(t, clk)
	c := ctx(t)
	offs := []state.Offering{
		{InstanceType: "m5.large", Zone: "us-east-1a", CapacityType: "spot", Code: "InsufficientInstanceCapacity"},
		{InstanceType: "m5.large", Zone: "us-east-1a", CapacityType: "spot", Code: "InsufficientInstanceCapacity"},
		{InstanceType: "c5.large", Zone: "us-east-1b", CapacityType: "spot", Code: "MaxSpotInstanceCountExceeded"},
	}
	if err := s.MarkUnavailable(c, offs, state.UnavailableTTL); err != nil {
		t.Fatal(err)
	}
	got, err := s.Unavailable(c)
	if err != nil || len(got) != 2 {
		t.Fatalf("%d unavailable, %v; want 2", len(got), err)
	}
	set := state.NewUnavailableSet(got)
	if !set.Has("m5.large", "us-east-1a", "spot") || set.Has("m5.large", "us-east-1a", "on-demand") {
		t.Fatalf("set %s", set)
	}
	clk.Add(state.UnavailableTTL + time.Second) // DynamoDB has not deleted them: readers check
	if got, err = s.Unavailable(c); err != nil || len(got) != 0 {
		t.Fatalf("after expiry: %v %v", got, err)
	}
}

func TestActionsMarkNodesOnce(t *testing.T) {
	t.Parallel()
	clk := newClock()
	s := newStore(t, clk)
	c := ctx(t)
	l, _ := s.Acquire(c, state.LeaseProvision, "a", time.Minute)
	n1, n2 := claim("default-hhhhh", "default"), claim("default-jjjjj", "default")
	if err := s.CreateNodeClaims(c, l, []*state.NodeClaim{n1, n2}, versionsNow(t, c, s)); err != nil {
		t.Fatal(err)
	}
	// Two invocations read the same nodes and both decide to act.
	r1, _ := s.GetNodeClaim(c, n1.Name)
	r2, _ := s.GetNodeClaim(c, n1.Name)
	r2b, _ := s.GetNodeClaim(c, n2.Name)
	a := &state.Action{ID: "consolidation-1", Kind: state.KindConsolidation, Reason: "Drifted", Drift: "SubnetDrift", NodeClaims: []string{n1.Name}}
	if err := s.StartAction(c, a, []*state.NodeClaim{r1}); err != nil {
		t.Fatal(err)
	}
	if r1.Phase != state.Disrupting || r1.Disruption == nil || r1.Disruption.Action != a.ID {
		t.Fatalf("marked claim: %+v", r1)
	}
	// The record says how its node drifted, as the table holds it.
	if got, err := s.GetNodeClaim(c, n1.Name); err != nil || got.Disruption == nil || got.Disruption.Drift != "SubnetDrift" {
		t.Fatalf("stored claim: %+v %v, want its drift reason", got, err)
	}
	b := &state.Action{ID: "interruption-1", Kind: state.KindInterruption, NodeClaims: []string{n1.Name, n2.Name}}
	if err := s.StartAction(c, b, []*state.NodeClaim{r2, r2b}); !errors.Is(err, state.ErrConflict) {
		t.Fatalf("second action on the same node: %v, want ErrConflict", err)
	}
	if _, err := s.GetAction(c, b.ID); !errors.Is(err, state.ErrNotFound) {
		t.Fatalf("a failed action was recorded: %v", err)
	}
	if got, _ := s.GetNodeClaim(c, n2.Name); got.Disruption != nil {
		t.Fatalf("a failed action marked %s", n2.Name)
	}
	stale := *a
	a.Step = state.StepDraining
	if err := s.PutAction(c, a); err != nil {
		t.Fatal(err)
	}
	stale.Step = state.StepAbandoned
	if err := s.PutAction(c, &stale); !errors.Is(err, state.ErrConflict) {
		t.Fatalf("stale action write: %v", err)
	}
	acts, err := s.Actions(c)
	if err != nil || len(acts) != 1 || acts[0].Step != state.StepDraining {
		t.Fatalf("actions: %+v %v", acts, err)
	}
}

func TestMessagesSeenOnce(t *testing.T) {
	t.Parallel()
	clk := newClock()
	s := newStore(t, clk)
	c := ctx(t)
	var first atomic.Int32
	var wg sync.WaitGroup
	for range 5 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := s.FirstSeen(c, "evt-1", time.Hour)
			if err != nil {
				t.Error(err)
			}
			if ok {
				first.Add(1)
			}
		}()
	}
	wg.Wait()
	if first.Load() != 1 {
		t.Fatalf("5 deliveries of one message: %d first; want 1", first.Load())
	}
	clk.Add(time.Hour + time.Second)
	if ok, err := s.FirstSeen(c, "evt-1", time.Hour); err != nil || !ok {
		t.Fatalf("after the record expired: %v %v; want first again", ok, err)
	}
}

func TestBlobsAndDecisions(t *testing.T) {
	t.Parallel()
	clk := newClock()
	s := newStore(t, clk)
	c := ctx(t)
	data := make([]byte, 600<<10) // compresses well below an item
	for i := range data {
		data[i] = byte('a' + i%7)
	}
	if err := s.PutBlob(c, state.KeySpotPrices, data); err != nil {
		t.Fatal(err)
	}
	got, at, err := s.GetBlob(c, state.KeySpotPrices)
	if err != nil || string(got) != string(data) || !at.Equal(clk.Now()) {
		t.Fatalf("blob: %d bytes at %v, %v", len(got), at, err)
	}
	for i := range 3 {
		if err := s.RecordDecision(c, &state.Decision{Function: "provision", Kind: "solve", Summary: fmt.Sprint("round ", i)}, fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
		clk.Add(time.Second)
	}
	ds, err := s.Decisions(c, clk.Now().Add(-2500*time.Millisecond), 0)
	if err != nil || len(ds) != 2 || ds[0].Summary != "round 2" {
		t.Fatalf("decisions: %+v %v; want rounds 2 and 1, newest first", ds, err)
	}
}

func TestLeaseAsksReachTheHolder(t *testing.T) {
	t.Parallel()
	clk := newClock()
	s := newStore(t, clk)
	c := ctx(t)
	a, err := s.Acquire(c, state.LeaseProvision, "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	for _, asker := range []string{"b", "c"} {
		if _, err := s.Acquire(c, state.LeaseProvision, asker, time.Minute, "sweep"); !errors.Is(err, state.ErrHeld) {
			t.Fatal(err)
		}
	}
	if _, err := s.Acquire(c, state.LeaseProvision, "d", time.Minute); !errors.Is(err, state.ErrHeld) {
		t.Fatal(err)
	}
	rerun, err := s.Release(c, a)
	if err != nil || !rerun || len(a.Asks) != 1 || a.Asks[0] != "sweep" {
		t.Fatalf("release: rerun %v, asks %v, %v; want another round with one sweep asked", rerun, a.Asks, err)
	}
	rerun, err = s.Release(c, a)
	if err != nil || rerun || len(a.Asks) != 0 {
		t.Fatalf("second release: rerun %v asks %v %v", rerun, a.Asks, err)
	}
}

// versionsNow reads the launch versions (as a launcher does before it
// reads the records).
func versionsNow(t *testing.T, c context.Context, s *state.Store) *state.Versions {
	t.Helper()
	v, err := s.Versions(c)
	if err != nil {
		t.Fatal(err)
	}
	return &v
}
