package state_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/shared/state/statetest"
)

var t0 = time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)

func checkedStore(t *testing.T) (*state.Store, *statetest.DB) {
	t.Helper()
	db := statetest.NewChecked()
	s, err := state.New(db, "nodewright-state", "test-cluster", func() time.Time { return t0 })
	if err != nil {
		t.Fatal(err)
	}
	return s, db
}

// The launch fence: two launchers that read the same versions cannot both
// write records, whatever their pools (limits or none); the second reads
// again and may then write.
func TestCreateNodeClaimsIsFencedByTheClusterLaunchVersion(t *testing.T) {
	s, _ := checkedStore(t)
	ctx := context.Background()
	lease, err := s.Acquire(ctx, state.LeaseProvision, "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.Versions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	b := state.Versions{Cluster: a.Cluster, Pools: map[string]int64{}}
	if err := s.CreateNodeClaims(ctx, lease, []*state.NodeClaim{{Name: "default-aaaaa", NodePool: "default", CreatedAt: t0}}, &a); err != nil {
		t.Fatal(err)
	}
	if a.Cluster != 1 {
		t.Errorf("the caller's launch version is %d after its commit, want 1", a.Cluster)
	}
	err = s.CreateNodeClaims(ctx, lease, []*state.NodeClaim{{Name: "other-bbbbb", NodePool: "other", CreatedAt: t0}}, &b)
	if !errors.Is(err, state.ErrConflict) {
		t.Fatalf("a second launcher on the versions read before the first's commit: %v, want ErrConflict", err)
	}
	fresh, err := s.Versions(ctx)
	if err != nil || fresh.Cluster != 1 {
		t.Fatalf("launch version %d, %v; want 1", fresh.Cluster, err)
	}
	if err := s.CreateNodeClaims(ctx, lease, []*state.NodeClaim{{Name: "other-bbbbb", NodePool: "other", CreatedAt: t0}}, &fresh); err != nil {
		t.Fatalf("after reading again: %v", err)
	}
	if err := s.CreateNodeClaims(ctx, lease, []*state.NodeClaim{{Name: "other-ccccc", NodePool: "other", CreatedAt: t0}}, nil); err == nil {
		t.Error("a write without versions was accepted")
	}
}
