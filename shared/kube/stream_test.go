package kube

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/rest"
)

// pagedServer serves pods and nodes in the API server's protobuf, a page
// of limit objects at a time; every other resource is an empty JSON list.
type pagedServer struct {
	mu     sync.Mutex
	pods   []corev1.Pod
	nodes  []corev1.Node
	pages  int
	goneAt int // the page (1-based) answered 410 Gone; 0: none
}

func (s *pagedServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	scheme := runtime.NewScheme()
	_ = corev1.AddToScheme(scheme)
	enc := protobuf.NewSerializer(scheme, scheme)
	q := r.URL.Query()
	limit, _ := strconv.Atoi(q.Get("limit"))
	from, _ := strconv.Atoi(q.Get("continue"))
	var list runtime.Object
	switch r.URL.Path {
	case "/api/v1/pods":
		s.pages++
		if s.pages == s.goneAt {
			writeStatus(w, http.StatusGone, metav1.StatusReasonExpired, "continue token expired")
			return
		}
		l := &corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, ListMeta: metav1.ListMeta{ResourceVersion: "7"}}
		to := min(from+limit, len(s.pods))
		l.Items = s.pods[from:to]
		if to < len(s.pods) {
			l.Continue = strconv.Itoa(to)
		}
		list = l
	case "/api/v1/nodes":
		list = &corev1.NodeList{TypeMeta: metav1.TypeMeta{Kind: "NodeList", APIVersion: "v1"}, ListMeta: metav1.ListMeta{ResourceVersion: "7"}, Items: s.nodes}
	case "/apis/apps/v1/daemonsets", "/apis/policy/v1/poddisruptionbudgets", "/api/v1/persistentvolumeclaims",
		"/api/v1/persistentvolumes", "/apis/storage.k8s.io/v1/storageclasses":
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"kind":"List","apiVersion":"v1","metadata":{"resourceVersion":"7"},"items":[]}`)
		return
	default:
		writeStatus(w, http.StatusNotFound, metav1.StatusReasonNotFound, "not found")
		return
	}
	w.Header().Set("Content-Type", runtime.ContentTypeProtobuf)
	if err := enc.Encode(list, w); err != nil {
		panic(err)
	}
}

func newPagedServer(t *testing.T, pods int) (*pagedServer, *Cache) {
	t.Helper()
	s := &pagedServer{}
	for i := 0; i < pods; i++ {
		s.pods = append(s.pods, corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i), Namespace: "default", ResourceVersion: "5",
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
				Annotations:   map[string]string{AnnotationDoNotDisrupt: "true", "big": "x"},
				Labels:        map[string]string{"app": []string{"web", "db"}[i/4]}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img",
				Env: []corev1.EnvVar{{Name: "A", Value: "b"}}}}},
		})
	}
	s.nodes = []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: corev1.NodeStatus{
		Images: []corev1.ContainerImage{{Names: []string{"img"}}}}}}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	c, err := New(&rest.Config{Host: srv.URL, QPS: 1000, Burst: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return s, NewCache(c, CacheOptions{PageSize: 2, ListBelow: 1})
}

func TestCacheListsProtobufPagesOneObjectAtATime(t *testing.T) {
	s, c := newPagedServer(t, 5)
	v, err := c.Sync(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(names(v)) != "[p0 p1 p2 p3 p4]" || s.pages != 3 || v.ResourceVersion != "7" {
		t.Fatalf("pods %v in %d pages at %q: want 5 in 3 pages at 7", names(v), s.pages, v.ResourceVersion)
	}
	for _, p := range v.Pods {
		if p.ManagedFields != nil || len(p.Annotations) != 1 || p.Spec.Containers[0].Env != nil || p.Spec.Containers[0].Image != "" {
			t.Fatalf("pod %s not trimmed: %+v", p.Name, p)
		}
	}
	if len(v.Nodes) != 1 || v.Nodes[0].Status.Images != nil {
		t.Fatalf("nodes %+v: want n1 without its images", v.Nodes)
	}
}

func TestCacheListFailsOnAnExpiredContinueToken(t *testing.T) {
	s, c := newPagedServer(t, 5)
	s.goneAt = 2
	if _, err := c.Sync(context.Background()); err == nil {
		t.Fatal("a list whose second page is gone succeeded")
	}
	// The next Sync lists again, from the first page.
	s.mu.Lock()
	s.goneAt, s.pages = 0, 0
	s.mu.Unlock()
	v, err := c.Sync(context.Background())
	if err != nil || len(v.Pods) != 5 || s.pages != 3 {
		t.Fatalf("after the failure: %d pods in %d pages (%v)", len(v.Pods), s.pages, err)
	}
}

func TestCacheListSharesWhatPodsHaveAlike(t *testing.T) {
	s, c := newPagedServer(t, 5)
	v, err := c.Sync(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	// Each pod is what it would be decoded and trimmed alone.
	for i, p := range v.Pods {
		b, err := s.pods[i].Marshal()
		if err != nil {
			t.Fatal(err)
		}
		var alone corev1.Pod
		if err := alone.Unmarshal(b); err != nil {
			t.Fatal(err)
		}
		TrimPod(&alone)
		if !reflect.DeepEqual(*p, alone) {
			t.Fatalf("pod %s shared differs from alone:\n%+v\n%+v", p.Name, *p, alone)
		}
	}
	same := func(a, b any) bool { return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer() }
	p := v.Pods
	if !same(p[0].Spec.Containers, p[4].Spec.Containers) || !same(p[0].Labels, p[3].Labels) {
		t.Errorf("the containers of p0 and p4, or the labels of p0 and p3, are copies: want one shared value")
	}
	if same(p[0].Labels, p[4].Labels) || p[4].Labels["app"] != "db" {
		t.Errorf("p4's labels %v are p0's %v", p[4].Labels, p[0].Labels)
	}
}
