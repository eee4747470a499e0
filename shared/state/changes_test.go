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
	"k8s.io/apimachinery/pkg/api/resource"

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

// fill sets every field of v (a pointer) to a non-zero value, recursively.
func fill(v reflect.Value, depth int) {
	switch v.Kind() {
	case reflect.Pointer:
		if depth > 6 {
			return
		}
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), depth+1)
	case reflect.Struct:
		if v.Type() == reflect.TypeOf(time.Time{}) {
			v.Set(reflect.ValueOf(t0))
			return
		}
		if v.Type() == reflect.TypeOf(resource.Quantity{}) {
			v.Set(reflect.ValueOf(resource.MustParse("1")))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), depth+1)
			}
		}
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 2, 2))
		for i := range 2 {
			fill(v.Index(i), depth+1)
		}
	case reflect.Map:
		v.Set(reflect.MakeMap(v.Type()))
		k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
		fill(k, depth+1)
		fill(e, depth+1)
		v.SetMapIndex(k, e)
	case reflect.String:
		v.SetString("x")
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(1)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(1)
	case reflect.Float32, reflect.Float64:
		v.SetFloat(1)
	}
}

// shared reports a slice, map or pointer that a and b share (by path).
func shared(a, b reflect.Value, path string) string {
	switch a.Kind() {
	case reflect.Pointer:
		if a.IsNil() {
			return ""
		}
		if a.Pointer() == b.Pointer() {
			return path
		}
		return shared(a.Elem(), b.Elem(), path)
	case reflect.Struct:
		if a.Type() == reflect.TypeOf(time.Time{}) || a.Type() == reflect.TypeOf(resource.Quantity{}) {
			return ""
		}
		for i := range a.NumField() {
			if a.Type().Field(i).IsExported() {
				if p := shared(a.Field(i), b.Field(i), path+"."+a.Type().Field(i).Name); p != "" {
					return p
				}
			}
		}
	case reflect.Slice:
		if a.Len() > 0 && a.Pointer() == b.Pointer() {
			return path
		}
		for i := range a.Len() {
			if p := shared(a.Index(i), b.Index(i), fmt.Sprintf("%s[%d]", path, i)); p != "" {
				return p
			}
		}
	case reflect.Map:
		if a.Len() > 0 && a.Pointer() == b.Pointer() {
			return path
		}
		for _, k := range a.MapKeys() {
			if p := shared(a.MapIndex(k), b.MapIndex(k), path+"["+fmt.Sprint(k)+"]"); p != "" {
				return p
			}
		}
	}
	return ""
}

// NodeClaims hands out records the caller may change: Clone copies every
// field (a field added later without a copy fails here), and a record
// changed by its reader is not what the next read returns.
func TestNodeClaimsHandsOutCopies(t *testing.T) {
	var full state.NodeClaim
	fill(reflect.ValueOf(&full).Elem(), 0)
	c := full.Clone()
	if !reflect.DeepEqual(c, &full) {
		t.Fatalf("the clone differs from the record")
	}
	if p := shared(reflect.ValueOf(c).Elem(), reflect.ValueOf(&full).Elem(), "NodeClaim"); p != "" {
		t.Fatalf("the clone shares %s with the record", p)
	}

	clk := &clock{t: t0}
	s := newStoreOn(t, statetest.NewChecked(), clk)
	ctx := context.Background()
	l, _ := s.Acquire(ctx, state.LeaseProvision, "a", time.Minute)
	v := state.Versions{Pools: map[string]int64{}}
	if err := s.CreateNodeClaims(ctx, l, []*state.NodeClaim{realistic("default-abcde", 3)}, &v); err != nil {
		t.Fatal(err)
	}
	for range 2 { // cold, then warm
		recs, err := s.NodeClaims(ctx)
		if err != nil || len(recs) != 1 {
			t.Fatalf("%d records, %v", len(recs), err)
		}
		if recs[0].Phase != state.Initialized || recs[0].Claim.Pods[0] != "team-00/web-frontend-7d9f8b6c5-00000" {
			t.Fatalf("a reader's changes reached the store's copy: phase %s, pods %v", recs[0].Phase, recs[0].Claim.Pods)
		}
		recs[0].Phase, recs[0].Claim.Pods[0] = state.Terminating, "changed"
		clk.Add(time.Second)
	}
}

// A write that conflicts drops the cache: the caller reads again, and
// that read reads every record. Its own writes, and a read within the
// log's retention, do not.
func TestFullReadsAfterAConflictOrALongGap(t *testing.T) {
	db := &queries{DB: statetest.NewChecked()}
	clk := &clock{t: t0}
	a, b := newStoreOn(t, db, clk), newStoreOn(t, db, clk)
	ctx := context.Background()
	l, _ := a.Acquire(ctx, state.LeaseProvision, "a", time.Hour)
	v := state.Versions{Pools: map[string]int64{}}
	if err := a.CreateNodeClaims(ctx, l, []*state.NodeClaim{{Name: "n1", Reason: "1"}, {Name: "n2", Reason: "1"}}, &v); err != nil {
		t.Fatal(err)
	}
	read := func(s *state.Store) (map[string]int64, int) {
		t.Helper()
		before := db.fullReads()
		recs, err := s.NodeClaims(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return versions(recs), db.fullReads() - before
	}
	if _, full := read(b); full != 1 {
		t.Fatalf("first read: %d full reads, want 1", full)
	}
	recs, _ := a.NodeClaims(ctx)
	recs[0].Reason = "2"
	if err := a.PutNodeClaim(ctx, recs[0]); err != nil {
		t.Fatal(err)
	}
	clk.Add(5 * time.Second)
	if got, full := read(b); full != 0 || got["n1"] != 2 {
		t.Fatalf("warm read after another's write: %v, %d full reads; want n1 at 2 and none", got, full)
	}
	stale, _ := b.NodeClaims(ctx)
	stale[0].Reason = "3"
	recs[0].Reason = "3"
	if err := a.PutNodeClaim(ctx, recs[0]); err != nil {
		t.Fatal(err)
	}
	if err := b.PutNodeClaim(ctx, stale[0]); !errors.Is(err, state.ErrConflict) {
		t.Fatalf("a write from a stale read: %v, want ErrConflict", err)
	}
	if got, full := read(b); full != 1 || got["n1"] != 3 {
		t.Fatalf("read after a conflict: %v, %d full reads; want n1 at 3 and one", got, full)
	}
	clk.Add(11 * time.Minute)
	if _, full := read(b); full != 1 {
		t.Fatalf("read after 11 minutes: %d full reads, want 1 (the gap is past the log's retention less the overlap)", full)
	}
}

// hooked runs before, once, when a transaction arrives: what happens
// between a write's change stamp and its commit.
type hooked struct {
	*statetest.DB
	before func()
}

func (h *hooked) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, opts ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	if f := h.before; f != nil {
		h.before = nil
		f()
	}
	return h.DB.TransactWriteItems(ctx, in, opts...)
}

// A write stamped before another container's read began and committed
// after it (its request took 15 s) is in that container's next read: the
// overlap covers a commit up to ChangeCommitTimeout late.
func TestAWriteCommittedLateIsInTheNextRead(t *testing.T) {
	db := &hooked{DB: statetest.NewChecked()}
	clk := &clock{t: t0}
	a, b := newStoreOn(t, db, clk), newStoreOn(t, db, clk)
	ctx := context.Background()
	l, _ := a.Acquire(ctx, state.LeaseProvision, "a", time.Hour)
	v := state.Versions{Pools: map[string]int64{}}
	if err := a.CreateNodeClaims(ctx, l, []*state.NodeClaim{{Name: "n1", Reason: "1"}}, &v); err != nil {
		t.Fatal(err)
	}
	if _, err := b.NodeClaims(ctx); err != nil {
		t.Fatal(err)
	}
	recs, _ := a.NodeClaims(ctx)
	recs[0].Reason = "2"
	db.before = func() {
		clk.Add(15 * time.Second)
		if got, err := b.NodeClaims(ctx); err != nil || versions(got)["n1"] != 1 {
			t.Fatalf("read while the write is on its way: %v, %v", versions(got), err)
		}
	}
	if err := a.PutNodeClaim(ctx, recs[0]); err != nil {
		t.Fatal(err)
	}
	clk.Add(time.Second)
	got, err := b.NodeClaims(ctx)
	if err != nil || versions(got)["n1"] != 2 {
		t.Fatalf("the read after the late commit: %v, %v; want n1 at version 2", versions(got), err)
	}
}

// When most records changed, a read reads them all: one query costs less
// than getting each (BatchGetItem rounds each record up to 4 KB).
func TestMostRecordsChangedReadsThemAll(t *testing.T) {
	db := &queries{DB: statetest.New()}
	clk := &clock{t: t0}
	a, b := newStoreOn(t, db, clk), newStoreOn(t, db, clk)
	ctx := context.Background()
	l, _ := a.Acquire(ctx, state.LeaseProvision, "a", time.Hour)
	var recs []*state.NodeClaim
	for i := range 300 {
		recs = append(recs, &state.NodeClaim{Name: fmt.Sprintf("n%03d", i)})
	}
	v := state.Versions{Pools: map[string]int64{}}
	if err := a.CreateNodeClaims(ctx, l, recs, &v); err != nil {
		t.Fatal(err)
	}
	for _, changed := range []int{120, 200} {
		if _, err := b.NodeClaims(ctx); err != nil {
			t.Fatal(err)
		}
		clk.Add(2 * time.Minute)
		for _, r := range recs[:changed] {
			if err := a.PutNodeClaim(ctx, r); err != nil {
				t.Fatal(err)
			}
		}
		before := db.fullReads()
		got, err := b.NodeClaims(ctx)
		if err != nil || len(got) != 300 || got[0].Version != recs[0].Version {
			t.Fatalf("%d records, the first at version %d, %v", len(got), got[0].Version, err)
		}
		if full, want := db.fullReads()-before, map[int]int{120: 0, 200: 1}[changed]; full != want {
			t.Errorf("%d of 300 records changed: %d full reads, want %d", changed, full, want)
		}
	}
}
