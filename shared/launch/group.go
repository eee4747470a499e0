package launch

import (
	"encoding/json"
	"log/slog"
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/scheduling"
	"github.com/nodewright/nodewright/shared/state"
)

// Groups splits a plan's NodeClaims into groups of identical claims (same
// pool, options, offerings, requirements, labels and taints; pods may
// differ), which one CreateFleet launches together. Groups keep the plan's
// order; each group's indexes are in plan order.
func Groups(claims []scheduling.NodeClaim) [][]int {
	index := map[string]int{}
	var out [][]int
	for i, c := range claims {
		c.Pods = nil
		b, _ := json.Marshal(c)
		k := string(b)
		g, ok := index[k]
		if !ok {
			g = len(out)
			index[k] = g
			out = append(out, nil)
		}
		out[g] = append(out[g], i)
	}
	return out
}

// ClaimCapacity is what a claim may add to its NodePool: in every
// resource, the largest capacity among its instance-type options (EC2 may
// launch any of them).
func ClaimCapacity(c scheduling.NodeClaim, cat *catalog.Catalog, nc *apis.EC2NodeClass) corev1.ResourceList {
	settings := catalog.SettingsFor(nc)
	var most catalog.Amounts
	for _, name := range c.InstanceTypes {
		it, ok := cat.Get(name)
		if !ok {
			continue
		}
		capacity, _ := it.Compute(settings)
		most = maxAmounts(most, capacity)
	}
	return most.ResourceList()
}

// TypeCapacity is the capacity of one launched instance type.
func TypeCapacity(typ string, cat *catalog.Catalog, nc *apis.EC2NodeClass) corev1.ResourceList {
	it, ok := cat.Get(typ)
	if !ok {
		return nil
	}
	capacity, _ := it.Compute(catalog.SettingsFor(nc))
	return capacity.ResourceList()
}

func maxAmounts(a, b catalog.Amounts) catalog.Amounts {
	return catalog.Amounts{
		MilliCPU: max(a.MilliCPU, b.MilliCPU), MemoryBytes: max(a.MemoryBytes, b.MemoryBytes),
		EphemeralBytes: max(a.EphemeralBytes, b.EphemeralBytes), Pods: max(a.Pods, b.Pods),
		NvidiaGPU: max(a.NvidiaGPU, b.NvidiaGPU), AMDGPU: max(a.AMDGPU, b.AMDGPU), Neuron: max(a.Neuron, b.Neuron),
		NeuronCore: max(a.NeuronCore, b.NeuronCore), EFA: max(a.EFA, b.EFA),
	}
}

// overLimit drops, pool by pool, the claims that would take a limited
// pool's records past its limits (a safety net under the solver, which
// already plans within them).
func overLimit(pools []*apis.NodePool, records, recs []*state.NodeClaim, log *slog.Logger) (keep, dropped []*state.NodeClaim) {
	limits := map[string]corev1.ResourceList{}
	for _, p := range pools {
		if len(p.Spec.Limits) > 0 {
			limits[p.Name] = corev1.ResourceList(p.Spec.Limits)
		}
	}
	used := map[string]corev1.ResourceList{}
	for _, rec := range records {
		if _, ok := limits[rec.NodePool]; ok && rec.Phase != state.Terminating {
			used[rec.NodePool] = sumResources(used[rec.NodePool], rec.Capacity)
		}
	}
	for _, rec := range recs {
		lim, ok := limits[rec.NodePool]
		if !ok {
			keep = append(keep, rec)
			continue
		}
		next := sumResources(used[rec.NodePool], rec.Capacity)
		if res, over := exceeds(next, lim); over {
			log.Warn("nodeclaim dropped: it would exceed its NodePool's limit", "nodeClaim", rec.Name, "nodePool", rec.NodePool, "resource", res)
			dropped = append(dropped, rec)
			continue
		}
		used[rec.NodePool] = next
		keep = append(keep, rec)
	}
	return keep, dropped
}

// sumResources adds resource lists.
func sumResources(lists ...corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for _, l := range lists {
		for k, v := range l {
			q := out[k]
			q.Add(v)
			out[k] = q
		}
	}
	return out
}

// exceeds names the first resource (sorted) of used that is over limits.
func exceeds(used, limits corev1.ResourceList) (string, bool) {
	keys := make([]string, 0, len(limits))
	for k := range limits {
		keys = append(keys, string(k))
	}
	sort.Strings(keys)
	for _, k := range keys {
		lim := limits[corev1.ResourceName(k)]
		if u, ok := used[corev1.ResourceName(k)]; ok && u.Cmp(lim) > 0 {
			return k, true
		}
	}
	return "", false
}
