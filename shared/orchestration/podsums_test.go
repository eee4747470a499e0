package orchestration

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodewright/nodewright/shared/disruption"
	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/shared/state/statetest"
)

func (s runStore) PodSums(ctx context.Context) (*state.PodSums, error) {
	if s.ps == nil {
		return &state.PodSums{}, nil
	}
	return s.ps.PodSums(ctx)
}

func (s runStore) PutPodSums(ctx context.Context, read *state.PodSums, sums map[string]state.PodSum) (int, error) {
	if s.ps == nil {
		return 0, nil
	}
	return s.ps.PutPodSums(ctx, read, sums)
}

// summaryStore is a state table in memory for the pods summary.
func summaryStore(t *testing.T, now func() time.Time) *state.Store {
	t.Helper()
	s, err := state.New(statetest.NewChecked(), "nodewright-state", "test-cluster", now)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// podsHash is the fingerprint of a node running pods uids.
func podsHash(uids ...string) string {
	sort.Strings(uids)
	sum := sha256.Sum256([]byte(strings.Join(uids, ",")))
	return hex.EncodeToString(sum[:8])
}

// cluster is n Initialized nodes in a state table, node i running the
// pods named by pods(i).
type cluster struct {
	db    *statetest.DB
	store *state.Store
	nodes []*corev1.Node
}

func newCluster(t *testing.T, recs []*state.NodeClaim) *cluster {
	t.Helper()
	ctx := context.Background()
	c := &cluster{db: statetest.NewChecked()}
	var err error
	c.store, err = state.New(c.db, "nodewright-state", "test-cluster", func() time.Time { return t0 })
	if err != nil {
		t.Fatal(err)
	}
	l, err := c.store.Acquire(ctx, state.LeaseProvision, "setup", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	v := state.Versions{Pools: map[string]int64{}}
	for i := 0; i < len(recs); i += 50 {
		if err := c.store.CreateNodeClaims(ctx, l, recs[i:min(i+50, len(recs))], &v); err != nil {
			t.Fatal(err)
		}
	}
	for _, rec := range recs {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ip-" + rec.Name}}
		n.Spec.ProviderID = state.ProviderIDFor("us-east-1a", rec.InstanceID)
		c.nodes = append(c.nodes, n)
	}
	return c
}

func initialized(name string) *state.NodeClaim {
	return &state.NodeClaim{Name: name, NodePool: "default", Phase: state.Initialized, InstanceID: "i-" + name, NodeName: "ip-" + name,
		InstanceType: "m5.xlarge", CreatedAt: t0.Add(-2 * time.Hour), InitializedAt: t0.Add(-time.Hour)}
}

func podOn(node, uid string) *corev1.Pod {
	yes := true
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: uid, UID: types.UID(uid),
		OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web", Controller: &yes}}}}
	p.Spec.NodeName = node
	return p
}

// inputsAt reads the records as a tick does (the summary applied).
func (c *cluster) inputsAt(t *testing.T, now time.Time, pods []*corev1.Pod) disruption.Inputs {
	t.Helper()
	recs, err := c.store.NodeClaims(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	sums, err := c.store.PodSums(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	sums.Apply(recs)
	return disruption.Inputs{Now: now, Nodes: c.nodes, Pods: pods, Records: recs}
}

// A tick that finds the pods of many nodes changed writes no NodeClaim
// record (each would be a ~7 KB record in a transaction with its change
// item, and a full read for every container's next cached read): the
// timers go to the pods summary, a few shard items.
func TestFingerprintWritesNoRecord(t *testing.T) {
	const n = 500
	var recs []*state.NodeClaim
	var pods []*corev1.Pod
	for i := range n {
		rec := initialized(fmt.Sprintf("default-%04d", i))
		rec.PodsHash, rec.PodsChangedAt = podsHash("old"), t0.Add(-time.Hour)
		recs = append(recs, rec)
		pods = append(pods, podOn("ip-"+rec.Name, fmt.Sprintf("u-%d", i)))
	}
	c := newCluster(t, recs)
	in := c.inputsAt(t, t0, pods)
	tx, puts, units := c.db.Calls("TransactWriteItems"), c.db.Calls("PutItem"), c.db.Units().Write
	run := &Run{Store: c.store, Exec: &Executor{Now: func() time.Time { return t0 }}}
	if err := run.fingerprint(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	if got := c.db.Calls("TransactWriteItems") - tx; got != 0 {
		t.Errorf("a tick with %d nodes' pods changed made %d record writes; want none", n, got)
	}
	if got := c.db.Calls("PutItem") - puts; got > state.PodSumShards {
		t.Errorf("%d item writes; want at most the %d summary shards", got, state.PodSumShards)
	}
	t.Logf("%d nodes changed: %d write units", n, c.db.Units().Write-units)
	after := c.inputsAt(t, t0.Add(time.Minute), nil)
	for _, rec := range after.Records {
		if !rec.PodsChangedAt.Equal(t0) {
			t.Fatalf("%s: pods changed at %s read back; want %s", rec.Name, rec.PodsChangedAt, t0)
		}
	}
}

// The timers read back (by the next tick or sweep) are those the tick
// stamped, as when they lived in the records: first sight, a change, no
// change, an empty node first seen, a record from before the summary, a
// record not initialized. The summary's entry wins over the record's own
// (stale) timer, so a timer never reads back earlier than stamped.
func TestFingerprintTimersReadBack(t *testing.T) {
	type timer struct {
		hash string
		at   time.Time
	}
	u1 := []string{"u-1"}
	for _, tc := range []struct {
		name    string
		rec     timer // the record's own fields
		sum     *timer
		phase   state.Phase
		noInit  bool
		pods    []string
		want    timer
		summary bool // the summary holds it after the tick
	}{
		{name: "first sight", pods: u1, want: timer{podsHash(u1...), t0}, summary: true},
		{name: "first sight, empty", want: timer{podsHash(), t0.Add(-time.Hour)}, summary: true},
		{name: "first sight, empty, never initialized", noInit: true, want: timer{podsHash(), t0}, summary: true},
		{name: "first sight, stamped before", rec: timer{"", t0.Add(-30 * time.Minute)}, pods: u1, want: timer{podsHash(u1...), t0.Add(-30 * time.Minute)}, summary: true},
		{name: "changed", sum: &timer{podsHash("u-0"), t0.Add(-2 * time.Hour)}, pods: u1, want: timer{podsHash(u1...), t0}, summary: true},
		{name: "changed, now empty", sum: &timer{podsHash("u-0"), t0.Add(-2 * time.Hour)}, want: timer{podsHash(), t0}, summary: true},
		{name: "unchanged", sum: &timer{podsHash(u1...), t0.Add(-2 * time.Hour)}, pods: u1, want: timer{podsHash(u1...), t0.Add(-2 * time.Hour)}, summary: true},
		{name: "legacy, unchanged", rec: timer{podsHash(u1...), t0.Add(-3 * time.Hour)}, pods: u1, want: timer{podsHash(u1...), t0.Add(-3 * time.Hour)}, summary: true},
		{name: "legacy, changed", rec: timer{podsHash("u-0"), t0.Add(-3 * time.Hour)}, pods: u1, want: timer{podsHash(u1...), t0}, summary: true},
		{name: "summary over a stale record", rec: timer{podsHash(u1...), t0.Add(-5 * time.Hour)}, sum: &timer{podsHash(u1...), t0.Add(-time.Hour)}, pods: u1,
			want: timer{podsHash(u1...), t0.Add(-time.Hour)}, summary: true},
		{name: "not initialized keeps its entry", phase: state.Disrupting, sum: &timer{podsHash("u-0"), t0.Add(-2 * time.Hour)}, pods: u1,
			want: timer{podsHash("u-0"), t0.Add(-2 * time.Hour)}, summary: true},
		{name: "not initialized, legacy", phase: state.Registered, rec: timer{podsHash("u-0"), t0.Add(-2 * time.Hour)}, pods: u1,
			want: timer{podsHash("u-0"), t0.Add(-2 * time.Hour)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			rec := initialized("default-abcde")
			rec.PodsHash, rec.PodsChangedAt = tc.rec.hash, tc.rec.at
			if tc.phase != "" {
				rec.Phase = tc.phase
			}
			if tc.noInit {
				rec.InitializedAt = time.Time{}
			}
			c := newCluster(t, []*state.NodeClaim{rec})
			if tc.sum != nil {
				if _, err := c.store.PutPodSums(ctx, nil, map[string]state.PodSum{rec.Name: {Hash: tc.sum.hash, ChangedAt: tc.sum.at}}); err != nil {
					t.Fatal(err)
				}
			}
			var pods []*corev1.Pod
			for _, uid := range tc.pods {
				pods = append(pods, podOn("ip-"+rec.Name, uid))
			}
			in := c.inputsAt(t, t0, pods)
			run := &Run{Store: c.store, Exec: &Executor{Now: func() time.Time { return t0.Add(time.Second) }}}
			if err := run.fingerprint(ctx, in); err != nil {
				t.Fatal(err)
			}
			got := in.Records[0]
			if got.PodsHash != tc.want.hash || !got.PodsChangedAt.Equal(tc.want.at) {
				t.Errorf("the tick decides with %s at %s; want %s at %s", got.PodsHash, got.PodsChangedAt, tc.want.hash, tc.want.at)
			}
			back := c.inputsAt(t, t0.Add(5*time.Minute), pods).Records[0]
			if back.PodsHash != tc.want.hash || !back.PodsChangedAt.Equal(tc.want.at) {
				t.Errorf("the next tick reads %s at %s; want %s at %s", back.PodsHash, back.PodsChangedAt, tc.want.hash, tc.want.at)
			}
			sums, _ := c.store.PodSums(ctx)
			if _, ok := sums.Get(rec.Name); ok != tc.summary {
				t.Errorf("in the summary: %t; want %t", ok, tc.summary)
			}
		})
	}
}

// An entry of a record that no longer exists is pruned.
func TestFingerprintPrunesGoneRecords(t *testing.T) {
	ctx := context.Background()
	c := newCluster(t, []*state.NodeClaim{initialized("default-abcde")})
	if _, err := c.store.PutPodSums(ctx, nil, map[string]state.PodSum{"default-gone0": {Hash: podsHash(), ChangedAt: t0}}); err != nil {
		t.Fatal(err)
	}
	run := &Run{Store: c.store, Exec: &Executor{Now: func() time.Time { return t0 }}}
	if err := run.fingerprint(ctx, c.inputsAt(t, t0, nil)); err != nil {
		t.Fatal(err)
	}
	sums, _ := c.store.PodSums(ctx)
	if _, ok := sums.Get("default-gone0"); ok || sums.Len() != 1 {
		t.Errorf("%d entries, the gone record's among them: %t; want only default-abcde's", sums.Len(), ok)
	}
}
