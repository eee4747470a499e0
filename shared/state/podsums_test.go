package state_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/shared/state/statetest"
)

func hashOf(i int) string { return fmt.Sprintf("%016x", 0x1000+i) }

// nodeNames are n generated NodeClaim names (<pool>-<5 characters>).
func nodeNames(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("default-%05x", 0x7a3f1*i%0xfffff)
	}
	return out
}

// The summary reads back what was written (the change time rounded up to
// the millisecond, never down), a shard whose content is unchanged is not
// written, an entry left out is removed, and a shard another writer wrote
// since it was read is skipped.
func TestPodSumsWriteOnlyWhatChanged(t *testing.T) {
	ctx := context.Background()
	s, db := checkedStore(t)
	at := t0.Add(1500 * time.Microsecond)
	sums := map[string]state.PodSum{}
	for i, n := range nodeNames(200) {
		sums[n] = state.PodSum{Hash: hashOf(i), ChangedAt: at}
	}
	read, err := s.PodSums(ctx)
	if err != nil || read.Len() != 0 {
		t.Fatalf("empty table: %d entries, %v", read.Len(), err)
	}
	if n, err := s.PutPodSums(ctx, read, sums); err != nil || n != state.PodSumShards {
		t.Fatalf("first write: %d shards, %v; want %d", n, err, state.PodSumShards)
	}
	read, err = s.PodSums(ctx)
	if err != nil || read.Len() != len(sums) {
		t.Fatalf("read back %d entries, %v; want %d", read.Len(), err, len(sums))
	}
	for n, want := range sums {
		got, _ := read.Get(n)
		if got.Hash != want.Hash || !got.ChangedAt.Equal(t0.Add(2*time.Millisecond)) {
			t.Fatalf("%s: %+v; want hash %s changed at t0+2ms (rounded up)", n, got, want.Hash)
		}
	}
	if n, err := s.PutPodSums(ctx, read, sums); err != nil || n != 0 {
		t.Fatalf("same summary again: %d shards written, %v; want none", n, err)
	}
	// One entry changes, one goes: only their shards are written.
	names := nodeNames(200)
	changed, gone := names[3], names[4]
	sums[changed] = state.PodSum{Hash: hashOf(999), ChangedAt: t0.Add(time.Minute)}
	delete(sums, gone)
	want := map[int]bool{state.PodSumShard(changed): true, state.PodSumShard(gone): true}
	if n, err := s.PutPodSums(ctx, read, sums); err != nil || n != len(want) {
		t.Fatalf("one changed, one gone: %d shards written, %v; want %d", n, err, len(want))
	}
	again, _ := s.PodSums(ctx)
	if _, ok := again.Get(gone); ok || again.Len() != len(sums) {
		t.Errorf("%s still summarised (%d entries, want %d)", gone, again.Len(), len(sums))
	}
	if got, _ := again.Get(changed); got.Hash != hashOf(999) {
		t.Errorf("%s: %+v; want the new hash", changed, got)
	}
	// A writer that read before that write conflicts: skipped, not failed.
	sums[changed] = state.PodSum{Hash: hashOf(1000), ChangedAt: t0.Add(2 * time.Minute)}
	before := db.Units().Write
	if n, err := s.PutPodSums(ctx, read, sums); err != nil || n != 0 {
		t.Errorf("stale read: %d shards written, %v; want none written, no error", n, err)
	}
	if db.Units().Write != before {
		t.Errorf("a skipped write consumed %d write units", db.Units().Write-before)
	}
}

// Apply gives each record its entry; a record with none keeps its own
// timer (written before the summary existed).
func TestPodSumsApplyKeepsLegacyTimers(t *testing.T) {
	ctx := context.Background()
	s, _ := checkedStore(t)
	if _, err := s.PutPodSums(ctx, nil, map[string]state.PodSum{"a": {Hash: hashOf(1), ChangedAt: t0}}); err != nil {
		t.Fatal(err)
	}
	read, err := s.PodSums(ctx)
	if err != nil {
		t.Fatal(err)
	}
	recs := []*state.NodeClaim{
		{Name: "a", PodsHash: hashOf(0), PodsChangedAt: t0.Add(-time.Hour)},
		{Name: "b", PodsHash: hashOf(2), PodsChangedAt: t0.Add(-time.Hour)},
	}
	read.Apply(recs)
	if recs[0].PodsHash != hashOf(1) || !recs[0].PodsChangedAt.Equal(t0) {
		t.Errorf("a: %s at %s; want the summary's %s at %s", recs[0].PodsHash, recs[0].PodsChangedAt, hashOf(1), t0)
	}
	if recs[1].PodsHash != hashOf(2) || !recs[1].PodsChangedAt.Equal(t0.Add(-time.Hour)) {
		t.Errorf("b: %s at %s; want its own %s at %s", recs[1].PodsHash, recs[1].PodsChangedAt, hashOf(2), t0.Add(-time.Hour))
	}
}

// A shard that would exceed its size limit is an error naming the
// remedy, never a silent drop; and what a shard holds before that.
func TestPodSumsFullShardIsAnError(t *testing.T) {
	ctx := context.Background()
	s, _ := checkedStore(t)
	sums := map[string]state.PodSum{}
	for i := range 20_000 * state.PodSumShards / 16 {
		// 253-character names sharing nothing: the worst case.
		name := fmt.Sprintf("%05d-%s", i, strings.Repeat("x", 247))
		sums[name] = state.PodSum{Hash: hashOf(i), ChangedAt: t0}
	}
	if _, err := s.PutPodSums(ctx, nil, sums); err != nil {
		t.Fatalf("%d nodes of 253-character names: %v; want them to fit", len(sums), err)
	}
	for i := range 3_000 * state.PodSumShards {
		sums[fmt.Sprintf("%05d-%s", 20_000+i, strings.Repeat("y", 247))] = state.PodSum{Hash: hashOf(i), ChangedAt: t0}
	}
	_, err := s.PutPodSums(ctx, nil, sums)
	if !errors.Is(err, state.ErrPodSumsFull) || !strings.Contains(err.Error(), "bytes") {
		t.Errorf("%d nodes of 253-character names: %v; want %v with the size", len(sums), err, state.ErrPodSumsFull)
	}
	bad := map[string]state.PodSum{"a": {Hash: "not-hex", ChangedAt: t0}}
	if _, err := s.PutPodSums(ctx, nil, bad); err == nil {
		t.Error("a hash that is not 16 hex digits was written")
	}
}

// What the summary costs at 5,000 nodes: a tick that finds every node's
// pods changed writes every shard, at most 200 write units in all (the
// records would cost about 16 each), and a read is one query of a few
// dozen read units.
func TestPodSumsUnitsAt5000Nodes(t *testing.T) {
	ctx := context.Background()
	db := statetest.New()
	s, err := state.New(db, "nodewright-state", "prod-cluster", func() time.Time { return t0 })
	if err != nil {
		t.Fatal(err)
	}
	sums := map[string]state.PodSum{}
	for i, n := range nodeNames(5000) {
		sums[n] = state.PodSum{Hash: hashOf(i), ChangedAt: t0}
	}
	if _, err := s.PutPodSums(ctx, nil, sums); err != nil {
		t.Fatal(err)
	}
	read, _ := s.PodSums(ctx)
	for i, n := range nodeNames(5000) {
		sums[n] = state.PodSum{Hash: hashOf(i + 5000), ChangedAt: t0.Add(5 * time.Minute)}
	}
	before := db.Units()
	if n, err := s.PutPodSums(ctx, read, sums); err != nil || n != state.PodSumShards {
		t.Fatalf("%d shards written, %v", n, err)
	}
	w := db.Units().Write - before.Write
	before = db.Units()
	if _, err := s.PodSums(ctx); err != nil {
		t.Fatal(err)
	}
	r := db.Units().Read - before.Read
	t.Logf("pods summary at 5,000 nodes: a tick with every node changed writes %d units, a read costs %d", w, r)
	if w > 200 || r > 50 {
		t.Errorf("a tick with every node's pods changed writes %d units and a read costs %d; want at most 200 and 50", w, r)
	}
}
