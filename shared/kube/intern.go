package kube

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// podInterner shares, among the pods of one list, the parts that the pods
// of one workload have in common: their labels and owners, their trimmed
// containers and init containers, node selector, affinity, tolerations and
// topology spread. Pods of a ReplicaSet are alike in all of these, and they
// are most of what a trimmed pod keeps, so a cache of 150,000 pods keeps one
// copy of each per workload rather than one per pod. Two pods share a part
// only when its encoding (as the wire filter left it, hence as the trim
// keeps it) is byte for byte the same, so each pod's value is the one it
// would have had alone. The objects of a View are read-only (see View);
// sharing among pods needs nothing more.
type podInterner struct {
	parts map[string]any
	key   []byte
}

func newPodInterner() *podInterner { return &podInterner{parts: map[string]any{}} }

// share replaces, in p (decoded from enc and trimmed), each part another
// pod of the list already has with that pod's copy.
func (in *podInterner) share(p *corev1.Pod, enc []byte) {
	var meta, spec []byte
	for b := enc; len(b) > 0; {
		f, rest, err := nextField(b)
		if err != nil {
			return
		}
		switch {
		case f.num == 1 && f.typ == wireBytes:
			meta = f.payload
		case f.num == 2 && f.typ == wireBytes:
			spec = f.payload
		}
		b = rest
	}
	// ObjectMeta: labels 11, ownerReferences 13.
	if v, ok := in.one(meta, 11, 'l', p.Labels); ok {
		p.Labels = v.(map[string]string)
	}
	if v, ok := in.one(meta, 13, 'o', p.OwnerReferences); ok {
		p.OwnerReferences = v.([]metav1.OwnerReference)
	}
	// PodSpec: containers 2, nodeSelector 7, affinity 18, initContainers
	// 20, tolerations 22, topologySpreadConstraints 33.
	if v, ok := in.one(spec, 2, 'c', p.Spec.Containers); ok {
		p.Spec.Containers = v.([]corev1.Container)
	}
	if v, ok := in.one(spec, 20, 'i', p.Spec.InitContainers); ok {
		p.Spec.InitContainers = v.([]corev1.Container)
	}
	if v, ok := in.one(spec, 7, 's', p.Spec.NodeSelector); ok {
		p.Spec.NodeSelector = v.(map[string]string)
	}
	if v, ok := in.one(spec, 18, 'a', p.Spec.Affinity); ok {
		p.Spec.Affinity = v.(*corev1.Affinity)
	}
	if v, ok := in.one(spec, 22, 't', p.Spec.Tolerations); ok {
		p.Spec.Tolerations = v.([]corev1.Toleration)
	}
	if v, ok := in.one(spec, 33, 'p', p.Spec.TopologySpreadConstraints); ok {
		p.Spec.TopologySpreadConstraints = v.([]corev1.TopologySpreadConstraint)
	}
}

// one looks up the part of msg in field num (every occurrence: a repeated
// field or a map) under id: it returns the copy an earlier pod holds (true),
// or records mine and returns false. A pod without the field shares nothing.
func (in *podInterner) one(msg []byte, num int, id byte, mine any) (any, bool) {
	in.key = append(in.key[:0], id)
	for b := msg; len(b) > 0; {
		f, rest, err := nextField(b)
		if err != nil {
			return nil, false
		}
		if f.num == num {
			in.key = append(in.key, f.whole...)
		}
		b = rest
	}
	if len(in.key) == 1 {
		return nil, false
	}
	if v, ok := in.parts[string(in.key)]; ok {
		return v, true
	}
	in.parts[string(in.key)] = mine
	return nil, false
}
