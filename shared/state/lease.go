package state

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/nodewright/nodewright/shared/names"
)

// Lease names.
const (
	// LeaseProvision makes provisioning rounds single-flight per cluster.
	LeaseProvision = "provision"
	// LeaseConsolidation makes consolidation runs single-flight.
	LeaseConsolidation = "consolidation"
)

// LeaseNode returns the lease that one invocation holds while it handles
// a node's interruption or deletion.
func LeaseNode(nodeClaim string) string { return "node#" + nodeClaim }

// Lease is a held lease. Token grows by one at every acquisition, so a
// write conditioned on (holder, token, unexpired) fails for an invocation
// that lost the lease even if it later "holds" it again in its own view.
type Lease struct {
	Name   string
	Holder string
	Token  int64
	Until  time.Time
	// Asks are what invocations turned away asked the holder to do, as of
	// the last Release that returned rerun.
	Asks []string
}

// HeldError is the ErrHeld Acquire returns: who holds the lease and until
// when, unless the holder renews it. A caller that must act once the
// holder is gone (a spot drain whose holder died) waits until Until and
// tries again.
type HeldError struct {
	Name, Holder string
	Until        time.Time
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("lease %s: held by %s until %s: %v", e.Name, e.Holder, e.Until.UTC().Format(time.RFC3339Nano), ErrHeld)
}

// Unwrap makes errors.Is(err, ErrHeld) true.
func (e *HeldError) Unwrap() error { return ErrHeld }

// Acquire takes the lease for holder for ttl. If another invocation holds
// it (and it has not expired), Acquire marks it "run again" (its holder
// runs another round before it releases the lease, so the caller's trigger
// is not lost), adds asks (what the caller wanted done: "sweep") for the
// holder to do, and returns a *HeldError (errors.Is ErrHeld).
func (s *Store) Acquire(ctx context.Context, name, holder string, ttl time.Duration, asks ...string) (*Lease, error) {
	for attempt := 0; attempt < 3; attempt++ {
		now := s.now()
		until := now.Add(ttl)
		out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName:           aws.String(s.table),
			Key:                 s.key(Key(PrefixLease, name)),
			UpdateExpression:    aws.String("SET #h = :h, #u = :u, #r = :f, #t = if_not_exists(#t, :zero) + :one, #e = :e"),
			ConditionExpression: aws.String("attribute_not_exists(#h) OR #u < :now"),
			ExpressionAttributeNames: map[string]string{
				"#h": attrHolder, "#u": attrUntil, "#r": attrRerun, "#t": attrToken, "#e": names.TTLAttribute,
			},
			ExpressionAttributeValues: item{
				":h": str(holder), ":u": num(s.millis(until)), ":f": boolean(false), ":zero": num(0), ":one": num(1),
				":now": num(s.millis(now)), ":e": expiry(until.Add(24 * time.Hour)),
			},
			ReturnValues: types.ReturnValueAllNew,
		})
		if err == nil {
			return &Lease{Name: name, Holder: holder, Token: getNum(out.Attributes, attrToken), Until: until}, nil
		}
		if err = wrapConditional(err, "acquire lease "+name); !errors.Is(err, ErrConflict) {
			return nil, err
		}
		// Held: ask the holder to run again. If the lease was released or
		// expired in between, try to take it again.
		mark := &dynamodb.UpdateItemInput{
			TableName:                 aws.String(s.table),
			Key:                       s.key(Key(PrefixLease, name)),
			UpdateExpression:          aws.String("SET #r = :t"),
			ConditionExpression:       aws.String("attribute_exists(#h) AND #u >= :now"),
			ExpressionAttributeNames:  map[string]string{"#h": attrHolder, "#u": attrUntil, "#r": attrRerun},
			ExpressionAttributeValues: item{":t": boolean(true), ":now": num(s.millis(now))},
		}
		if len(asks) > 0 {
			mark.UpdateExpression = aws.String("SET #r = :t ADD #a :a")
			mark.ExpressionAttributeNames["#a"] = attrAsks
			mark.ExpressionAttributeValues[":a"] = &types.AttributeValueMemberSS{Value: asks}
		}
		mark.ReturnValues = types.ReturnValueAllNew
		marked, err := s.db.UpdateItem(ctx, mark)
		if err == nil {
			return nil, &HeldError{Name: name, Holder: getStr(marked.Attributes, attrHolder), Until: time.UnixMilli(getNum(marked.Attributes, attrUntil))}
		}
		if err = wrapConditional(err, "mark lease "+name); !errors.Is(err, ErrConflict) {
			return nil, err
		}
	}
	return nil, fmt.Errorf("lease %s: contended: %w", name, ErrHeld)
}

// Renew extends a held lease to now+ttl; ErrLeaseLost if it is no longer
// the caller's.
func (s *Store) Renew(ctx context.Context, l *Lease, ttl time.Duration) error {
	now := s.now()
	until := now.Add(ttl)
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       s.key(Key(PrefixLease, l.Name)),
		UpdateExpression:          aws.String("SET #u = :u, #e = :e"),
		ConditionExpression:       aws.String("#h = :h AND #t = :t AND #u >= :now"),
		ExpressionAttributeNames:  map[string]string{"#h": attrHolder, "#u": attrUntil, "#t": attrToken, "#e": names.TTLAttribute},
		ExpressionAttributeValues: item{":h": str(l.Holder), ":t": num(l.Token), ":u": num(s.millis(until)), ":now": num(s.millis(now)), ":e": expiry(until.Add(24 * time.Hour))},
	})
	if err = wrapConditional(err, "renew lease "+l.Name); errors.Is(err, ErrConflict) {
		return fmt.Errorf("renew lease %s: %w", l.Name, ErrLeaseLost)
	} else if err != nil {
		return err
	}
	l.Until = until
	return nil
}

// Release gives the lease up unless another invocation asked for another
// round while it was held: then it clears that request, keeps the lease
// and returns rerun true (with what the askers wanted done, such as a
// sweep, in l.Asks), and the caller runs again and calls Release again.
// ErrLeaseLost if the lease is no longer the caller's.
func (s *Store) Release(ctx context.Context, l *Lease) (rerun bool, err error) {
	l.Asks = nil
	key := s.key(Key(PrefixLease, l.Name))
	nm := map[string]string{"#h": attrHolder, "#u": attrUntil, "#t": attrToken, "#r": attrRerun, "#a": attrAsks}
	_, err = s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key,
		UpdateExpression:          aws.String("REMOVE #h, #u, #a SET #r = :f"),
		ConditionExpression:       aws.String("#h = :h AND #t = :t AND (attribute_not_exists(#r) OR #r = :f)"),
		ExpressionAttributeNames:  nm,
		ExpressionAttributeValues: item{":h": str(l.Holder), ":t": num(l.Token), ":f": boolean(false)},
	})
	if err = wrapConditional(err, "release lease "+l.Name); !errors.Is(err, ErrConflict) {
		return false, err
	}
	// Either another round was asked for, or the lease is no longer ours.
	now := s.now()
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       key,
		UpdateExpression:          aws.String("SET #r = :f REMOVE #a"),
		ConditionExpression:       aws.String("#h = :h AND #t = :t AND #r = :tr AND #u >= :now"),
		ExpressionAttributeNames:  nm,
		ExpressionAttributeValues: item{":h": str(l.Holder), ":t": num(l.Token), ":f": boolean(false), ":tr": boolean(true), ":now": num(s.millis(now))},
		ReturnValues:              types.ReturnValueAllOld,
	})
	if err = wrapConditional(err, "release lease "+l.Name); errors.Is(err, ErrConflict) {
		return false, fmt.Errorf("release lease %s: %w", l.Name, ErrLeaseLost)
	} else if err != nil {
		return false, err
	}
	if ss, ok := out.Attributes[attrAsks].(*types.AttributeValueMemberSS); ok {
		l.Asks = ss.Value
	}
	return true, nil
}

// LeaseState is what a lease item says, for status displays and tests.
type LeaseState struct {
	Holder string
	Token  int64
	Until  time.Time
	Rerun  bool
}

// ReadLease returns the lease item (ErrNotFound if never taken).
func (s *Store) ReadLease(ctx context.Context, name string) (LeaseState, error) {
	it, err := s.get(ctx, Key(PrefixLease, name))
	if err != nil {
		return LeaseState{}, err
	}
	return LeaseState{Holder: getStr(it, attrHolder), Token: getNum(it, attrToken), Until: time.UnixMilli(getNum(it, attrUntil)), Rerun: getBool(it, attrRerun)}, nil
}

// fence is the transaction condition "l is still held by its holder":
// every write that acts on capacity carries it.
func (s *Store) fence(l *Lease) types.TransactWriteItem {
	return types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{
		TableName:                 aws.String(s.table),
		Key:                       s.key(Key(PrefixLease, l.Name)),
		ConditionExpression:       aws.String("#h = :h AND #t = :t AND #u >= :now"),
		ExpressionAttributeNames:  map[string]string{"#h": attrHolder, "#t": attrToken, "#u": attrUntil},
		ExpressionAttributeValues: item{":h": str(l.Holder), ":t": num(l.Token), ":now": num(s.millis(s.now()))},
	}}
}
