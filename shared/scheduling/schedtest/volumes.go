package schedtest

import (
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/scheduling"
)

// ClaimOptions describes a PersistentVolumeClaim.
type ClaimOptions struct {
	Name      string // required
	Namespace string // default "default"
	// Class is spec.storageClassName (nil: none).
	Class *string
	// Volume is spec.volumeName; a claim naming one carries the PV
	// controller's bind-completed annotation unless Binding is set.
	Volume  string
	Binding bool
	Phase   corev1.PersistentVolumeClaimPhase
	// Deleting sets a deletion timestamp.
	Deleting bool
}

// Claim builds a PersistentVolumeClaim.
func Claim(o ClaimOptions) *corev1.PersistentVolumeClaim {
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	c := &corev1.PersistentVolumeClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: metav1.ObjectMeta{Name: o.Name, Namespace: o.Namespace},
		Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: o.Class, VolumeName: o.Volume,
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
		Status: corev1.PersistentVolumeClaimStatus{Phase: o.Phase},
	}
	if o.Volume != "" && !o.Binding {
		c.Annotations = map[string]string{scheduling.AnnotationBindCompleted: "yes"}
		if c.Status.Phase == "" {
			c.Status.Phase = corev1.ClaimBound
		}
	}
	if c.Status.Phase == "" {
		c.Status.Phase = corev1.ClaimPending
	}
	if o.Deleting {
		now := metav1.Now()
		c.DeletionTimestamp = &now
	}
	return c
}

// VolumeOptions describes a PersistentVolume.
type VolumeOptions struct {
	Name string // required
	// Zones is one node affinity term "zone In Zones"; Terms, when set,
	// are the terms instead.
	Zones []string
	Terms [][]corev1.NodeSelectorRequirement
	// Source is "csi" (the default), "local", "hostPath" or "nfs".
	Source   string
	Class    string
	Deleting bool
}

// Volume builds a PersistentVolume.
func Volume(o VolumeOptions) *corev1.PersistentVolume {
	pv := &corev1.PersistentVolume{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolume"},
		ObjectMeta: metav1.ObjectMeta{Name: o.Name},
		Spec: corev1.PersistentVolumeSpec{StorageClassName: o.Class, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("100Gi")}},
	}
	switch o.Source {
	case "local":
		pv.Spec.Local = &corev1.LocalVolumeSource{Path: "/mnt/disks"}
	case "hostPath":
		pv.Spec.HostPath = &corev1.HostPathVolumeSource{Path: "/mnt/disks"}
	case "nfs":
		pv.Spec.NFS = &corev1.NFSVolumeSource{Server: "nfs.example.com", Path: "/exports"}
	default:
		pv.Spec.CSI = &corev1.CSIPersistentVolumeSource{Driver: "ebs.csi.aws.com", VolumeHandle: "vol-" + o.Name}
	}
	terms := o.Terms
	if len(terms) == 0 && len(o.Zones) > 0 {
		terms = [][]corev1.NodeSelectorRequirement{{{Key: corev1.LabelTopologyZone, Operator: corev1.NodeSelectorOpIn, Values: o.Zones}}}
	}
	if len(terms) > 0 {
		sel := &corev1.NodeSelector{}
		for _, t := range terms {
			sel.NodeSelectorTerms = append(sel.NodeSelectorTerms, corev1.NodeSelectorTerm{MatchExpressions: t})
		}
		pv.Spec.NodeAffinity = &corev1.VolumeNodeAffinity{Required: sel}
	}
	if o.Deleting {
		now := metav1.Now()
		pv.DeletionTimestamp = &now
	}
	return pv
}

// ClassOptions describes a StorageClass.
type ClassOptions struct {
	Name string // required
	// Zones is one allowed topology term "zone In Zones"; Topologies, when
	// set, are the terms instead (each a list of key, values... pairs).
	Zones      []string
	Topologies [][]corev1.TopologySelectorLabelRequirement
	// Immediate binds volumes before scheduling (the API's default);
	// otherwise WaitForFirstConsumer.
	Immediate bool
	Default   bool
	// Created orders default classes (the newest wins).
	Created metav1.Time
}

// Class builds a StorageClass of the EBS CSI driver.
func Class(o ClassOptions) *storagev1.StorageClass {
	mode := storagev1.VolumeBindingWaitForFirstConsumer
	if o.Immediate {
		mode = storagev1.VolumeBindingImmediate
	}
	sc := &storagev1.StorageClass{
		TypeMeta:          metav1.TypeMeta{APIVersion: "storage.k8s.io/v1", Kind: "StorageClass"},
		ObjectMeta:        metav1.ObjectMeta{Name: o.Name, CreationTimestamp: o.Created},
		Provisioner:       "ebs.csi.aws.com",
		VolumeBindingMode: &mode,
	}
	if o.Default {
		sc.Annotations = map[string]string{scheduling.AnnotationDefaultStorageClass: "true"}
	}
	terms := o.Topologies
	if len(terms) == 0 && len(o.Zones) > 0 {
		terms = [][]corev1.TopologySelectorLabelRequirement{{{Key: corev1.LabelTopologyZone, Values: o.Zones}}}
	}
	for _, t := range terms {
		sc.AllowedTopologies = append(sc.AllowedTopologies, corev1.TopologySelectorTerm{MatchLabelExpressions: t})
	}
	return sc
}

// Str is a pointer to s (a StorageClass name in options).
func Str(s string) *string { return &s }
