package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/nodewright/nodewright/shared/names"
)

// DynamoDB is the part of the DynamoDB API the store calls.
type DynamoDB interface {
	GetItem(context.Context, *dynamodb.GetItemInput, ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	PutItem(context.Context, *dynamodb.PutItemInput, ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(context.Context, *dynamodb.UpdateItemInput, ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	DeleteItem(context.Context, *dynamodb.DeleteItemInput, ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error)
	Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	TransactWriteItems(context.Context, *dynamodb.TransactWriteItemsInput, ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
	BatchWriteItem(context.Context, *dynamodb.BatchWriteItemInput, ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error)
	BatchGetItem(context.Context, *dynamodb.BatchGetItemInput, ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
}

// Errors callers branch on.
var (
	// ErrConflict means a conditional write failed: another invocation
	// changed the item (or created it) since it was read. Read again and
	// decide again.
	ErrConflict = errors.New("state: conflicting write")
	// ErrNotFound means the item does not exist.
	ErrNotFound = errors.New("state: not found")
	// ErrHeld means another invocation holds the lease; it has been asked
	// to run again before it releases it.
	ErrHeld = errors.New("state: lease held by another invocation")
	// ErrLeaseLost means the caller's lease expired or was taken over: it
	// must stop acting on capacity.
	ErrLeaseLost = errors.New("state: lease lost")
)

// Store reads and writes one cluster's state. It keeps the NodeClaim
// records it last read (NodeClaims): one Store per Lambda container, safe
// for concurrent use.
type Store struct {
	db      DynamoDB
	table   string
	cluster string
	now     func() time.Time
	cache   recordCache
}

// New returns a Store for cluster's items in table. now is the clock every
// expiry is checked against (time.Now in the functions).
func New(db DynamoDB, table, cluster string, now func() time.Time) (*Store, error) {
	if db == nil || table == "" || cluster == "" {
		return nil, errors.New("state: a DynamoDB client, a table and a cluster are required")
	}
	if now == nil {
		now = time.Now
	}
	return &Store{db: db, table: table, cluster: cluster, now: now}, nil
}

// Cluster is the cluster whose state this is.
func (s *Store) Cluster() string { return s.cluster }

// Now is the store's clock.
func (s *Store) Now() time.Time { return s.now() }

// Attribute names beyond the table's keys and indexes.
const (
	attrVersion = "v"    // number: optimistic concurrency
	attrData    = "data" // string: the item's JSON
	attrHolder  = "holder"
	attrToken   = "token"
	attrUntil   = "until" // number: Unix milliseconds
	attrRerun   = "rerun"
	attrAsks    = "asks"
	attrState   = "state"
)

type item = map[string]types.AttributeValue

func str(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func num(v int64) types.AttributeValue {
	return &types.AttributeValueMemberN{Value: strconv.FormatInt(v, 10)}
}
func boolean(v bool) types.AttributeValue { return &types.AttributeValueMemberBOOL{Value: v} }

func getStr(it item, k string) string {
	if v, ok := it[k].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func getNum(it item, k string) int64 {
	if v, ok := it[k].(*types.AttributeValueMemberN); ok {
		n, _ := strconv.ParseInt(v.Value, 10, 64)
		return n
	}
	return 0
}

func getBool(it item, k string) bool {
	if v, ok := it[k].(*types.AttributeValueMemberBOOL); ok {
		return v.Value
	}
	return false
}

// key is the primary key of the cluster partition's item sk.
func (s *Store) key(sk string) item {
	return item{names.PartitionKey: str(s.cluster), names.SortKey: str(sk)}
}

// base is a new item of the cluster partition with its JSON body and
// version.
func (s *Store) base(sk string, v any, version int64) (item, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", sk, err)
	}
	it := s.key(sk)
	it[attrData] = str(string(b))
	it[attrVersion] = num(version)
	return it, nil
}

func decode(it item, v any) error {
	data := getStr(it, attrData)
	if data == "" {
		return fmt.Errorf("item %s has no data", getStr(it, names.SortKey))
	}
	if err := json.Unmarshal([]byte(data), v); err != nil {
		return fmt.Errorf("decode item %s: %w", getStr(it, names.SortKey), err)
	}
	return nil
}

// expiry returns the TTL attribute for t (Unix seconds), which DynamoDB
// uses to delete the item eventually.
func expiry(t time.Time) types.AttributeValue { return num(t.Unix()) }

// query returns every item of partition pk whose sort key begins with
// prefix, page by page (strongly consistent).
func (s *Store) query(ctx context.Context, pk, prefix string) ([]item, error) {
	in := &dynamodb.QueryInput{
		TableName:              aws.String(s.table),
		KeyConditionExpression: aws.String("#pk = :pk AND begins_with(#sk, :prefix)"),
		ExpressionAttributeNames: map[string]string{
			"#pk": names.PartitionKey, "#sk": names.SortKey,
		},
		ExpressionAttributeValues: item{":pk": str(pk), ":prefix": str(prefix)},
		ConsistentRead:            aws.Bool(true),
	}
	var out []item
	for {
		page, err := s.db.Query(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("query %s*: %w", prefix, err)
		}
		out = append(out, page.Items...)
		if len(page.LastEvaluatedKey) == 0 {
			return out, nil
		}
		in.ExclusiveStartKey = page.LastEvaluatedKey
	}
}

// get reads one item of the cluster partition (strongly consistent).
func (s *Store) get(ctx context.Context, sk string) (item, error) {
	out, err := s.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: s.key(sk), ConsistentRead: aws.Bool(true)})
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", sk, err)
	}
	if len(out.Item) == 0 {
		return nil, ErrNotFound
	}
	return out.Item, nil
}

// putVersioned writes it if the stored item has version expect (0: the
// item must not exist), giving it version expect+1.
func (s *Store) putVersioned(ctx context.Context, sk string, v any, expect int64, extra item) (int64, error) {
	it, err := s.base(sk, v, expect+1)
	if err != nil {
		return 0, err
	}
	for k, av := range extra {
		it[k] = av
	}
	cond, names, values := versionCondition(expect)
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.table), Item: it,
		ConditionExpression: aws.String(cond), ExpressionAttributeNames: names, ExpressionAttributeValues: values,
	})
	if err != nil {
		return 0, wrapConditional(err, "put "+sk)
	}
	return expect + 1, nil
}

// deleteVersioned deletes sk if it still has version expect.
func (s *Store) deleteVersioned(ctx context.Context, sk string, expect int64) error {
	cond, names, values := versionCondition(expect)
	_, err := s.db.DeleteItem(ctx, &dynamodb.DeleteItemInput{
		TableName: aws.String(s.table), Key: s.key(sk),
		ConditionExpression: aws.String(cond), ExpressionAttributeNames: names, ExpressionAttributeValues: values,
	})
	return wrapConditional(err, "delete "+sk)
}

// versionCondition is the condition "the item has version expect" (0: the
// item does not exist).
func versionCondition(expect int64) (string, map[string]string, item) {
	if expect == 0 {
		return "attribute_not_exists(#pk)", map[string]string{"#pk": names.PartitionKey}, nil
	}
	return "#v = :v", map[string]string{"#v": attrVersion}, item{":v": num(expect)}
}

// wrapConditional turns a failed condition into ErrConflict and wraps any
// other error with what was being done.
func wrapConditional(err error, what string) error {
	if err == nil {
		return nil
	}
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return fmt.Errorf("%s: %w", what, ErrConflict)
	}
	var tce *types.TransactionCanceledException
	if errors.As(err, &tce) {
		for _, r := range tce.CancellationReasons {
			if aws.ToString(r.Code) == "ConditionalCheckFailed" {
				return fmt.Errorf("%s: %w", what, ErrConflict)
			}
		}
	}
	return fmt.Errorf("%s: %w", what, err)
}

// transact writes items atomically (at most 100 per call, and 4 MB).
func (s *Store) transact(ctx context.Context, what string, items []types.TransactWriteItem) error {
	if len(items) == 0 {
		return nil
	}
	if len(items) > maxTransactItems {
		return fmt.Errorf("%s: %d items in one transaction (at most %d)", what, len(items), maxTransactItems)
	}
	size := 0
	for _, w := range items {
		size += writeSize(w)
	}
	if size > maxTransactBytes {
		return fmt.Errorf("%s: %d bytes in one transaction (at most %d)", what, size, maxTransactBytes)
	}
	_, err := s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	return wrapConditional(err, what)
}

// maxTransactItems is DynamoDB's limit of items per transaction.
const maxTransactItems = 100

// maxTransactBytes keeps a transaction under DynamoDB's 4 MB (its items'
// aggregate size), with room for what writeSize does not count
// (expressions, per-attribute overhead).
const maxTransactBytes = 4_000_000 - 96<<10

// writeSize approximates a transaction item's size as DynamoDB counts it:
// its item's (or key's) attribute names and values, and the expression
// values.
func writeSize(w types.TransactWriteItem) int {
	switch {
	case w.Put != nil:
		return itemSize(w.Put.Item) + itemSize(w.Put.ExpressionAttributeValues)
	case w.Update != nil:
		return itemSize(w.Update.Key) + itemSize(w.Update.ExpressionAttributeValues)
	case w.Delete != nil:
		return itemSize(w.Delete.Key) + itemSize(w.Delete.ExpressionAttributeValues)
	case w.ConditionCheck != nil:
		return itemSize(w.ConditionCheck.Key) + itemSize(w.ConditionCheck.ExpressionAttributeValues)
	}
	return 0
}

// itemSize is the size of an item's names and values (strings and numbers
// by their length, sets by their members', others a byte).
func itemSize(it item) int {
	n := 0
	for k, v := range it {
		n += len(k)
		switch av := v.(type) {
		case *types.AttributeValueMemberS:
			n += len(av.Value)
		case *types.AttributeValueMemberN:
			n += len(av.Value)
		case *types.AttributeValueMemberB:
			n += len(av.Value)
		case *types.AttributeValueMemberSS:
			for _, s := range av.Value {
				n += len(s)
			}
		default:
			n++
		}
	}
	return n
}

func (s *Store) putItem(it item, cond string, names map[string]string, values item) types.TransactWriteItem {
	p := &types.Put{TableName: aws.String(s.table), Item: it}
	if cond != "" {
		p.ConditionExpression, p.ExpressionAttributeNames, p.ExpressionAttributeValues = aws.String(cond), names, values
	}
	return types.TransactWriteItem{Put: p}
}

func (s *Store) millis(t time.Time) int64 { return t.UnixMilli() }
