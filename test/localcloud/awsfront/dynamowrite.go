package awsfront

// The metering of DynamoDB's writes (dynamometer.go has the reads and the
// wiring).

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
)

// writeKind is what a write does to its item.
type writeKind int

const (
	kindPut writeKind = iota
	kindUpdate
	kindDelete
	kindCheck // a transaction's ConditionCheck: reads, and is billed as a write
)

// write is one item a write acts on: what it asked and what was there.
type write struct {
	table  string
	schema tableSchema
	key    ddbItem
	put    ddbItem // PutItem's item
	kind   writeKind
	before ddbItem
	// after is an update's item after it, when its answer carried it
	// (ReturnValues ALL_NEW); nil: read it from moto.
	after ddbItem
}

// prepare reads the schema and the item before the write.
func (c *ddbCall) prepare(w *write) error {
	s, err := c.schema(w.table)
	if err != nil {
		return err
	}
	w.schema = s
	if w.put != nil {
		w.key = s.key(w.put)
	}
	w.before, err = c.item(w.table, w.key)
	return err
}

// settle prices a write: ok when it took effect (its indexes then written
// too), else (a failed condition) the larger of the item there and the one
// a put asked for, at least one unit.
func (c *ddbCall) settle(w *write, ok, transactional bool) (opCost, error) {
	if !ok {
		after := w.put
		if after == nil {
			after = w.before
		}
		t, _, err := writeCost(tableSchema{}, w.before, after, transactional)
		return opCost{write: t}, err
	}
	var after ddbItem
	switch w.kind {
	case kindPut:
		after = w.put
	case kindUpdate:
		after = w.after
		if after == nil {
			var err error
			if after, err = c.item(w.table, w.key); err != nil {
				return opCost{}, err
			}
		}
	case kindCheck:
		after = w.before
	}
	t, x, err := writeCost(w.schema, w.before, after, transactional)
	return opCost{write: t, index: x}, err
}

func (a *opCost) plus(b opCost) {
	a.read += b.read
	a.write += b.write
	a.index += b.index
}

// meterWrite prices PutItem, UpdateItem and DeleteItem: the larger of the
// item before and after, rounded up to 1 KB; a failed condition still
// costs.
func meterWrite(c *ddbCall, body []byte, send func() (int, []byte)) (opCost, error) {
	var in struct {
		TableName    string
		Key, Item    ddbItem
		ReturnValues string
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return opCost{}, err
	}
	w := &write{table: in.TableName, key: in.Key, put: in.Item, kind: kindUpdate}
	switch c.op {
	case "PutItem":
		w.kind = kindPut
	case "DeleteItem":
		w.kind = kindDelete
	}
	if err := c.prepare(w); err != nil {
		return opCost{}, err
	}
	status, answer := send()
	failed := status != http.StatusOK && errorType(answer) == "ConditionalCheckFailedException"
	if status != http.StatusOK && !failed {
		return opCost{}, nil
	}
	if !failed && w.kind == kindUpdate && in.ReturnValues == "ALL_NEW" {
		var out struct{ Attributes ddbItem }
		if json.Unmarshal(answer, &out) == nil {
			w.after = out.Attributes // the whole item after: no read needed
		}
	}
	cost, err := c.settle(w, !failed, false)
	cost.condFailed = failed
	return cost, err
}

// meterBatchWrite: each put or delete as its own PutItem or DeleteItem.
func meterBatchWrite(c *ddbCall, body []byte, send func() (int, []byte)) (opCost, error) {
	type request struct {
		PutRequest    *struct{ Item ddbItem }
		DeleteRequest *struct{ Key ddbItem }
	}
	var in struct{ RequestItems map[string][]request }
	if err := json.Unmarshal(body, &in); err != nil {
		return opCost{}, err
	}
	var writes []*write
	for _, table := range tableNames(in.RequestItems) {
		for _, r := range in.RequestItems[table] {
			w := &write{table: table, kind: kindDelete}
			if r.PutRequest != nil {
				w.kind, w.put = kindPut, r.PutRequest.Item
			} else if r.DeleteRequest != nil {
				w.key = r.DeleteRequest.Key
			}
			if err := c.prepare(w); err != nil {
				return opCost{}, err
			}
			writes = append(writes, w)
		}
	}
	status, answer := send()
	if status != http.StatusOK {
		return opCost{}, nil
	}
	var out struct{ UnprocessedItems map[string][]request }
	if err := json.Unmarshal(answer, &out); err != nil {
		return opCost{}, err
	}
	var cost opCost
next:
	for _, w := range writes {
		for _, u := range out.UnprocessedItems[w.table] {
			if (u.PutRequest != nil && sameValues(w.schema.key(u.PutRequest.Item), w.key, nil)) ||
				(u.DeleteRequest != nil && sameValues(u.DeleteRequest.Key, w.key, nil)) {
				continue next
			}
		}
		c1, err := c.settle(w, true, false)
		if err != nil {
			return opCost{}, err
		}
		cost.plus(c1)
	}
	return cost, nil
}

// meterTransactWrite: each item at twice its write units (a condition
// check too); a cancelled transaction costs each item as a failed
// conditional write, at the transactional rate.
func meterTransactWrite(c *ddbCall, body []byte, send func() (int, []byte)) (opCost, error) {
	type target struct {
		TableName string
		Key, Item ddbItem
	}
	var in struct {
		TransactItems []struct{ Put, Update, Delete, ConditionCheck *target }
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return opCost{}, err
	}
	var writes []*write
	for _, t := range in.TransactItems {
		var w *write
		switch {
		case t.Put != nil:
			w = &write{table: t.Put.TableName, put: t.Put.Item, kind: kindPut}
		case t.Update != nil:
			w = &write{table: t.Update.TableName, key: t.Update.Key, kind: kindUpdate}
		case t.Delete != nil:
			w = &write{table: t.Delete.TableName, key: t.Delete.Key, kind: kindDelete}
		case t.ConditionCheck != nil:
			w = &write{table: t.ConditionCheck.TableName, key: t.ConditionCheck.Key, kind: kindCheck}
		default:
			return opCost{}, fmt.Errorf("transact item with no action")
		}
		if err := c.prepare(w); err != nil {
			return opCost{}, err
		}
		writes = append(writes, w)
	}
	status, answer := send()
	cancelled := status != http.StatusOK && errorType(answer) == "TransactionCanceledException"
	if status != http.StatusOK && !cancelled {
		return opCost{}, nil
	}
	cost := opCost{condFailed: cancelled}
	for _, w := range writes {
		c1, err := c.settle(w, !cancelled, true)
		if err != nil {
			return opCost{}, err
		}
		cost.plus(c1)
	}
	return cost, nil
}

func tableNames[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
