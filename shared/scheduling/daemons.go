package scheduling

import (
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"

	"github.com/nodewright/nodewright/shared/podstate"
	"github.com/nodewright/nodewright/shared/requirements"
)

// daemon is a DaemonSet's pod as the solve needs it: what it requests, where
// it runs, and which host ports it binds.
type daemon struct {
	name        string // namespace/name of the DaemonSet
	uid         string
	req         vec
	tolerations []corev1.Toleration
	alts        []requirements.Requirements
	affinity    *nodeaffinity.RequiredNodeAffinity // nil: selects every node
	hostPorts   []hostPort
}

// buildDaemons reads each DaemonSet's pod. Where a pod of the DaemonSet runs
// on a node of the input, that pod is the model, as Karpenter takes it:
// admission (a LimitRange, VPA, a mutating webhook) may have given it other
// requests or tolerations than the template, and new nodes will get pods
// like it. Its required node affinity is the template's, since the
// DaemonSet controller pins each pod to its own node. Otherwise the
// template is the model, with its requests defaulted as the API server
// would (podRequests).
func (s *solver) buildDaemons() {
	live := s.liveDaemonPods()
	for _, ds := range s.in.DaemonSets {
		if ds == nil {
			continue
		}
		key := ds.Namespace + "/" + ds.Name
		p := podFromTemplate(ds)
		if lp := live[key]; lp != nil && (ds.UID == "" || ownerUID(lp) == "" || ownerUID(lp) == string(ds.UID)) {
			p = fromLivePod(lp, ds)
		}
		req, _ := s.reg.podRequests(p)
		alts, err := requirements.FromPod(p)
		if err != nil {
			continue
		}
		s.daemons = append(s.daemons, &daemon{name: key, uid: string(ds.UID), req: req, tolerations: p.Spec.Tolerations, alts: alts,
			affinity: nodeSelection(p), hostPorts: podHostPorts(p)})
	}
}

// podFromTemplate is the pod a DaemonSet's template describes.
func podFromTemplate(ds *appsv1.DaemonSet) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: ds.Spec.Template.ObjectMeta, Spec: ds.Spec.Template.Spec}
	p.Namespace = ds.Namespace
	return p
}

// fromLivePod is a running pod of ds with the template's required node
// affinity in place of the one its controller gave it.
func fromLivePod(lp *corev1.Pod, ds *appsv1.DaemonSet) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: lp.ObjectMeta, Spec: *lp.Spec.DeepCopy()}
	p.Spec.NodeName = ""
	var required *corev1.NodeSelector
	if a := ds.Spec.Template.Spec.Affinity; a != nil && a.NodeAffinity != nil {
		required = a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.DeepCopy()
	}
	if a := p.Spec.Affinity; a != nil && a.NodeAffinity != nil {
		a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = required
	} else if required != nil {
		if p.Spec.Affinity == nil {
			p.Spec.Affinity = &corev1.Affinity{}
		}
		p.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: required}
	}
	return p
}

// liveDaemonPods is, per DaemonSet (namespace/name), the newest of its pods
// bound to the input's nodes (then the last by name, so the choice does not
// depend on input order).
func (s *solver) liveDaemonPods() map[string]*corev1.Pod {
	out := map[string]*corev1.Pod{}
	for _, n := range s.in.Nodes {
		if n == nil {
			continue
		}
		for _, p := range slices.Concat(n.Bound.newestDaemons(), unsummarised(n)) {
			name, ok := daemonSetOf(p)
			if !ok || podstate.Terminal(p) {
				continue
			}
			key := p.Namespace + "/" + name
			if cur := out[key]; cur == nil || newer(p, cur) {
				out[key] = p
			}
		}
	}
	return out
}

func newer(a, b *corev1.Pod) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return b.CreationTimestamp.Before(&a.CreationTimestamp)
	}
	return a.Name > b.Name
}

// daemonSetOf names the DaemonSet that controls the pod.
func daemonSetOf(p *corev1.Pod) (string, bool) {
	if ref := metav1.GetControllerOfNoCopy(p); ref != nil && ref.Kind == "DaemonSet" {
		return ref.Name, true
	}
	return "", false
}

func ownerUID(p *corev1.Pod) string {
	if ref := metav1.GetControllerOf(p); ref != nil {
		return string(ref.UID)
	}
	return ""
}

// reserveDaemons holds room on each existing or in-flight node for the
// daemons that will run there and have no pod there yet, as Karpenter does:
// the requests of the DaemonSets whose pods the node admits (they tolerate
// its taints, as they count while it is still coming up, and their node
// selection matches it) less what the DaemonSets' pods bound to it already
// request, never below zero in any resource (a daemon pod that runs where
// its DaemonSet would not, because a label appeared later, frees nothing).
func (s *solver) reserveDaemons() {
	if len(s.daemons) == 0 {
		return
	}
	for _, n := range s.nodes {
		var want, have vec
		for _, ds := range s.daemons {
			if !tolerates(ds.tolerations, n.taints, false) {
				continue
			}
			if !n.selectedBy(ds.affinity) {
				continue
			}
			want = want.add(ds.req)
		}
		if want == (vec{}) {
			continue
		}
		if b := n.bound; b != nil {
			have = s.reg.resolve(have, b.daemonN, b.daemonReq)
		}
		for _, p := range n.pods {
			if _, ok := daemonSetOf(p); ok && !podstate.Terminal(p) {
				req, _ := s.reg.podRequests(p)
				have = have.add(req)
			}
		}
		var room vec
		for i := range want {
			room[i] = max(want[i]-have[i], 0)
		}
		n.used = n.used.add(room)
	}
}
