package provision

import (
	"maps"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodewright/nodewright/shared/metrics"
	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/shared/termination"
)

// The twins of Karpenter's metrics that the provision function publishes
// (see metrics.Karpenter for what each means here).

// karpenterRegistered counts a launched NodeClaim's Node registered.
func (r *Reconciler) karpenterRegistered(rec *state.NodeClaim) {
	_ = r.Metrics.Emit(metrics.KarpenterNodesCreated, 1, metrics.Dims{metrics.LabelNodePool: rec.NodePool, metrics.LabelZone: zoneOrUnknown(rec.Zone)})
}

// karpenterSolved publishes one provisioning solve's duration and the pods
// it could place on no NodePool.
func (r *Reconciler) karpenterSolved(took time.Duration, unschedulable int) {
	dims := metrics.Dims{metrics.LabelController: metrics.ControllerProvisioner}
	_ = r.Metrics.Emit(metrics.KarpenterSchedulingDuration, took.Seconds(), dims)
	_ = r.Metrics.Emit(metrics.KarpenterUnschedulablePods, float64(unschedulable), dims)
}

// karpenterRound publishes a round's cluster node count and, per NodePool,
// its usage (the capacity of its NodeClaims with an instance, terminating
// ones aside) and limits, per resource as Karpenter names them.
func (r *Reconciler) karpenterRound(w *world) {
	_ = r.Metrics.Emit(metrics.KarpenterClusterStateNodeCount, float64(len(w.view.Nodes)), nil)
	usage := map[string]corev1.ResourceList{}
	for _, p := range w.pools {
		usage[p.Name] = corev1.ResourceList{}
	}
	for _, rec := range w.records {
		u, ok := usage[rec.NodePool]
		if !ok || rec.InstanceID == "" || rec.Phase == state.Terminating {
			continue
		}
		for name, q := range rec.Capacity {
			sum := u[name]
			sum.Add(q)
			u[name] = sum
		}
		nodes := u[resourceNodes]
		nodes.Add(*resource.NewQuantity(1, resource.DecimalSI))
		u[resourceNodes] = nodes
	}
	for _, p := range w.pools {
		if _, ok := usage[p.Name][resourceNodes]; !ok {
			usage[p.Name][resourceNodes] = *resource.NewQuantity(0, resource.DecimalSI)
		}
		used, limits := karpenterValues(usage[p.Name]), karpenterValues(corev1.ResourceList(p.Spec.Limits))
		for _, res := range slices.Sorted(maps.Keys(used)) {
			_ = r.Metrics.Emit(metrics.KarpenterNodePoolsUsage, used[res], metrics.Dims{metrics.LabelResourceType: res, metrics.LabelNodePool: p.Name})
		}
		for _, res := range slices.Sorted(maps.Keys(limits)) {
			_ = r.Metrics.Emit(metrics.KarpenterNodePoolsLimit, limits[res], metrics.Dims{metrics.LabelResourceType: res, metrics.LabelNodePool: p.Name})
		}
	}
}

// resourceNodes is the "nodes" resource of NodePool usage and limits.
const resourceNodes corev1.ResourceName = "nodes"

// karpenterValues are a resource list's values by Karpenter's resource_type
// label, as Karpenter gives them: cpu in cores, the others in units.
func karpenterValues(list corev1.ResourceList) map[string]float64 {
	out := map[string]float64{}
	for res, q := range list {
		v := float64(q.Value())
		if res == corev1.ResourceCPU {
			v = float64(q.MilliValue()) / 1000
		}
		out[ResourceType(res)] = v
	}
	return out
}

// ResourceType is Karpenter's resource_type label of a resource name:
// lower case, dashes as underscores.
func ResourceType(name corev1.ResourceName) string {
	return strings.ReplaceAll(strings.ToLower(string(name)), "-", "_")
}

// karpenterPodsStarted observes, once per pod, the startup duration
// (creation to Ready) of the pods on Nodewright's nodes that became Ready
// since the previous sweep: those whose Ready condition turned True within
// the last sweep interval before now.
func (r *Reconciler) karpenterPodsStarted(view *View, records []*state.NodeClaim) {
	ours := map[string]bool{}
	for _, rec := range records {
		if rec.NodeName != "" {
			ours[rec.NodeName] = true
		}
	}
	for _, d := range PodsStarted(view.Pods, ours, r.Now(), termination.SweepInterval) {
		_ = r.Metrics.Emit(metrics.KarpenterPodsStartupDuration, d.Seconds(), nil)
	}
}

// PodsStarted returns the startup durations (creation to Ready) of the
// pods on the given nodes whose Ready condition turned True in (now-window,
// now].
func PodsStarted(pods []*corev1.Pod, nodes map[string]bool, now time.Time, window time.Duration) []time.Duration {
	var out []time.Duration
	for _, p := range pods {
		if p.Spec.NodeName == "" || !nodes[p.Spec.NodeName] {
			continue
		}
		for _, c := range p.Status.Conditions {
			at := c.LastTransitionTime.Time
			if c.Type != corev1.PodReady || c.Status != corev1.ConditionTrue || !at.After(now.Add(-window)) || at.After(now) {
				continue
			}
			if d := at.Sub(p.CreationTimestamp.Time); d >= 0 {
				out = append(out, d)
			}
		}
	}
	return out
}

// zoneOrUnknown is a zone label value: CloudWatch refuses an empty one.
func zoneOrUnknown(zone string) string {
	if zone == "" {
		return "unknown"
	}
	return zone
}
