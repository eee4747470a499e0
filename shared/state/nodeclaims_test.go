package state_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

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

// sizedDB records the size of each transaction's records (their JSON).
type sizedDB struct {
	*statetest.DB
	sizes []int
}

func (d *sizedDB) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	n := 0
	for _, w := range in.TransactItems {
		if w.Put == nil {
			continue
		}
		for k, v := range w.Put.Item {
			n += len(k)
			if s, ok := v.(*types.AttributeValueMemberS); ok {
				n += len(s.Value)
			}
		}
	}
	d.sizes = append(d.sizes, n)
	return d.DB.TransactWriteItems(ctx, in, opts...)
}

// Record transactions are split by encoded size as well as by item count:
// DynamoDB caps a transaction at 4 MB, and 60 claims of 2,000 pods each
// (about 100 KB a record) are 6 MB.
func TestCreateNodeClaimsSplitsBySize(t *testing.T) {
	db := &sizedDB{DB: statetest.NewChecked()}
	s, err := state.New(db, "nodewright-state", "test-cluster", func() time.Time { return t0 })
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	lease, err := s.Acquire(ctx, state.LeaseProvision, "a", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	var claims []*state.NodeClaim
	for i := range 60 {
		nc := &state.NodeClaim{Name: fmt.Sprintf("big-%05d", i), NodePool: "big", CreatedAt: t0}
		for p := range 2000 {
			nc.Claim.Pods = append(nc.Claim.Pods, fmt.Sprintf("team-namespace-%02d/worker-deployment-7d9f8b6c5-%05d", i, p))
		}
		claims = append(claims, nc)
	}
	v, err := s.Versions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.CreateNodeClaims(ctx, lease, claims, &v); err != nil {
		t.Fatal(err)
	}
	for i, n := range db.sizes {
		if n > 4_000_000 {
			t.Errorf("transaction %d carries %d bytes of records: over DynamoDB's 4 MB", i, n)
		}
	}
	recs, err := s.NodeClaims(ctx)
	if err != nil || len(recs) != 60 {
		t.Fatalf("%d records, %v; want 60", len(recs), err)
	}
	if int(v.Cluster) != len(db.sizes) {
		t.Errorf("launch version %d after %d transactions: want one step each", v.Cluster, len(db.sizes))
	}
}
