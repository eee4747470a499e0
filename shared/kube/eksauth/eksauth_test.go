package eksauth

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"k8s.io/client-go/rest"
)

type fakeEKS struct {
	calls int
	err   error
}

func (f *fakeEKS) DescribeCluster(_ context.Context, in *eks.DescribeClusterInput, _ ...func(*eks.Options)) (*eks.DescribeClusterOutput, error) {
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	return &eks.DescribeClusterOutput{Cluster: &ekstypes.Cluster{
		Name: in.Name, Endpoint: aws.String("https://ABC.gr7.us-east-1.eks.amazonaws.com"),
		CertificateAuthority: &ekstypes.Certificate{Data: aws.String(base64.StdEncoding.EncodeToString([]byte("PEM")))},
	}}, nil
}

// countingPresigner counts presigns and presigns for real (offline: a
// presigned URL needs no call to STS).
type countingPresigner struct {
	mu    sync.Mutex
	n     int
	inner PresignAPI
}

func (c *countingPresigner) PresignGetCallerIdentity(ctx context.Context, in *sts.GetCallerIdentityInput, optFns ...func(*sts.PresignOptions)) (*v4.PresignedHTTPRequest, error) {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	return c.inner.PresignGetCallerIdentity(ctx, in, optFns...)
}

func newProvider(clock *time.Time) (*Provider, *fakeEKS, *countingPresigner) {
	cfg := aws.Config{Region: "us-east-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "secret", "")}
	e := &fakeEKS{}
	p := &countingPresigner{inner: sts.NewPresignClient(sts.NewFromConfig(cfg))}
	return New(Options{Cluster: "prod", EKS: e, STS: p, Now: func() time.Time { return *clock }}), e, p
}

// The token is what aws-iam-authenticator makes: k8s-aws-v1. + unpadded
// base64url of a presigned GetCallerIdentity URL that signs x-k8s-aws-id.
func TestTokenFormat(t *testing.T) {
	clock := time.Now()
	p, _, _ := newProvider(&clock)
	tok, exp, err := p.Token(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(tok, TokenPrefix) || strings.ContainsAny(tok, "=+/") || !exp.Equal(clock.Add(15*time.Minute)) {
		t.Fatalf("token %q expiring %s", tok, exp)
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(tok, TokenPrefix))
	if err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	if u.Scheme != "https" || u.Host != "sts.us-east-1.amazonaws.com" || q.Get("Action") != "GetCallerIdentity" || q.Get("Version") != "2011-06-15" ||
		q.Get("X-Amz-Expires") != "60" || q.Get("X-Amz-SignedHeaders") != "host;x-k8s-aws-id" || q.Get("X-Amz-Signature") == "" ||
		!strings.HasPrefix(q.Get("X-Amz-Credential"), "AKIDEXAMPLE/") {
		t.Fatalf("presigned URL %s", u)
	}
}

// Tokens are reused until Refresh, then signed anew; DescribeCluster is
// called once per Provider; every request carries the current token.
func TestRefreshAndTransport(t *testing.T) {
	clock := time.Now()
	p, e, presigner := newProvider(&clock)
	ctx := context.Background()
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen = append(seen, r.Header.Get("Authorization"))
	}))
	t.Cleanup(srv.Close)
	cfg, err := p.RESTConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.RESTConfig(ctx); err != nil || e.calls != 1 {
		t.Fatalf("DescribeCluster called %d times (%v)", e.calls, err)
	}
	if cfg.Host != "https://ABC.gr7.us-east-1.eks.amazonaws.com" || string(cfg.CAData) != "PEM" || cfg.QPS != DefaultQPS || cfg.Burst != DefaultBurst || !cfg.DisableCompression {
		t.Fatalf("config %+v", cfg)
	}
	// Point the transport at the fake server to see the headers.
	local := &rest.Config{Host: srv.URL, WrapTransport: cfg.WrapTransport}
	hc, err := rest.HTTPClientFor(local)
	if err != nil {
		t.Fatal(err)
	}
	get := func() {
		resp, err := hc.Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
	}
	get()
	clock = clock.Add(9 * time.Minute)
	get()
	clock = clock.Add(2 * time.Minute) // 11 minutes: past Refresh
	get()
	// (The third token may equal the second byte for byte: the SDK signs
	// with the real clock, and both were signed within the same second.)
	if presigner.n != 2 || len(seen) != 3 || seen[0] != seen[1] || !strings.HasPrefix(seen[0], "Bearer "+TokenPrefix) {
		t.Fatalf("%d presigns (want 2: one reused, one refreshed); first two headers equal %v", presigner.n, seen[0] == seen[1])
	}
}

func TestDescribeClusterErrors(t *testing.T) {
	clock := time.Now()
	p, e, _ := newProvider(&clock)
	e.err = errors.New("AccessDeniedException")
	if _, err := p.RESTConfig(context.Background()); err == nil || !strings.Contains(err.Error(), "describe cluster prod: AccessDeniedException") {
		t.Fatalf("err %v", err)
	}
	e.err = nil
	if _, err := p.RESTConfig(context.Background()); err != nil || e.calls != 2 {
		t.Fatalf("a failed describe is not cached: %v, %d calls", err, e.calls)
	}
}
