// Package statetest is an in-memory stand-in for the state table, for unit
// tests of one package that drive a state.Store without the local cloud.
// It keeps items by key and answers the reads the store makes; by default it
// does not evaluate condition expressions (every conditional write
// succeeds) nor update expressions (an update leaves the item as it is): the
// store's conditions, leases and fencing are proven against the local
// cloud's DynamoDB (test/state), not here. NewChecked's table evaluates the
// version conditions (attribute_not_exists(#a), #a = :v, joined by AND) and
// applies SET #a = :v updates of transactions and updates, so tests of two
// launchers racing see the conditional write that loses; other clauses,
// and a transaction's condition checks (a lease's fence), pass.
package statetest

import (
	"context"
	"sort"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/nodewright/nodewright/shared/names"
)

type item = map[string]types.AttributeValue

// DB is an in-memory table (implements state.DynamoDB). Safe for
// concurrent use.
type DB struct {
	mu    sync.Mutex
	items map[string]item
	// Calls counts calls by operation ("GetItem", "PutItem", ...).
	calls map[string]int
	// checked: conditions and simple updates are evaluated.
	checked bool
	// units are the capacity units consumed (meter.go).
	units Units
}

// New returns an empty table.
func New() *DB { return &DB{items: map[string]item{}, calls: map[string]int{}} }

// NewChecked returns an empty table that evaluates version conditions
// (see the package doc).
func NewChecked() *DB {
	d := New()
	d.checked = true
	return d
}

// Calls returns how many times op was called.
func (d *DB) Calls(op string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.calls[op]
}

// Keys returns the sort keys stored under partition pk that begin with
// prefix, sorted.
func (d *DB) Keys(pk, prefix string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for _, it := range d.items {
		if s(it, names.PartitionKey) == pk && strings.HasPrefix(s(it, names.SortKey), prefix) {
			out = append(out, s(it, names.SortKey))
		}
	}
	sort.Strings(out)
	return out
}

func s(it item, k string) string {
	if v, ok := it[k].(*types.AttributeValueMemberS); ok {
		return v.Value
	}
	return ""
}

func keyOf(it item) string { return s(it, names.PartitionKey) + "\x00" + s(it, names.SortKey) }

func (d *DB) count(op string) {
	d.mu.Lock()
	d.calls[op]++
	d.mu.Unlock()
}

func clone(it item) item {
	out := make(item, len(it))
	for k, v := range it {
		out[k] = v
	}
	return out
}

// GetItem implements state.DynamoDB.
func (d *DB) GetItem(_ context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	d.count("GetItem")
	d.mu.Lock()
	defer d.mu.Unlock()
	it, ok := d.items[keyOf(in.Key)]
	d.units.read(it)
	if !ok {
		return &dynamodb.GetItemOutput{}, nil
	}
	return &dynamodb.GetItemOutput{Item: clone(it)}, nil
}

// PutItem implements state.DynamoDB.
func (d *DB) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	d.count("PutItem")
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.holds(d.items[keyOf(in.Item)], in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues) {
		return nil, &types.ConditionalCheckFailedException{Message: aws.String("The conditional request failed")}
	}
	d.units.wrote(1, d.items[keyOf(in.Item)], in.Item)
	d.items[keyOf(in.Item)] = clone(in.Item)
	return &dynamodb.PutItemOutput{}, nil
}

// UpdateItem implements state.DynamoDB: the item is created with its key
// if missing and otherwise left as it is.
func (d *DB) UpdateItem(_ context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	d.count("UpdateItem")
	d.mu.Lock()
	defer d.mu.Unlock()
	k := keyOf(in.Key)
	if !d.holds(d.items[k], in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues) {
		return nil, &types.ConditionalCheckFailedException{Message: aws.String("The conditional request failed")}
	}
	before := clone(d.items[k])
	if _, ok := d.items[k]; !ok {
		d.items[k] = clone(in.Key)
	}
	d.set(d.items[k], in.UpdateExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues)
	d.units.wrote(1, before, d.items[k])
	return &dynamodb.UpdateItemOutput{Attributes: clone(d.items[k])}, nil
}

// DeleteItem implements state.DynamoDB.
func (d *DB) DeleteItem(_ context.Context, in *dynamodb.DeleteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	d.count("DeleteItem")
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.holds(d.items[keyOf(in.Key)], in.ConditionExpression, in.ExpressionAttributeNames, in.ExpressionAttributeValues) {
		return nil, &types.ConditionalCheckFailedException{Message: aws.String("The conditional request failed")}
	}
	d.units.wrote(1, d.items[keyOf(in.Key)], nil)
	delete(d.items, keyOf(in.Key))
	return &dynamodb.DeleteItemOutput{}, nil
}

// Query implements state.DynamoDB for the store's partition queries
// (":pk" and an optional ":prefix" of the sort key, or a sort key BETWEEN
// ":from" AND ":to"), in sort-key order, one page. Index queries find
// nothing.
func (d *DB) Query(_ context.Context, in *dynamodb.QueryInput, _ ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	d.count("Query")
	if aws.ToString(in.IndexName) != "" {
		return &dynamodb.QueryOutput{}, nil
	}
	pk := s(in.ExpressionAttributeValues, ":pk")
	prefix := s(in.ExpressionAttributeValues, ":prefix")
	between := strings.Contains(aws.ToString(in.KeyConditionExpression), " BETWEEN ")
	from, to := s(in.ExpressionAttributeValues, ":from"), s(in.ExpressionAttributeValues, ":to")
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []item
	for _, it := range d.items {
		sk := s(it, names.SortKey)
		if s(it, names.PartitionKey) != pk {
			continue
		}
		if between && (sk < from || sk > to) || !between && !strings.HasPrefix(sk, prefix) {
			continue
		}
		out = append(out, clone(it))
	}
	sort.Slice(out, func(i, j int) bool { return s(out[i], names.SortKey) < s(out[j], names.SortKey) })
	d.units.queried(out)
	return &dynamodb.QueryOutput{Items: out, Count: int32(len(out))}, nil
}

// BatchGetItem implements state.DynamoDB: every key is answered (none is
// left unprocessed).
func (d *DB) BatchGetItem(_ context.Context, in *dynamodb.BatchGetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	d.count("BatchGetItem")
	d.mu.Lock()
	defer d.mu.Unlock()
	out := &dynamodb.BatchGetItemOutput{Responses: map[string][]item{}}
	for table, ka := range in.RequestItems {
		for _, k := range ka.Keys {
			it, ok := d.items[keyOf(k)]
			d.units.read(it)
			if ok {
				out.Responses[table] = append(out.Responses[table], clone(it))
			}
		}
	}
	return out, nil
}

// TransactWriteItems implements state.DynamoDB: puts and deletes are
// applied, updates create a missing item, condition checks pass.
func (d *DB) TransactWriteItems(_ context.Context, in *dynamodb.TransactWriteItemsInput, _ ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	d.count("TransactWriteItems")
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.checked {
		reasons := make([]types.CancellationReason, len(in.TransactItems))
		failed := false
		for i, w := range in.TransactItems {
			ok := true
			switch {
			case w.Put != nil:
				ok = d.holds(d.items[keyOf(w.Put.Item)], w.Put.ConditionExpression, w.Put.ExpressionAttributeNames, w.Put.ExpressionAttributeValues)
			case w.Delete != nil:
				ok = d.holds(d.items[keyOf(w.Delete.Key)], w.Delete.ConditionExpression, w.Delete.ExpressionAttributeNames, w.Delete.ExpressionAttributeValues)
			case w.Update != nil:
				ok = d.holds(d.items[keyOf(w.Update.Key)], w.Update.ConditionExpression, w.Update.ExpressionAttributeNames, w.Update.ExpressionAttributeValues)
			}
			reasons[i].Code = aws.String("None")
			if !ok {
				reasons[i].Code = aws.String("ConditionalCheckFailed")
				failed = true
			}
		}
		if failed {
			return nil, &types.TransactionCanceledException{Message: aws.String("Transaction cancelled"), CancellationReasons: reasons}
		}
	}
	for _, w := range in.TransactItems {
		switch {
		case w.Put != nil:
			d.units.wrote(2, d.items[keyOf(w.Put.Item)], w.Put.Item)
			d.items[keyOf(w.Put.Item)] = clone(w.Put.Item)
		case w.Delete != nil:
			d.units.wrote(2, d.items[keyOf(w.Delete.Key)], nil)
			delete(d.items, keyOf(w.Delete.Key))
		case w.Update != nil:
			before := clone(d.items[keyOf(w.Update.Key)])
			if _, ok := d.items[keyOf(w.Update.Key)]; !ok {
				d.items[keyOf(w.Update.Key)] = clone(w.Update.Key)
			}
			d.set(d.items[keyOf(w.Update.Key)], w.Update.UpdateExpression, w.Update.ExpressionAttributeNames, w.Update.ExpressionAttributeValues)
			d.units.wrote(2, before, d.items[keyOf(w.Update.Key)])
		case w.ConditionCheck != nil:
			d.units.wrote(2, d.items[keyOf(w.ConditionCheck.Key)], nil)
		}
	}
	return &dynamodb.TransactWriteItemsOutput{}, nil
}

// BatchWriteItem implements state.DynamoDB (everything is written).
func (d *DB) BatchWriteItem(_ context.Context, in *dynamodb.BatchWriteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	d.count("BatchWriteItem")
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, reqs := range in.RequestItems {
		for _, r := range reqs {
			switch {
			case r.PutRequest != nil:
				d.units.wrote(1, d.items[keyOf(r.PutRequest.Item)], r.PutRequest.Item)
				d.items[keyOf(r.PutRequest.Item)] = clone(r.PutRequest.Item)
			case r.DeleteRequest != nil:
				d.units.wrote(1, d.items[keyOf(r.DeleteRequest.Key)], nil)
				delete(d.items, keyOf(r.DeleteRequest.Key))
			}
		}
	}
	return &dynamodb.BatchWriteItemOutput{}, nil
}

// holds evaluates a condition on the stored item (nil: none) when the table
// is checked: clauses joined by AND, each attribute_not_exists(#a),
// attribute_exists(#a) or #a = :v; any other clause holds.
func (d *DB) holds(it item, cond *string, names map[string]string, values item) bool {
	if !d.checked || aws.ToString(cond) == "" {
		return true
	}
	for _, clause := range strings.Split(aws.ToString(cond), " AND ") {
		clause = strings.TrimSpace(clause)
		if strings.Contains(clause, " OR ") {
			continue
		}
		if a, ok := strings.CutPrefix(clause, "attribute_not_exists("); ok {
			if _, present := it[names[strings.TrimSuffix(a, ")")]]; present {
				return false
			}
			continue
		}
		if a, ok := strings.CutPrefix(clause, "attribute_exists("); ok {
			if _, present := it[names[strings.TrimSuffix(a, ")")]]; !present {
				return false
			}
			continue
		}
		l, r, ok := strings.Cut(clause, " = ")
		if !ok || !strings.HasPrefix(l, "#") || !strings.HasPrefix(r, ":") {
			continue
		}
		if !equal(it[names[l]], values[r]) {
			return false
		}
	}
	return true
}

// set applies "SET #a = :v, ..." to it when the table is checked.
func (d *DB) set(it item, expr *string, names map[string]string, values item) {
	e, ok := strings.CutPrefix(aws.ToString(expr), "SET ")
	if !d.checked || !ok {
		return
	}
	for _, a := range strings.Split(e, ",") {
		l, r, ok := strings.Cut(strings.TrimSpace(a), " = ")
		if ok && strings.HasPrefix(l, "#") && strings.HasPrefix(r, ":") && values[r] != nil {
			it[names[l]] = values[r]
		}
	}
}

func equal(a, b types.AttributeValue) bool {
	switch av := a.(type) {
	case *types.AttributeValueMemberS:
		bv, ok := b.(*types.AttributeValueMemberS)
		return ok && av.Value == bv.Value
	case *types.AttributeValueMemberN:
		bv, ok := b.(*types.AttributeValueMemberN)
		return ok && av.Value == bv.Value
	}
	return false
}

// Item returns a copy of the item at (pk, sk), nil if there is none.
func (d *DB) Item(pk, sk string) map[string]types.AttributeValue {
	d.mu.Lock()
	defer d.mu.Unlock()
	it, ok := d.items[pk+"\x00"+sk]
	if !ok {
		return nil
	}
	return clone(it)
}
