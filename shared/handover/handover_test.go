package handover

import (
	"strings"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func lease(ns, name, holder string, renewed *time.Time, acquired *time.Time, seconds *int32) coordinationv1.Lease {
	l := coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if holder != "" {
		l.Spec.HolderIdentity = &holder
	}
	if renewed != nil {
		l.Spec.RenewTime = &metav1.MicroTime{Time: *renewed}
	}
	if acquired != nil {
		l.Spec.AcquireTime = &metav1.MicroTime{Time: *acquired}
	}
	l.Spec.LeaseDurationSeconds = seconds
	return l
}

func TestRunning(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) *time.Time { t := now.Add(-d); return &t }
	secs := func(s int32) *int32 { return &s }
	for _, c := range []struct {
		name   string
		leases []coordinationv1.Lease
		want   string // namespace of the running controller; "" for none
	}{
		{"no lease", nil, ""},
		{"renewed 5 s ago, 15 s lease", []coordinationv1.Lease{lease("kube-system", LeaseName, "karpenter-abc", ago(5*time.Second), nil, secs(15))}, "kube-system"},
		{"renewed 20 s ago, 15 s lease: lapsed", []coordinationv1.Lease{lease("kube-system", LeaseName, "karpenter-abc", ago(20*time.Second), nil, secs(15))}, ""},
		{"renewed exactly a duration ago: lapsed", []coordinationv1.Lease{lease("kube-system", LeaseName, "karpenter-abc", ago(15*time.Second), nil, secs(15))}, ""},
		{"no duration: controller-runtime's 15 s", []coordinationv1.Lease{lease("karpenter", LeaseName, "k", ago(10*time.Second), nil, nil)}, "karpenter"},
		{"no duration, 16 s ago", []coordinationv1.Lease{lease("karpenter", LeaseName, "k", ago(16*time.Second), nil, nil)}, ""},
		{"released: no holder", []coordinationv1.Lease{lease("kube-system", LeaseName, "", ago(time.Second), nil, secs(15))}, ""},
		{"acquired, never renewed", []coordinationv1.Lease{lease("kube-system", LeaseName, "k", nil, ago(time.Second), secs(15))}, "kube-system"},
		{"no times at all", []coordinationv1.Lease{lease("kube-system", LeaseName, "k", nil, nil, secs(15))}, ""},
		{"another controller's lease", []coordinationv1.Lease{lease("kube-system", "kube-controller-manager", "k", ago(time.Second), nil, secs(15))}, ""},
		{"two: first namespace", []coordinationv1.Lease{
			lease("kube-system", LeaseName, "a", ago(time.Second), nil, secs(15)),
			lease("karpenter", LeaseName, "b", ago(time.Second), nil, secs(15)),
		}, "karpenter"},
		{"two, one lapsed", []coordinationv1.Lease{
			lease("karpenter", LeaseName, "b", ago(time.Minute), nil, secs(15)),
			lease("kube-system", LeaseName, "a", ago(time.Second), nil, secs(15)),
		}, "kube-system"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := Running(c.leases, now)
			switch {
			case c.want == "" && got != nil:
				t.Fatalf("running: %v", got)
			case c.want != "" && got == nil:
				t.Fatal("not running")
			case got != nil && got.Namespace != c.want:
				t.Fatalf("namespace %s, want %s", got.Namespace, c.want)
			}
		})
	}
}

func TestMessageSaysWhoAndWhatToDo(t *testing.T) {
	c := &Controller{Namespace: "kube-system", Holder: "karpenter-7d9f", Until: time.Date(2026, 11, 27, 12, 0, 15, 0, time.UTC)}
	m := c.Message()
	for _, want := range []string{"kube-system/karpenter-leader-election", "karpenter-7d9f", "2026-11-27T12:00:15Z", "launches and adopts nothing", "uninstall"} {
		if !strings.Contains(m, want) {
			t.Errorf("message %q lacks %q", m, want)
		}
	}
}
