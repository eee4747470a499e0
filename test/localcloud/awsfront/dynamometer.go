package awsfront

// The front meters DynamoDB: each data-plane call it forwards to moto is
// priced in read and write units by the rules of dynamosize.go, from the
// items it touched. The client sees moto's answer unchanged; the sizes come
// from the request, from moto's answer, and from the front's own calls to
// moto around the forwarded one (the item before a write, the item after an
// update, a read's items without its filter or projection). Those calls run
// under the front's DynamoDB lock (a write's holds every other call off), so
// they see exactly the state the forwarded call saw or left.

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// DynamoDBOpUnits are the units one DynamoDB operation consumed since the
// front started, for reports.
type DynamoDBOpUnits struct {
	Operation string
	Calls     int     // calls forwarded (throttled ones are not)
	Read      float64 // read units
	Write     float64 // write units of the table
	// IndexWrite are the write units of the table's secondary indexes
	// (billed as write units too).
	IndexWrite float64
	// ConditionFailed counts calls whose condition failed (or transactions
	// cancelled): they still consumed units, counted above.
	ConditionFailed int
	// Unmetered counts calls that succeeded but could not be priced (the
	// front's own reads of moto failed; the front logs why): their units
	// are missing from the totals, so a benchmark should see none.
	Unmetered int
}

// dynamoMeter holds the running totals and the tables' schemas.
type dynamoMeter struct {
	mu      sync.Mutex
	ops     map[string]*DynamoDBOpUnits
	schemas map[string]tableSchema
}

// DynamoDBUnits are the read and write units (index writes included) that
// the DynamoDB calls through the front consumed since it started.
func (f *Front) DynamoDBUnits() (read, write float64) {
	for _, o := range f.DynamoDBUsage() {
		read += o.Read
		write += o.Write + o.IndexWrite
	}
	return read, write
}

// DynamoDBUsage is the per-operation breakdown of DynamoDBUnits, sorted by
// operation.
func (f *Front) DynamoDBUsage() []DynamoDBOpUnits {
	f.meter.mu.Lock()
	defer f.meter.mu.Unlock()
	out := make([]DynamoDBOpUnits, 0, len(f.meter.ops))
	for _, o := range f.meter.ops {
		out = append(out, *o)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Operation < out[j].Operation })
	return out
}

// opCost is one call's units.
type opCost struct {
	read, write, index float64
	condFailed         bool
}

func (m *dynamoMeter) add(op string, c opCost) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o := m.op(op)
	o.Calls++
	o.Read += c.read
	o.Write += c.write
	o.IndexWrite += c.index
	if c.condFailed {
		o.ConditionFailed++
	}
}

// dynamoMeters are the metered operations. Each decodes the request, reads
// what it needs before the call, calls send (which forwards the call to
// moto and answers the client) exactly once, and prices the result.
var dynamoMeters = map[string]func(c *ddbCall, body []byte, send func() (int, []byte)) (opCost, error){
	"GetItem":            meterGetItem,
	"BatchGetItem":       meterBatchGetItem,
	"Query":              meterRead,
	"Scan":               meterRead,
	"TransactGetItems":   meterTransactGet,
	"PutItem":            meterWrite,
	"UpdateItem":         meterWrite,
	"DeleteItem":         meterWrite,
	"BatchWriteItem":     meterBatchWrite,
	"TransactWriteItems": meterTransactWrite,
}

// serveDynamo forwards a DynamoDB call and meters it.
func (f *Front) serveDynamo(w http.ResponseWriter, r *http.Request, op string, body []byte) {
	meter, ok := dynamoMeters[op]
	if !ok {
		f.forward(w, r, body)
		if op == "CreateTable" || op == "UpdateTable" || op == "DeleteTable" {
			f.meter.mu.Lock()
			f.meter.schemas = nil
			f.meter.mu.Unlock()
		}
		return
	}
	sent := false
	var status int
	var answer []byte
	send := func() (int, []byte) {
		if sent {
			return status, answer
		}
		sent = true
		tee := &teeWriter{ResponseWriter: w}
		f.forward(tee, r, body)
		status, answer = tee.status, tee.body()
		return status, answer
	}
	cost, err := meter(&ddbCall{f: f, r: r, op: op, ctx: r.Context()}, body, send)
	if st, _ := send(); err != nil { // a meter that failed before sending still forwards the call
		if st == http.StatusOK {
			f.log.Warn("dynamodb units not metered", "op", op, "err", err)
			f.meter.unmetered(op)
		}
		return
	}
	f.meter.add(op, cost)
}

// unmetered counts a call that succeeded without being priced.
func (m *dynamoMeter) unmetered(op string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	o := m.op(op)
	o.Calls++
	o.Unmetered++
}

// op is the operation's totals (under mu).
func (m *dynamoMeter) op(op string) *DynamoDBOpUnits {
	if m.ops == nil {
		m.ops = map[string]*DynamoDBOpUnits{}
	}
	o := m.ops[op]
	if o == nil {
		o = &DynamoDBOpUnits{Operation: op}
		m.ops[op] = o
	}
	return o
}

// teeWriter passes a response through and keeps a copy of it.
type teeWriter struct {
	http.ResponseWriter
	status int
	buf    bytes.Buffer
}

func (t *teeWriter) WriteHeader(code int) {
	t.status = code
	t.ResponseWriter.WriteHeader(code)
}

func (t *teeWriter) Write(b []byte) (int, error) {
	if t.status == 0 {
		t.status = http.StatusOK
	}
	t.buf.Write(b)
	return t.ResponseWriter.Write(b)
}

func (t *teeWriter) Unwrap() http.ResponseWriter { return t.ResponseWriter }

// body is the response body, decompressed if moto gzipped it.
func (t *teeWriter) body() []byte {
	if t.Header().Get("Content-Encoding") != "gzip" {
		return t.buf.Bytes()
	}
	zr, err := gzip.NewReader(bytes.NewReader(t.buf.Bytes()))
	if err != nil {
		return nil
	}
	b, _ := io.ReadAll(zr)
	return b
}

// ddbCall is one forwarded call: the front's own calls to moto reuse its
// headers (moto takes the region and account from the signature's
// credential scope).
type ddbCall struct {
	f   *Front
	r   *http.Request
	op  string // the forwarded call's operation
	ctx context.Context
}

// moto sends op with payload straight to moto and decodes the answer into
// out.
func (c *ddbCall) moto(op string, payload, out any) error {
	b, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(c.ctx, http.MethodPost, c.f.moto.String()+"/", bytes.NewReader(b))
	if err != nil {
		return err
	}
	for k, v := range c.r.Header {
		req.Header[k] = v
	}
	req.Header.Del("Content-Length")
	req.Header.Del("Accept-Encoding")
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810."+op)
	req.Header.Set("Content-Type", "application/x-amz-json-1.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("moto %s: %w", op, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("moto %s: %w", op, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("moto %s: %d %s", op, resp.StatusCode, body)
	}
	return json.Unmarshal(body, out)
}

// item reads an item whole, strongly consistent (nil if absent).
func (c *ddbCall) item(table string, key ddbItem) (ddbItem, error) {
	if key == nil {
		return nil, nil
	}
	var out struct{ Item ddbItem }
	err := c.moto("GetItem", map[string]any{"TableName": table, "Key": key, "ConsistentRead": true}, &out)
	return out.Item, err
}

// schema is the table's key and indexes, from DescribeTable (cached until
// a table is created, updated or deleted through the front).
func (c *ddbCall) schema(table string) (tableSchema, error) {
	m := &c.f.meter
	m.mu.Lock()
	s, ok := m.schemas[table]
	m.mu.Unlock()
	if ok {
		return s, nil
	}
	type keyElem struct{ AttributeName, KeyType string }
	type index struct {
		IndexName  string
		KeySchema  []keyElem
		Projection struct {
			ProjectionType   string
			NonKeyAttributes []string
		}
	}
	var out struct {
		Table struct {
			KeySchema              []keyElem
			GlobalSecondaryIndexes []index
			LocalSecondaryIndexes  []index
		}
	}
	if err := c.moto("DescribeTable", map[string]any{"TableName": table}, &out); err != nil {
		return tableSchema{}, err
	}
	keys := func(ks []keyElem) []string {
		var hash, rng []string
		for _, k := range ks {
			if k.KeyType == "HASH" {
				hash = append(hash, k.AttributeName)
			} else {
				rng = append(rng, k.AttributeName)
			}
		}
		return append(hash, rng...)
	}
	s = tableSchema{keys: keys(out.Table.KeySchema)}
	for _, x := range append(out.Table.GlobalSecondaryIndexes, out.Table.LocalSecondaryIndexes...) {
		s.indexes = append(s.indexes, indexSchema{name: x.IndexName, keys: keys(x.KeySchema),
			projection: x.Projection.ProjectionType, include: x.Projection.NonKeyAttributes})
	}
	m.mu.Lock()
	if m.schemas == nil {
		m.schemas = map[string]tableSchema{}
	}
	m.schemas[table] = s
	m.mu.Unlock()
	return s, nil
}

// errorType is a DynamoDB error answer's type without its namespace.
func errorType(body []byte) string {
	var e struct {
		Type string `json:"__type"`
	}
	_ = json.Unmarshal(body, &e)
	_, t, _ := strings.Cut(e.Type, "#")
	if t == "" {
		return e.Type
	}
	return t
}

func consistency(strong bool) Consistency {
	if strong {
		return Strong
	}
	return Eventual
}

func sizes(items ...ddbItem) (int, error) {
	n := 0
	for _, it := range items {
		s, err := ItemSize(it)
		if err != nil {
			return 0, err
		}
		n += s
	}
	return n, nil
}

// projects reports whether a read asks for fewer attributes than the whole
// item (the units are the whole item's all the same).
func projects(projection string, attrs []string) bool { return projection != "" || len(attrs) > 0 }

// meterGetItem: the item's size rounded up to 4 KB; an absent item costs
// the minimum.
func meterGetItem(c *ddbCall, body []byte, send func() (int, []byte)) (opCost, error) {
	var in struct {
		TableName            string
		Key                  ddbItem
		ConsistentRead       bool
		ProjectionExpression string
		AttributesToGet      []string
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return opCost{}, err
	}
	status, answer := send()
	if status != http.StatusOK {
		return opCost{}, nil
	}
	var out struct{ Item ddbItem }
	if err := json.Unmarshal(answer, &out); err != nil {
		return opCost{}, err
	}
	it := out.Item
	if projects(in.ProjectionExpression, in.AttributesToGet) {
		var err error
		if it, err = c.item(in.TableName, in.Key); err != nil {
			return opCost{}, err
		}
	}
	n, err := sizes(it)
	return opCost{read: ReadUnits(n, consistency(in.ConsistentRead))}, err
}

// meterBatchGetItem: each item as its own GetItem.
func meterBatchGetItem(c *ddbCall, body []byte, send func() (int, []byte)) (opCost, error) {
	type tableReq struct {
		Keys                 []ddbItem
		ConsistentRead       bool
		ProjectionExpression string
		AttributesToGet      []string
	}
	var in struct{ RequestItems map[string]tableReq }
	if err := json.Unmarshal(body, &in); err != nil {
		return opCost{}, err
	}
	status, answer := send()
	if status != http.StatusOK {
		return opCost{}, nil
	}
	var out struct {
		Responses       map[string][]ddbItem
		UnprocessedKeys map[string]tableReq
	}
	if err := json.Unmarshal(answer, &out); err != nil {
		return opCost{}, err
	}
	var cost opCost
	for table, req := range in.RequestItems {
		cons := consistency(req.ConsistentRead)
		processed := len(req.Keys) - len(out.UnprocessedKeys[table].Keys)
		if !projects(req.ProjectionExpression, req.AttributesToGet) {
			items := out.Responses[table]
			for _, it := range items {
				n, err := sizes(it)
				if err != nil {
					return opCost{}, err
				}
				cost.read += ReadUnits(n, cons)
			}
			cost.read += float64(max(processed-len(items), 0)) * ReadUnits(0, cons) // absent items
			continue
		}
	keys:
		for _, k := range req.Keys {
			for _, u := range out.UnprocessedKeys[table].Keys {
				if sameValues(k, u, nil) {
					continue keys
				}
			}
			it, err := c.item(table, k)
			if err != nil {
				return opCost{}, err
			}
			n, err := sizes(it)
			if err != nil {
				return opCost{}, err
			}
			cost.read += ReadUnits(n, cons)
		}
	}
	return cost, nil
}

var exprToken = regexp.MustCompile(`[#:][A-Za-z0-9_]+`)

// meterRead prices a Query or Scan page: the sum of the sizes of the items
// it read (before a filter, whole whatever the projection), rounded up to
// 4 KB once. When the call filters or projects, the front repeats it
// against moto without either to see what was read.
func meterRead(c *ddbCall, body []byte, send func() (int, []byte)) (opCost, error) {
	var in map[string]json.RawMessage
	if err := json.Unmarshal(body, &in); err != nil {
		return opCost{}, err
	}
	status, answer := send()
	if status != http.StatusOK {
		return opCost{}, nil
	}
	var strong bool
	if raw, ok := in["ConsistentRead"]; ok {
		_ = json.Unmarshal(raw, &strong)
	}
	var sel string
	if raw, ok := in["Select"]; ok {
		_ = json.Unmarshal(raw, &sel)
	}
	reduced := sel != "" && sel != "ALL_ATTRIBUTES" && sel != "ALL_PROJECTED_ATTRIBUTES"
	for _, k := range []string{"FilterExpression", "QueryFilter", "ScanFilter", "ProjectionExpression", "AttributesToGet"} {
		if _, ok := in[k]; ok {
			reduced = true
		}
	}
	var out struct{ Items []ddbItem }
	if !reduced {
		if err := json.Unmarshal(answer, &out); err != nil {
			return opCost{}, err
		}
	} else {
		op := "Scan"
		if _, ok := in["KeyConditionExpression"]; ok || in["KeyConditions"] != nil {
			op = "Query"
		}
		if err := c.moto(op, unfiltered(in), &out); err != nil {
			return opCost{}, err
		}
	}
	n, err := sizes(out.Items...)
	return opCost{read: ReadUnits(n, consistency(strong))}, err
}

// unfiltered is a Query or Scan request without its filter and projection,
// keeping only the expression names and values its key condition uses.
func unfiltered(in map[string]json.RawMessage) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	for k, v := range in {
		switch k {
		case "FilterExpression", "QueryFilter", "ScanFilter", "ConditionalOperator", "ProjectionExpression",
			"AttributesToGet", "Select", "ExpressionAttributeNames", "ExpressionAttributeValues", "ReturnConsumedCapacity":
		default:
			out[k] = v
		}
	}
	var cond string
	if raw, ok := in["KeyConditionExpression"]; ok {
		_ = json.Unmarshal(raw, &cond)
	}
	used := map[string]bool{}
	for _, t := range exprToken.FindAllString(cond, -1) {
		used[t] = true
	}
	for _, k := range []string{"ExpressionAttributeNames", "ExpressionAttributeValues"} {
		var m map[string]json.RawMessage
		if raw, ok := in[k]; !ok || json.Unmarshal(raw, &m) != nil {
			continue
		}
		for t := range m {
			if !used[t] {
				delete(m, t)
			}
		}
		if len(m) > 0 {
			out[k], _ = json.Marshal(m)
		}
	}
	return out
}

// meterTransactGet: each item at the transactional rate, 2 units per 4 KB.
func meterTransactGet(c *ddbCall, body []byte, send func() (int, []byte)) (opCost, error) {
	var in struct {
		TransactItems []struct {
			Get struct {
				TableName string
				Key       ddbItem
			}
		}
	}
	if err := json.Unmarshal(body, &in); err != nil {
		return opCost{}, err
	}
	if status, _ := send(); status != http.StatusOK {
		return opCost{}, nil
	}
	var cost opCost
	for _, t := range in.TransactItems {
		it, err := c.item(t.Get.TableName, t.Get.Key)
		if err != nil {
			return opCost{}, err
		}
		n, err := sizes(it)
		if err != nil {
			return opCost{}, err
		}
		cost.read += ReadUnits(n, Transactional)
	}
	return cost, nil
}
