// Package webhook_test proves the pending-pod webhook against the AWS APIs
// it calls, as moto serves them behind the local cloud's AWS front: the hint
// gate's conditional write to the state table, and the whole handler with
// its token read from Secrets Manager, under a burst of reviews.
package webhook_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nodewright/nodewright/shared/names"
	"github.com/nodewright/nodewright/shared/rotation"
	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/shared/webhook"
	"github.com/nodewright/nodewright/test/localcloud"
)

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

type invoker struct {
	mu       sync.Mutex
	payloads [][]byte
}

func (i *invoker) InvokeAsync(_ context.Context, p []byte) error {
	i.mu.Lock()
	defer i.mu.Unlock()
	i.payloads = append(i.payloads, p)
	return nil
}

func review(t *testing.T, name string) string {
	t.Helper()
	pod := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name}}
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}
	raw, _ := json.Marshal(pod)
	b, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: "uid-" + "1", Resource: metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
			SubResource: "status", Operation: admissionv1.Update, Object: runtime.RawExtension{Raw: raw}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// A burst of 200 concurrent reviews (a token holder's forgeries, say)
// invokes the provision function once per window; the gate's item is the
// state table's hint item, with its expiry.
func TestHintBurstAgainstDynamoDB(t *testing.T) {
	lc := localcloud.StartForTest(t, localcloud.Options{AWSOnly: true, Cluster: "webhook-test"})
	ctx := context.Background()
	cfg := lc.AWSConfig()
	sm := secretsmanager.NewFromConfig(cfg)
	token, _ := rotation.NewToken()
	out, err := sm.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String("webhook-token"), SecretString: aws.String(token)})
	if err != nil {
		t.Fatal(err)
	}
	clk := &clock{t: time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)}
	inv := &invoker{}
	db := dynamodb.NewFromConfig(cfg)
	var logs bytes.Buffer
	h := &webhook.Handler{
		Cluster: lc.Cluster.Name,
		Secret:  webhook.NewSecretCache(webhook.SecretsManagerFetch(sm, aws.ToString(out.ARN)), clk.Now, webhook.CacheOptions{}),
		Invoker: inv,
		Hints:   &webhook.DynamoDBHintGate{Client: db, Table: lc.Names.Table, Cluster: lc.Cluster.Name, Now: clk.Now},
		Now:     clk.Now,
		Log:     slog.New(slog.NewJSONHandler(&logs, nil)),
	}
	call := func(name string) {
		var req events.LambdaFunctionURLRequest
		req.RawPath, req.Body = "/"+token, review(t, name)
		req.RequestContext.HTTP.Method = "POST"
		resp, err := h.Handle(ctx, req)
		if err != nil || resp.StatusCode != 200 {
			t.Errorf("review %s: %d %v", name, resp.StatusCode, err)
		}
	}
	burst := func(n int, prefix string) {
		var wg sync.WaitGroup
		for i := 0; i < n; i++ {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				call(fmt.Sprintf("%s-%d", prefix, i))
			}(i)
		}
		wg.Wait()
	}
	burst(200, "a")
	if len(inv.payloads) != 1 {
		t.Fatalf("%d provision invocations for a burst of 200, want 1\n%s", len(inv.payloads), logs.String())
	}
	got, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(lc.Names.Table), Key: map[string]ddbtypes.AttributeValue{
		names.PartitionKey: &ddbtypes.AttributeValueMemberS{Value: state.HintsPartition(lc.Cluster.Name)}, names.SortKey: &ddbtypes.AttributeValueMemberS{Value: state.KeyHint},
	}})
	if err != nil || got.Item == nil {
		t.Fatalf("hint item: %v", err)
	}
	if exp := got.Item[names.TTLAttribute].(*ddbtypes.AttributeValueMemberN).Value; exp != fmt.Sprint(clk.Now().Add(webhook.DefaultHintWindow).Unix()) {
		t.Fatalf("expiresAt %s", exp)
	}
	// Still within the window: nothing more. After it (the item is still
	// there: DynamoDB's TTL is lazy, moto's never runs), one more.
	clk.Add(webhook.DefaultHintWindow - time.Second)
	burst(50, "b")
	clk.Add(time.Second)
	burst(50, "c")
	if len(inv.payloads) != 2 {
		t.Fatalf("%d provision invocations, want 2", len(inv.payloads))
	}
}
