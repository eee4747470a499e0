package scheduling

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/requirements"
)

// Volume topology. A pod's PersistentVolumeClaims decide where it can run as
// much as its node affinity does: a bound claim's PersistentVolume carries
// the nodes it can be attached to (an EBS volume lives in one zone), and an
// unbound claim of a WaitForFirstConsumer StorageClass will be provisioned
// where the pod lands, within the class's allowedTopologies. As Karpenter
// does (its scheduler's volume topology), each such volume's terms are
// alternatives ORed together, a pod's volumes are ANDed (every combination
// of their alternatives that some node can satisfy), and the result is
// extra required node requirements of the pod: for the nodes it may land on,
// never for the domains its topology spread counts, and never relaxed.
//
// A pod whose claims cannot be resolved is unschedulable with the reason, as
// kube-scheduler's volume binding would leave it: a claim that does not
// exist, is being deleted or lost its volume; a bound claim whose volume is
// missing or being deleted, or that the PV controller has not finished
// binding (no pv.kubernetes.io/bind-completed); an unbound claim without a
// StorageClass, of a StorageClass that does not exist, or of one that binds
// Immediately (its volume is provisioned before scheduling, and the pod
// waits for it).

// Volumes are the cluster's volume objects a solve reads pods' volumes
// from. Only what the trimmed objects keep is read: a claim's storage class,
// volume name, phase, deletion and bind-completed annotation; a volume's
// node affinity, deletion and whether it is a local or hostPath volume; a
// class's binding mode, allowedTopologies, default-class annotation and
// creation time.
type Volumes struct {
	Claims         []*corev1.PersistentVolumeClaim
	Volumes        []*corev1.PersistentVolume
	StorageClasses []*storagev1.StorageClass
}

// Annotations and keys volume topology reads.
const (
	// AnnotationBindCompleted is set by the PV controller once it has bound
	// a claim to its volume; until then kube-scheduler treats the claim as
	// unbound.
	AnnotationBindCompleted = "pv.kubernetes.io/bind-completed"
	// AnnotationDefaultStorageClass marks the StorageClass claims without a
	// class get (the newest, when several do).
	AnnotationDefaultStorageClass = "storageclass.kubernetes.io/is-default-class"
	// annotationBetaDefaultStorageClass is its deprecated name, still honoured.
	annotationBetaDefaultStorageClass = "storageclass.beta.kubernetes.io/is-default-class"
	// annotationBetaStorageClass is the deprecated way a claim names its class.
	annotationBetaStorageClass = "volume.beta.kubernetes.io/storage-class"
	// LabelEBSCSIZone is the zone key of the EBS CSI driver's volumes and
	// StorageClasses; it means the zone (Karpenter's AWS provider normalizes
	// it the same way).
	LabelEBSCSIZone = "topology.ebs.csi.aws.com/zone"
)

// maxVolumeAlternatives caps the combinations of a pod's volumes' terms
// (each volume's terms multiply): beyond it the first ones are kept.
const maxVolumeAlternatives = 64

// volumeIndex looks up the volume objects of one solve.
type volumeIndex struct {
	claims  map[string]*corev1.PersistentVolumeClaim // by namespace/name
	volumes map[string]*corev1.PersistentVolume
	classes map[string]*storagev1.StorageClass
	// defaultClass is the class claims without one get ("": none).
	defaultClass string
}

// podVolumes is what a pod's volumes require of its node: alternatives
// (nil: nothing), or the reason it cannot be scheduled.
type podVolumes struct {
	alts []requirements.Requirements
	// from names the objects the requirements come from, for messages.
	from string
	err  string
}

func newVolumeIndex(v *Volumes) *volumeIndex {
	if v == nil {
		return nil
	}
	x := &volumeIndex{claims: map[string]*corev1.PersistentVolumeClaim{}, volumes: map[string]*corev1.PersistentVolume{},
		classes: map[string]*storagev1.StorageClass{}}
	for _, c := range v.Claims {
		if c != nil {
			x.claims[c.Namespace+"/"+c.Name] = c
		}
	}
	for _, pv := range v.Volumes {
		if pv != nil {
			x.volumes[pv.Name] = pv
		}
	}
	var defaults []*storagev1.StorageClass
	for _, sc := range v.StorageClasses {
		if sc == nil {
			continue
		}
		x.classes[sc.Name] = sc
		if sc.Annotations[AnnotationDefaultStorageClass] == "true" || sc.Annotations[annotationBetaDefaultStorageClass] == "true" {
			defaults = append(defaults, sc)
		}
	}
	// Several defaults: the newest wins, as the DefaultStorageClass
	// admission plugin picks it (then the name, for determinism).
	sort.Slice(defaults, func(i, j int) bool {
		a, b := defaults[i], defaults[j]
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return b.CreationTimestamp.Before(&a.CreationTimestamp)
		}
		return a.Name < b.Name
	})
	if len(defaults) > 0 {
		x.defaultClass = defaults[0].Name
	}
	return x
}

// forPod resolves the node requirements of p's volumes.
func (x *volumeIndex) forPod(p *corev1.Pod) podVolumes {
	if x == nil || len(p.Spec.Volumes) == 0 {
		return podVolumes{}
	}
	alts := []requirements.Requirements{nil}
	var from []string
	for _, v := range p.Spec.Volumes {
		vol, src, err := x.volume(p, v)
		if err != "" {
			return podVolumes{err: err}
		}
		if len(vol) == 0 {
			continue
		}
		from = append(from, src)
		alts = combine(alts, vol)
	}
	if len(alts) == 1 && alts[0] == nil {
		return podVolumes{}
	}
	var ok []requirements.Requirements
	for _, a := range alts {
		if a.Satisfiable() == nil {
			ok = append(ok, a)
		}
	}
	if len(ok) == 0 {
		return podVolumes{err: fmt.Sprintf("its volumes' topologies exclude each other (%s): no node can attach them all", strings.Join(from, "; "))}
	}
	return podVolumes{alts: ok, from: strings.Join(from, "; ")}
}

// combine is every combination of an alternative of alts and one of vol,
// at most maxVolumeAlternatives, dropping combinations no node satisfies
// while some remain.
func combine(alts, vol []requirements.Requirements) []requirements.Requirements {
	var out, dead []requirements.Requirements
	for _, a := range alts {
		for _, v := range vol {
			m := a.Intersect(v)
			if m.Satisfiable() != nil {
				dead = append(dead, m)
				continue
			}
			if len(out) < maxVolumeAlternatives {
				out = append(out, m)
			}
		}
	}
	if len(out) == 0 && len(dead) > 0 {
		return dead[:1]
	}
	return out
}

// volume resolves one volume of p: its alternatives (none: it constrains
// nothing), a description of where they come from, or why p cannot be
// scheduled.
func (x *volumeIndex) volume(p *corev1.Pod, v corev1.Volume) ([]requirements.Requirements, string, string) {
	var name string
	var template *corev1.PersistentVolumeClaimSpec
	switch {
	case v.PersistentVolumeClaim != nil:
		name = v.PersistentVolumeClaim.ClaimName
	case v.Ephemeral != nil:
		// The ephemeral volume controller names the claim <pod>-<volume>.
		name = p.Name + "-" + v.Name
		if v.Ephemeral.VolumeClaimTemplate != nil {
			template = &v.Ephemeral.VolumeClaimTemplate.Spec
		}
	default:
		return nil, "", ""
	}
	ref := p.Namespace + "/" + name
	pvc := x.claims[ref]
	if pvc == nil {
		if template == nil {
			return nil, "", fmt.Sprintf("its PersistentVolumeClaim %s does not exist (volume %s)", ref, v.Name)
		}
		// Not created yet: the controller will create it from the
		// template, with the default StorageClass when it names none.
		class := x.defaultClass
		if template.StorageClassName != nil {
			class = *template.StorageClassName
		}
		return x.unbound(ref+" (ephemeral, not created yet)", class)
	}
	switch {
	case pvc.DeletionTimestamp != nil:
		return nil, "", fmt.Sprintf("its PersistentVolumeClaim %s is being deleted", ref)
	case pvc.Status.Phase == corev1.ClaimLost:
		return nil, "", fmt.Sprintf("its PersistentVolumeClaim %s is Lost (its PersistentVolume %q no longer exists)", ref, pvc.Spec.VolumeName)
	case pvc.Spec.VolumeName != "":
		return x.bound(ref, pvc)
	}
	return x.unbound(ref, x.claimClass(pvc))
}

// claimClass is the StorageClass of an unbound claim ("" for none): the one
// it names, else the default class, which the PV controller assigns to
// unbound claims that name none (Kubernetes 1.28 and later); an empty name
// is no class.
func (x *volumeIndex) claimClass(pvc *corev1.PersistentVolumeClaim) string {
	if c, ok := pvc.Annotations[annotationBetaStorageClass]; ok {
		return c
	}
	if pvc.Spec.StorageClassName != nil {
		return *pvc.Spec.StorageClassName
	}
	return x.defaultClass
}

// bound is the alternatives of a claim bound to a PersistentVolume: the
// terms of the volume's required node affinity (each one alternative), with
// the hostname dropped from local and hostPath volumes (a pod that moves
// gets a new node's disk; Karpenter ignores it too).
func (x *volumeIndex) bound(ref string, pvc *corev1.PersistentVolumeClaim) ([]requirements.Requirements, string, string) {
	pv := x.volumes[pvc.Spec.VolumeName]
	switch {
	case pv == nil:
		return nil, "", fmt.Sprintf("its PersistentVolumeClaim %s is bound to PersistentVolume %s, which does not exist", ref, pvc.Spec.VolumeName)
	case pv.DeletionTimestamp != nil:
		return nil, "", fmt.Sprintf("its PersistentVolumeClaim %s is bound to PersistentVolume %s, which is being deleted", ref, pv.Name)
	case pvc.Annotations[AnnotationBindCompleted] == "":
		return nil, "", fmt.Sprintf("its PersistentVolumeClaim %s names PersistentVolume %s, but the binding is not complete (no %s annotation): kube-scheduler waits for it", ref, pv.Name, AnnotationBindCompleted)
	}
	na := pv.Spec.NodeAffinity
	if na == nil || na.Required == nil {
		return nil, "", ""
	}
	local := pv.Spec.Local != nil || pv.Spec.HostPath != nil
	var alts []requirements.Requirements
	for i, term := range na.Required.NodeSelectorTerms {
		exprs := term.MatchExpressions
		if local {
			exprs = withoutKey(exprs, apis.LabelHostname)
			if len(term.MatchExpressions) > 0 && len(exprs) == 0 {
				alts = append(alts, requirements.Requirements{}) // only the hostname: anywhere
				continue
			}
		}
		if len(exprs) == 0 {
			continue
		}
		r, err := requirements.FromNodeSelectorRequirements(normalizeVolumeKeys(exprs))
		if err != nil {
			return nil, "", fmt.Sprintf("its PersistentVolume %s: spec.nodeAffinity.required.nodeSelectorTerms[%d]: %v", pv.Name, i, err)
		}
		alts = append(alts, r)
	}
	return alts, fmt.Sprintf("PersistentVolume %s of claim %s: %s", pv.Name, ref, altString(alts)), ""
}

// unbound is the alternatives of a claim not bound yet, of StorageClass
// class: its allowedTopologies (each term one alternative), when it waits
// for the first consumer.
func (x *volumeIndex) unbound(ref, class string) ([]requirements.Requirements, string, string) {
	if class == "" {
		return nil, "", fmt.Sprintf("its PersistentVolumeClaim %s is not bound and names no StorageClass, so no volume will be provisioned for it", ref)
	}
	sc := x.classes[class]
	if sc == nil {
		return nil, "", fmt.Sprintf("its PersistentVolumeClaim %s is not bound and its StorageClass %s does not exist", ref, class)
	}
	if sc.VolumeBindingMode == nil || *sc.VolumeBindingMode != storagev1.VolumeBindingWaitForFirstConsumer {
		// The API server defaults the mode to Immediate.
		return nil, "", fmt.Sprintf("its PersistentVolumeClaim %s is not bound and its StorageClass %s binds Immediately: the volume is provisioned first and the pod waits for it", ref, class)
	}
	var alts []requirements.Requirements
	for _, term := range sc.AllowedTopologies {
		var exprs []corev1.NodeSelectorRequirement
		for _, e := range term.MatchLabelExpressions {
			exprs = append(exprs, corev1.NodeSelectorRequirement{Key: e.Key, Operator: corev1.NodeSelectorOpIn, Values: e.Values})
		}
		if len(exprs) == 0 {
			continue
		}
		r, err := requirements.FromNodeSelectorRequirements(normalizeVolumeKeys(exprs))
		if err != nil {
			return nil, "", fmt.Sprintf("its StorageClass %s: allowedTopologies: %v", class, err)
		}
		alts = append(alts, r)
	}
	return alts, fmt.Sprintf("StorageClass %s of claim %s: %s", class, ref, altString(alts)), ""
}

func withoutKey(exprs []corev1.NodeSelectorRequirement, key string) []corev1.NodeSelectorRequirement {
	var out []corev1.NodeSelectorRequirement
	for _, e := range exprs {
		if e.Key != key {
			out = append(out, e)
		}
	}
	return out
}

// normalizeVolumeKeys reads the EBS CSI driver's zone key as the zone.
func normalizeVolumeKeys(exprs []corev1.NodeSelectorRequirement) []corev1.NodeSelectorRequirement {
	out := make([]corev1.NodeSelectorRequirement, len(exprs))
	for i, e := range exprs {
		if e.Key == LabelEBSCSIZone {
			e.Key = apis.LabelZone
		}
		out[i] = e
	}
	return out
}

// altString describes alternatives for messages ("zone In [a] or zone In [b]").
func altString(alts []requirements.Requirements) string {
	parts := make([]string, len(alts))
	for i, a := range alts {
		if len(a) == 0 {
			parts[i] = "any node"
			continue
		}
		parts[i] = shortReqs(a)
	}
	return strings.Join(parts, " or ")
}

// shortReqs is shortReq of each requirement, joined.
func shortReqs(r requirements.Requirements) string {
	parts := make([]string, len(r))
	for i, req := range r {
		parts[i] = shortReq(req)
	}
	return strings.Join(parts, ", ")
}

// volumeSignature is the part of a pod's grouping key its volumes decide.
func (pv podVolumes) signature() string {
	if pv.err != "" {
		return "!" + pv.err
	}
	parts := make([]string, len(pv.alts))
	for i, a := range pv.alts {
		parts[i] = a.String()
	}
	return strings.Join(parts, "|")
}
