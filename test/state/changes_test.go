package state_test

import (
	"context"
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/nodewright/nodewright/shared/state"
)

// fullReads counts the queries that read every record.
type fullReads struct {
	*dynamodb.Client
	n atomic.Int64
}

func (f *fullReads) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	if p, ok := in.ExpressionAttributeValues[":prefix"].(*types.AttributeValueMemberS); ok && p.Value == state.PrefixNodeClaim {
		f.n.Add(1)
	}
	return f.Client.Query(ctx, in, opts...)
}

// The change log's writes and reads as DynamoDB (moto) takes them: the
// transactions with their change item, the sort-key range query and
// BatchGetItem. A second store (another container) reads every record
// once, then only the changes, and finds what a new store reads.
func TestWarmReadsSeeAnotherStoresWrites(t *testing.T) {
	t.Parallel()
	clk := newClock()
	c := ctx(t)
	cluster := fmt.Sprintf("c%d-%s", runID.Add(1), t.Name())
	db := &fullReads{Client: dynamodb.NewFromConfig(cloud.AWSConfig())}
	open := func() *state.Store {
		s, err := state.New(db, cloud.Names.Table, cluster, clk.Now)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b := open(), open()
	l, err := a.Acquire(c, state.LeaseProvision, "a", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	var claims []*state.NodeClaim
	for i := range 5 {
		claims = append(claims, claim(fmt.Sprintf("default-%05d", i), "default", fmt.Sprintf("default/p%d", i)))
	}
	if err := a.CreateNodeClaims(c, l, claims, versionsNow(t, c, a)); err != nil {
		t.Fatal(err)
	}
	names := func(recs []*state.NodeClaim) map[string]int64 {
		out := map[string]int64{}
		for _, r := range recs {
			out[r.Name] = r.Version
		}
		return out
	}
	read := func(s *state.Store) (map[string]int64, int64) {
		t.Helper()
		before := db.n.Load()
		recs, err := s.NodeClaims(c)
		if err != nil {
			t.Fatal(err)
		}
		return names(recs), db.n.Load() - before
	}
	if got, full := read(b); len(got) != 5 || full != 1 {
		t.Fatalf("first read: %v with %d full reads; want 5 records and one", got, full)
	}
	clk.Add(10 * time.Second)
	claims[0].Phase = state.Launched
	if err := a.PutNodeClaim(c, claims[0]); err != nil {
		t.Fatal(err)
	}
	if err := a.DeleteNodeClaim(c, claims[1]); err != nil {
		t.Fatal(err)
	}
	if err := a.StartAction(c, &state.Action{ID: "act-1", Kind: state.KindConsolidation}, []*state.NodeClaim{claims[2]}); err != nil {
		t.Fatal(err)
	}
	if err := a.CreateNodeClaims(c, l, []*state.NodeClaim{claim("default-00009", "default")}, versionsNow(t, c, a)); err != nil {
		t.Fatal(err)
	}
	clk.Add(10 * time.Second)
	got, full := read(b)
	want, _ := read(open())
	if !reflect.DeepEqual(got, want) || full != 0 {
		t.Fatalf("warm read: %v with %d full reads; a new store reads %v (and none is wanted)", got, full, want)
	}
	if got["default-00000"] != 2 || got["default-00002"] != 2 || got["default-00009"] != 1 || got["default-00001"] != 0 {
		t.Fatalf("warm read: %v; want 00000 and 00002 at version 2, 00009 new, 00001 gone", got)
	}
}
