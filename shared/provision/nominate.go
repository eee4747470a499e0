package provision

import (
	"maps"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/nodewright/nodewright/shared/scheduling"
	"github.com/nodewright/nodewright/shared/state"
)

// nominate keeps pods on the NodeClaims launched for them: a pending pod
// that a launched, not yet registered NodeClaim was planned for (its
// record's Claim.Pods, or placed tells, pod key -> NodeClaim: the pods an
// earlier solve put in the room of an in-flight NodeClaim) leaves the
// solve's pods and is put on that NodeClaim's in-flight node, as bound pods
// are on a Node, while the node has room for its requests (cpu, memory, pod
// count). A solve then places only the pods nothing was launched for yet:
// a round after one whose work budget deferred pods starts with those,
// instead of spending its budget placing again the pods already covered,
// and capacity planned for a pod is never handed to another. It changes in
// in place and returns how many pods it nominated and the NodeClaims it
// nominated them to, sorted.
func nominate(in *scheduling.Input, records []*state.NodeClaim, placed *placements) (int, []string) {
	inFlight := map[string]*scheduling.Node{}
	for _, n := range in.Nodes {
		if n.InFlight {
			inFlight[n.Node.Name] = n
		}
	}
	claimOf := placed.snapshot(inFlight) // pod key -> NodeClaim
	for _, r := range records {
		if inFlight[r.Name] == nil {
			continue
		}
		for _, p := range r.Claim.Pods {
			claimOf[p] = r.Name
		}
	}
	if len(claimOf) == 0 {
		return 0, nil
	}
	used := map[string]corev1.ResourceList{}
	for name, n := range inFlight {
		used[name] = corev1.ResourceList{}
		for _, p := range n.Pods {
			add(used[name], p)
		}
	}
	kept := in.Pods[:0:0]
	nominated := 0
	to := map[string]bool{}
	for _, p := range in.Pods {
		name, ok := claimOf[p.Namespace+"/"+p.Name]
		n := inFlight[name]
		if !ok || !fits(used[name], p, n.Node.Status.Allocatable, len(n.Pods)) {
			kept = append(kept, p)
			continue
		}
		add(used[name], p)
		c := *p
		c.Spec.NodeName = name
		n.Pods = append(n.Pods, &c)
		nominated++
		to[name] = true
	}
	in.Pods = kept
	return nominated, slices.Sorted(maps.Keys(to))
}

// add adds p's requests to used.
func add(used corev1.ResourceList, p *corev1.Pod) {
	for k, q := range resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{}) {
		sum := used[k]
		sum.Add(q)
		used[k] = sum
	}
}

// fits says whether p's cpu and memory requests fit in alloc beside used,
// and one more pod beside pods.
func fits(used corev1.ResourceList, p *corev1.Pod, alloc corev1.ResourceList, pods int) bool {
	if max, ok := alloc[corev1.ResourcePods]; ok && int64(pods+1) > max.Value() {
		return false
	}
	req := resourcehelper.PodRequests(p, resourcehelper.PodResourcesOptions{})
	for _, k := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		want, ok := req[k]
		if !ok {
			continue
		}
		total := used[k].DeepCopy()
		total.Add(want)
		if a, ok := alloc[k]; ok && total.Cmp(a) > 0 {
			return false
		}
	}
	return true
}

// placements remembers, in the warm container, the pods a solve placed in
// the room of in-flight NodeClaims (no record names them), so that the
// next round nominates them too. Entries go with their NodeClaim once it
// is no longer in flight.
type placements struct {
	mu sync.Mutex
	on map[string]string // pod key -> NodeClaim
}

// snapshot returns the placements onto the given in-flight NodeClaims,
// forgetting the others.
func (p *placements) snapshot(inFlight map[string]*scheduling.Node) map[string]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := map[string]string{}
	for pod, nc := range p.on {
		if inFlight[nc] != nil {
			out[pod] = nc
		} else {
			delete(p.on, pod)
		}
	}
	return out
}

// record adds a plan's placements onto in-flight NodeClaims.
func (p *placements) record(plan *scheduling.Result) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range plan.ExistingNodes {
		if !e.InFlight {
			continue
		}
		if p.on == nil {
			p.on = map[string]string{}
		}
		for _, pod := range e.Pods {
			p.on[pod] = e.Node
		}
	}
}
