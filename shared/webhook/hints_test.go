package webhook

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/names"
	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/shared/trigger"
)

// The hint item is the state table's: the same keys as shared/state's, in
// a partition of its own, never the cluster's.
func TestHintKeysAreTheStates(t *testing.T) {
	if HintSortKey != state.KeyHint {
		t.Fatalf("HintSortKey %q, state.KeyHint %q", HintSortKey, state.KeyHint)
	}
	if HintPartition("demo") != state.HintsPartition("demo") || HintPartition("demo") == "demo" {
		t.Fatalf("HintPartition %q, state.HintsPartition %q", HintPartition("demo"), state.HintsPartition("demo"))
	}
}

// fakeGate admits the first hint of each window and records the payloads.
type fakeGate struct {
	clock   *fakeClock
	until   time.Time
	err     error
	admits  int
	refused int
}

func (g *fakeGate) Admit(_ context.Context, payload []byte) (bool, error) {
	if g.err != nil {
		return false, g.err
	}
	if now := g.clock.Now(); now.Before(g.until) {
		g.refused++
		return false, nil
	}
	g.until = g.clock.Now().Add(DefaultHintWindow)
	g.admits++
	return true, nil
}

// 1,000 reviews in a burst (real or forged by a token holder) invoke the
// provision function once per window.
func TestHintsAreCoalesced(t *testing.T) {
	f := newFixture()
	gate := &fakeGate{clock: f.clock}
	f.h.Hints = gate
	body := reviewOf(t, pendingPod("Unschedulable"), pendingPod(""), nil)
	for i := 0; i < 1000; i++ {
		allowedUID(t, f.call(t, "/"+goodToken, "POST", body), "uid-1")
		if i%100 == 99 {
			f.clock.Add(time.Second)
		}
	}
	if len(f.inv.payloads) != 1 || gate.refused != 999 {
		t.Fatalf("%d invocations, %d coalesced; want 1 and 999", len(f.inv.payloads), gate.refused)
	}
	f.clock.Add(DefaultHintWindow)
	allowedUID(t, f.call(t, "/"+goodToken, "POST", body), "uid-1")
	if len(f.inv.payloads) != 2 {
		t.Fatalf("%d invocations after the window, want 2", len(f.inv.payloads))
	}
	// A gate that cannot be written hints nothing (the sweep finds the pod).
	gate.err = errors.New("ProvisionedThroughputExceededException")
	f.clock.Add(DefaultHintWindow)
	allowedUID(t, f.call(t, "/"+goodToken, "POST", body), "uid-1")
	if len(f.inv.payloads) != 2 || !strings.Contains(f.logs.String(), "ProvisionedThroughputExceededException") {
		t.Fatalf("%d invocations with a failing gate", len(f.inv.payloads))
	}
}

// A review that names no pod sends no hint: the provision trigger requires
// a namespace and a name, and would fail (counting as a function error).
// The request's namespace and name stand in for the object's.
func TestNoHintWithoutPodName(t *testing.T) {
	nameless := func(ns, name string) *corev1.Pod {
		p := pendingPod("Unschedulable")
		p.Namespace, p.Name = ns, name
		return p
	}
	cases := []struct {
		name           string
		pod            *corev1.Pod
		reqNS, reqName string
		want           *trigger.PodRef
	}{
		{"neither", nameless("", ""), "", "", nil},
		{"no name", nameless("ns", ""), "", "", nil},
		{"no namespace", nameless("", "web-1"), "", "", nil},
		{"from the request", nameless("", ""), "team", "api-0", &trigger.PodRef{Namespace: "team", Name: "api-0"}},
		{"the object's first", nameless("ns", "web-1"), "other", "x", &trigger.PodRef{Namespace: "ns", Name: "web-1"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture()
			body := reviewOf(t, tc.pod, nil, func(r *admissionv1.AdmissionRequest) { r.Namespace, r.Name = tc.reqNS, tc.reqName })
			allowedUID(t, f.call(t, "/"+goodToken, "POST", body), "uid-1")
			if tc.want == nil {
				if len(f.inv.payloads) != 0 || !strings.Contains(f.logs.String(), "names no pod") {
					t.Fatalf("%d hints for a review without a pod name", len(f.inv.payloads))
				}
				return
			}
			if len(f.inv.payloads) != 1 {
				t.Fatalf("%d hints", len(f.inv.payloads))
			}
			got, err := trigger.DecodeProvision(f.inv.payloads[0])
			if err != nil || len(got.Pods) != 1 || got.Pods[0] != *tc.want {
				t.Fatalf("hint %+v %v, want %v", got, err, tc.want)
			}
		})
	}
}

// A 2 MiB field becomes a bounded log line.
func TestLogLinesAreBounded(t *testing.T) {
	f := newFixture()
	huge := strings.Repeat("v", 2<<20)
	if got := f.call(t, "/"+goodToken, "POST", `{"apiVersion":"`+huge+`","kind":"AdmissionReview"}`).StatusCode; got != 400 {
		t.Fatalf("status %d", got)
	}
	if got := f.call(t, "/"+goodToken, "POST", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":1`+strings.Repeat("0", 2<<20)+`}}`).StatusCode; got != 400 {
		t.Fatalf("status %d", got)
	}
	body := reviewOf(t, pendingPod("Unschedulable"), nil, func(r *admissionv1.AdmissionRequest) { r.UID = "u" + "x" })
	body = strings.Replace(body, `"uid":"ux"`, `"uid":"`+huge+`"`, 1)
	f.call(t, "/"+goodToken, "POST", body)
	for _, line := range strings.Split(strings.TrimSpace(f.logs.String()), "\n") {
		if len(line) > 4096 {
			t.Errorf("log line of %d bytes: %.200s...", len(line), line)
		}
	}
	if !strings.Contains(f.logs.String(), "(2097152 bytes)") {
		t.Fatalf("the truncation does not say how long the value was: %.500s", f.logs.String())
	}
}

type fakePut struct {
	in  *dynamodb.PutItemInput
	err error
}

func (f *fakePut) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	f.in = in
	return &dynamodb.PutItemOutput{}, f.err
}

// The gate's request: the cluster's hint item in its own partition, its
// expiry in epoch seconds, written only when absent or expired, and
// nothing but HintAttributes.
func TestDynamoDBHintGateRequest(t *testing.T) {
	clock := &fakeClock{t: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
	put := &fakePut{}
	g := &DynamoDBHintGate{Client: put, Table: "state", Cluster: "demo", Now: clock.Now}
	ok, err := g.Admit(context.Background(), []byte(`{"x":1}`))
	if !ok || err != nil {
		t.Fatalf("admit %v %v", ok, err)
	}
	in := put.in
	if aws.ToString(in.TableName) != "state" || aws.ToString(in.ConditionExpression) != "attribute_not_exists(#pk) OR #exp <= :now" {
		t.Fatalf("input %+v", in)
	}
	want := map[string]string{names.PartitionKey: "demo#hints", names.SortKey: "hint", names.TTLAttribute: "1735787055", "data": `{"x":1}`}
	for k, v := range want {
		var got string
		switch av := in.Item[k].(type) {
		case *ddbtypes.AttributeValueMemberS:
			got = av.Value
		case *ddbtypes.AttributeValueMemberN:
			got = av.Value
		}
		if got != v {
			t.Errorf("item %s = %q, want %q", k, got, v)
		}
	}
	if len(in.Item) != len(HintAttributes()) {
		t.Errorf("item has %d attributes, HintAttributes %v", len(in.Item), HintAttributes())
	}
	if v := in.ExpressionAttributeValues[":now"].(*ddbtypes.AttributeValueMemberN).Value; v != "1735787045" {
		t.Errorf(":now %s", v)
	}
	clock.t = clock.t.Add(DefaultHintWindow) // past this gate's own item
	put.err = &ddbtypes.ConditionalCheckFailedException{Message: aws.String("held")}
	if ok, err := g.Admit(context.Background(), nil); ok || err != nil {
		t.Fatalf("held: %v %v", ok, err)
	}
	clock.t = clock.t.Add(heldBackoff)
	put.err = errors.New("boom")
	if ok, err := g.Admit(context.Background(), nil); ok || err == nil {
		t.Fatalf("error: %v %v", ok, err)
	}
}

// countingPut answers PutItem as DynamoDB would for one hint item: written
// when absent or expired, refused (a write unit all the same) otherwise.
type countingPut struct {
	calls   int
	expires int64 // the item's expiry, epoch seconds; 0: none
	now     func() time.Time
}

func (c *countingPut) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	c.calls++
	if c.expires > c.now().Unix() {
		return nil, &ddbtypes.ConditionalCheckFailedException{Message: aws.String("held")}
	}
	exp, _ := strconv.ParseInt(in.Item[names.TTLAttribute].(*ddbtypes.AttributeValueMemberN).Value, 10, 64)
	c.expires = exp
	return &dynamodb.PutItemOutput{}, nil
}

// A gate writes once per window for its own hints and at most once per
// heldBackoff while another container's item holds: a burst of reviews
// costs a few writes, not one each, and still admits one hint a window.
func TestDynamoDBHintGateWritesOncePerWindow(t *testing.T) {
	for _, tc := range []struct {
		name       string
		otherUntil time.Duration // another container's item, from the start (0: none)
		reviews    int
		every      time.Duration
		wantCalls  int
		wantAdmits int
	}{
		{name: "own hints, 100 reviews in 10s", reviews: 100, every: 100 * time.Millisecond, wantCalls: 1, wantAdmits: 1},
		{name: "own hints, 300 reviews in 30s", reviews: 300, every: 100 * time.Millisecond, wantCalls: 3, wantAdmits: 3},
		{name: "another container's item for 5s, then ours", otherUntil: 5 * time.Second, reviews: 100, every: 100 * time.Millisecond, wantCalls: 6, wantAdmits: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := &fakeClock{t: time.Date(2025, 1, 2, 3, 4, 0, 0, time.UTC)}
			db := &countingPut{now: clock.Now}
			if tc.otherUntil > 0 {
				db.expires = clock.t.Add(tc.otherUntil).Unix()
			}
			g := &DynamoDBHintGate{Client: db, Table: "state", Cluster: "demo", Now: clock.Now}
			admits := 0
			for i := 0; i < tc.reviews; i++ {
				ok, err := g.Admit(context.Background(), nil)
				if err != nil {
					t.Fatal(err)
				}
				if ok {
					admits++
				}
				clock.t = clock.t.Add(tc.every)
			}
			if db.calls != tc.wantCalls || admits != tc.wantAdmits {
				t.Errorf("%d reviews: %d PutItem calls and %d hints admitted, want %d and %d", tc.reviews, db.calls, admits, tc.wantCalls, tc.wantAdmits)
			}
		})
	}
}
