package kube

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestEventNames(t *testing.T) {
	ref := ObjectRef{Kind: "Pod", Namespace: "default", Name: "web-1", UID: "u1"}
	a := eventName(ref, "Normal", "Nominated", "to x")
	if a != eventName(ref, "Normal", "Nominated", "to x") || !strings.HasPrefix(a, "web-1.") {
		t.Fatalf("name %q is not deterministic", a)
	}
	for _, other := range []string{
		eventName(ref, "Normal", "Nominated", "to y"), eventName(ref, "Warning", "Nominated", "to x"),
		eventName(ObjectRef{Kind: "Pod", Namespace: "default", Name: "web-1", UID: "u2"}, "Normal", "Nominated", "to x"),
	} {
		if other == a {
			t.Errorf("distinct events share the name %q", a)
		}
	}
	long := eventName(ObjectRef{Name: strings.Repeat("x", 300)}, "Normal", "R", "m")
	if len(long) > 253 {
		t.Errorf("name of %d characters", len(long))
	}
}

// The first event creates; a repeat patches count and lastTimestamp; an
// event another container created is found (409) and bumped.
func TestRecorderAggregates(t *testing.T) {
	existing := false
	f := &recorder{}
	f.handle = func(w http.ResponseWriter, r *http.Request, n int) {
		switch r.Method {
		case http.MethodPost:
			if existing {
				writeStatus(w, 409, metav1.StatusReasonAlreadyExists, "exists")
				return
			}
			w.WriteHeader(201)
			_, _ = w.Write([]byte(`{"kind":"Event","apiVersion":"v1","metadata":{"name":"e"}}`))
		case http.MethodGet:
			_, _ = w.Write([]byte(`{"kind":"Event","apiVersion":"v1","metadata":{"name":"e"},"count":4}`))
		case http.MethodPatch:
			_, _ = w.Write([]byte(`{"kind":"Event","apiVersion":"v1","metadata":{"name":"e"}}`))
		}
	}
	kc := newClient(t, f)
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rec := NewRecorder(kc, RecorderOptions{Instance: "provision", Now: func() time.Time { return clock }})
	node := RefForNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "ip-10-0-1-4", UID: "n1"}})
	ctx := context.Background()
	for i := 0; i < 2; i++ {
		if err := rec.Event(ctx, node, corev1.EventTypeNormal, "Registered", "registered"); err != nil {
			t.Fatal(err)
		}
	}
	if f.calls[0] != "POST /api/v1/namespaces/default/events" || !strings.HasPrefix(f.calls[1], "PATCH /api/v1/namespaces/default/events/ip-10-0-1-4.") ||
		!strings.Contains(f.bodies[1], `"count":2`) {
		t.Fatalf("calls %v bodies %v", f.calls, f.bodies[1:])
	}
	var ev corev1.Event
	if err := decodeBody(f.bodies[0], &ev); err != nil || ev.Count != 1 || ev.Source.Component != Component ||
		ev.ReportingController != Component || ev.ReportingInstance != "provision" || ev.InvolvedObject.Kind != "Node" {
		t.Fatalf("created %+v (%v)", ev, err)
	}
	existing = true
	other := NewRecorder(kc, RecorderOptions{Now: func() time.Time { return clock }})
	if err := other.Event(ctx, node, corev1.EventTypeNormal, "Registered", "registered"); err != nil {
		t.Fatal(err)
	}
	if n := len(f.calls); f.calls[n-2] != "GET /api/v1/namespaces/default/events/"+eventName(node, "Normal", "Registered", "registered") || !strings.Contains(f.bodies[n-1], `"count":5`) {
		t.Fatalf("calls %v, last body %s", f.calls, f.bodies[n-1])
	}
}

func TestRecorderRateLimit(t *testing.T) {
	f := &recorder{handle: func(w http.ResponseWriter, r *http.Request, n int) {
		w.WriteHeader(201)
		_, _ = w.Write([]byte(`{"kind":"Event","apiVersion":"v1","metadata":{"name":"e"}}`))
	}}
	clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rec := NewRecorder(newClient(t, f), RecorderOptions{Burst: 3, Refill: time.Minute, Now: func() time.Time { return clock }})
	a := ObjectRef{Kind: "Pod", Namespace: "default", Name: "a"}
	b := ObjectRef{Kind: "Pod", Namespace: "default", Name: "b"}
	for i := 0; i < 5; i++ {
		_ = rec.Eventf(context.Background(), a, "Normal", "R", "m%d", i)
	}
	_ = rec.Event(context.Background(), b, "Normal", "R", "m")
	if rec.Dropped() != 2 || len(f.calls) != 4 {
		t.Fatalf("dropped %d, %d writes; want 2 and 4 (a's burst of 3, b's own bucket)", rec.Dropped(), len(f.calls))
	}
	clock = clock.Add(time.Minute)
	_ = rec.Event(context.Background(), a, "Normal", "R", "later")
	if len(f.calls) != 5 {
		t.Fatalf("a's bucket did not refill: %d writes", len(f.calls))
	}
}

// An event about a NodeClaim named without its UID (the interruption,
// termination and consolidation flows read no NodeClaim object) gets the
// object's UID, read once per name, so that `kubectl describe nodeclaim`
// lists it; a NodeClaim that does not exist is named as it was.
func TestRecorderNodeClaimEventsNameTheUID(t *testing.T) {
	f := &recorder{}
	f.handle = func(w http.ResponseWriter, r *http.Request, n int) {
		switch {
		case r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/nodeclaims/default-abc"):
			_, _ = w.Write([]byte(`{"kind":"NodeClaim","apiVersion":"karpenter.sh/v1","metadata":{"name":"default-abc","uid":"nc-uid-1"}}`))
		case r.Method == http.MethodGet:
			writeStatus(w, 404, metav1.StatusReasonNotFound, "not found")
		default:
			w.WriteHeader(201)
			_, _ = w.Write([]byte(`{"kind":"Event","apiVersion":"v1","metadata":{"name":"e"}}`))
		}
	}
	rec := NewRecorder(newClient(t, f), RecorderOptions{})
	ctx := context.Background()
	claim := ObjectRef{APIVersion: "karpenter.sh/v1", Kind: "NodeClaim", Name: "default-abc"}
	for _, msg := range []string{"one", "two"} {
		if err := rec.Event(ctx, claim, corev1.EventTypeWarning, "SpotInterrupted", msg); err != nil {
			t.Fatal(err)
		}
	}
	if err := rec.Event(ctx, ObjectRef{APIVersion: "karpenter.sh/v1", Kind: "NodeClaim", Name: "gone"}, corev1.EventTypeNormal, "R", "m"); err != nil {
		t.Fatal(err)
	}
	var uids []string
	gets := 0
	for i, c := range f.calls {
		if strings.HasPrefix(c, "GET ") {
			gets++
			continue
		}
		var ev corev1.Event
		if err := decodeBody(f.bodies[i], &ev); err != nil {
			t.Fatal(err)
		}
		uids = append(uids, string(ev.InvolvedObject.UID))
	}
	if want := []string{"nc-uid-1", "nc-uid-1", ""}; strings.Join(uids, ",") != strings.Join(want, ",") || gets != 2 {
		t.Fatalf("involved UIDs %q with %d reads (calls %v); want %q with 2 (one per name)", uids, gets, f.calls, want)
	}
}
