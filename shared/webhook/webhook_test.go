package webhook

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/nodewright/nodewright/shared/trigger"
)

const (
	goodToken  = "Zq3xV8pL2mN7bR4tY6wE1uI9oA5sD0fG3hJ8kL2zX7cV4bN6"
	otherToken = "Aq3xV8pL2mN7bR4tY6wE1uI9oA5sD0fG3hJ8kL2zX7cV4bN6" // same length, one byte differs
)

// fakeClock is a settable clock.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// fakeSecret counts fetches and returns value (the current token),
// previous or err.
type fakeSecret struct {
	mu       sync.Mutex
	value    string
	previous string
	err      error
	fetches  int
}

func (s *fakeSecret) fetch(context.Context) (Tokens, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.fetches++
	return Tokens{Current: s.value, Previous: s.previous}, s.err
}

type fakeInvoker struct {
	payloads [][]byte
	err      error
}

func (f *fakeInvoker) InvokeAsync(_ context.Context, p []byte) error {
	f.payloads = append(f.payloads, p)
	return f.err
}

type fixture struct {
	h      *Handler
	secret *fakeSecret
	inv    *fakeInvoker
	clock  *fakeClock
	logs   *bytes.Buffer
}

func newFixture() *fixture {
	f := &fixture{
		secret: &fakeSecret{value: goodToken + "\n"},
		inv:    &fakeInvoker{},
		clock:  &fakeClock{t: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)},
		logs:   &bytes.Buffer{},
	}
	f.h = &Handler{
		Cluster: "demo",
		Secret:  NewSecretCache(f.secret.fetch, f.clock.Now, CacheOptions{}),
		Invoker: f.inv,
		Now:     f.clock.Now,
		Log:     slog.New(slog.NewJSONHandler(f.logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	}
	return f
}

func (f *fixture) call(t *testing.T, path, method, body string) events.LambdaFunctionURLResponse {
	t.Helper()
	var req events.LambdaFunctionURLRequest
	req.RawPath = path
	req.RequestContext.HTTP.Method = method
	req.RequestContext.HTTP.SourceIP = "203.0.113.7"
	req.Body = body
	resp, err := f.h.Handle(context.Background(), req)
	if err != nil {
		t.Fatalf("Handle returned error %v", err)
	}
	for _, tok := range []string{goodToken, otherToken} {
		if strings.Contains(f.logs.String(), tok) {
			t.Fatalf("a token reached the logs: %s", f.logs.String())
		}
	}
	return resp
}

func sampleReview(t *testing.T) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "admission-review-unschedulable.json"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// reviewOf builds an AdmissionReview for a pods/status UPDATE from old to
// pod, with edit applied to the request.
func reviewOf(t *testing.T, pod, old *corev1.Pod, edit func(*admissionv1.AdmissionRequest)) string {
	t.Helper()
	raw := func(p *corev1.Pod) runtime.RawExtension {
		if p == nil {
			return runtime.RawExtension{}
		}
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		return runtime.RawExtension{Raw: b}
	}
	req := &admissionv1.AdmissionRequest{
		UID:         "uid-1",
		Resource:    metav1.GroupVersionResource{Version: "v1", Resource: "pods"},
		SubResource: "status",
		Operation:   admissionv1.Update,
		Object:      raw(pod),
		OldObject:   raw(old),
	}
	if edit != nil {
		edit(req)
	}
	b, err := json.Marshal(admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  req,
	})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func pendingPod(reason string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-1", UID: "pod-uid"}}
	if reason != "" {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: reason}}
	}
	return p
}

// allowedUID asserts resp is a 200 AdmissionReview answering uid with
// allowed=true.
func allowedUID(t *testing.T, resp events.LambdaFunctionURLResponse, uid string) {
	t.Helper()
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	var out admissionv1.AdmissionReview
	if err := json.Unmarshal([]byte(resp.Body), &out); err != nil {
		t.Fatal(err)
	}
	if out.APIVersion != "admission.k8s.io/v1" || out.Kind != "AdmissionReview" || out.Response == nil ||
		!out.Response.Allowed || string(out.Response.UID) != uid || out.Request != nil {
		t.Fatalf("response %s", resp.Body)
	}
}

func TestAuthentication(t *testing.T) {
	cases := []struct {
		name, path string
		want       int
	}{
		{"good token", "/" + goodToken, 200},
		{"bad token", "/" + otherToken, 403},
		{"wrong length", "/" + goodToken[:20], 403},
		{"longer token", "/" + goodToken + "x", 403},
		{"missing token", "/", 401},
		{"empty path", "", 401},
		{"extra segment", "/" + goodToken + "/x", 401},
		{"no leading slash", goodToken, 401},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture()
			resp := f.call(t, tc.path, "POST", string(sampleReview(t)))
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.want)
			}
			if tc.want != 200 && (resp.Body != "" || len(f.inv.payloads) != 0) {
				t.Fatalf("refused request got body %q or invoked provision", resp.Body)
			}
		})
	}
}

func TestUnschedulablePodInvokesProvision(t *testing.T) {
	f := newFixture()
	resp := f.call(t, "/"+goodToken, "POST", string(sampleReview(t)))
	allowedUID(t, resp, "705ab4f5-6393-11e8-b7cc-42010a800002")
	if len(f.inv.payloads) != 1 {
		t.Fatalf("%d invocations", len(f.inv.payloads))
	}
	got, err := trigger.DecodeProvision(f.inv.payloads[0])
	if err != nil {
		t.Fatal(err)
	}
	if got.Source != trigger.SourceWebhook || got.Cluster != "demo" || !got.Time.Equal(f.clock.Now()) ||
		len(got.Pods) != 1 || got.Pods[0] != (trigger.PodRef{Namespace: "default", Name: "inflate-7d9c8b6f5-abcde", ResourceVersion: "4711"}) {
		t.Fatalf("hint %+v", got)
	}
}

func TestAlwaysAllowed(t *testing.T) {
	bound := pendingPod("Unschedulable")
	bound.Spec.NodeName = "node-1"
	cases := []struct {
		name    string
		body    string
		invokes int
	}{
		{"newly unschedulable", reviewOf(t, pendingPod("Unschedulable"), pendingPod(""), nil), 1},
		{"no old object", reviewOf(t, pendingPod("Unschedulable"), nil, nil), 1},
		{"already unschedulable", reviewOf(t, pendingPod("Unschedulable"), pendingPod("Unschedulable"), nil), 0},
		{"other reason", reviewOf(t, pendingPod("SchedulingGated"), pendingPod(""), nil), 0},
		{"no condition", reviewOf(t, pendingPod(""), pendingPod(""), nil), 0},
		{"bound pod", reviewOf(t, bound, pendingPod(""), nil), 0},
		{"dry run", reviewOf(t, pendingPod("Unschedulable"), pendingPod(""), func(r *admissionv1.AdmissionRequest) {
			dry := true
			r.DryRun = &dry
		}), 0},
		{"non-pod resource", reviewOf(t, pendingPod("Unschedulable"), pendingPod(""), func(r *admissionv1.AdmissionRequest) {
			r.Resource = metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
		}), 0},
		{"pod without status subresource", reviewOf(t, pendingPod("Unschedulable"), pendingPod(""), func(r *admissionv1.AdmissionRequest) {
			r.SubResource = ""
		}), 0},
		{"create", reviewOf(t, pendingPod("Unschedulable"), nil, func(r *admissionv1.AdmissionRequest) {
			r.Operation = admissionv1.Create
		}), 0},
		{"pod not json", reviewOf(t, nil, nil, func(r *admissionv1.AdmissionRequest) {
			r.Object = runtime.RawExtension{Raw: []byte(`{"status":7}`)}
		}), 0},
		{"old pod not json", reviewOf(t, pendingPod("Unschedulable"), nil, func(r *admissionv1.AdmissionRequest) {
			r.OldObject = runtime.RawExtension{Raw: []byte(`{"spec":"x"}`)}
		}), 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture()
			allowedUID(t, f.call(t, "/"+goodToken, "POST", tc.body), "uid-1")
			if len(f.inv.payloads) != tc.invokes {
				t.Fatalf("%d invocations, want %d", len(f.inv.payloads), tc.invokes)
			}
		})
	}
}

func TestInvokeFailureStillAllows(t *testing.T) {
	f := newFixture()
	f.inv.err = errors.New("throttled")
	allowedUID(t, f.call(t, "/"+goodToken, "POST", reviewOf(t, pendingPod("Unschedulable"), nil, nil)), "uid-1")
	if !strings.Contains(f.logs.String(), "throttled") {
		t.Fatalf("invoke error not logged: %s", f.logs.String())
	}
}

func TestBadRequests(t *testing.T) {
	big := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","pad":"` + strings.Repeat("x", 200) + `"}`
	cases := []struct {
		name, method, body string
		b64                bool
		max                int
		want               int
	}{
		{"malformed body", "POST", `{"apiVersion":`, false, 0, 400},
		{"not a review", "POST", `{"apiVersion":"v1","kind":"Pod"}`, false, 0, 400},
		{"v1beta1 review", "POST", `{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"u"}}`, false, 0, 400},
		{"no request", "POST", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, false, 0, 400},
		{"no uid", "POST", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{}}`, false, 0, 400},
		{"GET", "GET", "", false, 0, 405},
		{"too large", "POST", big, false, 100, 413},
		{"too large base64", "POST", base64.StdEncoding.EncodeToString([]byte(big)), true, 100, 413},
		{"bad base64", "POST", "!!!!", true, 0, 400},
		{"at the limit", "POST", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, false, 61, 400},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture()
			f.h.MaxBytes = tc.max
			var req events.LambdaFunctionURLRequest
			req.RawPath = "/" + goodToken
			req.RequestContext.HTTP.Method = tc.method
			req.Body, req.IsBase64Encoded = tc.body, tc.b64
			resp, err := f.h.Handle(context.Background(), req)
			if err != nil || resp.StatusCode != tc.want || resp.Body != "" {
				t.Fatalf("got %d %q %v, want %d", resp.StatusCode, resp.Body, err, tc.want)
			}
		})
	}
}

func TestBase64Body(t *testing.T) {
	f := newFixture()
	var req events.LambdaFunctionURLRequest
	req.RawPath = "/" + goodToken
	req.RequestContext.HTTP.Method = "POST"
	req.Body, req.IsBase64Encoded = base64.StdEncoding.EncodeToString(sampleReview(t)), true
	resp, err := f.h.Handle(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	allowedUID(t, resp, "705ab4f5-6393-11e8-b7cc-42010a800002")
}

func TestSecretRotationAndRefreshLimit(t *testing.T) {
	f := newFixture()
	body := reviewOf(t, pendingPod(""), nil, nil)
	allowedUID(t, f.call(t, "/"+goodToken, "POST", body), "uid-1")
	if f.secret.fetches != 1 {
		t.Fatalf("%d fetches after cold start", f.secret.fetches)
	}
	// Within the first minute a wrong token does not re-read the secret.
	for i := 0; i < 5; i++ {
		if got := f.call(t, "/"+otherToken, "POST", body).StatusCode; got != 403 {
			t.Fatalf("status %d", got)
		}
	}
	if f.secret.fetches != 1 {
		t.Fatalf("%d fetches: refresh not rate-limited", f.secret.fetches)
	}
	// The secret is set by hand (no previous version); after a minute, the
	// new token is picked up once, and the old one no longer works.
	f.secret.value = otherToken
	f.clock.Add(61 * time.Second)
	allowedUID(t, f.call(t, "/"+otherToken, "POST", body), "uid-1")
	if f.secret.fetches != 2 {
		t.Fatalf("%d fetches after rotation", f.secret.fetches)
	}
	if got := f.call(t, "/"+goodToken, "POST", body).StatusCode; got != 403 {
		t.Fatalf("old token after rotation: status %d", got)
	}
	if f.secret.fetches != 2 {
		t.Fatalf("%d fetches", f.secret.fetches)
	}
}

func TestSecretUnavailable(t *testing.T) {
	cases := []struct {
		name  string
		value string
		err   error
	}{
		{"fetch error", "", errors.New("AccessDenied")},
		{"short secret", "short", nil},
		{"empty secret", "   ", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture()
			f.secret.value, f.secret.err = tc.value, tc.err
			if got := f.call(t, "/"+goodToken, "POST", string(sampleReview(t))).StatusCode; got != 503 {
				t.Fatalf("status %d, want 503", got)
			}
			// Repaired at once, but the failure is remembered for a second.
			f.secret.value, f.secret.err = goodToken, nil
			if got := f.call(t, "/"+goodToken, "POST", string(sampleReview(t))).StatusCode; got != 503 || f.secret.fetches != 1 {
				t.Fatalf("within the backoff: status %d after %d fetches, want 503 after 1", got, f.secret.fetches)
			}
			f.clock.Add(time.Second)
			allowedUID(t, f.call(t, "/"+goodToken, "POST", string(sampleReview(t))), "705ab4f5-6393-11e8-b7cc-42010a800002")
		})
	}
}

// A flood of requests while the secret is unreadable costs a few Secrets
// Manager calls, backing off 1 s, 2 s, 4 s ... up to a minute.
func TestUnreadableSecretBacksOff(t *testing.T) {
	f := newFixture()
	f.secret.err = errors.New("ThrottlingException")
	body := string(sampleReview(t))
	var fetchTimes []time.Duration
	start := f.clock.Now()
	for i := 0; i < 600; i++ { // ten minutes, a request a second
		before := f.secret.fetches
		if got := f.call(t, "/"+goodToken, "POST", body).StatusCode; got != 503 {
			t.Fatalf("status %d", got)
		}
		if f.secret.fetches > before {
			fetchTimes = append(fetchTimes, f.clock.Now().Sub(start))
		}
		f.clock.Add(time.Second)
	}
	want := []time.Duration{0, 1, 3, 7, 15, 31, 63, 123, 183, 243, 303, 363, 423, 483, 543}
	for i := range want {
		want[i] *= time.Second
	}
	if fmt.Sprint(fetchTimes) != fmt.Sprint(want) {
		t.Fatalf("fetched at %v, want %v", fetchTimes, want)
	}
	if !strings.Contains(f.logs.String(), "next attempt after") {
		t.Fatalf("the backoff is not logged: %.300s", f.logs.String())
	}
}

// A rotation leaves the cluster with the previous token, which keeps
// working (with a warning to apply the registration again) until the next
// rotation retires it; a warm instance stops accepting a retired token
// within the cache's maximum age, without any failed request to prompt it.
func TestRotationOverlapAndMaxAge(t *testing.T) {
	const newToken = "Bq3xV8pL2mN7bR4tY6wE1uI9oA5sD0fG3hJ8kL2zX7cV4bN6"
	const newerToken = "Cq3xV8pL2mN7bR4tY6wE1uI9oA5sD0fG3hJ8kL2zX7cV4bN6"
	f := newFixture()
	body := reviewOf(t, pendingPod(""), nil, nil)
	allowedUID(t, f.call(t, "/"+goodToken, "POST", body), "uid-1")

	// Rotation: current is new, previous is the cluster's.
	f.secret.value, f.secret.previous = newToken, goodToken
	f.clock.Add(DefaultMaxAge)
	allowedUID(t, f.call(t, "/"+goodToken, "POST", body), "uid-1")
	allowedUID(t, f.call(t, "/"+newToken, "POST", body), "uid-1")
	if n := strings.Count(f.logs.String(), "previous token"); n != 1 {
		t.Fatalf("%d stale-token warnings, want 1 (at most one an hour)", n)
	}
	// The next rotation retires the cluster's token. Within the maximum
	// age the cache still holds it; after, it is refused.
	f.secret.value, f.secret.previous = newerToken, newToken
	f.clock.Add(DefaultMaxAge - time.Second)
	allowedUID(t, f.call(t, "/"+goodToken, "POST", body), "uid-1")
	fetches := f.secret.fetches
	f.clock.Add(time.Second)
	if got := f.call(t, "/"+goodToken, "POST", body).StatusCode; got != 403 {
		t.Fatalf("retired token after the maximum age: status %d", got)
	}
	if f.secret.fetches != fetches+1 {
		t.Fatalf("%d fetches, want one more for the expired cache", f.secret.fetches-fetches)
	}
	allowedUID(t, f.call(t, "/"+newToken, "POST", body), "uid-1")
	allowedUID(t, f.call(t, "/"+newerToken, "POST", body), "uid-1")
}

func TestRefreshErrorIsStillForbidden(t *testing.T) {
	f := newFixture()
	allowedUID(t, f.call(t, "/"+goodToken, "POST", string(sampleReview(t))), "705ab4f5-6393-11e8-b7cc-42010a800002")
	f.secret.err = errors.New("throttled")
	f.clock.Add(2 * time.Minute)
	if got := f.call(t, "/"+otherToken, "POST", string(sampleReview(t))).StatusCode; got != 403 {
		t.Fatalf("status %d, want 403", got)
	}
}

type panickingInvoker struct{}

func (panickingInvoker) InvokeAsync(context.Context, []byte) error { panic("boom") }

func TestPanicBecomes500(t *testing.T) {
	f := newFixture()
	f.h.Invoker = panickingInvoker{}
	if got := f.call(t, "/"+goodToken, "POST", string(sampleReview(t))).StatusCode; got != 500 {
		t.Fatalf("status %d", got)
	}
}

func TestEqualTokens(t *testing.T) {
	if !equalTokens(goodToken, goodToken) || equalTokens(goodToken, otherToken) || equalTokens(goodToken, "") || equalTokens(goodToken, goodToken[:10]) {
		t.Fatal("equalTokens is wrong")
	}
}

func FuzzHandle(f *testing.F) {
	b, err := os.ReadFile(filepath.Join("testdata", "admission-review-unschedulable.json"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add("/"+goodToken, string(b))
	f.Add("/x", "{}")
	f.Fuzz(func(t *testing.T, path, body string) {
		fx := newFixture()
		var req events.LambdaFunctionURLRequest
		req.RawPath, req.Body = path, body
		req.RequestContext.HTTP.Method = "POST"
		resp, err := fx.h.Handle(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode == 200 && path != "/"+goodToken {
			t.Fatalf("path %q authenticated", path)
		}
		if resp.StatusCode == 500 {
			t.Fatalf("panic for body %q", body)
		}
	})
}

// A pod whose spec carries a quantity the quantity parser spins on
// ("1e-999999999") is still answered: the webhook reads only the pod's
// identity, node and conditions, so the spec is never parsed.
func TestPodSpecIsNotParsed(t *testing.T) {
	pod := pendingPod("Unschedulable")
	b, err := json.Marshal(pod)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	m["spec"] = map[string]any{"containers": []any{map[string]any{"name": "c",
		"resources": map[string]any{"requests": map[string]any{"cpu": "1e-999999999"}}}}}
	raw, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	body := reviewOf(t, nil, pendingPod(""), func(r *admissionv1.AdmissionRequest) { r.Object = runtime.RawExtension{Raw: raw} })
	f := newFixture()
	allowedUID(t, f.call(t, "/"+goodToken, "POST", body), "uid-1")
	if len(f.inv.payloads) != 1 {
		t.Fatalf("%d provision hints, want 1 for the pending pod", len(f.inv.payloads))
	}
}
