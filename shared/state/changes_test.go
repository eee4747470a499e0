package state_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/shared/state/statetest"
)

// clock is a settable clock (one per store: their clocks may differ).
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// queries records the key conditions of the queries made (a full read of
// the records is a begins_with on nodeclaim#).
type queries struct {
	*statetest.DB
	mu   sync.Mutex
	full int
}

func (q *queries) Query(ctx context.Context, in *dynamodb.QueryInput, opts ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	if p, ok := in.ExpressionAttributeValues[":prefix"].(*types.AttributeValueMemberS); ok && p.Value == state.PrefixNodeClaim {
		q.mu.Lock()
		q.full++
		q.mu.Unlock()
	}
	return q.DB.Query(ctx, in, opts...)
}

func (q *queries) fullReads() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.full
}

func newStoreOn(t *testing.T, db state.DynamoDB, clk *clock) *state.Store {
	t.Helper()
	s, err := state.New(db, "nodewright-state", "test-cluster", clk.Now)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// truth is what a read of every record finds now.
func truth(t *testing.T, db state.DynamoDB, clk *clock) map[string]int64 {
	t.Helper()
	recs, err := newStoreOn(t, db, clk).NodeClaims(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return versions(recs)
}

func versions(recs []*state.NodeClaim) map[string]int64 {
	out := map[string]int64{}
	for _, r := range recs {
		out[r.Name] = r.Version
		if r.Reason != fmt.Sprint(r.Version) {
			out[r.Name] = -r.Version // the body is not the version's
		}
	}
	return out
}

// Three stores (three containers) write and read the same records in a
// random order, with clocks that move on by up to twenty minutes and
// differ by up to ten seconds: every read returns what a read of every
// record would (the change log misses no write: creations, updates,
// deletions, a name deleted and created again, an action marking
// several), and reads after the first read every record only when the
// gap exceeds the log's retention or a write conflicted.
func TestWarmReadsReturnWhatAFullReadWould(t *testing.T) {
	for seed := range uint64(20) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 7))
			db := &queries{DB: statetest.NewChecked()}
			base := &clock{t: t0}
			var stores []*state.Store
			var clocks []*clock
			for i := range 3 {
				clk := &clock{t: t0.Add(time.Duration(i) * 5 * time.Second)}
				clocks = append(clocks, clk)
				stores = append(stores, newStoreOn(t, db, clk))
			}
			ctx := context.Background()
			held := map[int]*state.NodeClaim{}
			warm, conflicts := 0, 0
			for step := range 300 {
				i := rng.IntN(3)
				s, clk := stores[i], clocks[i]
				switch op := rng.IntN(10); {
				case op < 3: // read, and keep a record to write later
					before := db.fullReads()
					recs, err := s.NodeClaims(ctx)
					if err != nil {
						t.Fatal(err)
					}
					if got, want := versions(recs), truth(t, db.DB, base); !reflect.DeepEqual(got, want) {
						t.Fatalf("step %d: store %d read %v, the records are %v", step, i, got, want)
					}
					if db.fullReads() == before {
						warm++
					}
					if len(recs) > 0 {
						held[i] = recs[rng.IntN(len(recs))]
					}
				case op < 5: // create (sometimes a name that existed)
					name := fmt.Sprintf("nc-%d", rng.IntN(12))
					l, err := s.Acquire(ctx, fmt.Sprint("l", step), "h", time.Hour)
					if err != nil {
						t.Fatal(err)
					}
					v, err := s.Versions(ctx)
					if err != nil {
						t.Fatal(err)
					}
					nc := &state.NodeClaim{Name: name, NodePool: "default", Reason: "1", CreatedAt: clk.Now()}
					if err := s.CreateNodeClaims(ctx, l, []*state.NodeClaim{nc}, &v); err != nil && !errors.Is(err, state.ErrConflict) {
						t.Fatal(err)
					}
				case op < 7: // update what it read
					if nc := held[i]; nc != nil {
						nc.Reason = fmt.Sprint(nc.Version + 1)
						if err := s.PutNodeClaim(ctx, nc); errors.Is(err, state.ErrConflict) {
							conflicts++
							nc.Reason = fmt.Sprint(nc.Version)
						} else if err != nil {
							t.Fatal(err)
						}
					}
				case op < 8: // delete what it read
					if nc := held[i]; nc != nil {
						if err := s.DeleteNodeClaim(ctx, nc); err != nil && !errors.Is(err, state.ErrConflict) {
							t.Fatal(err)
						}
						delete(held, i)
					}
				case op < 9: // an action marks what it read
					if nc := held[i]; nc != nil && nc.Disruption == nil {
						a := &state.Action{ID: fmt.Sprint("a", step), Kind: state.KindConsolidation}
						nc.Reason = fmt.Sprint(nc.Version + 1)
						if err := s.StartAction(ctx, a, []*state.NodeClaim{nc}); err != nil && !errors.Is(err, state.ErrConflict) {
							t.Fatal(err)
						}
						delete(held, i)
					}
				default: // time passes, sometimes past the log's retention
					d := time.Duration(rng.IntN(40)) * time.Second
					if rng.IntN(10) == 0 {
						d = 20 * time.Minute
					}
					for _, c := range append(clocks, base) {
						c.Add(d)
					}
				}
			}
			if warm < 20 {
				t.Errorf("only %d warm reads: the test does not exercise the change log", warm)
			}
		})
	}
}
