package kube

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

func TestTrimPodKeepsWhatASolveAndADrainRead(t *testing.T) {
	req := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")}
	always := corev1.ContainerRestartPolicyAlways
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"app": "web"},
			Annotations: map[string]string{
				AnnotationDoNotDisrupt: "true", "kubectl.kubernetes.io/last-applied-configuration": "{...}", AnnotationMirrorPod: "m",
			},
			ManagedFields:   []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
			OwnerReferences: []metav1.OwnerReference{{Kind: "ReplicaSet", Name: "web-1"}},
		},
		Spec: corev1.PodSpec{
			NodeSelector: map[string]string{"zone": "a"},
			Tolerations:  []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}},
			InitContainers: []corev1.Container{{Name: "proxy", RestartPolicy: &always, Resources: corev1.ResourceRequirements{Requests: req},
				Env: []corev1.EnvVar{{Name: "X", Value: "y"}}}},
			Containers: []corev1.Container{{Name: "c", Image: "i", Command: []string{"run"}, Resources: corev1.ResourceRequirements{Requests: req},
				Env: []corev1.EnvVar{{Name: "SECRET_NAME", Value: "v"}}, VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/d"}},
				Ports: []corev1.ContainerPort{{ContainerPort: 80}, {ContainerPort: 9100, HostPort: 9100}}}},
			Volumes: []corev1.Volume{
				{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}},
				{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{}}},
			},
			Overhead:                      corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m")},
			TerminationGracePeriodSeconds: ptrTo(int64(60)),
			PriorityClassName:             "high",
		},
		Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: "Unschedulable", Message: "0/3 nodes are available: a long message"}}, PodIP: "10.0.0.1"},
	}
	before := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
	TrimPod(p)
	after := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
	if !before.Cpu().Equal(*after.Cpu()) || !before.Memory().Equal(*after.Memory()) {
		t.Errorf("requests changed: %v -> %v", before, after)
	}
	c := p.Spec.Containers[0]
	switch {
	case p.ManagedFields != nil, len(p.Annotations) != 2, p.Annotations[AnnotationDoNotDisrupt] != "true":
		t.Errorf("metadata %+v", p.ObjectMeta)
	case c.Env != nil, c.Image != "", c.Command != nil, c.VolumeMounts != nil, len(c.Ports) != 1 || c.Ports[0].HostPort != 9100:
		t.Errorf("container %+v", c)
	case p.Spec.InitContainers[0].Env != nil, *p.Spec.InitContainers[0].RestartPolicy != always:
		t.Errorf("init container %+v", p.Spec.InitContainers[0])
	case len(p.Spec.Volumes) != 1 || p.Spec.Volumes[0].PersistentVolumeClaim.ClaimName != "data":
		t.Errorf("volumes %+v", p.Spec.Volumes)
	case p.Labels["app"] != "web", len(p.OwnerReferences) != 1, p.Spec.NodeSelector["zone"] != "a", len(p.Spec.Tolerations) != 1,
		*p.Spec.TerminationGracePeriodSeconds != 60, p.Spec.PriorityClassName != "high":
		t.Errorf("scheduling fields lost: %+v", p.Spec)
	case p.Status.Phase != corev1.PodPending, p.Status.Conditions[0].Reason != "Unschedulable", p.Status.Conditions[0].Message != "", p.Status.PodIP != "":
		t.Errorf("status %+v", p.Status)
	}
}

func TestTrimNode(t *testing.T) {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: map[string]string{
		"karpenter.sh/do-not-disrupt": "true", "node.alpha.kubernetes.io/ttl": "0", "nodewright.io/nodeclaim": "x"}},
		Status: corev1.NodeStatus{Images: []corev1.ContainerImage{{Names: []string{"a"}}}, Allocatable: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")}}}
	TrimNode(n)
	if n.Status.Images != nil || len(n.Annotations) != 2 || n.Annotations["karpenter.sh/do-not-disrupt"] != "true" || n.Status.Allocatable.Cpu().String() != "2" {
		t.Errorf("trimmed node %+v", n)
	}
}

func ptrTo[T any](v T) *T { return &v }
