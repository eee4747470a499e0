// Package eksauth gives the functions a Kubernetes client configuration for
// an EKS cluster from their IAM role, as aws-iam-authenticator and `aws eks
// get-token` do, without a kubeconfig or a secret: the cluster's endpoint and
// CA come from eks:DescribeCluster (once per container), and each request
// carries a bearer token that is a presigned STS GetCallerIdentity request.
// EKS (or, in the local cloud, its token webhook) calls that URL and maps the
// role it answers to a Kubernetes user through the cluster's access entries:
// the stack maps each function's role to user nodewright:<function> in group
// nodewright:controller.
//
// The token is "k8s-aws-v1." followed by the unpadded base64url encoding of
// the presigned URL (GET https://sts.<region>.amazonaws.com/?Action=
// GetCallerIdentity&Version=2011-06-15&X-Amz-Expires=60&...), signed with the
// header x-k8s-aws-id: <cluster>, so a token for one cluster is useless for
// another. EKS accepts a token for 15 minutes after its signing time; the
// Provider signs a new one when the cached one is older than Options.Refresh
// (10 minutes by default), inside the request path (rest.Config.WrapTransport),
// so a long drain never sends an expired token.
//
//	p := eksauth.New(eksauth.Options{Cluster: name, EKS: eks.NewFromConfig(cfg), STS: sts.NewPresignClient(sts.NewFromConfig(cfg))})
//	restCfg, err := p.RESTConfig(ctx)  // then kube.New(restCfg)
//
// Locally (`make run`, tests) package kubeconfig reads a kubeconfig instead
// (kept apart so that Lambda binaries do not link client-go's loader).
package eksauth

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"k8s.io/client-go/rest"
)

// TokenPrefix starts every EKS bearer token.
const TokenPrefix = "k8s-aws-v1."

// ClusterIDHeader is the signed header that binds a token to a cluster.
const ClusterIDHeader = "x-k8s-aws-id"

// TokenLifetime is how long EKS accepts a token after it was signed.
const TokenLifetime = 15 * time.Minute

// DescribeClusterAPI is the EKS call the Provider makes (eks.Client has it).
type DescribeClusterAPI interface {
	DescribeCluster(ctx context.Context, in *eks.DescribeClusterInput, optFns ...func(*eks.Options)) (*eks.DescribeClusterOutput, error)
}

// PresignAPI presigns STS GetCallerIdentity (sts.PresignClient has it).
type PresignAPI interface {
	PresignGetCallerIdentity(ctx context.Context, in *sts.GetCallerIdentityInput, optFns ...func(*sts.PresignOptions)) (*v4.PresignedHTTPRequest, error)
}

// The Kubernetes client's default rate limits: Karpenter's controller's
// (its KUBE_CLIENT_QPS and KUBE_CLIENT_BURST default to 200 and 300). A spot
// warning costs about 100 requests (an eviction and an Evicted event per
// pod, the node's events, taints and deletion): an interruption batch of 10
// warnings is about 1,000, which at 50 a second took 20 of its 27 seconds
// (test/scale), time the pods' replacements start later by against a
// two-minute notice. The API server protects itself (API Priority and
// Fairness queues each flow), and every request of a pass is one the
// controller would make too: the client's limit only needs to keep one
// container from flooding it, as Karpenter's does.
const (
	DefaultQPS   = 200
	DefaultBurst = 300
)

// Options configure a Provider.
type Options struct {
	Cluster string
	EKS     DescribeClusterAPI
	STS     PresignAPI
	// Refresh is the age at which a token is replaced (default 10 minutes;
	// at most TokenLifetime less a minute).
	Refresh time.Duration
	// QPS and Burst of the Kubernetes client (default DefaultQPS and
	// DefaultBurst).
	QPS   float32
	Burst int
	Now   func() time.Time
}

// Provider makes Kubernetes client configurations for one EKS cluster and
// keeps its endpoint, CA and current token for the life of the container.
// It is safe for concurrent use.
type Provider struct {
	opts Options

	mu       sync.Mutex
	endpoint string
	ca       []byte
	token    string
	signedAt time.Time
}

// New returns a Provider; nothing is called until RESTConfig or Token.
func New(opts Options) *Provider {
	if opts.Refresh <= 0 || opts.Refresh > TokenLifetime-time.Minute {
		opts.Refresh = 10 * time.Minute
	}
	if opts.QPS == 0 {
		opts.QPS = DefaultQPS
	}
	if opts.Burst == 0 {
		opts.Burst = DefaultBurst
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Provider{opts: opts}
}

// RESTConfig returns a client configuration for the cluster: its endpoint
// and CA (eks:DescribeCluster, called once), and a transport that puts a
// fresh token on every request.
func (p *Provider) RESTConfig(ctx context.Context) (*rest.Config, error) {
	endpoint, ca, err := p.cluster(ctx)
	if err != nil {
		return nil, err
	}
	return &rest.Config{
		Host:            endpoint,
		TLSClientConfig: rest.TLSClientConfig{CAData: ca},
		QPS:             p.opts.QPS, Burst: p.opts.Burst,
		// The function and the endpoint are in one region: gzip would cost
		// the API server and the function more CPU on a large list than it
		// saves on the wire (on the local cloud, a cold list of 20,000 pods
		// takes 2.8-3.5 s without it, 4.8-5.9 s with it).
		DisableCompression: true,
		WrapTransport: func(rt http.RoundTripper) http.RoundTripper {
			return &tokenTransport{p: p, base: rt}
		},
	}, nil
}

// cluster returns the cached endpoint and CA, describing the cluster once.
func (p *Provider) cluster(ctx context.Context) (string, []byte, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.endpoint != "" {
		return p.endpoint, p.ca, nil
	}
	out, err := p.opts.EKS.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: &p.opts.Cluster})
	if err != nil {
		return "", nil, fmt.Errorf("describe cluster %s: %w", p.opts.Cluster, err)
	}
	c := out.Cluster
	if c == nil || c.Endpoint == nil || *c.Endpoint == "" || c.CertificateAuthority == nil || c.CertificateAuthority.Data == nil {
		return "", nil, fmt.Errorf("describe cluster %s: no endpoint or certificate authority (is the cluster still creating?)", p.opts.Cluster)
	}
	ca, err := base64.StdEncoding.DecodeString(*c.CertificateAuthority.Data)
	if err != nil {
		return "", nil, fmt.Errorf("describe cluster %s: certificate authority: %w", p.opts.Cluster, err)
	}
	p.endpoint, p.ca = *c.Endpoint, ca
	return p.endpoint, p.ca, nil
}

// Token returns the current bearer token, signing a new one when the cached
// one is older than Options.Refresh, and when it expires (TokenLifetime
// after signing).
func (p *Provider) Token(ctx context.Context) (string, time.Time, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.opts.Now()
	if p.token != "" && now.Sub(p.signedAt) < p.opts.Refresh {
		return p.token, p.signedAt.Add(TokenLifetime), nil
	}
	tok, err := p.sign(ctx)
	if err != nil {
		return "", time.Time{}, err
	}
	p.token, p.signedAt = tok, now
	return tok, now.Add(TokenLifetime), nil
}

// presignExpires is the X-Amz-Expires aws-iam-authenticator signs into its
// URL; EKS judges the token's age by X-Amz-Date (TokenLifetime).
const presignExpires = "60"

func (p *Provider) sign(ctx context.Context) (string, error) {
	req, err := p.opts.STS.PresignGetCallerIdentity(ctx, &sts.GetCallerIdentityInput{}, func(o *sts.PresignOptions) {
		o.ClientOptions = append(o.ClientOptions, sts.WithAPIOptions(
			smithyhttp.SetHeaderValue(ClusterIDHeader, p.opts.Cluster),
			addExpiresQuery,
		))
	})
	if err != nil {
		return "", fmt.Errorf("eks token for %s: presign sts:GetCallerIdentity: %w", p.opts.Cluster, err)
	}
	if req.SignedHeader.Get(ClusterIDHeader) != p.opts.Cluster {
		return "", errors.New("eks token: the presigned request does not sign " + ClusterIDHeader)
	}
	return TokenPrefix + base64.RawURLEncoding.EncodeToString([]byte(req.URL)), nil
}

// addExpiresQuery adds X-Amz-Expires to the request before it is presigned.
func addExpiresQuery(stack *middleware.Stack) error {
	return stack.Build.Add(middleware.BuildMiddlewareFunc("nodewrightExpires", func(ctx context.Context, in middleware.BuildInput, next middleware.BuildHandler) (middleware.BuildOutput, middleware.Metadata, error) {
		if req, ok := in.Request.(*smithyhttp.Request); ok {
			q := req.URL.Query()
			q.Set("X-Amz-Expires", presignExpires)
			req.URL.RawQuery = q.Encode()
		}
		return next.HandleBuild(ctx, in)
	}), middleware.After)
}

// tokenTransport sets the bearer token on each request.
type tokenTransport struct {
	p    *Provider
	base http.RoundTripper
}

func (t *tokenTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	tok, _, err := t.p.Token(req.Context())
	if err != nil {
		return nil, err
	}
	r := req.Clone(req.Context())
	r.Header.Set("Authorization", "Bearer "+tok)
	return t.base.RoundTrip(r)
}
