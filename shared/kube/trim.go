package kube

import (
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Annotations a trimmed pod keeps: the ones a solve, a drain or consolidation
// reads. Every other annotation is dropped (they are often large:
// last-applied-configuration, sidecar injectors' status).
const (
	// AnnotationDoNotDisrupt on a pod or node blocks voluntary disruption.
	AnnotationDoNotDisrupt = "karpenter.sh/do-not-disrupt"
	// AnnotationMirrorPod marks the API server's mirror of a static pod,
	// which the Eviction API cannot evict and a drain leaves alone.
	AnnotationMirrorPod = corev1.MirrorPodAnnotationKey
	// AnnotationSafeToEvict is Cluster Autoscaler's per-pod override,
	// kept for users who move from it.
	AnnotationSafeToEvict = "cluster-autoscaler.kubernetes.io/safe-to-evict"
)

var keptPodAnnotations = []string{AnnotationDoNotDisrupt, AnnotationMirrorPod, AnnotationSafeToEvict}

// TrimPod drops, in place, what no solve, drain or consolidation reads:
// managed fields, annotations other than do-not-disrupt, the mirror-pod mark
// and safe-to-evict, containers' images, commands, environment, probes,
// volume mounts, security contexts and limits (it keeps names, requests,
// host ports and restart policies), volumes other than persistent volume
// claims and generic ephemeral volumes, and the status other than phase, the
// PodScheduled, Ready and DisruptionTarget conditions, nominated node, start
// time and containers' allocated resources. What it
// keeps is what shared/scheduling, the drain and Karpenter's disruption rules
// read: scheduling constraints (node selector, affinity, tolerations, spread,
// scheduling gates, priority), requests (containers, init containers and
// sidecars, overhead, pod-level resources, resource claims), owners,
// deletion state and grace period. A trimmed 150,000-pod cluster fits in a
// Lambda's memory; an untrimmed one is several times larger.
func TrimPod(p *corev1.Pod) {
	trimMeta(&p.ObjectMeta, keptPodAnnotations, nil)
	trimPodSpec(&p.Spec)
	st := &p.Status
	kept := corev1.PodStatus{
		Phase:             st.Phase,
		NominatedNodeName: st.NominatedNodeName,
		StartTime:         st.StartTime,
		QOSClass:          st.QOSClass,
	}
	for _, c := range st.Conditions {
		if c.Type == corev1.PodScheduled || c.Type == corev1.PodReady || c.Type == corev1.DisruptionTarget {
			kept.Conditions = append(kept.Conditions, corev1.PodCondition{Type: c.Type, Status: c.Status, Reason: c.Reason, LastTransitionTime: c.LastTransitionTime})
		}
	}
	for _, cs := range st.ContainerStatuses {
		if cs.AllocatedResources != nil || cs.Resources != nil {
			kept.ContainerStatuses = append(kept.ContainerStatuses, corev1.ContainerStatus{
				Name: cs.Name, AllocatedResources: cs.AllocatedResources, Resources: cs.Resources,
			})
		}
	}
	p.Status = kept
}

func trimPodSpec(s *corev1.PodSpec) {
	s.Containers = trimContainers(s.Containers)
	s.InitContainers = trimContainers(s.InitContainers)
	s.EphemeralContainers = nil
	var vols []corev1.Volume
	for _, v := range s.Volumes {
		switch {
		case v.PersistentVolumeClaim != nil:
			vols = append(vols, corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: v.PersistentVolumeClaim}})
		case v.Ephemeral != nil:
			// The claim template's class is kept: the claim the controller
			// will create from it gets that class.
			eph := &corev1.EphemeralVolumeSource{}
			if t := v.Ephemeral.VolumeClaimTemplate; t != nil {
				eph.VolumeClaimTemplate = &corev1.PersistentVolumeClaimTemplate{Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: t.Spec.StorageClassName}}
			}
			vols = append(vols, corev1.Volume{Name: v.Name, VolumeSource: corev1.VolumeSource{Ephemeral: eph}})
		}
	}
	s.Volumes = vols
	s.ImagePullSecrets = nil
	s.SecurityContext = nil
	s.DNSConfig = nil
	s.HostAliases = nil
	s.ReadinessGates = nil
	s.Hostname, s.Subdomain = "", ""
	s.ServiceAccountName, s.DeprecatedServiceAccount = "", ""
	s.AutomountServiceAccountToken = nil
	s.EnableServiceLinks = nil
}

func trimContainers(cs []corev1.Container) []corev1.Container {
	if len(cs) == 0 {
		return nil
	}
	out := make([]corev1.Container, len(cs))
	for i, c := range cs {
		// Limits are dropped: the API server has already made requests of
		// limits where a container gave only limits, and every decision
		// reads requests.
		out[i] = corev1.Container{Name: c.Name, RestartPolicy: c.RestartPolicy,
			Resources: corev1.ResourceRequirements{Requests: c.Resources.Requests, Claims: c.Resources.Claims}}
		for _, port := range c.Ports {
			if port.HostPort != 0 {
				out[i].Ports = append(out[i].Ports, port)
			}
		}
	}
	return out
}

// trimMeta drops managed fields and every annotation not in keep nor under
// one of keepPrefixes.
func trimMeta(m *metav1.ObjectMeta, keep []string, keepPrefixes []string) {
	m.ManagedFields = nil
	if len(m.Annotations) == 0 {
		m.Annotations = nil
		return
	}
	var kept map[string]string
	for k, v := range m.Annotations {
		if !keepAnnotation(k, keep, keepPrefixes) {
			continue
		}
		if kept == nil {
			kept = map[string]string{}
		}
		kept[k] = v
	}
	m.Annotations = kept
}

func keepAnnotation(k string, keep, prefixes []string) bool {
	for _, want := range keep {
		if k == want {
			return true
		}
	}
	for _, p := range prefixes {
		if strings.HasPrefix(k, p) {
			return true
		}
	}
	return false
}

// nodeAnnotationPrefixes are the annotations a trimmed node keeps: Karpenter's
// and Nodewright's own.
var nodeAnnotationPrefixes = []string{"karpenter.sh/", "karpenter.k8s.aws/", "nodewright"}

// TrimNode drops managed fields, annotations other than Karpenter's and
// Nodewright's, and the status's image list, volumes and daemon endpoints
// (a node's image list alone is often 10 KB or more).
func TrimNode(n *corev1.Node) {
	trimMeta(&n.ObjectMeta, nil, nodeAnnotationPrefixes)
	n.Status.Images = nil
	n.Status.VolumesInUse = nil
	n.Status.VolumesAttached = nil
	n.Status.DaemonEndpoints = corev1.NodeDaemonEndpoints{}
	n.Status.Config = nil
	for i := range n.Status.Conditions {
		n.Status.Conditions[i].Message = ""
	}
}

// TrimDaemonSet drops managed fields, annotations and its pod template's
// parts that TrimPod drops: what remains tells which nodes it runs on and
// what it requests there.
func TrimDaemonSet(d *appsv1.DaemonSet) {
	trimMeta(&d.ObjectMeta, nil, nil)
	trimMeta(&d.Spec.Template.ObjectMeta, keptPodAnnotations, nil)
	trimPodSpec(&d.Spec.Template.Spec)
}

// TrimPDB drops managed fields and annotations.
func TrimPDB(p *policyv1.PodDisruptionBudget) {
	trimMeta(&p.ObjectMeta, nil, nil)
}

// Annotations of volume objects that volume topology reads (shared/scheduling).
var (
	keptClaimAnnotations = []string{"pv.kubernetes.io/bind-completed", "volume.beta.kubernetes.io/storage-class"}
	keptClassAnnotations = []string{"storageclass.kubernetes.io/is-default-class", "storageclass.beta.kubernetes.io/is-default-class"}
)

// TrimPersistentVolumeClaim keeps what volume topology reads: the claim's
// storage class, volume name, phase, deletion and bind-completed annotation.
func TrimPersistentVolumeClaim(c *corev1.PersistentVolumeClaim) {
	trimMeta(&c.ObjectMeta, keptClaimAnnotations, nil)
	c.Spec = corev1.PersistentVolumeClaimSpec{StorageClassName: c.Spec.StorageClassName, VolumeName: c.Spec.VolumeName}
	c.Status = corev1.PersistentVolumeClaimStatus{Phase: c.Status.Phase}
}

// TrimPersistentVolume keeps what volume topology reads: the volume's node
// affinity, its storage class, its deletion, and whether it is a local or
// hostPath volume (whose hostname affinity is ignored).
func TrimPersistentVolume(pv *corev1.PersistentVolume) {
	trimMeta(&pv.ObjectMeta, nil, nil)
	spec := corev1.PersistentVolumeSpec{NodeAffinity: pv.Spec.NodeAffinity, StorageClassName: pv.Spec.StorageClassName}
	switch {
	case pv.Spec.Local != nil:
		spec.Local = &corev1.LocalVolumeSource{Path: pv.Spec.Local.Path}
	case pv.Spec.HostPath != nil:
		spec.HostPath = &corev1.HostPathVolumeSource{Path: pv.Spec.HostPath.Path}
	}
	pv.Spec = spec
	pv.Status = corev1.PersistentVolumeStatus{Phase: pv.Status.Phase}
}
