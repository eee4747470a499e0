package kube

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
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

// TestTrimVolumeObjects: the volume objects keep what volume topology reads
// (shared/scheduling) and lose the rest; an ephemeral volume keeps its
// template's class.
func TestTrimVolumeObjects(t *testing.T) {
	class := "gp3"
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data", Namespace: "db", Annotations: map[string]string{
			"pv.kubernetes.io/bind-completed": "yes", "kubectl.kubernetes.io/last-applied-configuration": "{...}"}},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class, VolumeName: "pv-1", AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}}},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")}},
	}
	TrimPersistentVolumeClaim(pvc)
	if len(pvc.Annotations) != 1 || pvc.Annotations["pv.kubernetes.io/bind-completed"] != "yes" || *pvc.Spec.StorageClassName != "gp3" ||
		pvc.Spec.VolumeName != "pv-1" || pvc.Spec.AccessModes != nil || pvc.Status.Phase != corev1.ClaimBound || pvc.Status.Capacity != nil {
		t.Errorf("trimmed claim %+v", pvc)
	}
	affinity := &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "topology.kubernetes.io/zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"us-east-1c"}}}}}}}
	for _, src := range []corev1.PersistentVolumeSource{
		{CSI: &corev1.CSIPersistentVolumeSource{Driver: "ebs.csi.aws.com", VolumeHandle: "vol-1"}},
		{Local: &corev1.LocalVolumeSource{Path: "/mnt"}},
	} {
		pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv-1"},
			Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: src, NodeAffinity: affinity, StorageClassName: "gp3",
				ClaimRef: &corev1.ObjectReference{Name: "data"}}}
		TrimPersistentVolume(pv)
		if pv.Spec.NodeAffinity != affinity || pv.Spec.StorageClassName != "gp3" || pv.Spec.CSI != nil || pv.Spec.ClaimRef != nil ||
			(src.Local != nil) != (pv.Spec.Local != nil) {
			t.Errorf("trimmed volume %+v", pv.Spec)
		}
	}
	p := &corev1.Pod{Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{
		VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: &class,
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}}}}}}}}}
	TrimPod(p)
	if tmpl := p.Spec.Volumes[0].Ephemeral.VolumeClaimTemplate; tmpl == nil || *tmpl.Spec.StorageClassName != "gp3" || tmpl.Spec.AccessModes != nil {
		t.Errorf("trimmed ephemeral volume %+v", p.Spec.Volumes[0])
	}
}

// TestStorageClasses: StorageClasses are listed as JSON into the fields
// volume topology reads, trimmed, sorted by name.
func TestStorageClasses(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/apis/storage.k8s.io/v1/storageclasses" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"kind":"StorageClassList","apiVersion":"storage.k8s.io/v1","metadata":{},"items":[
{"metadata":{"name":"gp3","creationTimestamp":"2024-05-01T00:00:00Z","annotations":{"storageclass.kubernetes.io/is-default-class":"true","kubectl.kubernetes.io/last-applied-configuration":"{}"},"managedFields":[{"manager":"kubectl"}]},
 "provisioner":"ebs.csi.aws.com","parameters":{"type":"gp3"},"reclaimPolicy":"Delete","volumeBindingMode":"WaitForFirstConsumer",
 "allowedTopologies":[{"matchLabelExpressions":[{"key":"topology.ebs.csi.aws.com/zone","values":["us-east-1a","us-east-1b"]}]}]},
{"metadata":{"name":"efs"},"provisioner":"efs.csi.aws.com","volumeBindingMode":"Immediate"}]}`)
	}))
	defer srv.Close()
	c, err := New(&rest.Config{Host: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.StorageClasses(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Name != "efs" || got[1].Name != "gp3" {
		t.Fatalf("classes %+v", got)
	}
	gp3 := got[1]
	if len(gp3.Annotations) != 1 || gp3.ManagedFields != nil || *gp3.VolumeBindingMode != "WaitForFirstConsumer" || gp3.Provisioner != "ebs.csi.aws.com" ||
		gp3.CreationTimestamp.Year() != 2024 || len(gp3.AllowedTopologies) != 1 || len(gp3.AllowedTopologies[0].MatchLabelExpressions[0].Values) != 2 {
		t.Errorf("gp3 %+v", gp3)
	}
}
