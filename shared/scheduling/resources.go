package scheduling

import (
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	qty "github.com/nodewright/nodewright/shared/quantity"
)

// Resource dimensions of a vec. The first ones are fixed; extra slots hold
// other extended resources that existing nodes advertise in this solve.
const (
	rCPU = iota // millicores
	rMemory
	rEphemeral
	rPods
	rNvidiaGPU
	rAMDGPU
	rNeuron
	rNeuronCore
	rEFA
	rExtra0
	numRes   = rExtra0 + 3
	numFixed = rExtra0
)

// vec is a resource vector: fixed-size integers, so fitting and summing never
// allocate.
type vec [numRes]int64

func (a vec) add(b vec) vec {
	for i := range a {
		a[i] += b[i]
	}
	return a
}

func (a vec) sub(b vec) vec {
	for i := range a {
		a[i] -= b[i]
	}
	return a
}

func (a vec) scale(k int64) vec {
	for i := range a {
		a[i] *= k
	}
	return a
}

// fits says whether a is within b on every dimension.
func (a vec) fits(b vec) bool {
	for i := range a {
		if a[i] > b[i] {
			return false
		}
	}
	return true
}

// howMany is how many copies of a fit in room (a large number when a is zero).
func (a vec) howMany(room vec) int64 {
	n := int64(1 << 40)
	for i := range a {
		if a[i] <= 0 {
			if room[i] < 0 {
				return 0
			}
			continue
		}
		if room[i] < 0 {
			return 0
		}
		n = min(n, room[i]/a[i])
	}
	return n
}

var fixedNames = [numFixed]corev1.ResourceName{
	corev1.ResourceCPU, corev1.ResourceMemory, corev1.ResourceEphemeralStorage, corev1.ResourcePods,
	apis.ResourceNVIDIAGPU, apis.ResourceAMDGPU, apis.ResourceAWSNeuron, apis.ResourceAWSNeuronCore, apis.ResourceEFA,
}

// registry maps resource names to vec dimensions for one solve.
type registry struct {
	index map[corev1.ResourceName]int
	names [numRes]corev1.ResourceName
	extra int
}

func newRegistry() *registry {
	r := &registry{index: map[corev1.ResourceName]int{}}
	for i, n := range fixedNames {
		r.index[n], r.names[i] = i, n
	}
	return r
}

// slot returns the dimension of name, claiming an extra slot for a resource
// that nodes advertise (claim=true); ok is false when there is none.
func (r *registry) slot(name corev1.ResourceName, claim bool) (int, bool) {
	if i, ok := r.index[name]; ok {
		return i, true
	}
	if !claim || r.extra == numRes-numFixed {
		return 0, false
	}
	i := numFixed + r.extra
	r.extra++
	r.index[name], r.names[i] = i, name
	return i, true
}

// fromList converts a resource list; names without a slot are returned.
func (r *registry) fromList(rl corev1.ResourceList, claim bool) (v vec, unknown []corev1.ResourceName) {
	names := make([]corev1.ResourceName, 0, len(rl))
	for name := range rl {
		names = append(names, name)
	}
	slices.Sort(names) // extra slots are claimed in a deterministic order
	for _, name := range names {
		q := rl[name]
		i, ok := r.slot(name, claim)
		if !ok {
			if !q.IsZero() {
				unknown = append(unknown, name)
			}
			continue
		}
		// Amounts beyond what can be counted saturate at qty.Max
		// (no node offers that much) instead of wrapping negative.
		v[i] = qty.Clamped(name, q)
	}
	return v, unknown
}

// toList converts v back to quantities, leaving out zero extended resources.
func (r *registry) toList(v vec) corev1.ResourceList {
	rl := corev1.ResourceList{}
	for i, x := range v {
		if x == 0 && i > rPods {
			continue
		}
		rl[r.names[i]] = quantity(i, x)
	}
	return rl
}

// podRequests is what the kubelet admits a pod against: the larger of the
// init containers' and the app containers' (with restartable init
// containers, i.e. sidecars, running alongside) requests, plus pod overhead,
// plus one pod slot. Requests are read as the API server defaults them
// (withDefaultRequests), so a template or a manifest that sets only limits
// counts as the pod it becomes.
func (r *registry) podRequests(pod *corev1.Pod) (vec, []corev1.ResourceName) {
	v, unknown := r.fromList(podResourceList(pod), false)
	v[rPods] = 1
	return v, unknown
}

// podResourceList is the pod's requests as podRequests reads them, by name.
func podResourceList(pod *corev1.Pod) corev1.ResourceList {
	return resourcehelper.PodRequests(withDefaultRequests(pod), resourcehelper.PodResourcesOptions{})
}

// withDefaultRequests returns the pod as the API server admits it: a
// container that limits a resource it does not request requests the limit,
// and pod-level resources (spec.resources) with limits request, for each
// resource they leave out, the containers' aggregate request or else the
// limit. Pods read from the API server already are so (then, and for pods
// without limits, the pod itself is returned); templates (DaemonSets,
// Deployments turned into pods) and hand-written manifests are not.
func withDefaultRequests(pod *corev1.Pod) *corev1.Pod {
	if !needsDefaultRequests(pod) {
		return pod
	}
	p := &corev1.Pod{ObjectMeta: pod.ObjectMeta, Spec: *pod.Spec.DeepCopy(), Status: pod.Status}
	for _, cs := range [][]corev1.Container{p.Spec.InitContainers, p.Spec.Containers} {
		for i := range cs {
			requestLimits(&cs[i].Resources)
		}
	}
	if pr := p.Spec.Resources; pr != nil && len(pr.Limits) > 0 {
		aggregate := resourcehelper.AggregateContainerRequests(p, resourcehelper.PodResourcesOptions{})
		if pr.Requests == nil {
			pr.Requests = corev1.ResourceList{}
		}
		for _, from := range []corev1.ResourceList{aggregate, pr.Limits} {
			for name, q := range from {
				if _, set := pr.Requests[name]; !set && resourcehelper.IsSupportedPodLevelResource(name) {
					pr.Requests[name] = q.DeepCopy()
				}
			}
		}
	}
	return p
}

// needsDefaultRequests says whether some limit of the pod lacks its request.
func needsDefaultRequests(pod *corev1.Pod) bool {
	lacks := func(rr *corev1.ResourceRequirements) bool {
		for name := range rr.Limits {
			if _, ok := rr.Requests[name]; !ok {
				return true
			}
		}
		return false
	}
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if lacks(&cs[i].Resources) {
				return true
			}
		}
	}
	return pod.Spec.Resources != nil && lacks(pod.Spec.Resources)
}

// requestLimits sets each request the requirements leave out to its limit.
func requestLimits(rr *corev1.ResourceRequirements) {
	for name, q := range rr.Limits {
		if _, ok := rr.Requests[name]; ok {
			continue
		}
		if rr.Requests == nil {
			rr.Requests = corev1.ResourceList{}
		}
		rr.Requests[name] = q.DeepCopy()
	}
}

// buildExtra claims a slot for each resource of Input.Capacity (in name
// order) and converts each type's.
func (s *solver) buildExtra() {
	if len(s.in.Capacity) == 0 {
		return
	}
	s.extra = map[int]vec{}
	for _, name := range slices.Sorted(maps.Keys(s.in.Capacity)) {
		if t, ok := s.u.index[name]; ok {
			s.extra[t], _ = s.reg.fromList(s.in.Capacity[name], true)
		}
	}
}

// amountsVec converts the catalog's node amounts.
func amountsVec(a catalog.Amounts) vec {
	var v vec
	v[rCPU], v[rMemory], v[rEphemeral], v[rPods] = a.MilliCPU, a.MemoryBytes, a.EphemeralBytes, a.Pods
	v[rNvidiaGPU], v[rAMDGPU], v[rNeuron], v[rNeuronCore], v[rEFA] = a.NvidiaGPU, a.AMDGPU, a.Neuron, a.NeuronCore, a.EFA
	return v
}

// describe formats one dimension for people: "2Ti memory", "3 nvidia.com/gpu".
func (r *registry) describe(i int, x int64) string {
	q := quantity(i, x)
	switch i {
	case rCPU:
		return q.String() + " cpu"
	case rMemory:
		return q.String() + " memory"
	case rEphemeral:
		return q.String() + " ephemeral-storage"
	case rPods:
		return fmt.Sprintf("%d pods", x)
	}
	return q.String() + " " + string(r.names[i])
}
