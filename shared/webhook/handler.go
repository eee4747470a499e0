package webhook

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/nodewright/nodewright/shared/logging"
	"github.com/nodewright/nodewright/shared/names"
	"github.com/nodewright/nodewright/shared/trigger"
)

// DefaultMaxBodyBytes bounds a request body: an AdmissionReview of a pod
// status update carries the pod twice (object and oldObject), and a pod is at
// most about 1.5 MB (etcd's request limit), so 3 MiB admits every real review.
const DefaultMaxBodyBytes = 3 << 20

// invokeTimeout bounds the asynchronous invocation of the provision function,
// well inside the API server's webhook timeout (2 s in the generated
// manifest).
const invokeTimeout = time.Second

// Invoker starts the provision function asynchronously with payload.
type Invoker interface {
	InvokeAsync(ctx context.Context, payload []byte) error
}

// Handler serves the Function URL.
type Handler struct {
	Cluster string
	Secret  *SecretCache
	Invoker Invoker
	// Hints coalesces hints per cluster (nil: every hint invokes).
	Hints    HintGate
	Now      func() time.Time
	Log      *slog.Logger
	MaxBytes int // 0 means DefaultMaxBodyBytes

	mu        sync.Mutex
	staleWarn time.Time // when a stale token was last reported
}

// staleWarnEvery is how often at most the webhook reports that the cluster
// sends the secret's previous token.
const staleWarnEvery = time.Hour

// Handle answers one Function URL request. It returns an error only for
// conditions Lambda should count as a failure of the function itself; every
// client error is an HTTP status without detail.
func (h *Handler) Handle(ctx context.Context, req events.LambdaFunctionURLRequest) (resp events.LambdaFunctionURLResponse, err error) {
	defer func() {
		if r := recover(); r != nil {
			h.Log.Error("webhook panicked", "panic", fmt.Sprint(r))
			resp, err = status(http.StatusInternalServerError), nil
		}
	}()
	res, stale, aerr := authenticate(ctx, h.Secret, req.RawPath)
	switch res {
	case authMissing:
		h.Log.Warn("webhook request without token", "sourceIp", req.RequestContext.HTTP.SourceIP)
		return status(http.StatusUnauthorized), nil
	case authMismatch:
		h.Log.Warn("webhook request with a wrong token", "sourceIp", req.RequestContext.HTTP.SourceIP, "refreshError", logging.Err(aerr))
		return status(http.StatusForbidden), nil
	case authError:
		h.Log.Error("webhook cannot read its token", "error", logging.Err(aerr))
		return status(http.StatusServiceUnavailable), nil
	}
	if stale {
		h.warnStale()
	}
	if req.RequestContext.HTTP.Method != http.MethodPost {
		return status(http.StatusMethodNotAllowed), nil
	}
	body, code := h.body(req)
	if code != http.StatusOK {
		h.Log.Warn("webhook request refused", "status", code, "bytes", len(req.Body))
		return status(code), nil
	}
	rv, derr := decideReview(body)
	if rv.response == nil {
		h.Log.Warn("webhook request is not an AdmissionReview", "error", logging.Err(derr))
		return status(http.StatusBadRequest), nil
	}
	if derr != nil {
		h.Log.Warn("webhook could not read the pod", "uid", logging.Quote(rv.uid), "error", logging.Err(derr))
	}
	if rv.pending != nil {
		h.hint(ctx, rv)
	}
	return events.LambdaFunctionURLResponse{
		StatusCode: http.StatusOK,
		Headers:    map[string]string{"Content-Type": "application/json"},
		Body:       string(rv.response),
	}, nil
}

// body returns the request body, decoded, with 200 if it is within the
// limit; else 413 (too large) or 400 (base64 that does not decode).
func (h *Handler) body(req events.LambdaFunctionURLRequest) ([]byte, int) {
	limit := h.MaxBytes
	if limit <= 0 {
		limit = DefaultMaxBodyBytes
	}
	if !req.IsBase64Encoded {
		if len(req.Body) > limit {
			return nil, http.StatusRequestEntityTooLarge
		}
		return []byte(req.Body), http.StatusOK
	}
	if base64.StdEncoding.DecodedLen(len(req.Body)) > limit+3 {
		return nil, http.StatusRequestEntityTooLarge
	}
	b, err := base64.StdEncoding.DecodeString(req.Body)
	switch {
	case err != nil:
		return nil, http.StatusBadRequest
	case len(b) > limit:
		return nil, http.StatusRequestEntityTooLarge
	}
	return b, http.StatusOK
}

// warnStale reports, at most once per staleWarnEvery, that the cluster's
// registration carries the secret's previous token: it stops working at the
// next rotation unless the registration is applied again.
func (h *Handler) warnStale() {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.Now()
	if !h.staleWarn.IsZero() && now.Sub(h.staleWarn) < staleWarnEvery {
		return
	}
	h.staleWarn = now
	h.Log.Warn("the cluster's webhook registration carries the secret's previous token, which the next rotation retires: run `nodewright webhook apply`")
}

// hint invokes the provision function for a pod that has just become
// unschedulable, unless the request is a dry run, names no pod, or another
// hint for the cluster is pending within the window. Failure is logged,
// never returned: the answer to the API server is "allowed" whatever
// happens, and the provision sweep finds the pod within a minute anyway.
func (h *Handler) hint(ctx context.Context, rv review) {
	pod := rv.pending
	ns, name := pod.Namespace, pod.Name
	if ns == "" {
		ns = rv.namespace
	}
	if name == "" {
		name = rv.name
	}
	log := h.Log.With("uid", logging.Quote(rv.uid), "namespace", logging.Quote(ns), "pod", logging.Quote(name))
	switch {
	case rv.dryRun:
		log.Info("unschedulable pod in a dry run: not hinting")
		return
	case ns == "" || name == "":
		// The provision trigger requires both; a hint without them would
		// only fail there (and count as a function error).
		log.Warn("review names no pod namespace and name: not hinting")
		return
	}
	payload, err := json.Marshal(trigger.WebhookHint{
		Source: names.WebhookHintSource, Cluster: h.Cluster,
		Namespace: ns, Name: name, UID: string(pod.UID), ResourceVersion: pod.ResourceVersion, Time: h.Now().UTC(),
	})
	if err != nil {
		log.Error("encode provision hint", "error", logging.Err(err))
		return
	}
	ictx, cancel := context.WithTimeout(ctx, invokeTimeout)
	defer cancel()
	if h.Hints != nil {
		first, err := h.Hints.Admit(ictx, payload)
		if err != nil {
			// Fail closed: a gate that cannot be written must not turn a
			// burst of reviews into a burst of invocations.
			log.Error("record provision hint: not hinting (the sweep finds the pod)", "error", logging.Err(err))
			return
		}
		if !first {
			log.Info("unschedulable pod: a provision hint for the cluster is already pending")
			return
		}
	}
	if err := h.Invoker.InvokeAsync(ictx, payload); err != nil {
		log.Error("invoke provision", "error", logging.Err(err))
		return
	}
	log.Info("unschedulable pod: provision invoked")
}

func status(code int) events.LambdaFunctionURLResponse {
	return events.LambdaFunctionURLResponse{StatusCode: code}
}
