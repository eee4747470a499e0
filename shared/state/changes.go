package state

// changes.go: the records' change log and the cached read it allows.
//
// Every write of a NodeClaim record (CreateNodeClaims, PutNodeClaim,
// DeleteNodeClaim, StartAction) also writes, in the same transaction, one
// small change item (PrefixChange) naming the records it wrote and their
// new versions (or that they were deleted). A Store keeps the records it
// read; its next NodeClaims reads only the change items written since its
// last read (less an overlap) and the records they name whose cached copy
// is older, so what a warm read costs grows with the changes, not with the
// cluster.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/nodewright/nodewright/shared/names"
)

const (
	// ChangeRetention is how long a change item is kept (its expiry):
	// DynamoDB's TTL deletes it later, never sooner.
	ChangeRetention = 15 * time.Minute
	// ChangeCommitTimeout bounds how long after its change item's stamp a
	// record write may commit: the write's context has this deadline, so
	// no request built then reaches DynamoDB later.
	ChangeCommitTimeout = 20 * time.Second
	// changeOverlap is how far before the previous read's start a warm
	// read looks: a write stamped before that read began (by a writer
	// whose clock is behind, or whose request took up to
	// ChangeCommitTimeout) and committed after it is still seen.
	changeOverlap = time.Minute
	// maxWarmGap is the longest gap between two reads that a warm read
	// covers: its window (the gap plus the overlap) stays well inside the
	// change items' retention; a longer gap reads everything.
	maxWarmGap = ChangeRetention - changeOverlap - 4*time.Minute
	// maxCacheAge is how long a Store trusts its cache before it reads
	// every record again anyway (a safety net: a full read an hour is a
	// small share of the cost).
	maxCacheAge = time.Hour
)

// Attributes of a change item.
const (
	attrPut = "put" // map: record name -> its new version
	attrDel = "del" // string set: the records deleted
)

// change is what one transaction did to the records.
type change struct {
	put map[string]int64
	// del are the records deleted, with the version each had.
	del map[string]int64
}

// changeItem is the change item of c, stamped at: its sort key is
// change#<unix millis, 13 digits>#<first record>#<its version, "x" for a
// deletion>, which no other write can have (a record's version is written
// once per life), so no change item ever overwrites another.
func (s *Store) changeItem(c change, at time.Time) types.TransactWriteItem {
	all := slices.Sorted(maps.Keys(c.put))
	all = append(all, slices.Sorted(maps.Keys(c.del))...)
	sort.Strings(all)
	first := all[0]
	tag := strconv.FormatInt(c.put[first], 10)
	if v, ok := c.del[first]; ok {
		tag = strconv.FormatInt(v, 10) + "x"
	}
	it := s.key(Key(PrefixChange, stamp(at), first, tag))
	it[names.TTLAttribute] = expiry(at.Add(ChangeRetention))
	if len(c.put) > 0 {
		m := make(item, len(c.put))
		for n, v := range c.put {
			m[n] = num(v)
		}
		it[attrPut] = &types.AttributeValueMemberM{Value: m}
	}
	if len(c.del) > 0 {
		it[attrDel] = &types.AttributeValueMemberSS{Value: slices.Sorted(maps.Keys(c.del))}
	}
	return s.putItem(it, "", nil, nil)
}

// stamp is t in Unix milliseconds, zero-padded so that sort keys order as
// times do.
func stamp(t time.Time) string { return fmt.Sprintf("%013d", max(t.UnixMilli(), 0)) }

// transactRecords writes items (which write records), with c's change
// item, all or none, under ChangeCommitTimeout; the cache learns of the
// write (or, on a conflict, is dropped).
func (s *Store) transactRecords(ctx context.Context, what string, items []types.TransactWriteItem, c change, written []*NodeClaim) error {
	gen := s.cache.begin()
	ctx, cancel := context.WithTimeout(ctx, ChangeCommitTimeout)
	defer cancel()
	err := s.transact(ctx, what, append(items, s.changeItem(c, s.now())))
	if err != nil {
		if isConflict(err) {
			s.cache.drop()
		}
		return err
	}
	s.cache.wrote(gen, written, slices.Collect(maps.Keys(c.del)))
	return nil
}

// recordCache is a Store's copy of the records: what its last read
// returned, kept up to date by its own writes.
type recordCache struct {
	// mu is held for a whole read, so that reads and the cache updates of
	// writes happen one at a time.
	mu sync.Mutex
	// recs is nil when cold (the next read reads every record).
	recs map[string]*NodeClaim
	// since is when the last read began; full when the last full read did.
	since, full time.Time
	// seen are the change items the last read found: already applied.
	seen map[string]bool
	// dirty are records this Store wrote while a read ran: the next read
	// fetches them.
	dirty map[string]bool
	// gen counts reads: a write that saw no read begin during it may put
	// what it wrote in the cache.
	gen uint64
}

// begin is called before a record write: the generation it must still see
// to update the cache.
func (c *recordCache) begin() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.gen
}

// wrote puts records this Store wrote in the cache (copies) and removes
// those it deleted; if a read began since the write began (it may have
// read a newer version), they are fetched again by the next read instead.
func (c *recordCache) wrote(gen uint64, written []*NodeClaim, deleted []string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.recs == nil {
		return
	}
	if c.gen != gen {
		for _, nc := range written {
			c.dirty[nc.Name] = true
		}
		for _, n := range deleted {
			c.dirty[n] = true
		}
		return
	}
	for _, nc := range written {
		c.recs[nc.Name] = nc.Clone()
	}
	for _, n := range deleted {
		delete(c.recs, n)
	}
}

// drop empties the cache: the next read reads every record.
func (c *recordCache) drop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reset()
}

func (c *recordCache) reset() { c.recs, c.seen, c.dirty = nil, nil, nil }

// NodeClaims reads every record of the cluster, sorted by name: each is
// the caller's to change. A record whose write committed before the call
// began is in the result (or absent, if deleted), as a strongly
// consistent read of them all would have it. The first call, one after a
// gap longer than the change log's retention allows, or after a
// conflicting write, reads every record; the others read the change items
// written since the previous call and the records they name whose copy is
// older.
func (s *Store) NodeClaims(ctx context.Context) ([]*NodeClaim, error) {
	c := &s.cache
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gen++
	start := s.now()
	var err error
	if c.recs == nil || start.Before(c.since) || start.Sub(c.since) > maxWarmGap || start.Sub(c.full) > maxCacheAge {
		err = s.readAll(ctx, start)
	} else {
		err = s.readChanges(ctx, start)
	}
	if err != nil {
		c.reset()
		return nil, err
	}
	out := make([]*NodeClaim, 0, len(c.recs))
	for _, n := range slices.Sorted(maps.Keys(c.recs)) {
		out = append(out, c.recs[n].Clone())
	}
	return out, nil
}

// readAll reads every record into the cache (cold).
func (s *Store) readAll(ctx context.Context, start time.Time) error {
	items, err := s.query(ctx, s.cluster, PrefixNodeClaim)
	if err != nil {
		return err
	}
	recs := make(map[string]*NodeClaim, len(items))
	for _, it := range items {
		nc, err := decodeNodeClaim(it)
		if err != nil {
			return err
		}
		recs[nc.Name] = nc
	}
	c := &s.cache
	c.recs, c.since, c.full, c.seen, c.dirty = recs, start, start, nil, map[string]bool{}
	return nil
}

// readChanges brings the cache up to date from the change items written
// since the previous read began, less the overlap (warm).
func (s *Store) readChanges(ctx context.Context, start time.Time) error {
	c := &s.cache
	items, err := s.queryRange(ctx, Key(PrefixChange, stamp(c.since.Add(-changeOverlap))), PrefixChange+"~")
	if err != nil {
		return err
	}
	need := map[string]bool{}
	maps.Copy(need, c.dirty)
	seen := make(map[string]bool, len(items))
	for _, it := range items {
		sk := getStr(it, names.SortKey)
		seen[sk] = true
		if c.seen[sk] {
			continue
		}
		if m, ok := it[attrPut].(*types.AttributeValueMemberM); ok {
			for n, av := range m.Value {
				v, _ := av.(*types.AttributeValueMemberN)
				if v == nil {
					return fmt.Errorf("change item %s: version of %s is not a number", sk, n)
				}
				ver, err := strconv.ParseInt(v.Value, 10, 64)
				if err != nil {
					return fmt.Errorf("change item %s: version of %s: %w", sk, n, err)
				}
				if cur, ok := c.recs[n]; !ok || cur.Version < ver {
					need[n] = true
				}
			}
		}
		if ss, ok := it[attrDel].(*types.AttributeValueMemberSS); ok {
			for _, n := range ss.Value {
				if _, ok := c.recs[n]; ok {
					need[n] = true
				}
			}
		}
	}
	if len(need) > maxBatchGet && 2*len(need) > len(c.recs) {
		// Most records changed (a BatchGetItem rounds each record up to
		// 4 KB, a query only their sum): read them all.
		return s.readAll(ctx, start)
	}
	got, err := s.getRecords(ctx, slices.Sorted(maps.Keys(need)))
	if err != nil {
		return err
	}
	for n := range need {
		if nc, ok := got[n]; ok {
			c.recs[n] = nc
		} else {
			delete(c.recs, n)
		}
	}
	c.since, c.seen, c.dirty = start, seen, map[string]bool{}
	return nil
}

// queryRange returns the cluster partition's items whose sort key is
// between from and to, page by page (strongly consistent).
func (s *Store) queryRange(ctx context.Context, from, to string) ([]item, error) {
	in := &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		KeyConditionExpression:    aws.String("#pk = :pk AND #sk BETWEEN :from AND :to"),
		ExpressionAttributeNames:  map[string]string{"#pk": names.PartitionKey, "#sk": names.SortKey},
		ExpressionAttributeValues: item{":pk": str(s.cluster), ":from": str(from), ":to": str(to)},
		ConsistentRead:            aws.Bool(true),
	}
	var out []item
	for {
		page, err := s.db.Query(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("query %s..%s: %w", from, to, err)
		}
		out = append(out, page.Items...)
		if len(page.LastEvaluatedKey) == 0 {
			return out, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

// maxBatchGet is DynamoDB's limit of keys per BatchGetItem.
const maxBatchGet = 100

// getRecords reads the named records (strongly consistent), 100 at a
// time, retrying the keys DynamoDB leaves unprocessed; a record that does
// not exist is absent from the result.
func (s *Store) getRecords(ctx context.Context, recNames []string) (map[string]*NodeClaim, error) {
	out := make(map[string]*NodeClaim, len(recNames))
	for len(recNames) > 0 {
		n := min(maxBatchGet, len(recNames))
		keys := make([]item, 0, n)
		for _, name := range recNames[:n] {
			keys = append(keys, s.key(Key(PrefixNodeClaim, name)))
		}
		recNames = recNames[n:]
		pending := map[string]types.KeysAndAttributes{s.table: {Keys: keys, ConsistentRead: aws.Bool(true)}}
		for attempt := 0; len(pending[s.table].Keys) > 0; attempt++ {
			if attempt == 8 {
				return nil, fmt.Errorf("read nodeclaims: %d keys left unprocessed", len(pending[s.table].Keys))
			}
			if attempt > 0 {
				if err := sleep(ctx, time.Duration(25<<attempt)*time.Millisecond); err != nil {
					return nil, err
				}
			}
			page, err := s.db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: pending})
			if err != nil {
				return nil, fmt.Errorf("read nodeclaims: %w", err)
			}
			for _, it := range page.Responses[s.table] {
				nc, err := decodeNodeClaim(it)
				if err != nil {
					return nil, err
				}
				out[nc.Name] = nc
			}
			pending = page.UnprocessedKeys
		}
	}
	return out, nil
}

// isConflict reports whether err is a conditional write's failure (or
// the lease's loss, which a failed fence becomes).
func isConflict(err error) bool { return errors.Is(err, ErrConflict) || errors.Is(err, ErrLeaseLost) }
