package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
)

// fakeAPIServer serves lists of n objects in pages of the requested size,
// in JSON, and records the paths and queries it was asked.
type fakeAPIServer struct {
	mu       sync.Mutex
	requests []string
	pods     int
	fail     string // resource that answers 403
}

func (s *fakeAPIServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests = append(s.requests, r.URL.Path+"?"+r.URL.RawQuery)
	s.mu.Unlock()
	if !strings.Contains(r.Header.Get("Accept"), "application/vnd.kubernetes.protobuf") {
		http.Error(w, "want protobuf offered", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	resource := r.URL.Path[strings.LastIndexByte(r.URL.Path, '/')+1:]
	if resource == s.fail {
		w.WriteHeader(http.StatusForbidden)
		_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: "Failure",
			Reason: metav1.StatusReasonForbidden, Code: 403, Message: resource + " is forbidden"})
		return
	}
	limit, start := 0, 0
	fmt.Sscan(r.URL.Query().Get("limit"), &limit)
	fmt.Sscan(r.URL.Query().Get("continue"), &start)
	switch resource {
	case "pods":
		l := corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}}
		for i := start; i < min(start+limit, s.pods); i++ {
			l.Items = append(l.Items, corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Namespace: "default"}})
		}
		if start+limit < s.pods {
			l.Continue = fmt.Sprint(start + limit)
		}
		_ = json.NewEncoder(w).Encode(l)
	case "nodes":
		_ = json.NewEncoder(w).Encode(corev1.NodeList{TypeMeta: metav1.TypeMeta{Kind: "NodeList", APIVersion: "v1"},
			Items: []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}}})
	case "daemonsets":
		_ = json.NewEncoder(w).Encode(appsv1.DaemonSetList{TypeMeta: metav1.TypeMeta{Kind: "DaemonSetList", APIVersion: "apps/v1"},
			Items: []appsv1.DaemonSet{{ObjectMeta: metav1.ObjectMeta{Name: "ds", Namespace: "kube-system"}}}})
	default:
		http.NotFound(w, r)
	}
}

func TestListsPageThroughEveryNamespace(t *testing.T) {
	fake := &fakeAPIServer{pods: 5}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	c, err := New(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	c.pageSize = 2
	ctx := context.Background()
	pods, err := c.Pods(ctx)
	if err != nil || len(pods) != 5 || pods[4].Name != "p4" {
		t.Fatalf("pods %d (%v), want 5", len(pods), err)
	}
	nodes, err := c.Nodes(ctx)
	if err != nil || len(nodes) != 1 || nodes[0].Name != "n1" {
		t.Fatalf("nodes %v, %v", nodes, err)
	}
	ds, err := c.DaemonSets(ctx)
	if err != nil || len(ds) != 1 || ds[0].Namespace != "kube-system" {
		t.Fatalf("daemonsets %v, %v", ds, err)
	}
	want := []string{
		"/api/v1/pods?limit=2", "/api/v1/pods?continue=2&limit=2", "/api/v1/pods?continue=4&limit=2",
		"/api/v1/nodes?limit=2", "/apis/apps/v1/daemonsets?limit=2",
	}
	if strings.Join(fake.requests, " ") != strings.Join(want, " ") {
		t.Errorf("requests %v\nwant %v", fake.requests, want)
	}
}

func TestListErrorsNameTheResource(t *testing.T) {
	srv := httptest.NewServer(&fakeAPIServer{fail: "nodes"})
	t.Cleanup(srv.Close)
	c, err := New(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Nodes(context.Background())
	if err == nil || !strings.Contains(err.Error(), "list nodes: nodes is forbidden") {
		t.Errorf("err = %v, want the API server's message with the resource", err)
	}
}
