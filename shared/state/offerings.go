package state

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/nodewright/nodewright/shared/names"
)

// UnavailableTTL is how long an offering EC2 refused for capacity stays
// out of solves (Karpenter's unavailable-offerings cache uses 3 minutes).
const UnavailableTTL = 3 * time.Minute

// Offering is an (instance type, zone, capacity type) EC2 refused, and
// until when it is skipped.
type Offering struct {
	InstanceType string    `json:"instanceType"`
	Zone         string    `json:"zone"`
	CapacityType string    `json:"capacityType"`
	Code         string    `json:"code,omitempty"`
	Until        time.Time `json:"until"`
}

func (o Offering) key() string { return Key(PrefixUnavailable, o.InstanceType, o.Zone, o.CapacityType) }

// MarkUnavailable records offerings as refused until now+ttl (a later mark
// extends an earlier one).
func (s *Store) MarkUnavailable(ctx context.Context, offs []Offering, ttl time.Duration) error {
	until := s.now().Add(ttl)
	seen := map[string]bool{}
	var reqs []types.WriteRequest
	for _, o := range offs {
		o.Until = until
		k := o.key()
		if seen[k] {
			continue
		}
		seen[k] = true
		it, err := s.base(k, o, 1)
		if err != nil {
			return err
		}
		it[attrUntil] = num(s.millis(until))
		it[names.TTLAttribute] = expiry(until)
		reqs = append(reqs, types.WriteRequest{PutRequest: &types.PutRequest{Item: it}})
	}
	return s.batchWrite(ctx, "mark unavailable offerings", reqs)
}

// batchWrite writes requests 25 at a time, retrying what DynamoDB leaves
// unprocessed.
func (s *Store) batchWrite(ctx context.Context, what string, reqs []types.WriteRequest) error {
	for len(reqs) > 0 {
		n := min(25, len(reqs))
		pending := map[string][]types.WriteRequest{s.table: reqs[:n]}
		reqs = reqs[n:]
		for attempt := 0; len(pending[s.table]) > 0; attempt++ {
			if attempt == 8 {
				return fmt.Errorf("%s: %d writes left unprocessed", what, len(pending[s.table]))
			}
			if attempt > 0 {
				if err := sleep(ctx, time.Duration(25<<attempt)*time.Millisecond); err != nil {
					return err
				}
			}
			out, err := s.db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: pending})
			if err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
			pending = out.UnprocessedItems
		}
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// Unavailable returns the offerings refused and not yet expired, sorted.
func (s *Store) Unavailable(ctx context.Context) ([]Offering, error) {
	items, err := s.query(ctx, s.cluster, PrefixUnavailable)
	if err != nil {
		return nil, err
	}
	now := s.now()
	var out []Offering
	for _, it := range items {
		var o Offering
		if err := decode(it, &o); err != nil {
			return nil, err
		}
		if o.Until.After(now) {
			out = append(out, o)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key() < out[j].key() })
	return out, nil
}

// UnavailableSet is a lookup of refused offerings for a solve.
type UnavailableSet map[string]bool

// NewUnavailableSet indexes offs.
func NewUnavailableSet(offs []Offering) UnavailableSet {
	set := UnavailableSet{}
	for _, o := range offs {
		set[o.key()] = true
	}
	return set
}

// Has reports whether (type, zone, capacity type) is refused; it has the
// signature of scheduling.Input.Unavailable.
func (u UnavailableSet) Has(instanceType, zone, capacityType string) bool {
	return u[Key(PrefixUnavailable, instanceType, zone, capacityType)]
}

// String lists the set, for logs.
func (u UnavailableSet) String() string {
	keys := make([]string, 0, len(u))
	for k := range u {
		keys = append(keys, strings.TrimPrefix(k, PrefixUnavailable))
	}
	sort.Strings(keys)
	return strings.Join(keys, ",")
}
