package provision

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/handover"
	"github.com/nodewright/nodewright/shared/nodecost"
	"github.com/nodewright/nodewright/shared/overlay"
	"github.com/nodewright/nodewright/shared/podstate"
	"github.com/nodewright/nodewright/shared/scheduling"
	"github.com/nodewright/nodewright/shared/state"
)

// View is the cluster as a round reads it from the API server. Slices hold
// pointers the round only reads.
type View struct {
	Pods       []*corev1.Pod
	Nodes      []*corev1.Node
	DaemonSets []*appsv1.DaemonSet
	PDBs       []*policyv1.PodDisruptionBudget
	// NodePools and NodeClasses are the Karpenter objects applied to the
	// cluster (none when the CRDs are not installed).
	NodePools   []*apis.NodePool
	NodeClasses []*apis.EC2NodeClass
	// NodeOverlays are the NodeOverlays applied to the cluster.
	NodeOverlays []*apis.NodeOverlay
	// Volumes are the PersistentVolumeClaims, PersistentVolumes and
	// StorageClasses that pin pods with volumes to zones (nil: not read;
	// pods' volumes then restrict nothing).
	Volumes *scheduling.Volumes
	// Karpenter is Karpenter's controller when it runs in the cluster
	// (handover.Running): Nodewright then launches nothing. KarpenterUnknown
	// is set when the cluster role may not read its Lease.
	Karpenter        *handover.Controller
	KarpenterUnknown bool
	// Warnings are problems reading the cluster that do not stop a round
	// (an invalid NodePool object, by name and field path).
	Warnings []string
}

// MergeConfig merges the deployed configuration with the cluster's objects: a
// NodePool or EC2NodeClass applied to the cluster replaces the deployed
// one of the same name (with a warning), so teams that `kubectl apply`
// their pools, as Karpenter users do, keep doing so.
func MergeConfig(pools []*apis.NodePool, classes []*apis.EC2NodeClass, v *View) ([]*apis.NodePool, []*apis.EC2NodeClass, []string) {
	var warnings []string
	poolBy := map[string]*apis.NodePool{}
	for _, p := range pools {
		poolBy[p.Name] = p
	}
	for _, p := range v.NodePools {
		if _, ok := poolBy[p.Name]; ok {
			warnings = append(warnings, fmt.Sprintf("NodePool %s: the cluster's object replaces the deployed configuration's", p.Name))
		}
		poolBy[p.Name] = p
	}
	classBy := map[string]*apis.EC2NodeClass{}
	for _, c := range classes {
		classBy[c.Name] = c
	}
	for _, c := range v.NodeClasses {
		if _, ok := classBy[c.Name]; ok {
			warnings = append(warnings, fmt.Sprintf("EC2NodeClass %s: the cluster's object replaces the deployed configuration's", c.Name))
		}
		classBy[c.Name] = c
	}
	outPools := make([]*apis.NodePool, 0, len(poolBy))
	for _, p := range poolBy {
		outPools = append(outPools, p)
	}
	sort.Slice(outPools, func(i, j int) bool { return outPools[i].Name < outPools[j].Name })
	outClasses := make([]*apis.EC2NodeClass, 0, len(classBy))
	for _, c := range classBy {
		outClasses = append(outClasses, c)
	}
	sort.Slice(outClasses, func(i, j int) bool { return outClasses[i].Name < outClasses[j].Name })
	return outPools, outClasses, warnings
}

// Inputs is what a round plans from.
type Inputs struct {
	View        *View
	Records     []*state.NodeClaim
	NodePools   []*apis.NodePool
	NodeClasses []*apis.EC2NodeClass
	Catalog     *catalog.Catalog
	Zones       []string
	Spot        catalog.SpotPricer
	Unavailable func(instanceType, zone, capacityType string) bool
	// Only, when set, limits the pods to place to these (namespace/name):
	// an interruption or consolidation places the pods of the nodes it
	// disrupts, never the cluster's other pending pods (those are the
	// provision function's), so two launchers never buy for the same pods.
	Only map[string]bool
	// Readiness, when set, is each NodePool's readiness (Readiness): the
	// pools that are not ready are left out of the solve.
	Readiness []PoolStatus
	// NodeOverlays reprice Catalog and Spot for the solve (package overlay).
	NodeOverlays []*apis.NodeOverlay
	// NodeCostRates, when set, price what each node costs beyond its
	// instance (its volumes and public IPv4 address: package nodecost);
	// PublicIPv4 says whether a class's subnets map public addresses (nil:
	// none do).
	NodeCostRates *nodecost.Rates
	PublicIPv4    func(class string) bool
	// Reservations are the capacity reservations the classes select
	// (Reservations): they offer capacity type reserved.
	Reservations []scheduling.Reservation
}

// MergeOverlays is the deployed NodeOverlays with the cluster's: one
// applied to the cluster replaces the deployed one of the same name, as
// MergeConfig does for NodePools. Sorted by name.
func MergeOverlays(deployed []*apis.NodeOverlay, v *View) []*apis.NodeOverlay {
	by := map[string]*apis.NodeOverlay{}
	for _, o := range deployed {
		by[o.Name] = o
	}
	if v != nil {
		for _, o := range v.NodeOverlays {
			by[o.Name] = o
		}
	}
	out := make([]*apis.NodeOverlay, 0, len(by))
	for _, name := range slices.Sorted(maps.Keys(by)) {
		out = append(out, by[name])
	}
	return out
}

// Overlaid is the catalog and spot prices with the overlays' prices (the
// inputs themselves when there are none), and the overlays in conflict.
func Overlaid(cat *catalog.Catalog, spot catalog.SpotPricer, overlays []*apis.NodeOverlay) (*catalog.Catalog, catalog.SpotPricer, []string) {
	c, r := overlaid(cat, spot, overlays)
	return c, r.Spot, r.warnings()
}

// overlaid is Overlaid with the extended resources the overlays add.
func overlaid(cat *catalog.Catalog, spot catalog.SpotPricer, overlays []*apis.NodeOverlay) (*catalog.Catalog, overlayResult) {
	if len(overlays) == 0 || cat == nil {
		return cat, overlayResult{Spot: spot}
	}
	c, r := overlay.ApplyCatalog(cat, spot, overlays)
	return c, overlayResult(r)
}

type overlayResult overlay.Result

func (r overlayResult) warnings() []string {
	var out []string
	for _, k := range r.Conflicts {
		out = append(out, k.String())
	}
	return out
}

// Prepared is a solve's input and what went into it.
type Prepared struct {
	Input scheduling.Input
	// Pending counts the unschedulable pods, Reschedulable the pods of
	// nodes being disrupted that are placed again, InFlight the NodeClaims
	// launched but not registered.
	Pending, Reschedulable, InFlight int
	Warnings                         []string
	// Catalog and Spot are the prices the solve chooses by: the inputs'
	// with the NodeOverlays applied.
	Catalog *catalog.Catalog
	Spot    catalog.SpotPricer
}

// Prepare builds a solve's input: the pods to place (unschedulable pods,
// and the pods of nodes that are going: deleted Nodes and Nodes whose
// NodeClaim is being disrupted with its pods to reschedule), the nodes they
// may go to (every other Node, plus the NodeClaims launched and not yet
// registered, as capacity in flight, so pods waiting for them never cause
// a second launch), and the configuration. It reads its inputs and
// returns a new value; it never modifies what it is given.
func Prepare(in Inputs) Prepared {
	var out Prepared
	var ov overlayResult
	in.Catalog, ov = overlaid(in.Catalog, in.Spot, in.NodeOverlays)
	in.Spot, out.Warnings = ov.Spot, ov.warnings()
	out.Catalog, out.Spot = in.Catalog, in.Spot
	byInstance := map[string]*state.NodeClaim{}
	for _, r := range in.Records {
		if r.InstanceID != "" {
			byInstance[r.InstanceID] = r
		}
	}
	classes := map[string]*apis.EC2NodeClass{}
	for _, c := range in.NodeClasses {
		classes[c.Name] = c
	}
	registered := map[string]bool{} // record names with a Node
	going := map[string]bool{}      // Node names whose pods move
	nodes := map[string]*scheduling.Node{}
	for _, n := range in.View.Nodes {
		r := byInstance[InstanceIDOf(n.Spec.ProviderID)]
		if r != nil {
			registered[r.Name] = true
		}
		if n.DeletionTimestamp != nil || (r != nil && r.Disruption != nil && r.Disruption.Reschedule) {
			going[n.Name] = true
			continue
		}
		if len(n.Status.Allocatable) == 0 && len(n.Status.Capacity) == 0 {
			out.Warnings = append(out.Warnings, fmt.Sprintf("node %s reports no capacity yet: left out", n.Name))
			if r != nil {
				delete(registered, r.Name) // its record stays capacity in flight
			}
			continue
		}
		sn := &scheduling.Node{Node: n}
		if len(n.Status.Allocatable) == 0 {
			c := *n
			c.Status.Allocatable = n.Status.Capacity
			sn.Node = &c
		}
		nodes[n.Name] = sn
	}
	for _, r := range in.Records {
		// A disrupted node whose Node is already gone (the instance went
		// first): its pods are still bound to its name and move too.
		if r.Disruption != nil && r.Disruption.Reschedule && r.NodeName != "" && nodes[r.NodeName] == nil {
			going[r.NodeName] = true
		}
	}
	var pods []*corev1.Pod
	unbound := map[string]int{}
	for _, p := range in.View.Pods {
		var key string // namespace/name, read only with Only
		if in.Only != nil {
			key = p.Namespace + "/" + p.Name
		}
		if in.Only != nil && !in.Only[key] && p.Spec.NodeName == "" {
			continue
		}
		switch {
		case !podstate.Active(p):
		case p.Spec.NodeName != "" && (going[p.Spec.NodeName] || (in.Only != nil && in.Only[key] && nodes[p.Spec.NodeName] == nil)):
			// Pods of a node that is going, and pods the caller asks to
			// move whose node is not listed (gone before them).
			if podstate.FollowsNode(p) || (in.Only != nil && !in.Only[key]) {
				continue
			}
			c := *p
			c.Spec.NodeName = ""
			pods = append(pods, &c)
			out.Reschedulable++
		case p.Spec.NodeName != "":
			if n, ok := nodes[p.Spec.NodeName]; ok {
				n.Pods = append(n.Pods, p)
			} else {
				unbound[p.Spec.NodeName]++
			}
		case podstate.Provisionable(p):
			pods = append(pods, p)
			out.Pending++
		}
	}
	for _, name := range slices.Sorted(maps.Keys(unbound)) {
		out.Warnings = append(out.Warnings, fmt.Sprintf("%d pods bound to node %s, which is not listed: left out", unbound[name], name))
	}
	var snodes []*scheduling.Node
	for _, n := range nodes {
		snodes = append(snodes, n)
	}
	for _, r := range in.Records {
		if !r.Phase.InFlight() || registered[r.Name] {
			continue
		}
		n, err := InFlightNode(r, in.Catalog, classes[r.NodeClass])
		if err != nil {
			out.Warnings = append(out.Warnings, err.Error())
			continue
		}
		snodes = append(snodes, &scheduling.Node{Node: n, InFlight: true})
		out.InFlight++
	}
	sort.Slice(snodes, func(i, j int) bool { return snodes[i].Node.Name < snodes[j].Node.Name })
	sort.Slice(pods, func(i, j int) bool {
		if pods[i].Namespace != pods[j].Namespace {
			return pods[i].Namespace < pods[j].Namespace
		}
		return pods[i].Name < pods[j].Name
	})
	// The bound pods are summarised once, for the pods to place (a solve
	// compares several plans, each of which would read them all again).
	snodes = scheduling.Summarise(snodes, pods)
	pools := in.NodePools
	if broken := notReady(in.Readiness); len(broken) > 0 {
		pools = nil
		for _, p := range in.NodePools {
			if _, ok := broken[p.Name]; !ok {
				pools = append(pools, p)
			}
		}
	}
	out.Input = scheduling.Input{
		Pods: pods, Nodes: snodes, NodePools: pools, NodeClasses: in.NodeClasses,
		DaemonSets: in.View.DaemonSets, InstanceTypes: in.Catalog.Types(), Capacity: ov.Capacity, Zones: in.Zones,
		Spot: in.Spot, Unavailable: in.Unavailable, Volumes: in.View.Volumes, Reservations: in.Reservations,
	}
	if in.NodeCostRates != nil {
		costs, err := nodecost.PerPool(pools, in.NodeClasses, in.PublicIPv4, *in.NodeCostRates)
		if err != nil {
			out.Warnings = append(out.Warnings, fmt.Sprintf("nodes priced by their instances alone: %v", err))
		} else {
			out.Input.NodeCosts = nodecost.PerHour(costs)
		}
	}
	return out
}

// InstanceIDOf returns the instance ID of an EKS providerID
// (aws:///us-east-1a/i-0123...), or "".
func InstanceIDOf(providerID string) string {
	if !strings.HasPrefix(providerID, "aws://") {
		return ""
	}
	i := strings.LastIndexByte(providerID, '/')
	id := providerID[i+1:]
	if !strings.HasPrefix(id, "i-") {
		return ""
	}
	return id
}

// InFlightNode is the Node a launched NodeClaim will register as, as far as
// a solve needs it: its labels (the claim's, its instance type's, its
// NodePool and EC2NodeClass, zone, region and capacity type once known),
// its allocatable and its taints. Provisioning and consolidation both
// count capacity in flight through it, so that they place a pending pod
// on it alike. A claim whose
// instance is not known yet is modelled as its cheapest option (the option
// order) with the smallest allocatable among its options.
func InFlightNode(r *state.NodeClaim, cat *catalog.Catalog, nc *apis.EC2NodeClass) (*corev1.Node, error) {
	typ := r.InstanceType
	if typ == "" && len(r.Claim.InstanceTypes) > 0 {
		typ = r.Claim.InstanceTypes[0]
	}
	it, ok := cat.Get(typ)
	if !ok {
		return nil, fmt.Errorf("nodeclaim %s: instance type %q is not in the catalog: not counted in flight", r.Name, typ)
	}
	settings := catalog.SettingsFor(nc)
	_, alloc := it.Compute(settings)
	if r.InstanceType == "" {
		for _, name := range r.Claim.InstanceTypes[1:] {
			if o, ok := cat.Get(name); ok {
				_, a := o.Compute(settings)
				alloc = minAmounts(alloc, a)
			}
		}
	}
	labels := map[string]string{}
	for k, v := range r.Claim.Labels {
		labels[k] = v
	}
	if r.InstanceType != "" {
		for k, v := range it.Labels() {
			labels[k] = v
		}
	}
	labels[apis.LabelNodePool] = r.NodePool
	if r.NodeClass != "" {
		labels[apis.LabelEC2NodeClass] = r.NodeClass
	}
	labels[apis.LabelHostname] = r.Name
	if r.Zone != "" {
		labels[apis.LabelZone] = r.Zone
		labels[apis.LabelRegion] = strings.TrimRight(r.Zone, "abcdefghijklmnopqrstuvwxyz")
	}
	if r.CapacityType != "" {
		labels[apis.LabelCapacityType] = r.CapacityType
	}
	n := &corev1.Node{}
	n.Name = r.Name
	n.Labels = labels
	n.Spec.Taints = append([]corev1.Taint(nil), r.Claim.Taints...)
	n.Status.Allocatable = alloc.ResourceList()
	n.Status.Capacity = n.Status.Allocatable
	return n, nil
}

func minAmounts(a, b catalog.Amounts) catalog.Amounts {
	return catalog.Amounts{
		MilliCPU: min(a.MilliCPU, b.MilliCPU), MemoryBytes: min(a.MemoryBytes, b.MemoryBytes),
		EphemeralBytes: min(a.EphemeralBytes, b.EphemeralBytes), Pods: min(a.Pods, b.Pods),
		NvidiaGPU: min(a.NvidiaGPU, b.NvidiaGPU), AMDGPU: min(a.AMDGPU, b.AMDGPU), Neuron: min(a.Neuron, b.Neuron),
		NeuronCore: min(a.NeuronCore, b.NeuronCore), EFA: min(a.EFA, b.EFA),
	}
}
