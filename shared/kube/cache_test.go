package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// watchServer is a fake API server of pods with a revision counter and an
// event log; every other resource is an empty list, Karpenter's are absent.
type watchServer struct {
	mu        sync.Mutex
	rev       int
	pods      map[string]corev1.Pod
	log       []event
	compacted int  // watches from before this revision get 410
	closeAt   int  // a watch stops after events up to this revision (0: send all)
	bookmark  bool // after the events, send a bookmark at the current revision
	watches   int
	lists     int
	barriers  int
}

type event struct {
	Type   string     `json:"type"`
	Object corev1.Pod `json:"object"`
}

func (s *watchServer) write(typ, name string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rev++
	p := corev1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", ResourceVersion: strconv.Itoa(s.rev),
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}}}
	if typ == "DELETED" {
		delete(s.pods, name)
	} else {
		s.pods[name] = p
	}
	s.log = append(s.log, event{typ, p})
}

// other is a write to another resource: the revision moves, pods do not.
func (s *watchServer) other() { s.mu.Lock(); s.rev++; s.mu.Unlock() }

func (s *watchServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	q := r.URL.Query()
	switch r.URL.Path {
	case "/api/v1/pods":
	case "/api/v1/namespaces/" + barrierNamespace + "/pods": // the barrier
		s.barriers++
		fmt.Fprintf(w, `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"%d"},"items":[]}`, s.rev)
		return
	case "/api/v1/nodes", "/apis/apps/v1/daemonsets", "/apis/policy/v1/poddisruptionbudgets",
		"/api/v1/persistentvolumeclaims", "/api/v1/persistentvolumes", "/apis/storage.k8s.io/v1/storageclasses":
		fmt.Fprintf(w, `{"kind":"List","apiVersion":"v1","metadata":{"resourceVersion":"%d"},"items":[]}`, s.rev)
		return
	default:
		writeStatus(w, 404, metav1.StatusReasonNotFound, "not found")
		return
	}
	if q.Get("watch") != "true" {
		s.lists++
		l := corev1.PodList{TypeMeta: metav1.TypeMeta{Kind: "PodList", APIVersion: "v1"}, ListMeta: metav1.ListMeta{ResourceVersion: strconv.Itoa(s.rev)}}
		for _, p := range s.pods {
			l.Items = append(l.Items, p)
		}
		if q.Get("limit") == "1" && len(l.Items) > 1 {
			l.Items = l.Items[:1]
		}
		_ = json.NewEncoder(w).Encode(l)
		return
	}
	s.watches++
	from, _ := strconv.Atoi(q.Get("resourceVersion"))
	if from < s.compacted {
		writeStatus(w, 410, metav1.StatusReasonExpired, "too old resource version")
		return
	}
	enc := json.NewEncoder(w)
	last := from
	for _, e := range s.log {
		rv, _ := strconv.Atoi(e.Object.ResourceVersion)
		if rv <= from || (s.closeAt > 0 && rv > s.closeAt) {
			continue
		}
		_ = enc.Encode(e)
		last = rv
	}
	if s.bookmark && (s.closeAt == 0 || s.rev <= s.closeAt) {
		_ = enc.Encode(event{"BOOKMARK", corev1.Pod{TypeMeta: metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{ResourceVersion: strconv.Itoa(s.rev)}}})
	}
	_ = last
	s.closeAt = 0 // the next watch sends everything
}

func newWatchServer(t *testing.T) (*watchServer, *Cache) {
	t.Helper()
	s := &watchServer{pods: map[string]corev1.Pod{}, rev: 10, bookmark: true}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	c, err := New(&rest.Config{Host: srv.URL, QPS: 1000, Burst: 1000})
	if err != nil {
		t.Fatal(err)
	}
	return s, NewCache(c, CacheOptions{ListBelow: 1})
}

func names(v *View) []string {
	var out []string
	for _, p := range v.Pods {
		out = append(out, p.Name)
	}
	return out
}

func TestCacheWatchesToTheBarrier(t *testing.T) {
	s, c := newWatchServer(t)
	ctx := context.Background()
	s.write("ADDED", "a")
	v1, err := c.Sync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st := v1.Stats.Resources["pods"]; st.Mode != "list" || st.Reason != "cold" || fmt.Sprint(names(v1)) != "[a]" {
		t.Fatalf("cold sync %+v %v", st, names(v1))
	}
	if v1.Pods[0].ManagedFields != nil {
		t.Errorf("listed pods are not trimmed")
	}
	if v1.KarpenterCRDs || v1.Invalid != nil {
		t.Errorf("CRDs %v, invalid %v: want not installed", v1.KarpenterCRDs, v1.Invalid)
	}

	// A pod added and one deleted: the watch's events reach the barrier.
	s.write("ADDED", "b")
	s.write("DELETED", "a")
	v2, err := c.Sync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st := v2.Stats.Resources["pods"]; st.Mode != "watch" || st.Events != 2 || fmt.Sprint(names(v2)) != "[b]" || v2.Pods[0].ManagedFields != nil {
		t.Fatalf("warm sync %+v %v", st, names(v2))
	}
	if fmt.Sprint(names(v1)) != "[a]" {
		t.Errorf("an earlier View changed: %v", names(v1))
	}

	// Only other objects changed: a bookmark at the barrier proves it.
	s.other()
	v3, err := c.Sync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st := v3.Stats.Resources["pods"]; st.Mode != "watch" || st.Events != 1 || fmt.Sprint(names(v3)) != "[b]" {
		t.Fatalf("quiet sync %+v %v", st, names(v3))
	}

	// A watch that ends before the barrier is opened again.
	s.write("ADDED", "c")
	s.mu.Lock()
	s.closeAt = s.rev
	s.mu.Unlock()
	s.write("ADDED", "d")
	watches := s.watches
	v4, err := c.Sync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st := v4.Stats.Resources["pods"]; st.Mode != "watch" || fmt.Sprint(names(v4)) != "[b c d]" || s.watches-watches != 2 {
		t.Fatalf("reopened watch: %+v %v, %d watches", st, names(v4), s.watches-watches)
	}

	// Nothing changed anywhere: a barrier read and no watch at all.
	watches, barriers, lists := s.watches, s.barriers, s.lists
	if _, err := c.Sync(ctx); err != nil || s.watches != watches || s.barriers != barriers+1 || s.lists != lists {
		t.Fatalf("idle sync: %d watches, %d barriers, %d lists (%v)", s.watches-watches, s.barriers-barriers, s.lists-lists, err)
	}

	// The revision left the server's window: 410, then a list.
	s.write("ADDED", "e")
	s.mu.Lock()
	s.compacted = s.rev
	s.mu.Unlock()
	v5, err := c.Sync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st := v5.Stats.Resources["pods"]; st.Mode != "list" || st.Reason != "gone" || fmt.Sprint(names(v5)) != "[b c d e]" {
		t.Fatalf("after 410: %+v %v", st, names(v5))
	}
}

func TestCacheListsSmallResources(t *testing.T) {
	s, c := newWatchServer(t)
	c.opts.ListBelow = 10
	s.write("ADDED", "a")
	for i := 0; i < 2; i++ {
		v, err := c.Sync(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"cold", "small"}[i]
		if st := v.Stats.Resources["pods"]; st.Mode != "list" || st.Reason != want {
			t.Fatalf("sync %d: %+v, want a list (%s)", i, st, want)
		}
	}
	if s.watches != 0 {
		t.Fatalf("%d watches of a small resource", s.watches)
	}
}

func TestPodsOnNodeIndex(t *testing.T) {
	s, c := newWatchServer(t)
	s.mu.Lock()
	for i, node := range []string{"n1", "n2", "n1", ""} {
		s.rev++
		name := fmt.Sprintf("p%d", i)
		s.pods[name] = corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"}, Spec: corev1.PodSpec{NodeName: node}}
	}
	s.mu.Unlock()
	v, err := c.Sync(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got := func(node string) string {
		var out []string
		for _, p := range v.PodsOnNode(node) {
			out = append(out, p.Name)
		}
		return fmt.Sprint(out)
	}
	if got("n1") != "[p0 p2]" || got("n2") != "[p1]" || got("n3") != "[]" {
		t.Fatalf("n1 %s n2 %s n3 %s", got("n1"), got("n2"), got("n3"))
	}
}

func TestCacheExpectEndsOnTheHintedPods(t *testing.T) {
	cases := []struct {
		name string
		// change writes to the fake server after the cold Sync; it returns
		// the hints of the trigger.
		change func(s *watchServer, c *Cache) []PodHint
		// hinted: the pods' catch-up ends short of its barrier (else at it).
		hinted bool
		want   string
	}{
		{"a new pod, named", func(s *watchServer, c *Cache) []PodHint {
			s.write("ADDED", "b")
			s.other() // a lease renewed: the barrier is past the pod
			return []PodHint{{Namespace: "default", Name: "b"}}
		}, true, "[a b]"},
		{"a changed pod, with the revision it had", func(s *watchServer, c *Cache) []PodHint {
			rv := s.pods["a"].ResourceVersion
			s.write("MODIFIED", "a")
			s.other()
			return []PodHint{{Namespace: "default", Name: "a", ResourceVersion: rv}}
		}, true, "[a]"},
		{"a deleted pod", func(s *watchServer, c *Cache) []PodHint {
			s.write("DELETED", "a")
			s.other()
			return []PodHint{{Namespace: "default", Name: "a"}}
		}, true, "[]"},
		{"two pods, one of them unchanged: the barrier", func(s *watchServer, c *Cache) []PodHint {
			s.write("ADDED", "b")
			s.other()
			return []PodHint{{Namespace: "default", Name: "b"}, {Namespace: "default", Name: "c"}}
		}, false, "[a b]"},
		{"a pod whose change the cache already holds", func(s *watchServer, c *Cache) []PodHint {
			s.other()
			return []PodHint{{Namespace: "default", Name: "a", ResourceVersion: "1"}}
		}, true, "[a]"},
		{"no pod named (a sweep)", func(s *watchServer, c *Cache) []PodHint {
			s.write("ADDED", "b")
			s.other()
			return nil
		}, false, "[a b]"},
		{"a pod without a name (generateName)", func(s *watchServer, c *Cache) []PodHint {
			s.write("ADDED", "b")
			s.other()
			return []PodHint{{Namespace: "default"}}
		}, false, "[a b]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, c := newWatchServer(t)
			c.opts.HintGrace = time.Millisecond
			ctx := context.Background()
			s.write("ADDED", "a")
			if _, err := c.Sync(ctx); err != nil {
				t.Fatal(err)
			}
			hints := tc.change(s, c)
			s.mu.Lock()
			s.bookmark = !tc.hinted // a barrier-bound catch-up ends at the bookmark; a hinted one gets none
			s.mu.Unlock()
			c.Expect(hints)
			lists := s.lists
			v, err := c.Sync(ctx)
			if err != nil {
				t.Fatal(err)
			}
			st := v.Stats.Resources["pods"]
			if st.Mode != "watch" || st.Hinted != tc.hinted || s.lists != lists || fmt.Sprint(names(v)) != tc.want {
				t.Fatalf("pods %+v (lists %d), %v; want a watch, hinted %v, %s", st, s.lists-lists, names(v), tc.hinted, tc.want)
			}
			// SyncPods in the same invocation: the hints hold, already satisfied.
			if tc.hinted && len(v.Pods) > 0 { // (no pods: the next Sync lists, as the cache is small)
				s.other()
				if _, err := c.SyncPods(ctx); err != nil || s.lists != lists {
					t.Fatalf("SyncPods after the hints: %d lists (%v)", s.lists-lists, err)
				}
			}
		})
	}
}

// A store's sorted view, rebuilt by merging the changed keys into the
// previous one, is the objects sorted by key; the slice an earlier View got
// stays as it was.
func TestStoreSortedAfterChanges(t *testing.T) {
	s := &store[corev1.Pod]{objs: map[string]*corev1.Pod{}, trim: func(*corev1.Pod) {}}
	rnd := rand.New(rand.NewPCG(1, 2))
	podAt := func(i, rv int) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("p%03d", i), ResourceVersion: strconv.Itoa(rv)}}
	}
	for i := 0; i < 200; i += 2 {
		s.objs[key(podAt(i, 1))] = podAt(i, 1)
	}
	var earlier []*corev1.Pod
	var earlierNames []string
	for round, rv := 0, 2; round < 50; round++ {
		n := 1 + rnd.IntN(8)
		if round%10 == 9 {
			n = 120 // most changed: rebuilt whole
		}
		for c := 0; c < n; c, rv = c+1, rv+1 {
			typ := []watch.EventType{watch.Added, watch.Modified, watch.Deleted}[rnd.IntN(3)]
			s.apply(watch.Event{Type: typ, Object: podAt(rnd.IntN(300), rv)})
		}
		got := s.sorted()
		want := slices.Sorted(maps.Keys(s.objs))
		if len(got) != len(want) {
			t.Fatalf("round %d: %d objects in the view, %d in the store", round, len(got), len(want))
		}
		for i, p := range got {
			if key(p) != want[i] || p != s.objs[want[i]] {
				t.Fatalf("round %d: view[%d] is %s, want %s (the store's object)", round, i, key(p), want[i])
			}
		}
		for i, p := range earlier {
			if p.Name != earlierNames[i] {
				t.Fatalf("round %d: an earlier view changed at %d", round, i)
			}
		}
		earlier = got
		earlierNames = nil
		for _, p := range got {
			earlierNames = append(earlierNames, p.Name)
		}
	}
}
