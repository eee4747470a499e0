package kube

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// benchPod is a pod as test/readbench creates it (about 2.5 KB of
// protobuf): labels, a large annotation, two containers with environment,
// probes and mounts, volumes, a toleration, spread and affinity, and a
// kubelet-like status.
func benchPod(i int) corev1.Pod {
	app := fmt.Sprintf("app-%d", i%200)
	env := make([]corev1.EnvVar, 12)
	for j := range env {
		env[j] = corev1.EnvVar{Name: fmt.Sprintf("SETTING_%d", j), Value: fmt.Sprintf("value-%d-%d", i, j)}
	}
	req := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("256Mi")}
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%07d", app, i), Namespace: "bench", ResourceVersion: fmt.Sprint(1000 + i),
			Labels:        map[string]string{"app": app, "team": fmt.Sprintf("team-%d", i%17), "pod-template-hash": "5d8f7c9b4"},
			Annotations:   map[string]string{"kubectl.kubernetes.io/last-applied-configuration": strings.Repeat(`{"kind":"Pod","spec":{}}`, 25)},
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate}},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{
				{Name: "main", Image: "registry.example.com/team/" + app + ":v1.2.3", Env: env,
					Resources:      corev1.ResourceRequirements{Requests: req, Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")}},
					VolumeMounts:   []corev1.VolumeMount{{Name: "config", MountPath: "/etc/app"}},
					ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8080)}}}},
				{Name: "proxy", Image: "registry.example.com/proxy:v2", Env: env[:4], Resources: corev1.ResourceRequirements{Requests: req}},
			},
			Volumes:     []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: app}}}}},
			Tolerations: []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "backend", Effect: corev1.TaintEffectNoSchedule}},
			TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
				WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}}},
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/3 nodes are available"}}},
	}
}

// kept is the last page a benchmark decoded, alive for reportKept.
var kept map[string]*corev1.Pod

// reportKept reports the heap the last decoded page keeps, per pod.
func reportKept(b *testing.B) {
	b.StopTimer()
	var with, without runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&with)
	n := len(kept)
	kept = nil
	runtime.GC()
	runtime.ReadMemStats(&without)
	b.ReportMetric(float64(int64(with.HeapAlloc)-int64(without.HeapAlloc))/float64(n), "kept-B/pod")
}

// BenchmarkDecodePage decodes one page of 1,000 pods the way a cold list did
// before (the page whole, then TrimPod) and does now (one pod at a time
// through the wire filter, trimmed, parts shared), without a server: the
// client's own CPU and allocations, steady on a busy machine.
func BenchmarkDecodePage(b *testing.B) {
	l := &corev1.PodList{}
	for i := 0; i < 1000; i++ {
		l.Items = append(l.Items, benchPod(i))
	}
	raw, err := l.Marshal()
	if err != nil {
		b.Fatal(err)
	}
	body := append(append([]byte{}, protobufMagic...), 0x12) // runtime.Unknown's raw (2)
	body = append(append(body, protowire.AppendVarint(nil, uint64(len(raw)))...), raw...)
	_, items, err := protobufList(body)
	if err != nil || len(items) != 1000 {
		b.Fatalf("%d items (%v)", len(items), err)
	}
	b.Run("whole", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			var page corev1.PodList
			if err := page.Unmarshal(raw); err != nil {
				b.Fatal(err)
			}
			keep := make(map[string]*corev1.Pod, len(page.Items))
			for j := range page.Items {
				TrimPod(&page.Items[j])
				keep[page.Items[j].Name] = &page.Items[j]
			}
			kept = keep
		}
		reportKept(b)
	})
	for _, shared := range []bool{false, true} {
		b.Run(fmt.Sprintf("filtered/shared=%v", shared), func(b *testing.B) {
			b.ReportAllocs()
			var scratch []byte
			for i := 0; i < b.N; i++ {
				var share func(*corev1.Pod, []byte)
				if shared {
					share = newPodInterner().share
				}
				keep := make(map[string]*corev1.Pod, len(items))
				for _, it := range items {
					if scratch, err = podFilter.apply(scratch[:0], it); err != nil {
						b.Fatal(err)
					}
					p := new(corev1.Pod)
					if err := p.Unmarshal(scratch); err != nil {
						b.Fatal(err)
					}
					TrimPod(p)
					if share != nil {
						share(p, scratch)
					}
					keep[p.Name] = p
				}
				kept = keep
			}
			reportKept(b)
		})
	}
}
