// Package iamauth is the local cloud's stand-in for EKS's IAM authenticator:
// a token webhook (kube-apiserver --authentication-token-webhook-config-file)
// that accepts the bearer tokens aws-iam-authenticator and Nodewright's
// eksauth make, "k8s-aws-v1." + base64url(presigned STS GetCallerIdentity
// URL), calls that URL on the AWS front (moto answers GetCallerIdentity with
// the caller's ARN), and maps the IAM role to a Kubernetes user and groups
// the way EKS access entries do. It checks what the EKS authenticator checks
// before calling STS: the URL's host is the STS endpoint, the action is
// GetCallerIdentity, the signing time is at most 15 minutes old, and the
// x-k8s-aws-id header naming this cluster is signed. (moto does not verify
// SigV4 signatures; real STS does.)
package iamauth

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	authv1 "k8s.io/api/authentication/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Mapping is an access entry: a role and the Kubernetes identity it becomes.
type Mapping struct {
	RoleARN  string // arn:aws:iam::<account>:role/<name>
	Username string
	Groups   []string
}

// Config configures the authenticator.
type Config struct {
	Cluster string
	// STSEndpoint returns the AWS front's URL (it may start after the
	// authenticator); tokens must presign a URL on its host.
	STSEndpoint func() string
	Now         func() time.Time
	Log         *slog.Logger
}

// Authenticator is the running webhook.
type Authenticator struct {
	cfg  Config
	srv  *http.Server
	ln   net.Listener
	http *http.Client

	mu       sync.Mutex
	mappings map[string]Mapping
	reviews  int
}

// New makes an authenticator; Start serves it.
func New(cfg Config) *Authenticator {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Authenticator{cfg: cfg, mappings: map[string]Mapping{}, http: &http.Client{Timeout: 5 * time.Second}}
}

// Map adds (or replaces) an access entry.
func (a *Authenticator) Map(m Mapping) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.mappings[m.RoleARN] = m
}

// Reviews is how many TokenReviews the API server has sent.
func (a *Authenticator) Reviews() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.reviews
}

// Start listens on 127.0.0.1.
func (a *Authenticator) Start() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("iam authenticator: %w", err)
	}
	a.ln = ln
	a.srv = &http.Server{Handler: a, ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = a.srv.Serve(ln) }()
	return nil
}

// URL is the webhook's endpoint.
func (a *Authenticator) URL() string { return "http://" + a.ln.Addr().String() + "/authenticate" }

// Close stops serving.
func (a *Authenticator) Close() error {
	if a.srv == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := a.srv.Shutdown(ctx); err != nil {
		// the API server's kept-alive calls still active: end them
		if errors.Is(err, context.DeadlineExceeded) {
			return a.srv.Close()
		}
		return err
	}
	return nil
}

// WriteWebhookConfig writes the kubeconfig-format file the API server's
// --authentication-token-webhook-config-file reads.
func (a *Authenticator) WriteWebhookConfig(path string) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["iam"] = &clientcmdapi.Cluster{Server: a.URL()}
	cfg.AuthInfos["apiserver"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["iam"] = &clientcmdapi.Context{Cluster: "iam", AuthInfo: "apiserver"}
	cfg.CurrentContext = "iam"
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return fmt.Errorf("iam authenticator config: %w", err)
	}
	return os.Chmod(path, 0o600)
}

// ServeHTTP answers a TokenReview.
func (a *Authenticator) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var review authv1.TokenReview
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&review); err != nil {
		http.Error(w, "bad TokenReview", http.StatusBadRequest)
		return
	}
	a.mu.Lock()
	a.reviews++
	a.mu.Unlock()
	user, err := a.authenticate(r.Context(), review.Spec.Token)
	review.Status = authv1.TokenReviewStatus{}
	if err != nil {
		a.cfg.Log.Info("token refused", "component", "iamauth", "reason", err.Error())
		review.Status.Error = err.Error()
	} else {
		review.Status.Authenticated = true
		review.Status.User = user
	}
	review.APIVersion, review.Kind = "authentication.k8s.io/v1", "TokenReview"
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(review)
}

// maxAge is how long after signing EKS accepts a token.
const maxAge = 15 * time.Minute

func (a *Authenticator) authenticate(ctx context.Context, token string) (authv1.UserInfo, error) {
	u, err := a.presignedURL(token)
	if err != nil {
		return authv1.UserInfo{}, err
	}
	arn, err := a.callerARN(ctx, u)
	if err != nil {
		return authv1.UserInfo{}, err
	}
	role, err := roleOf(arn)
	if err != nil {
		return authv1.UserInfo{}, err
	}
	a.mu.Lock()
	m, ok := a.mappings[role]
	a.mu.Unlock()
	if !ok {
		return authv1.UserInfo{}, fmt.Errorf("role %s has no access entry", role)
	}
	return authv1.UserInfo{Username: m.Username, Groups: m.Groups, Extra: map[string]authv1.ExtraValue{"arn": {arn}}}, nil
}

// presignedURL decodes and checks the token's URL.
func (a *Authenticator) presignedURL(token string) (*url.URL, error) {
	const prefix = "k8s-aws-v1."
	if !strings.HasPrefix(token, prefix) {
		return nil, errors.New("not an EKS token")
	}
	raw, err := base64.RawURLEncoding.DecodeString(strings.TrimPrefix(token, prefix))
	if err != nil {
		return nil, fmt.Errorf("token is not base64url: %w", err)
	}
	u, err := url.Parse(string(raw))
	if err != nil {
		return nil, fmt.Errorf("token is not a URL: %w", err)
	}
	sts, err := url.Parse(a.cfg.STSEndpoint())
	if err != nil || sts.Host == "" {
		return nil, errors.New("no STS endpoint yet")
	}
	q := u.Query()
	switch {
	case u.Host != sts.Host:
		return nil, fmt.Errorf("token's host %q is not the STS endpoint", u.Host)
	case q.Get("Action") != "GetCallerIdentity":
		return nil, fmt.Errorf("token's action %q is not GetCallerIdentity", q.Get("Action"))
	case q.Get("X-Amz-Signature") == "" || q.Get("X-Amz-Credential") == "":
		return nil, errors.New("token is not a presigned request")
	case !slices.Contains(strings.Split(strings.ToLower(q.Get("X-Amz-SignedHeaders")), ";"), "x-k8s-aws-id"):
		return nil, errors.New("token does not sign x-k8s-aws-id")
	}
	signed, err := time.Parse("20060102T150405Z", q.Get("X-Amz-Date"))
	if err != nil {
		return nil, fmt.Errorf("token's X-Amz-Date: %w", err)
	}
	if age := a.cfg.Now().Sub(signed); age > maxAge || age < -time.Minute {
		return nil, fmt.Errorf("token signed %s ago: expired", age.Round(time.Second))
	}
	return u, nil
}

// callerARN calls the presigned URL with the cluster header, as EKS does: a
// token signed for another cluster fails here (on AWS, its signature would
// not match).
func (a *Authenticator) callerARN(ctx context.Context, u *url.URL) (string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return "", err
	}
	req.Header.Set("x-k8s-aws-id", a.cfg.Cluster)
	resp, err := a.http.Do(req)
	if err != nil {
		return "", fmt.Errorf("sts: %w", err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("sts answered %s", resp.Status)
	}
	var out struct {
		Result struct {
			Arn string `xml:"Arn"`
		} `xml:"GetCallerIdentityResult"`
	}
	if err := xml.Unmarshal(body, &out); err != nil || out.Result.Arn == "" {
		return "", fmt.Errorf("sts: unreadable GetCallerIdentity answer: %.200q", body)
	}
	return out.Result.Arn, nil
}

// roleOf turns an assumed-role ARN (arn:aws:sts::123:assumed-role/name/session)
// into its role's ARN (arn:aws:iam::123:role/name).
func roleOf(arn string) (string, error) {
	parts := strings.SplitN(arn, ":", 6)
	if len(parts) != 6 || parts[2] != "sts" || !strings.HasPrefix(parts[5], "assumed-role/") {
		return "", fmt.Errorf("caller %s is not an assumed role", arn)
	}
	name := strings.Split(strings.TrimPrefix(parts[5], "assumed-role/"), "/")[0]
	return "arn:" + parts[1] + ":iam::" + parts[4] + ":role/" + name, nil
}
