package state

// podsums.go: the pods summary, when each node's reschedulable pods last
// changed, kept out of the NodeClaim records.
//
// Consolidation fingerprints every node's pods at each tick; under steady
// churn most nodes' pods change between two ticks. Written into the records,
// that is thousands of record writes a tick (each a ~7 KB record in a
// transaction with its change item) and a full read for every container's
// next cached read. The summary is a fixed number of shard items
// (PrefixPodSums), each holding the entries of the records hashed to it,
// compactly encoded in one binary attribute; a tick writes only the shards
// whose content changed.

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/nodewright/nodewright/shared/names"
)

const (
	// PodSumShards is the number of shard items of the summary.
	PodSumShards = 16
	// maxPodSumBytes bounds a shard's encoded entries, well under
	// DynamoDB's 400 KB item limit. An entry takes about 22 bytes for a
	// generated name (<pool>-<5 characters>, sorted names sharing their
	// pool's prefix): some 16,000 nodes a shard, 260,000 in all; names of
	// 253 characters sharing nothing take 275 bytes, some 1,300 a shard,
	// 20,000 in all. A shard past it is an error (ErrPodSumsFull), never a
	// silent drop.
	maxPodSumBytes = 350 << 10
	// podSumHashLen is the length of a pods hash, in bytes (16 hex digits).
	podSumHashLen = 8
	// podSumFormat is the encoding's version, its first byte.
	podSumFormat = 1
	attrSums     = "sums"
)

// ErrPodSumsFull means a shard of the pods summary would exceed its size
// limit: raise PodSumShards.
var ErrPodSumsFull = errors.New("state: pods summary shard full")

// PodSum is when a node's reschedulable pods last changed: their
// fingerprint (16 hex digits) and when it was first seen different.
type PodSum struct {
	Hash      string
	ChangedAt time.Time
}

// PodSums is the pods summary as read: each record's entry, and each
// shard's version and encoded content (a write skips the shards whose
// content it would not change). The zero value is an empty summary.
type PodSums struct {
	sums   map[string]PodSum
	shards map[int]podSumShard
}

type podSumShard struct {
	version int64
	content []byte
}

// Get returns the entry of the record named name.
func (p *PodSums) Get(name string) (PodSum, bool) {
	if p == nil {
		return PodSum{}, false
	}
	s, ok := p.sums[name]
	return s, ok
}

// Len is the number of entries.
func (p *PodSums) Len() int {
	if p == nil {
		return 0
	}
	return len(p.sums)
}

// Apply sets each record's PodsHash and PodsChangedAt from its entry; a
// record without one keeps its own (written before the summary existed).
func (p *PodSums) Apply(recs []*NodeClaim) {
	for _, rec := range recs {
		if s, ok := p.Get(rec.Name); ok {
			rec.PodsHash, rec.PodsChangedAt = s.Hash, s.ChangedAt
		}
	}
}

// PodSumShard is the shard of the record named name.
func PodSumShard(name string) int {
	h := fnv.New32a()
	_, _ = h.Write([]byte(name))
	return int(h.Sum32() % PodSumShards)
}

func podSumKey(shard int) string { return Key(PrefixPodSums, fmt.Sprintf("%02d", shard)) }

// PodSums reads the pods summary (one strongly consistent query).
func (s *Store) PodSums(ctx context.Context) (*PodSums, error) {
	items, err := s.query(ctx, s.cluster, PrefixPodSums)
	if err != nil {
		return nil, fmt.Errorf("pods summary: %w", err)
	}
	p := &PodSums{sums: map[string]PodSum{}, shards: map[int]podSumShard{}}
	for _, it := range items {
		sk := getStr(it, names.SortKey)
		shard, err := strconv.Atoi(strings.TrimPrefix(sk, PrefixPodSums))
		if err != nil || shard < 0 {
			return nil, fmt.Errorf("pods summary: item %s is no shard", sk)
		}
		b, _ := it[attrSums].(*types.AttributeValueMemberB)
		if b == nil {
			return nil, fmt.Errorf("pods summary: item %s has no entries", sk)
		}
		if err := decodePodSums(b.Value, p.sums); err != nil {
			return nil, fmt.Errorf("pods summary: item %s: %w", sk, err)
		}
		p.shards[shard] = podSumShard{version: getNum(it, attrVersion), content: b.Value}
	}
	return p, nil
}

// PutPodSums makes the summary hold sums, the entry of every record that
// has one (an entry left out is removed), from read, the summary as read
// before: it writes only the shards whose content changes, each
// conditioned on the version read. A shard another invocation wrote since
// is skipped (the next tick computes it again); it returns the number of
// shards written.
func (s *Store) PutPodSums(ctx context.Context, read *PodSums, sums map[string]PodSum) (int, error) {
	if read == nil {
		read = &PodSums{}
	}
	byShard := make([]map[string]PodSum, PodSumShards)
	for name, sum := range sums {
		i := PodSumShard(name)
		if byShard[i] == nil {
			byShard[i] = map[string]PodSum{}
		}
		byShard[i][name] = sum
	}
	written := 0
	for i, entries := range byShard {
		content, err := encodePodSums(entries)
		if err != nil {
			return written, fmt.Errorf("pods summary shard %02d: %w", i, err)
		}
		if len(content) > maxPodSumBytes {
			return written, fmt.Errorf("pods summary shard %02d: %d entries take %d bytes (at most %d): %w", i, len(entries), len(content), maxPodSumBytes, ErrPodSumsFull)
		}
		old, ok := read.shards[i]
		if ok && string(old.content) == string(content) || !ok && len(entries) == 0 {
			continue
		}
		it := s.key(podSumKey(i))
		it[attrSums] = &types.AttributeValueMemberB{Value: content}
		it[attrVersion] = num(old.version + 1)
		cond, nm, vals := versionCondition(old.version)
		_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: aws.String(s.table), Item: it,
			ConditionExpression: aws.String(cond), ExpressionAttributeNames: nm, ExpressionAttributeValues: vals,
		})
		if err = wrapConditional(err, "put "+podSumKey(i)); errors.Is(err, ErrConflict) {
			continue
		}
		if err != nil {
			return written, err
		}
		written++
	}
	// Shards past PodSumShards (a summary written with more of them): their
	// entries are in the shards above now.
	for _, i := range slices.Sorted(maps.Keys(read.shards)) {
		if i < PodSumShards {
			continue
		}
		if err := s.deleteVersioned(ctx, podSumKey(i), read.shards[i].version); err != nil && !errors.Is(err, ErrConflict) {
			return written, err
		}
	}
	return written, nil
}

// encodePodSums encodes entries, sorted by name: the format's byte, then
// per entry the length of the prefix it shares with the previous name
// (uvarint), the length of the rest (uvarint) and the rest, the hash's 8
// bytes and the change time in Unix milliseconds (uvarint), rounded up so
// that a timer read back never starts earlier than it was stamped.
func encodePodSums(entries map[string]PodSum) ([]byte, error) {
	out := make([]byte, 1, 1+len(entries)*24)
	out[0] = podSumFormat
	prev := ""
	for _, name := range slices.Sorted(maps.Keys(entries)) {
		sum := entries[name]
		h, err := hex.DecodeString(sum.Hash)
		if err != nil || len(h) != podSumHashLen {
			return nil, fmt.Errorf("pods hash %q of %s is not %d hex digits", sum.Hash, name, 2*podSumHashLen)
		}
		shared := 0
		for shared < len(prev) && shared < len(name) && prev[shared] == name[shared] {
			shared++
		}
		out = binary.AppendUvarint(out, uint64(shared))
		out = binary.AppendUvarint(out, uint64(len(name)-shared))
		out = append(out, name[shared:]...)
		out = append(out, h...)
		out = binary.AppendUvarint(out, uint64(ceilMillis(sum.ChangedAt)))
		prev = name
	}
	return out, nil
}

// ceilMillis is t in Unix milliseconds, rounded up (0 for the zero time).
func ceilMillis(t time.Time) int64 {
	if t.IsZero() || t.UnixMilli() < 0 {
		return 0
	}
	ms := t.UnixMilli()
	if t.Sub(time.UnixMilli(ms)) > 0 {
		ms++
	}
	return ms
}

// decodePodSums adds the entries encoded in b to into.
func decodePodSums(b []byte, into map[string]PodSum) error {
	if len(b) == 0 || b[0] != podSumFormat {
		return errors.New("unknown encoding")
	}
	b = b[1:]
	prev := ""
	next := func() (uint64, error) {
		v, n := binary.Uvarint(b)
		if n <= 0 {
			return 0, errors.New("truncated")
		}
		b = b[n:]
		return v, nil
	}
	for len(b) > 0 {
		shared, err := next()
		if err != nil {
			return err
		}
		rest, err := next()
		if err != nil {
			return err
		}
		if shared > uint64(len(prev)) || rest > uint64(len(b)) {
			return errors.New("truncated")
		}
		name := prev[:shared] + string(b[:rest])
		b = b[rest:]
		if len(b) < podSumHashLen {
			return errors.New("truncated")
		}
		h := hex.EncodeToString(b[:podSumHashLen])
		b = b[podSumHashLen:]
		ms, err := next()
		if err != nil {
			return err
		}
		var at time.Time
		if ms > 0 {
			at = time.UnixMilli(int64(ms)).UTC()
		}
		into[name] = PodSum{Hash: h, ChangedAt: at}
		prev = name
	}
	return nil
}
