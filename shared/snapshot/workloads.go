package snapshot

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"slices"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/rand"
)

// workload is a controller whose pods a snapshot may not hold yet.
type workload struct {
	kind, namespace, name string
	replicas              int32
	replicasField         string
	selector              *metav1.LabelSelector
	compiled              labels.Selector
	template              corev1.PodTemplateSpec
	// ordinal names pod i <name>-<i> exactly (StatefulSets); otherwise
	// new pods take the lowest free <name>-<i>.
	ordinal bool
	// owner is the controller reference the pods carry.
	owner metav1.OwnerReference
	// podLabels are the labels the controller adds to pod i.
	podLabels func(i int) map[string]string
	// claims are a StatefulSet's volumeClaimTemplates: pod <name>-<i> mounts
	// claim <template>-<name>-<i>.
	claims []corev1.PersistentVolumeClaim
	at     origin
}

func newWorkload(kind string, meta metav1.ObjectMeta, replicas *int32, field string, sel *metav1.LabelSelector, tmpl corev1.PodTemplateSpec) workload {
	w := workload{kind: kind, namespace: meta.Namespace, name: meta.Name, replicas: 1, replicasField: field, selector: sel, template: tmpl}
	if w.namespace == "" {
		w.namespace = "default"
	}
	if replicas != nil {
		w.replicas = *replicas
	}
	yes := true
	w.owner = metav1.OwnerReference{APIVersion: "apps/v1", Kind: kind, Name: w.name, UID: types.UID(kind + "/" + w.namespace + "/" + w.name), Controller: &yes, BlockOwnerDeletion: &yes}
	w.podLabels = func(int) map[string]string { return nil }
	return w
}

func deploymentWorkload(d *appsv1.Deployment) workload {
	w := newWorkload("Deployment", d.ObjectMeta, d.Spec.Replicas, "spec.replicas", d.Spec.Selector, d.Spec.Template)
	// Its pods belong to the ReplicaSet <name>-<pod-template-hash>.
	hash := templateHash(d.Spec.Template)
	w.owner.Kind, w.owner.Name = "ReplicaSet", w.name+"-"+hash
	w.owner.UID = types.UID("ReplicaSet/" + w.namespace + "/" + w.owner.Name)
	w.podLabels = func(int) map[string]string { return map[string]string{appsv1.DefaultDeploymentUniqueLabelKey: hash} }
	return w
}

func replicaSetWorkload(rs *appsv1.ReplicaSet) workload {
	return newWorkload("ReplicaSet", rs.ObjectMeta, rs.Spec.Replicas, "spec.replicas", rs.Spec.Selector, rs.Spec.Template)
}

func statefulSetWorkload(s *appsv1.StatefulSet) workload {
	w := newWorkload("StatefulSet", s.ObjectMeta, s.Spec.Replicas, "spec.replicas", s.Spec.Selector, s.Spec.Template)
	w.ordinal = true
	w.claims = s.Spec.VolumeClaimTemplates
	revision := w.name + "-" + templateHash(s.Spec.Template)
	w.podLabels = func(i int) map[string]string {
		return map[string]string{
			appsv1.StatefulSetPodNameLabel:        fmt.Sprintf("%s-%d", w.name, i),
			appsv1.PodIndexLabel:                  strconv.Itoa(i),
			appsv1.ControllerRevisionHashLabelKey: revision,
		}
	}
	return w
}

// jobWorkload runs spec.parallelism pods (default 1), no more than
// spec.completions, none while suspended.
func jobWorkload(j *batchv1.Job) workload {
	w := newWorkload("Job", j.ObjectMeta, j.Spec.Parallelism, "spec.parallelism", j.Spec.Selector, j.Spec.Template)
	w.owner.APIVersion = "batch/v1"
	if j.Spec.Completions != nil && *j.Spec.Completions < w.replicas && *j.Spec.Completions >= 0 {
		w.replicas = *j.Spec.Completions
	}
	if j.Spec.Suspend != nil && *j.Spec.Suspend {
		w.replicas = 0
	}
	w.podLabels = func(int) map[string]string {
		return map[string]string{batchv1.JobNameLabel: w.name, "job-name": w.name}
	}
	return w
}

// compileSelector parses the selector; without one (a Job's is generated,
// a manifest may leave it out) the template's labels select the pods.
func (w *workload) compileSelector() error {
	sel := w.selector
	if sel == nil {
		if len(w.template.Labels) == 0 {
			w.compiled = labels.Nothing()
			return nil
		}
		sel = &metav1.LabelSelector{MatchLabels: w.template.Labels}
	}
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		return err
	}
	w.compiled = s
	return nil
}

// MaxWorkloadPods caps the pods workloads may add to a snapshot, so that a
// typo in replicas cannot exhaust memory.
const MaxWorkloadPods = 100_000

// MaxPendingPods caps the pending pods a snapshot may list: a plan of more
// would take minutes (the worst case, 10,000 pods that each form a group of
// their own, takes a second and a half; time grows faster than the count).
const MaxPendingPods = 100_000

// expandWorkloads adds the pods each workload still needs.
func (r *reader) expandWorkloads() {
	total := 0
	for _, w := range r.workloads {
		total += int(w.replicas)
		if total > r.maxWorkload {
			r.fail(w.at.errorf(w.kind, w.namespace, w.name, w.replicasField,
				"%d: the snapshot's workloads would add more than %d pods", w.replicas, r.maxWorkload))
			return
		}
	}
	// Only pods read from the sources count towards a workload, not the
	// pods another workload adds here.
	read := r.pods[:len(r.pods):len(r.pods)]
	for _, w := range r.workloads {
		existing := 0
		for _, e := range read {
			if e.pod.Namespace == w.namespace && w.compiled.Matches(labels.Set(e.pod.Labels)) {
				existing++
			}
		}
		if w.ordinal {
			r.addOrdinalPods(w)
			continue
		}
		for i, made := 0, existing; made < int(w.replicas); i++ {
			name := fmt.Sprintf("%s-%d", w.name, i)
			if _, taken := r.podKeys[key(w.namespace, name)]; taken {
				continue
			}
			r.addPod(w.pod(name, i), w.at)
			made++
		}
	}
}

// addOrdinalPods adds pod <name>-<i> for each ordinal i the snapshot lacks.
func (r *reader) addOrdinalPods(w workload) {
	for i := 0; i < int(w.replicas); i++ {
		name := fmt.Sprintf("%s-%d", w.name, i)
		if _, taken := r.podKeys[key(w.namespace, name)]; !taken {
			p := w.pod(name, i)
			r.addPod(p, w.at)
			r.addClaims(w, p)
		}
	}
}

// pod is the pod the controller would create as its i-th.
func (w workload) pod(name string, i int) *corev1.Pod {
	meta := *w.template.ObjectMeta.DeepCopy()
	meta.Name, meta.Namespace, meta.GenerateName = name, w.namespace, ""
	meta.UID = types.UID("Pod/" + w.namespace + "/" + name)
	meta.OwnerReferences = []metav1.OwnerReference{w.owner}
	if extra := w.podLabels(i); len(extra) > 0 {
		if meta.Labels == nil {
			meta.Labels = map[string]string{}
		}
		for k, v := range extra {
			meta.Labels[k] = v
		}
	}
	p := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: meta,
		Spec:       *w.template.Spec.DeepCopy(),
		Status:     corev1.PodStatus{Phase: corev1.PodPending},
	}
	// A StatefulSet's claim templates replace the template's volumes of
	// the same name, as its controller does.
	for _, c := range w.claims {
		v := corev1.Volume{Name: c.Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c.Name + "-" + name}}}
		if i := slices.IndexFunc(p.Spec.Volumes, func(x corev1.Volume) bool { return x.Name == c.Name }); i >= 0 {
			p.Spec.Volumes[i] = v
		} else {
			p.Spec.Volumes = append(p.Spec.Volumes, v)
		}
	}
	return p
}

// addClaims adds, when the snapshot reads volumes, the claims of pod's
// claim templates that the sources lack, as the StatefulSet controller
// creates them (unbound, of the template's class).
func (r *reader) addClaims(w workload, pod *corev1.Pod) {
	if len(r.volumeKeys) == 0 {
		return
	}
	for _, c := range w.claims {
		name := c.Name + "-" + pod.Name
		k := "PersistentVolumeClaim/" + key(w.namespace, name)
		if _, ok := r.volumeKeys[k]; ok {
			continue
		}
		r.volumeKeys[k] = w.at
		pvc := &corev1.PersistentVolumeClaim{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: w.namespace, Labels: c.Labels},
			Spec:       *c.Spec.DeepCopy(),
			Status:     corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending},
		}
		r.volumes.Claims = append(r.volumes.Claims, pvc)
	}
}

// templateHash is a short stable hash of a pod template, shaped like the
// controllers' pod-template-hash.
func templateHash(t corev1.PodTemplateSpec) string {
	data, _ := json.Marshal(t) // a decoded template always marshals
	h := fnv.New32a()
	h.Write(data)
	return rand.SafeEncodeString(strconv.FormatUint(uint64(h.Sum32()), 10))
}
