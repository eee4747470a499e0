package kubeaccess

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/kube"
)

func TestExplore(t *testing.T) {
	ctx := context.Background()
	kc, err := kube.New(cloud.REST)
	if err != nil {
		t.Fatal(err)
	}
	cache := kube.NewCache(kc, kube.CacheOptions{})
	for i := 0; i < 5; i++ {
		_, err := cloud.Kube.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", i)},
			Spec: corev1.PodSpec{SchedulerName: "none", Containers: []corev1.Container{{Name: "c", Image: "x"}}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 4; i++ {
		start := time.Now()
		v, err := cache.Sync(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("sync %d: %s pods=%d nodes=%d rv=%s stats=%+v", i, time.Since(start), len(v.Pods), len(v.Nodes), v.ResourceVersion, v.Stats.Resources)
		if i == 1 {
			cloud.Kube.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "late"},
				Spec: corev1.PodSpec{SchedulerName: "none", Containers: []corev1.Container{{Name: "c", Image: "x"}}}}, metav1.CreateOptions{})
		}
	}
}
