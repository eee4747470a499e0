package harness

import (
	"context"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/nodewright/nodewright/infra/stack"
	"github.com/nodewright/nodewright/shared/handlers"
	"github.com/nodewright/nodewright/shared/rotation"
	"github.com/nodewright/nodewright/shared/webhook"
	"github.com/nodewright/nodewright/shared/webhookconfig"
)

// Webhook is the pending-pod webhook function served on the local cloud as
// its Function URL serves it on AWS: the handler Lambda runs (its token in
// Secrets Manager, its hint gate on the state table) behind a local HTTPS
// endpoint, registered in the API server with the
// ValidatingWebhookConfiguration the stack writes, filled in as `nodewright
// webhook apply` fills it (the endpoint's URL with the token as its path),
// plus the endpoint's CA bundle (a Function URL has a public certificate).
type Webhook struct {
	Handler *webhook.Handler
	// URL is the endpoint without its token.
	URL string
	// Requests counts the API server's calls.
	Requests func() int64

	srv *httptest.Server
	h   *Harness
}

// ServeWebhook starts the webhook and registers it. invoke is the
// provision function's asynchronous invocation (Lambda's Invoke with
// InvocationType Event): it must not block.
func (h *Harness) ServeWebhook(ctx context.Context, invoke func(payload []byte)) (*Webhook, error) {
	cfg := h.LC.AWSConfig()
	token, err := rotation.NewToken()
	if err != nil {
		return nil, err
	}
	sm := secretsmanager.NewFromConfig(cfg)
	secret, err := sm.CreateSecret(ctx, &secretsmanager.CreateSecretInput{
		Name: aws.String(fmt.Sprintf("nodewright-webhook-token-%d", time.Now().UnixNano())), SecretString: aws.String(token),
	})
	if err != nil {
		return nil, fmt.Errorf("webhook token secret: %w", err)
	}
	cluster := h.LC.Cluster.Name
	wh := &Webhook{h: h}
	wh.Handler = &webhook.Handler{
		Cluster: cluster,
		Secret:  webhook.NewSecretCache(webhook.SecretsManagerFetch(sm, aws.ToString(secret.ARN)), h.Clock.Now, webhook.CacheOptions{}),
		Invoker: asyncInvoker(invoke),
		Hints:   &webhook.DynamoDBHintGate{Client: dynamodb.NewFromConfig(cfg), Table: h.LC.Names.Table, Cluster: cluster, Now: h.Clock.Now},
		Now:     h.Clock.Now,
		Log:     handlers.NewLogger(h.opts.Log, "webhook", "debug"),
	}
	var requests atomicCounter
	wh.Requests = requests.Load
	wh.srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		wh.serve(w, r)
	}))
	wh.srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the API server's aborted calls at shutdown
	wh.srv.StartTLS()
	wh.URL = wh.srv.URL + "/"
	if err := wh.register(ctx, token); err != nil {
		wh.srv.Close()
		return nil, err
	}
	return wh, nil
}

// serve hands one request to the handler as a Function URL does.
func (wh *Webhook) serve(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err != nil {
		http.Error(w, "read", http.StatusBadRequest)
		return
	}
	req := events.LambdaFunctionURLRequest{RawPath: r.URL.Path, Body: string(body), Headers: map[string]string{}}
	for k := range r.Header {
		req.Headers[k] = r.Header.Get(k)
	}
	req.RequestContext.HTTP.Method = r.Method
	req.RequestContext.HTTP.Path = r.URL.Path
	req.RequestContext.HTTP.SourceIP, _, _ = net.SplitHostPort(r.RemoteAddr)
	ctx, cancel := wh.h.lambdaContext(r.Context(), 5*time.Second)
	defer cancel()
	resp, err := wh.Handler.Handle(ctx, req)
	if err != nil {
		http.Error(w, "function error", http.StatusBadGateway)
		return
	}
	for k, v := range resp.Headers {
		w.Header().Set(k, v)
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.WriteString(w, resp.Body)
}

// register applies the stack's registration, filled in with the endpoint
// and the token, and the endpoint's CA bundle.
func (wh *Webhook) register(ctx context.Context, token string) error {
	manifest, err := stack.WebhookManifest(stack.WebhookURLPlaceholder, 2)
	if err != nil {
		return err
	}
	var cfg admissionregistrationv1.ValidatingWebhookConfiguration
	if err := yaml.UnmarshalStrict(manifest, &cfg); err != nil {
		return fmt.Errorf("the stack's webhook.yaml: %w", err)
	}
	filled, err := webhookconfig.Fill(&cfg, wh.URL, token)
	if err != nil {
		return err
	}
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: wh.srv.Certificate().Raw})
	for i := range filled.Webhooks {
		filled.Webhooks[i].ClientConfig.CABundle = ca
	}
	if _, err := webhookconfig.Apply(ctx, wh.h.LC.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations(), filled); err != nil {
		return err
	}
	return nil
}

// Close removes the registration and stops the endpoint.
func (wh *Webhook) Close(ctx context.Context) error {
	err := wh.h.LC.Kube.AdmissionregistrationV1().ValidatingWebhookConfigurations().Delete(ctx, webhookconfig.Name, metav1.DeleteOptions{})
	wh.srv.Close()
	return err
}

type asyncInvoker func(payload []byte)

func (f asyncInvoker) InvokeAsync(_ context.Context, payload []byte) error {
	f(append([]byte(nil), payload...))
	return nil
}

type atomicCounter struct{ n atomic.Int64 }

func (c *atomicCounter) Add(d int64) { c.n.Add(d) }
func (c *atomicCounter) Load() int64 { return c.n.Load() }

// Invoke runs the provision function with a payload (an asynchronous
// invocation's event, such as the webhook's hint).
func (h *Harness) Invoke(ctx context.Context, payload []byte) error {
	ctx, cancel := h.lambdaContext(ctx, 5*time.Minute)
	defer cancel()
	return h.Provision.Handle(ctx, payload)
}
