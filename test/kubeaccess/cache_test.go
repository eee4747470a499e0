package kubeaccess

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/kube"
)

// TestSyncIsCaughtUp: while a writer creates and deletes pods without
// pause, every Sync's view holds every pod whose creation returned before
// the Sync started, and none whose deletion did. The cache watches (never
// re-lists) after the first Sync.
func TestSyncIsCaughtUp(t *testing.T) {
	ctx := context.Background()
	ns := "caught-up"
	if _, err := cloud.Kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	first := testPod("first", "")
	first.Namespace = ns
	if _, err := cloud.Kube.CoreV1().Pods(ns).Create(ctx, first, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kc := kubeClient(t)
	cache := kube.NewCache(kc, kube.CacheOptions{ListBelow: 1})
	if _, err := cache.Sync(ctx); err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	created, deleted := map[string]bool{}, map[string]bool{}
	wctx, stop := context.WithCancel(ctx)
	writerDone := make(chan error, 1)
	go func() {
		for i := 0; wctx.Err() == nil; i++ {
			p := testPod(fmt.Sprintf("w%d", i), "")
			p.Namespace = ns
			if _, err := cloud.Kube.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{}); err != nil {
				writerDone <- err
				return
			}
			mu.Lock()
			created[p.Name] = true
			mu.Unlock()
			if i%3 == 2 {
				victim := fmt.Sprintf("w%d", i-1)
				if err := cloud.Kube.CoreV1().Pods(ns).Delete(ctx, victim, metav1.DeleteOptions{GracePeriodSeconds: ptr(int64(0))}); err != nil {
					writerDone <- err
					return
				}
				mu.Lock()
				deleted[victim] = true
				mu.Unlock()
			}
		}
		writerDone <- nil
	}()
	modes := map[string]int{}
	for round := 0; round < 15; round++ {
		mu.Lock()
		createdBefore, mustLack := keys(created, nil), keys(deleted, nil)
		mu.Unlock()
		v, err := cache.Sync(ctx)
		if err != nil {
			t.Fatal(err)
		}
		// A pod deleted while Sync ran may or may not be in the view.
		mu.Lock()
		var mustHave []string
		for _, n := range createdBefore {
			if !deleted[n] {
				mustHave = append(mustHave, n)
			}
		}
		mu.Unlock()
		have := map[string]bool{}
		for _, p := range v.Pods {
			if p.Namespace == ns {
				have[p.Name] = true
			}
		}
		for _, n := range mustHave {
			if !have[n] {
				t.Fatalf("round %d: pod %s was created before Sync started and is not in the view", round, n)
			}
		}
		for _, n := range mustLack {
			if have[n] {
				t.Fatalf("round %d: pod %s was deleted before Sync started and is in the view", round, n)
			}
		}
		st := v.Stats.Resources["pods"]
		modes[st.Mode]++
		time.Sleep(20 * time.Millisecond) // let the writer run between rounds
	}
	stop()
	if err := <-writerDone; err != nil {
		t.Fatal(err)
	}
	if modes["watch"] != 15 {
		t.Errorf("pod syncs by mode %v, want every one by watch", modes)
	}
	mu.Lock()
	t.Logf("%d pods created, %d deleted during 15 syncs", len(created), len(deleted))
	mu.Unlock()

	// A quiet resource: nothing changes; the watch still proves it is caught
	// up (by the API server's bookmark) and the view is unchanged.
	before, err := cache.Sync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	after, err := cache.Sync(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st := after.Stats.Resources["pods"]; st.Mode != "watch" || len(after.Pods) != len(before.Pods) {
		t.Errorf("quiet sync: %+v, %d pods before, %d after", st, len(before.Pods), len(after.Pods))
	}
}

// keys lists a's keys not in b.
func keys(a, b map[string]bool) []string {
	var out []string
	for k := range a {
		if !b[k] {
			out = append(out, k)
		}
	}
	return out
}
