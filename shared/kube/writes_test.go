package kube

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
)

// recorder is a fake API server: handle answers each request; every request
// (method, path, body) is kept.
type recorder struct {
	mu     sync.Mutex
	calls  []string
	bodies []string
	handle func(w http.ResponseWriter, r *http.Request, n int)
}

func (f *recorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.calls = append(f.calls, r.Method+" "+r.URL.Path)
	f.bodies = append(f.bodies, string(body))
	n := len(f.calls)
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	f.handle(w, r, n)
}

func newClient(t *testing.T, f http.Handler) *Client {
	t.Helper()
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	// JSON requests: the fake decodes what a real server would.
	c, err := New(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// decodeBody decodes a request body as the API server would (protobuf or
// JSON) into obj.
func decodeBody(body string, obj runtime.Object) error {
	scheme := runtime.NewScheme()
	_ = corev1.AddToScheme(scheme)
	_ = policyv1.AddToScheme(scheme)
	metav1.AddToGroupVersion(scheme, schema.GroupVersion{Version: "v1"})
	_, _, err := serializer.NewCodecFactory(scheme).UniversalDeserializer().Decode([]byte(body), nil, obj)
	return err
}

func writeStatus(w http.ResponseWriter, code int, reason metav1.StatusReason, msg string, causes ...metav1.StatusCause) {
	w.WriteHeader(code)
	s := metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: "Failure", Code: int32(code), Reason: reason, Message: msg}
	if len(causes) > 0 {
		s.Details = &metav1.StatusDetails{Causes: causes}
	}
	_ = json.NewEncoder(w).Encode(s)
}

func TestEvict(t *testing.T) {
	pdbCause := metav1.StatusCause{Type: policyv1.DisruptionBudgetCause, Message: "The disruption budget web needs 5 healthy pods and has 5"}
	for _, c := range []struct {
		name      string
		answer    func(w http.ResponseWriter)
		pdb, fail bool
	}{
		{"accepted", func(w http.ResponseWriter) {
			w.WriteHeader(201)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Success"}`))
		}, false, false},
		{"gone", func(w http.ResponseWriter) { writeStatus(w, 404, metav1.StatusReasonNotFound, "pods \"p\" not found") }, false, false},
		{"blocked by budget", func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "10")
			writeStatus(w, 429, metav1.StatusReasonTooManyRequests, "Cannot evict pod as it would violate the pod's disruption budget.", pdbCause)
		}, true, true},
		{"several budgets", func(w http.ResponseWriter) {
			writeStatus(w, 500, metav1.StatusReasonInternalError, "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support.")
		}, true, true},
		{"throttled by the API server", func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "1")
			writeStatus(w, 429, metav1.StatusReasonTooManyRequests, "Too many requests, please try again later.")
		}, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := &recorder{handle: func(w http.ResponseWriter, r *http.Request, n int) { c.answer(w) }}
			kc := newClient(t, f)
			grace := 7 * time.Second
			err := kc.Evict(context.Background(), "ns", "p", EvictOptions{Timeout: 2 * time.Second, GracePeriod: &grace, UID: "u1"})
			if (err != nil) != c.fail || errors.Is(err, ErrBlockedByPDB) != c.pdb {
				t.Fatalf("err %v: want fail %v, PDB %v", err, c.fail, c.pdb)
			}
			if len(f.calls) != 1 || f.calls[0] != "POST /api/v1/namespaces/ns/pods/p/eviction" {
				t.Fatalf("calls %v: want exactly one eviction (no client-side retries)", f.calls)
			}
			var ev policyv1.Eviction
			if err := decodeBody(f.bodies[0], &ev); err != nil || ev.Name != "p" || ev.DeleteOptions == nil ||
				*ev.DeleteOptions.GracePeriodSeconds != 7 || *ev.DeleteOptions.Preconditions.UID != "u1" {
				t.Fatalf("eviction body %s (%v)", f.bodies[0], err)
			}
			var ee *EvictionError
			if c.fail && (!errors.As(err, &ee) || ee.Namespace != "ns" || ee.Name != "p") {
				t.Fatalf("err %v is not an *EvictionError for ns/p", err)
			}
		})
	}
}

func TestEvictTimesOut(t *testing.T) {
	block := make(chan struct{})
	t.Cleanup(func() { close(block) })
	f := &recorder{handle: func(w http.ResponseWriter, r *http.Request, n int) {
		select {
		case <-block:
		case <-r.Context().Done():
		}
	}}
	kc := newClient(t, f)
	start := time.Now()
	err := kc.Evict(context.Background(), "ns", "p", EvictOptions{Timeout: 100 * time.Millisecond})
	if err == nil || errors.Is(err, ErrBlockedByPDB) || time.Since(start) > 5*time.Second {
		t.Fatalf("err %v after %s, want a deadline error", err, time.Since(start))
	}
}

// A taint write that loses a race reads the node again and retries with the
// new resourceVersion, so the other writer's change is kept.
func TestTaintRetriesOnConflict(t *testing.T) {
	rv := 1
	f := &recorder{}
	f.handle = func(w http.ResponseWriter, r *http.Request, n int) {
		switch r.Method {
		case http.MethodGet:
			taints := []corev1.Taint{}
			if rv == 2 {
				taints = append(taints, corev1.Taint{Key: "other", Effect: corev1.TaintEffectNoSchedule})
			}
			_ = json.NewEncoder(w).Encode(corev1.Node{TypeMeta: metav1.TypeMeta{Kind: "Node", APIVersion: "v1"},
				ObjectMeta: metav1.ObjectMeta{Name: "n", ResourceVersion: string(rune('0' + rv))}, Spec: corev1.NodeSpec{Taints: taints}})
		case http.MethodPatch:
			if rv == 1 {
				rv = 2 // someone else wrote in between
				writeStatus(w, 409, metav1.StatusReasonConflict, "the object has been modified")
				return
			}
			_, _ = w.Write([]byte(`{"kind":"Node","apiVersion":"v1","metadata":{"name":"n"}}`))
		}
	}
	kc := newClient(t, f)
	changed, err := kc.Taint(context.Background(), "n", corev1.Taint{Key: "karpenter.sh/disrupted", Effect: corev1.TaintEffectNoSchedule})
	if err != nil || !changed {
		t.Fatalf("changed %v, %v", changed, err)
	}
	want := []string{"GET /api/v1/nodes/n", "PATCH /api/v1/nodes/n", "GET /api/v1/nodes/n", "PATCH /api/v1/nodes/n"}
	if strings.Join(f.calls, ",") != strings.Join(want, ",") {
		t.Fatalf("calls %v", f.calls)
	}
	last := f.bodies[3]
	if !strings.Contains(last, `"resourceVersion":"2"`) || !strings.Contains(last, `"key":"other"`) || !strings.Contains(last, `"key":"karpenter.sh/disrupted"`) {
		t.Fatalf("final patch %s: want both taints and resourceVersion 2", last)
	}
}

func TestDeletePodOptions(t *testing.T) {
	f := &recorder{handle: func(w http.ResponseWriter, r *http.Request, n int) {
		writeStatus(w, 409, metav1.StatusReasonConflict, "precondition failed: UID in precondition: u1, UID in object meta: u2")
	}}
	kc := newClient(t, f)
	zero := time.Duration(0)
	if err := kc.DeletePod(context.Background(), "ns", "p", DeleteOptions{GracePeriod: &zero, UID: "u1"}); err != nil {
		t.Fatalf("a replaced pod is not an error: %v", err)
	}
	var del metav1.DeleteOptions
	if err := decodeBody(f.bodies[0], &del); err != nil || f.calls[0] != "DELETE /api/v1/namespaces/ns/pods/p" ||
		*del.GracePeriodSeconds != 0 || *del.Preconditions.UID != "u1" {
		t.Fatalf("%v %+v %v", f.calls, del, err)
	}
}

// A grace period is sent in whole seconds, rounded up: 0.9 s truncated
// would be 0, a force delete.
func TestGracePeriodRoundsUp(t *testing.T) {
	for _, c := range []struct {
		grace time.Duration
		want  int64
	}{{900 * time.Millisecond, 1}, {1500 * time.Millisecond, 2}, {30 * time.Second, 30}, {0, 0}} {
		f := &recorder{handle: func(w http.ResponseWriter, r *http.Request, n int) {
			w.WriteHeader(200)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Success"}`))
		}}
		kc := newClient(t, f)
		g := c.grace
		if err := kc.DeletePod(context.Background(), "ns", "p", DeleteOptions{GracePeriod: &g}); err != nil {
			t.Fatal(err)
		}
		if err := kc.Evict(context.Background(), "ns", "p", EvictOptions{GracePeriod: &g}); err != nil {
			t.Fatal(err)
		}
		var del metav1.DeleteOptions
		var ev policyv1.Eviction
		if err := decodeBody(f.bodies[0], &del); err != nil || del.GracePeriodSeconds == nil || *del.GracePeriodSeconds != c.want {
			t.Errorf("delete with %v: gracePeriodSeconds %v (%v), want %d", c.grace, seconds(del.GracePeriodSeconds), err, c.want)
		}
		if err := decodeBody(f.bodies[1], &ev); err != nil || ev.DeleteOptions == nil || seconds(ev.DeleteOptions.GracePeriodSeconds) != c.want {
			t.Errorf("evict with %v: %+v (%v), want gracePeriodSeconds %d", c.grace, ev.DeleteOptions, err, c.want)
		}
	}
}

func seconds(s *int64) any {
	if s == nil {
		return nil
	}
	return *s
}
