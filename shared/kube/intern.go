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
	keys  [len(sharedParts)][]byte
}

// sharedParts are the parts shared: the message (1 ObjectMeta, 2 PodSpec)
// and field they are in, and an id that keeps their keys apart.
var sharedParts = [...]struct {
	msg, num int
	id       byte
}{
	{1, 11, 'l'}, // labels
	{1, 13, 'o'}, // ownerReferences
	{2, 2, 'c'},  // containers
	{2, 20, 'i'}, // initContainers
	{2, 7, 's'},  // nodeSelector
	{2, 18, 'a'}, // affinity
	{2, 22, 't'}, // tolerations
	{2, 33, 'p'}, // topologySpreadConstraints
}

func newPodInterner() *podInterner { return &podInterner{parts: map[string]any{}} }

// share replaces, in p (decoded from enc and trimmed), each part another
// pod of the list already has with that pod's copy.
func (in *podInterner) share(p *corev1.Pod, enc []byte) {
	for i := range in.keys {
		in.keys[i] = append(in.keys[i][:0], sharedParts[i].id)
	}
	for b := enc; len(b) > 0; {
		f, rest, err := nextField(b)
		if err != nil {
			return
		}
		b = rest
		if (f.num != 1 && f.num != 2) || f.typ != wireBytes {
			continue
		}
		for m := f.payload; len(m) > 0; {
			g, rest, err := nextField(m)
			if err != nil {
				return
			}
			m = rest
			for i, sp := range sharedParts {
				if sp.msg == f.num && sp.num == g.num {
					in.keys[i] = append(in.keys[i], g.whole...)
				}
			}
		}
	}
	if v, ok := in.one(0, p.Labels); ok {
		p.Labels = v.(map[string]string)
	}
	if v, ok := in.one(1, p.OwnerReferences); ok {
		p.OwnerReferences = v.([]metav1.OwnerReference)
	}
	if v, ok := in.one(2, p.Spec.Containers); ok {
		p.Spec.Containers = v.([]corev1.Container)
	}
	if v, ok := in.one(3, p.Spec.InitContainers); ok {
		p.Spec.InitContainers = v.([]corev1.Container)
	}
	if v, ok := in.one(4, p.Spec.NodeSelector); ok {
		p.Spec.NodeSelector = v.(map[string]string)
	}
	if v, ok := in.one(5, p.Spec.Affinity); ok {
		p.Spec.Affinity = v.(*corev1.Affinity)
	}
	if v, ok := in.one(6, p.Spec.Tolerations); ok {
		p.Spec.Tolerations = v.([]corev1.Toleration)
	}
	if v, ok := in.one(7, p.Spec.TopologySpreadConstraints); ok {
		p.Spec.TopologySpreadConstraints = v.([]corev1.TopologySpreadConstraint)
	}
}

// one looks up part i under its key (every occurrence of its field: a
// repeated field or a map): it returns the copy an earlier pod holds
// (true), or records mine and returns false. A pod without the field
// shares nothing.
func (in *podInterner) one(i int, mine any) (any, bool) {
	k := in.keys[i]
	if len(k) == 1 {
		return nil, false
	}
	if v, ok := in.parts[string(k)]; ok {
		return v, true
	}
	in.parts[string(k)] = mine
	return nil, false
}
