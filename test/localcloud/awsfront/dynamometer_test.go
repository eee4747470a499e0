package awsfront

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/nodewright/nodewright/test/localcloud/proc"
)

// startMoto runs the local cloud's moto_server (built by `make tools`) on a
// free port for one test.
func startMoto(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("NODEWRIGHT_TOOLS")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(home, ".cache", "nodewright", "tools")
	}
	bin := filepath.Join(dir, "bin", "moto_server")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("moto_server not found (run `make tools`): %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	tmp := t.TempDir()
	p, err := proc.Start(proc.Spec{Name: "moto", Path: bin, Args: []string{"-H", "127.0.0.1", "-p", strconv.Itoa(port)},
		Env: []string{"PYTHONUNBUFFERED=1"}}, tmp, tmp)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(5 * time.Second) })
	u := "http://127.0.0.1:" + strconv.Itoa(port)
	deadline := time.Now().Add(60 * time.Second)
	for {
		resp, err := http.Get(u + "/moto-api/data.json")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return u
			}
		}
		if exited, werr := p.Exited(); exited {
			t.Fatalf("moto exited: %v (log %s)", werr, p.LogPath)
		}
		if time.Now().After(deadline) {
			t.Fatalf("moto not ready after 60 s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestDynamoDBUnitsThroughMoto sends each metered operation through the
// front to moto with the SDK, as the functions do, and checks the units
// each one consumed. Item sizes (names + values): pk "n#1" 5 bytes, sk
// "rec" 5 or "rec2" 6, data 4 + its length, phase "p" 6.
func TestDynamoDBUnitsThroughMoto(t *testing.T) {
	motoURL := startMoto(t)
	f, err := New(Config{MotoURL: motoURL, Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	db := dynamodb.NewFromConfig(DirectConfig(f.URL(), "us-east-1"))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	tbl := aws.String("state")
	s := func(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
	str := func(n int) types.AttributeValue { return s(strings.Repeat("x", n)) }
	key := func(sk string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{"pk": s("n#1"), "sk": s(sk)}
	}
	with := func(sk string, data int, phase bool) map[string]types.AttributeValue {
		it := key(sk)
		it["data"] = str(data)
		if phase {
			it["phase"] = s("p")
		}
		return it
	}
	_, err = db.CreateTable(ctx, &dynamodb.CreateTableInput{
		TableName:   tbl,
		BillingMode: types.BillingModePayPerRequest,
		AttributeDefinitions: []types.AttributeDefinition{
			{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeS},
			{AttributeName: aws.String("phase"), AttributeType: types.ScalarAttributeTypeS},
		},
		KeySchema: []types.KeySchemaElement{
			{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
			{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange},
		},
		GlobalSecondaryIndexes: []types.GlobalSecondaryIndex{{
			IndexName:  aws.String("byPhase"),
			KeySchema:  []types.KeySchemaElement{{AttributeName: aws.String("phase"), KeyType: types.KeyTypeHash}},
			Projection: &types.Projection{ProjectionType: types.ProjectionTypeAll},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}

	type units struct{ read, write, index float64 }
	for _, tc := range []struct {
		name string
		op   string
		call func() error
		want units
		fail bool // the condition fails (the call returns an error)
	}{
		{"put A, 1,500 bytes, in no index", "PutItem", func() error {
			_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: tbl, Item: with("rec", 1486, false)})
			return err
		}, units{write: 2}, false},
		{"put A again with a phase (1,506 bytes): enters the index", "PutItem", func() error {
			_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: tbl, Item: with("rec", 1486, true)})
			return err
		}, units{write: 2, index: 2}, false},
		{"get A strongly consistent: 1", "GetItem", func() error {
			_, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: tbl, Key: key("rec"), ConsistentRead: aws.Bool(true)})
			return err
		}, units{read: 1}, false},
		{"get A eventually consistent, one attribute projected: the whole item, 0.5", "GetItem", func() error {
			_, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: tbl, Key: key("rec"), ProjectionExpression: aws.String("phase")})
			return err
		}, units{read: 0.5}, false},
		{"get an absent item: the minimum, 0.5", "GetItem", func() error {
			_, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: tbl, Key: key("none")})
			return err
		}, units{read: 0.5}, false},
		{"update A's data to 3,000 bytes (3,020): the larger, 3; the index entry too", "UpdateItem", func() error {
			_, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: tbl, Key: key("rec"),
				UpdateExpression:          aws.String("SET #d = :d"),
				ExpressionAttributeNames:  map[string]string{"#d": "data"},
				ExpressionAttributeValues: map[string]types.AttributeValue{":d": str(3000)}})
			return err
		}, units{write: 3, index: 3}, false},
		{"update A under a failing condition: still the item's 3", "UpdateItem", func() error {
			_, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: tbl, Key: key("rec"),
				UpdateExpression:          aws.String("SET #d = :d"),
				ConditionExpression:       aws.String("attribute_not_exists(#d)"),
				ExpressionAttributeNames:  map[string]string{"#d": "data"},
				ExpressionAttributeValues: map[string]types.AttributeValue{":d": str(1)}})
			return err
		}, units{write: 3}, true},
		{"update A to what it holds, answer ALL_NEW: 3, the index unchanged", "UpdateItem", func() error {
			out, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: tbl, Key: key("rec"),
				UpdateExpression:          aws.String("SET phase = :p"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":p": s("p")},
				ReturnValues:              types.ReturnValueAllNew})
			if err == nil && len(out.Attributes) != 4 {
				return errors.New("the client lost ALL_NEW's attributes")
			}
			return err
		}, units{write: 3}, false},
		{"put B, 2,000 bytes", "PutItem", func() error {
			_, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: tbl, Item: with("rec2", 1985, false)})
			return err
		}, units{write: 2}, false},
		{"query the partition, strongly: 3,020 + 2,000 bytes, 2", "Query", func() error {
			_, err := db.Query(ctx, &dynamodb.QueryInput{TableName: tbl, ConsistentRead: aws.Bool(true),
				KeyConditionExpression:    aws.String("pk = :p"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":p": s("n#1")}})
			return err
		}, units{read: 2}, false},
		{"query with a filter that keeps nothing: what was read, 1 eventually", "Query", func() error {
			out, err := db.Query(ctx, &dynamodb.QueryInput{TableName: tbl,
				KeyConditionExpression:    aws.String("pk = :p"),
				FilterExpression:          aws.String("attribute_exists(nothing)"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":p": s("n#1")}})
			if err == nil && out.Count != 0 {
				return errors.New("filter kept items")
			}
			return err
		}, units{read: 1}, false},
		{"query the index: A only, 0.5", "Query", func() error {
			_, err := db.Query(ctx, &dynamodb.QueryInput{TableName: tbl, IndexName: aws.String("byPhase"),
				KeyConditionExpression:    aws.String("phase = :p"),
				ExpressionAttributeValues: map[string]types.AttributeValue{":p": s("p")}})
			return err
		}, units{read: 0.5}, false},
		{"scan: 5,020 bytes, 1 eventually", "Scan", func() error {
			_, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: tbl})
			return err
		}, units{read: 1}, false},
		{"batch get A, B and an absent item: 0.5 each", "BatchGetItem", func() error {
			_, err := db.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{
				"state": {Keys: []map[string]types.AttributeValue{key("rec"), key("rec2"), key("none")}}}})
			return err
		}, units{read: 1.5}, false},
		{"transact get A and B: 2 each", "TransactGetItems", func() error {
			_, err := db.TransactGetItems(ctx, &dynamodb.TransactGetItemsInput{TransactItems: []types.TransactGetItem{
				{Get: &types.Get{TableName: tbl, Key: key("rec")}}, {Get: &types.Get{TableName: tbl, Key: key("rec2")}}}})
			return err
		}, units{read: 4}, false},
		{"transact: check A (3,020) and put C (504 bytes): 2 x 3 + 2 x 1", "TransactWriteItems", func() error {
			_, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
				{ConditionCheck: &types.ConditionCheck{TableName: tbl, Key: key("rec"), ConditionExpression: aws.String("attribute_exists(pk)")}},
				{Put: &types.Put{TableName: tbl, Item: with("c", 490, false)}}}})
			return err
		}, units{write: 8}, false},
		{"transaction cancelled by its check: each item still at the transactional rate", "TransactWriteItems", func() error {
			_, err := db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
				{ConditionCheck: &types.ConditionCheck{TableName: tbl, Key: key("rec"), ConditionExpression: aws.String("attribute_not_exists(pk)")}},
				{Put: &types.Put{TableName: tbl, Item: with("d", 10, false)}}}})
			return err
		}, units{write: 8}, true},
		{"batch write: delete C, put D (24 bytes): 1 each", "BatchWriteItem", func() error {
			_, err := db.BatchWriteItem(ctx, &dynamodb.BatchWriteItemInput{RequestItems: map[string][]types.WriteRequest{
				"state": {{DeleteRequest: &types.DeleteRequest{Key: key("c")}}, {PutRequest: &types.PutRequest{Item: with("d", 10, false)}}}}})
			return err
		}, units{write: 2}, false},
		{"delete A: its 3,020 bytes, and its index entry", "DeleteItem", func() error {
			_, err := db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: tbl, Key: key("rec")})
			return err
		}, units{write: 3, index: 3}, false},
		{"delete an absent item: 1", "DeleteItem", func() error {
			_, err := db.DeleteItem(ctx, &dynamodb.DeleteItemInput{TableName: tbl, Key: key("none")})
			return err
		}, units{write: 1}, false},
	} {
		before := usageOf(f, tc.op)
		err := tc.call()
		if tc.fail != (err != nil) {
			t.Fatalf("%s: error %v, want failure %v", tc.name, err, tc.fail)
		}
		after := usageOf(f, tc.op)
		got := units{after.Read - before.Read, after.Write - before.Write, after.IndexWrite - before.IndexWrite}
		if got != tc.want || after.Calls != before.Calls+1 {
			t.Errorf("%s: %+v in %d calls, want %+v in 1", tc.name, got, after.Calls-before.Calls, tc.want)
		}
		if tc.fail && after.ConditionFailed != before.ConditionFailed+1 {
			t.Errorf("%s: condition failures %d, want one more than %d", tc.name, after.ConditionFailed, before.ConditionFailed)
		}
	}
	read, write := f.DynamoDBUnits()
	var wantRead, wantWrite float64
	for _, o := range f.DynamoDBUsage() {
		wantRead += o.Read
		wantWrite += o.Write + o.IndexWrite
	}
	t.Logf("usage: %+v", f.DynamoDBUsage())
	for _, o := range f.DynamoDBUsage() {
		if o.Unmetered != 0 {
			t.Errorf("%s: %d calls not metered", o.Operation, o.Unmetered)
		}
	}
	// 1+0.5+0.5 + 2+1+0.5 + 1 + 1.5 + 4 reads; 2+4 + 6+3+3 + 2 + 8+8 + 2 + 6+1 writes.
	if read != 12 || write != 45 || read != wantRead || write != wantWrite {
		t.Errorf("DynamoDBUnits = %v read, %v write; want 12 and 45 (the breakdown's sums %v, %v)", read, write, wantRead, wantWrite)
	}
}

func usageOf(f *Front, op string) DynamoDBOpUnits {
	for _, o := range f.DynamoDBUsage() {
		if o.Operation == op {
			return o
		}
	}
	return DynamoDBOpUnits{Operation: op}
}

// A call that succeeds but cannot be priced (the front's own reads fail)
// is counted as unmetered, so a benchmark can tell its totals are short; a
// call that failed anyway is not.
func TestDynamoDBUnmetered(t *testing.T) {
	var forwardStatus atomic.Int32
	stub := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		if strings.HasSuffix(r.Header.Get("X-Amz-Target"), ".PutItem") {
			w.WriteHeader(int(forwardStatus.Load()))
			_, _ = w.Write([]byte(`{}`))
			return
		}
		http.Error(w, `{"__type":"com.amazonaws.dynamodb.v20120810#InternalServerError"}`, http.StatusInternalServerError)
	}))
	t.Cleanup(stub.Close)
	f, err := New(Config{MotoURL: stub.URL, Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	put := func() {
		req, _ := http.NewRequest(http.MethodPost, f.URL(), strings.NewReader(`{"TableName":"t","Item":{"pk":{"S":"a"}}}`))
		req.Header.Set("X-Amz-Target", "DynamoDB_20120810.PutItem")
		req.Header.Set("Content-Type", "application/x-amz-json-1.0")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != int(forwardStatus.Load()) {
			t.Errorf("client got %d, moto answered %d", resp.StatusCode, forwardStatus.Load())
		}
	}
	forwardStatus.Store(http.StatusBadRequest)
	put()
	if u := usageOf(f, "PutItem"); u.Calls != 0 || u.Unmetered != 0 {
		t.Errorf("a failed call: %+v, want nothing counted", u)
	}
	forwardStatus.Store(http.StatusOK)
	put()
	if u := usageOf(f, "PutItem"); u.Calls != 1 || u.Unmetered != 1 || u.Write != 0 {
		t.Errorf("a succeeded call the front could not price: %+v, want 1 call, 1 unmetered", u)
	}
}
