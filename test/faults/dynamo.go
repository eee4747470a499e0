package faults

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/nodewright/nodewright/shared/names"
	"github.com/nodewright/nodewright/shared/state"
)

// Dynamo is the state table in memory, at the SDK interface the store
// calls (state.DynamoDB): conditions and updates are evaluated as DynamoDB
// does (expr.go), TransactWriteItems is all or nothing and cancels with a
// reason per item, and every call goes through the suite's hook.
type Dynamo struct {
	w     *World
	items map[string]item
	// onWrite sees every item written (nil: deleted), for the invariants.
	onWrite func(key string, before, after item)
}

var _ state.DynamoDB = (*Dynamo)(nil)

func newDynamo(w *World) *Dynamo { return &Dynamo{w: w, items: map[string]item{}} }

func dkey(k item) (string, error) {
	pk, ok1 := k[names.PartitionKey].(*types.AttributeValueMemberS)
	sk, ok2 := k[names.SortKey].(*types.AttributeValueMemberS)
	if !ok1 || !ok2 {
		return "", validation("the provided key element does not match the schema")
	}
	return pk.Value + "\x00" + sk.Value, nil
}

func clone(it item) item {
	if it == nil {
		return nil
	}
	out := make(item, len(it))
	for k, v := range it {
		out[k] = v
	}
	return out
}

func (d *Dynamo) set(key string, it item) {
	before := d.items[key]
	if it == nil {
		if before == nil {
			return
		}
		delete(d.items, key)
	} else {
		d.items[key] = clone(it)
	}
	// Leases, messages, decisions and caches change at every invocation:
	// only what the flows act on counts as a change.
	if strings.Contains(key, "\x00"+state.PrefixNodeClaim) || strings.Contains(key, "\x00"+state.PrefixAction) || strings.Contains(key, "\x00"+state.PrefixPool) {
		d.w.changed = true
	}
	if d.onWrite != nil {
		d.onWrite(key, before, it)
	}
}

var (
	dynamoThrottled  = fault{name: "ThrottlingException", err: &types.ProvisionedThroughputExceededException{Message: aws.String("Throughput exceeds the current capacity of your table or index.")}}
	dynamoAmbiguous  = fault{name: "InternalServerError after effect", after: true, err: &types.InternalServerError{Message: aws.String("Internal server error")}}
	dynamoTxConflict = fault{name: "TransactionConflict", err: &types.TransactionCanceledException{
		Message:             aws.String("Transaction cancelled, please refer cancellation reasons for specific reasons [TransactionConflict]"),
		CancellationReasons: []types.CancellationReason{{Code: aws.String("TransactionConflict"), Message: aws.String("Transaction is ongoing for the item")}},
	}}
)

func (d *Dynamo) ccf() error {
	d.w.sim.conditionFailures++
	return &types.ConditionalCheckFailedException{Message: aws.String("The conditional request failed")}
}

func (d *Dynamo) GetItem(ctx context.Context, in *dynamodb.GetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error) {
	var out *dynamodb.GetItemOutput
	err := d.w.call(ctx, "DynamoDB", "GetItem", []fault{dynamoThrottled}, func() error {
		k, err := dkey(in.Key)
		if err != nil {
			return err
		}
		out = &dynamodb.GetItemOutput{Item: clone(d.items[k])}
		return nil
	})
	return out, err
}

func (d *Dynamo) PutItem(ctx context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	err := d.w.call(ctx, "DynamoDB", "PutItem", []fault{dynamoThrottled, dynamoAmbiguous}, func() error {
		k, err := dkey(in.Item)
		if err != nil {
			return err
		}
		ok, err := evalCondition(aws.ToString(in.ConditionExpression), exprEnv{in.ExpressionAttributeNames, in.ExpressionAttributeValues}, d.items[k])
		if err != nil {
			return err
		}
		if !ok {
			return d.ccf()
		}
		d.set(k, in.Item)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &dynamodb.PutItemOutput{}, nil
}

// update applies an UpdateItem-shaped write to the item at k and returns
// it before and after.
func (d *Dynamo) update(key item, cond, upd string, env exprEnv) (before, after item, err error) {
	k, err := dkey(key)
	if err != nil {
		return nil, nil, err
	}
	before = d.items[k]
	ok, err := evalCondition(cond, env, before)
	if err != nil {
		return nil, nil, err
	}
	if !ok {
		return before, nil, d.ccf()
	}
	base := before
	if base == nil {
		base = clone(key)
	}
	after, err = applyUpdate(upd, env, base)
	if err != nil {
		return nil, nil, err
	}
	d.set(k, after)
	return before, after, nil
}

func (d *Dynamo) UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	var out *dynamodb.UpdateItemOutput
	err := d.w.call(ctx, "DynamoDB", "UpdateItem", []fault{dynamoThrottled, dynamoAmbiguous}, func() error {
		before, after, err := d.update(in.Key, aws.ToString(in.ConditionExpression), aws.ToString(in.UpdateExpression),
			exprEnv{in.ExpressionAttributeNames, in.ExpressionAttributeValues})
		if err != nil {
			return err
		}
		out = &dynamodb.UpdateItemOutput{}
		switch in.ReturnValues {
		case types.ReturnValueAllNew:
			out.Attributes = clone(after)
		case types.ReturnValueAllOld:
			out.Attributes = clone(before)
		case types.ReturnValueNone, "":
		default:
			return validation("ReturnValues %s is not in the fake's subset", in.ReturnValues)
		}
		return nil
	})
	return out, err
}

func (d *Dynamo) DeleteItem(ctx context.Context, in *dynamodb.DeleteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.DeleteItemOutput, error) {
	err := d.w.call(ctx, "DynamoDB", "DeleteItem", []fault{dynamoThrottled, dynamoAmbiguous}, func() error {
		k, err := dkey(in.Key)
		if err != nil {
			return err
		}
		ok, err := evalCondition(aws.ToString(in.ConditionExpression), exprEnv{in.ExpressionAttributeNames, in.ExpressionAttributeValues}, d.items[k])
		if err != nil {
			return err
		}
		if !ok {
			return d.ccf()
		}
		d.set(k, nil)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &dynamodb.DeleteItemOutput{}, nil
}

// Query answers the two key conditions the store uses: a partition and a
// sort-key prefix, and the byInstanceId index's instance.
func (d *Dynamo) Query(ctx context.Context, in *dynamodb.QueryInput, _ ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	var out *dynamodb.QueryOutput
	err := d.w.call(ctx, "DynamoDB", "Query", []fault{dynamoThrottled}, func() error {
		env := exprEnv{in.ExpressionAttributeNames, in.ExpressionAttributeValues}
		keyAttrs := []string{names.PartitionKey, names.SortKey}
		if idx := aws.ToString(in.IndexName); idx != "" {
			if idx != names.IndexByInstanceID {
				return validation("the table has no index %s", idx)
			}
			keyAttrs = []string{names.InstanceIDAttribute}
		}
		var found []item
		for _, it := range d.items {
			skip := false
			for _, a := range keyAttrs[:1] {
				if _, ok := it[a]; !ok {
					skip = true
				}
			}
			if skip {
				continue
			}
			ok, err := evalCondition(aws.ToString(in.KeyConditionExpression), env, it)
			if err != nil {
				return err
			}
			if ok {
				found = append(found, clone(it))
			}
		}
		sort.Slice(found, func(i, j int) bool {
			ki, _ := dkey(found[i])
			kj, _ := dkey(found[j])
			return ki < kj
		})
		out = &dynamodb.QueryOutput{Items: found, Count: int32(len(found))}
		return nil
	})
	return out, err
}

// TransactWriteItems checks every item's condition first and writes all
// or nothing; two operations on one item are a ValidationException, as in
// DynamoDB.
func (d *Dynamo) TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, _ ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error) {
	err := d.w.call(ctx, "DynamoDB", "TransactWriteItems", []fault{dynamoThrottled, dynamoTxConflict, dynamoAmbiguous}, func() error {
		if len(in.TransactItems) > 100 {
			return validation("at most 100 items in a transaction")
		}
		if err := d.lateChange(in.TransactItems); err != nil {
			return err
		}
		type op struct {
			key        string
			keyItem    item
			cond, upd  string
			env        exprEnv
			put        item
			del, check bool
		}
		ops := make([]op, 0, len(in.TransactItems))
		seen := map[string]bool{}
		for _, ti := range in.TransactItems {
			var o op
			switch {
			case ti.Put != nil:
				o = op{keyItem: ti.Put.Item, cond: aws.ToString(ti.Put.ConditionExpression), env: exprEnv{ti.Put.ExpressionAttributeNames, ti.Put.ExpressionAttributeValues}, put: ti.Put.Item}
			case ti.Update != nil:
				o = op{keyItem: ti.Update.Key, cond: aws.ToString(ti.Update.ConditionExpression), upd: aws.ToString(ti.Update.UpdateExpression), env: exprEnv{ti.Update.ExpressionAttributeNames, ti.Update.ExpressionAttributeValues}}
			case ti.Delete != nil:
				o = op{keyItem: ti.Delete.Key, cond: aws.ToString(ti.Delete.ConditionExpression), env: exprEnv{ti.Delete.ExpressionAttributeNames, ti.Delete.ExpressionAttributeValues}, del: true}
			case ti.ConditionCheck != nil:
				o = op{keyItem: ti.ConditionCheck.Key, cond: aws.ToString(ti.ConditionCheck.ConditionExpression), env: exprEnv{ti.ConditionCheck.ExpressionAttributeNames, ti.ConditionCheck.ExpressionAttributeValues}, check: true}
			default:
				return validation("empty transaction item")
			}
			k, err := dkey(o.keyItem)
			if err != nil {
				return err
			}
			if seen[k] {
				return validation("Transaction request cannot include multiple operations on one item")
			}
			seen[k] = true
			o.key = k
			ops = append(ops, o)
		}
		reasons := make([]types.CancellationReason, len(ops))
		failed := []string{}
		for i, o := range ops {
			ok, err := evalCondition(o.cond, o.env, d.items[o.key])
			if err != nil {
				return err
			}
			reasons[i] = types.CancellationReason{Code: aws.String("None")}
			if !ok {
				reasons[i] = types.CancellationReason{Code: aws.String("ConditionalCheckFailed"), Message: aws.String("The conditional request failed")}
				failed = append(failed, "ConditionalCheckFailed")
			} else {
				failed = append(failed, "None")
			}
		}
		for _, r := range reasons {
			if aws.ToString(r.Code) != "None" {
				d.w.sim.conditionFailures++
				return &types.TransactionCanceledException{
					Message:             aws.String("Transaction cancelled, please refer cancellation reasons for specific reasons [" + strings.Join(failed, ", ") + "]"),
					CancellationReasons: reasons,
				}
			}
		}
		// Compute every result before writing any, so that a bad update
		// expression writes nothing.
		results := make([]item, len(ops))
		for i, o := range ops {
			switch {
			case o.put != nil:
				results[i] = o.put
			case o.upd != "":
				base := d.items[o.key]
				if base == nil {
					base = clone(o.keyItem)
				}
				after, err := applyUpdate(o.upd, o.env, base)
				if err != nil {
					return err
				}
				results[i] = after
			}
		}
		for i, o := range ops {
			switch {
			case o.check:
			case o.del:
				d.set(o.key, nil)
			default:
				d.set(o.key, results[i])
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &dynamodb.TransactWriteItemsOutput{}, nil
}

// BatchGetItem reads each key (at most 100), as consistently as GetItem;
// a throttled call reads none.
func (d *Dynamo) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	var out *dynamodb.BatchGetItemOutput
	err := d.w.call(ctx, "DynamoDB", "BatchGetItem", []fault{dynamoThrottled}, func() error {
		out = &dynamodb.BatchGetItemOutput{Responses: map[string][]item{}}
		for tbl, ka := range in.RequestItems {
			if len(ka.Keys) > 100 {
				return validation("Too many items requested for the BatchGetItem call")
			}
			for _, key := range ka.Keys {
				k, err := dkey(key)
				if err != nil {
					return err
				}
				if it := d.items[k]; it != nil {
					out.Responses[tbl] = append(out.Responses[tbl], clone(it))
				}
			}
		}
		return nil
	})
	return out, err
}

// lateChange is the error a record write whose change item was stamped
// more than state.ChangeCommitTimeout ago gets, before any effect: the
// store's context deadline, which the suite's virtual clock cannot fire,
// would have ended the call by then (a request built then never commits
// later, which the change log's readers rely on).
func (d *Dynamo) lateChange(items []types.TransactWriteItem) error {
	for _, ti := range items {
		if ti.Put == nil {
			continue
		}
		sk, _ := ti.Put.Item[names.SortKey].(*types.AttributeValueMemberS)
		if sk == nil || !strings.HasPrefix(sk.Value, state.PrefixChange) {
			continue
		}
		ms, err := strconv.ParseInt(strings.SplitN(strings.TrimPrefix(sk.Value, state.PrefixChange), "#", 2)[0], 10, 64)
		if err != nil {
			return validation("change item %s has no stamp", sk.Value)
		}
		if d.w.clock.Since(time.UnixMilli(ms)) > state.ChangeCommitTimeout {
			return fmt.Errorf("operation error DynamoDB: TransactWriteItems, %w", context.DeadlineExceeded)
		}
	}
	return nil
}

func (d *Dynamo) BatchWriteItem(ctx context.Context, in *dynamodb.BatchWriteItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.BatchWriteItemOutput, error) {
	err := d.w.call(ctx, "DynamoDB", "BatchWriteItem", []fault{dynamoThrottled, dynamoAmbiguous}, func() error {
		for _, reqs := range in.RequestItems {
			if len(reqs) > 25 {
				return validation("at most 25 requests in a batch")
			}
			for _, r := range reqs {
				switch {
				case r.PutRequest != nil:
					k, err := dkey(r.PutRequest.Item)
					if err != nil {
						return err
					}
					d.set(k, r.PutRequest.Item)
				case r.DeleteRequest != nil:
					k, err := dkey(r.DeleteRequest.Key)
					if err != nil {
						return err
					}
					d.set(k, nil)
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &dynamodb.BatchWriteItemOutput{}, nil
}
