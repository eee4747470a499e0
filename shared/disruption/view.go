package disruption

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/podstate"
	"github.com/nodewright/nodewright/shared/provision"
	"github.com/nodewright/nodewright/shared/requirements"
	"github.com/nodewright/nodewright/shared/scheduling"
	"github.com/nodewright/nodewright/shared/state"
)

// view is the cluster as one decision sees it: every Node with its record
// (when Nodewright launched it), NodePool, pods, price and disruption cost;
// the capacity in flight; the pods that wait for room; the PDBs.
type view struct {
	in      *Inputs
	now     time.Time
	pools   map[string]*apis.NodePool
	classes map[string]*apis.EC2NodeClass
	// nodes are every listed Node, by name.
	nodes    []*nodeInfo
	byName   map[string]*nodeInfo
	byRecord map[string]*nodeInfo
	// inflight are the records launched but not registered, as the nodes
	// they will become (capacity a solve may count, not yet use).
	inflight []*scheduling.Node
	// waiting are the pods that need room now: unschedulable pending pods
	// and the pods of nodes that are going.
	waiting []*corev1.Pod
	// reserved are the waiting pods the baseline solve places on existing
	// nodes (by node name): consolidation leaves that room to them.
	reserved map[string][]*corev1.Pod
	pdbs     []pdbInfo
	// typesByPrice are the catalog's types by their cheapest offering in
	// any zone and capacity type, with those prices.
	typesByPrice []*catalog.InstanceType
	minPrices    []float64
	// launchable are the NodePools simulations may plan new nodes into
	// (Inputs.NodePools less Inputs.NotReady).
	launchable []*apis.NodePool
	// hashes are the NodePools' and EC2NodeClasses' hashes, by kind/name.
	hashes map[string]string
	// health is each NodePool's repair settings and unhealthy share,
	// computed once (repair.go).
	health map[string]*poolHealth
	// totals are each NodePool's price and Balanced disruption cost, over
	// all its nodes (nil: not summed yet; balanced.go).
	totals   map[string]PoolTotals
	warnings []string
	// work is what the run spent of Inputs.Budget.
	work work
	// bound summarises the nodes' bound pods once a run (nil: not yet;
	// bound.go).
	bound *runBound
}

// nodeInfo is one Node.
type nodeInfo struct {
	node *corev1.Node
	rec  *state.NodeClaim // nil: not launched by Nodewright
	pool *apis.NodePool   // the record's NodePool (nil: unknown or not ours)
	// pods are the active pods bound to the node; moving are copies of the
	// reschedulable ones, unbound (what a simulation places elsewhere).
	pods   []*corev1.Pod
	moving []*corev1.Pod
	// going: the node is being deleted or its pods are already moving; it
	// is no capacity.
	going bool
	// ready: pods may be placed on it (Ready and, for Nodewright's nodes,
	// initialized).
	ready bool
	// capacity: it reports allocatable or capacity (a solve can use it).
	capacity bool
	// repels: one of its pods has required pod anti-affinity (nil: not
	// checked yet); free: the node with its allocatable less its pods'
	// requests (nil: not computed yet).
	repels *bool
	free   *corev1.Node
	// left is free's allocatable as a room, and limits whether the node
	// counts against its NodePool's limits (nil: not read yet): every
	// simulation of a tick reads them (simulate.go).
	left   *room
	limits *bool

	instanceType, zone, capacityType string
	price                            float64
	priced                           bool
	// cost orders consolidation candidates, as Karpenter's disruption cost:
	// the eviction cost of its pods scaled by the lifetime it has left.
	cost float64
}

func (n *nodeInfo) name() string { return n.node.Name }

// recName is the record's name ("" for a node Nodewright did not launch).
func (n *nodeInfo) recName() string {
	if n.rec == nil {
		return ""
	}
	return n.rec.Name
}

// describe is "name (type capacity-type zone $price/h)".
func (n *nodeInfo) describe() string {
	parts := []string{}
	for _, s := range []string{n.instanceType, n.capacityType, n.zone} {
		if s != "" {
			parts = append(parts, s)
		}
	}
	if n.priced {
		parts = append(parts, money(n.price))
	}
	if len(parts) == 0 {
		return n.name()
	}
	return n.name() + " (" + strings.Join(parts, " ") + ")"
}

// money prints a price per hour.
func money(p float64) string { return fmt.Sprintf("$%.4f/h", p) }

type pdbInfo struct {
	key         string
	namespace   string
	selector    labels.Selector
	allowed     int32
	unhealthyOK bool
}

func newView(in *Inputs) *view {
	v := &view{
		in: in, now: in.Now, pools: map[string]*apis.NodePool{}, classes: map[string]*apis.EC2NodeClass{},
		byName: map[string]*nodeInfo{}, byRecord: map[string]*nodeInfo{}, reserved: map[string][]*corev1.Pod{}, hashes: map[string]string{},
		health: map[string]*poolHealth{},
	}
	for _, p := range in.NodePools {
		if p != nil {
			v.pools[p.Name] = p
		}
		if p == nil || !in.NotReady[p.Name] {
			v.launchable = append(v.launchable, p)
		}
	}
	for _, c := range in.NodeClasses {
		if c != nil {
			v.classes[c.Name] = c
		}
	}
	v.indexTypes()
	byInstance := map[string]*state.NodeClaim{}
	for _, r := range in.Records {
		if r != nil && r.InstanceID != "" {
			byInstance[r.InstanceID] = r
		}
	}
	registered := map[string]bool{}
	for _, n := range in.Nodes {
		if n == nil {
			continue
		}
		ni := &nodeInfo{node: n, rec: byInstance[provision.InstanceIDOf(n.Spec.ProviderID)]}
		if ni.rec != nil {
			registered[ni.rec.Name] = true
			v.byRecord[ni.rec.Name] = ni
			ni.pool = v.pools[ni.rec.NodePool]
		}
		ni.going = n.DeletionTimestamp != nil || (ni.rec != nil && ni.rec.Disruption != nil && ni.rec.Disruption.Reschedule)
		ni.capacity = len(n.Status.Allocatable) > 0 || len(n.Status.Capacity) > 0
		ni.ready = nodeReady(n) && (ni.rec == nil || ni.rec.Phase == state.Initialized || ni.rec.Phase == state.Disrupting)
		v.describeOffering(ni)
		v.nodes = append(v.nodes, ni)
		v.byName[n.Name] = ni
	}
	sort.Slice(v.nodes, func(i, j int) bool { return v.nodes[i].name() < v.nodes[j].name() })
	v.bindPods()
	for _, ni := range v.nodes {
		ni.cost = v.disruptionCost(ni)
		if ni.priced {
			ni.price += v.surplus(ni)
		}
	}
	for _, r := range in.Records {
		if r == nil || !r.Phase.InFlight() || registered[r.Name] {
			continue
		}
		n, err := v.inFlightNode(r)
		if err != nil {
			v.warn("%v", err)
			continue
		}
		v.inflight = append(v.inflight, &scheduling.Node{Node: n, InFlight: true})
	}
	sort.Slice(v.inflight, func(i, j int) bool { return v.inflight[i].Node.Name < v.inflight[j].Node.Name })
	v.indexPDBs()
	return v
}

// warn records a problem with the inputs, once.
func (v *view) warn(format string, args ...any) {
	w := fmt.Sprintf(format, args...)
	if !slices.Contains(v.warnings, w) {
		v.warnings = append(v.warnings, w)
	}
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// bindPods puts every active pod on its node and collects the pods that
// wait for room.
func (v *view) bindPods() {
	for _, p := range v.in.Pods {
		if p == nil || podstate.Terminal(p) {
			continue
		}
		if p.Spec.NodeName == "" {
			if p.DeletionTimestamp == nil && podstate.Provisionable(p) {
				v.waiting = append(v.waiting, p)
			}
			continue
		}
		n := v.byName[p.Spec.NodeName]
		if n == nil {
			continue
		}
		n.pods = append(n.pods, p)
		if podstate.Reschedulable(p) {
			c := *p
			c.Spec.NodeName = ""
			n.moving = append(n.moving, &c)
			if n.going {
				v.waiting = append(v.waiting, &c)
			}
		}
	}
	sort.Slice(v.waiting, func(i, j int) bool { return podKey(v.waiting[i]) < podKey(v.waiting[j]) })
	for _, n := range v.nodes {
		sort.Slice(n.pods, func(i, j int) bool { return podKey(n.pods[i]) < podKey(n.pods[j]) })
		sort.Slice(n.moving, func(i, j int) bool { return podKey(n.moving[i]) < podKey(n.moving[j]) })
	}
}

func podKey(p *corev1.Pod) string { return p.Namespace + "/" + p.Name }

// describeOffering fills the node's instance type, zone, capacity type and
// current price: from its record when Nodewright launched it, else from its
// labels; the price is the offering's now (Karpenter compares current
// prices), or the record's launch price when the offering has none.
func (v *view) describeOffering(ni *nodeInfo) {
	l := ni.node.Labels
	ni.instanceType, ni.zone, ni.capacityType = l[apis.LabelInstanceType], l[apis.LabelZone], l[apis.LabelCapacityType]
	if r := ni.rec; r != nil {
		if r.InstanceType != "" {
			ni.instanceType = r.InstanceType
		}
		if r.Zone != "" {
			ni.zone = r.Zone
		}
		if r.CapacityType != "" {
			ni.capacityType = r.CapacityType
		}
	}
	if p, ok := v.offeringPrice(ni.instanceType, ni.zone, ni.capacityType); ok {
		ni.price, ni.priced = p+v.nodeCost(ni), true
		return
	}
	if ni.rec != nil && ni.rec.PricePerHour > 0 {
		ni.price, ni.priced = ni.rec.PricePerHour+v.nodeCost(ni), true
	}
}

// nodeCost is what the node costs beyond its instance (Inputs.NodeCosts):
// its NodePool's, from its record or else its nodepool label.
func (v *view) nodeCost(ni *nodeInfo) float64 {
	pool := ni.node.Labels[apis.LabelNodePool]
	if ni.rec != nil && ni.rec.NodePool != "" {
		pool = ni.rec.NodePool
	}
	return v.in.NodeCosts[pool]
}

// offeringPrice is the price of an instance type's offering now (zone ""
// means the cheapest zone).
func (v *view) offeringPrice(typ, zone, capacityType string) (float64, bool) {
	if v.in.Catalog == nil || typ == "" {
		return 0, false
	}
	it, ok := v.in.Catalog.Get(typ)
	if !ok {
		return 0, false
	}
	zones := []string{zone}
	if zone == "" {
		zones = v.in.Zones
	}
	best := math.Inf(1)
	for _, z := range zones {
		switch capacityType {
		case apis.CapacityTypeOnDemand:
			if it.OnDemandPrice > 0 {
				best = min(best, it.OnDemandPrice)
			}
		case apis.CapacityTypeSpot:
			if v.in.Spot != nil {
				if p, ok := v.in.Spot.SpotPrice(typ, z); ok && p > 0 {
					best = min(best, p)
				}
			}
		case apis.CapacityTypeReserved:
			// Already paid for: no paid replacement is ever cheaper.
			best = min(best, scheduling.ReservedPrice(it.OnDemandPrice))
		}
	}
	return best, !math.IsInf(best, 1)
}

// price is an offering's price for a replacement, +Inf when EC2 does not
// offer it or refused it recently.
func (v *view) price(it *catalog.InstanceType, zone, capacityType string) float64 {
	if v.in.Unavailable != nil && v.in.Unavailable(it.Name, zone, capacityType) {
		return math.Inf(1)
	}
	switch capacityType {
	case apis.CapacityTypeOnDemand:
		if it.OnDemandPrice > 0 {
			return it.OnDemandPrice
		}
	case apis.CapacityTypeSpot:
		if v.in.Spot != nil {
			if p, ok := v.in.Spot.SpotPrice(it.Name, zone); ok && p > 0 {
				return p
			}
		}
	}
	return math.Inf(1)
}

// indexTypes orders the catalog by each type's cheapest offering, so a
// simulation that only wants replacements under a price solves over the
// types that can be.
func (v *view) indexTypes() {
	if v.in.Catalog == nil {
		v.warn("no instance catalog: only deletions are possible")
		return
	}
	if len(v.in.Zones) == 0 {
		v.warn("no zones: no replacement can be priced, only deletions are possible")
	}
	types := v.in.Catalog.Types()
	var pools []requirements.Requirements
	for _, p := range v.in.NodePools {
		if p == nil {
			continue
		}
		if reqs, err := requirements.FromNodePool(p); err == nil {
			pools = append(pools, reqs)
		}
	}
	prices := make(map[string]float64, len(types))
	for _, it := range types {
		if !allowedBySome(pools, it.Labels()) {
			continue
		}
		best := math.Inf(1)
		for _, z := range v.in.Zones {
			best = min(best, v.price(it, z, apis.CapacityTypeOnDemand), v.price(it, z, apis.CapacityTypeSpot))
		}
		if math.IsInf(best, 1) {
			continue
		}
		prices[it.Name] = best
		v.typesByPrice = append(v.typesByPrice, it)
	}
	sort.SliceStable(v.typesByPrice, func(i, j int) bool {
		a, b := v.typesByPrice[i], v.typesByPrice[j]
		if prices[a.Name] != prices[b.Name] {
			return prices[a.Name] < prices[b.Name]
		}
		return a.Name < b.Name
	})
	v.minPrices = make([]float64, len(v.typesByPrice))
	for i, it := range v.typesByPrice {
		v.minPrices[i] = prices[it.Name]
	}
}

// allowedBySome reports whether some pool's requirements allow a type's
// own labels (keys the type does not define are the offering's or the
// pool's, and not checked here: the solver does).
func allowedBySome(pools []requirements.Requirements, labels map[string]string) bool {
	for _, reqs := range pools {
		ok := true
		for _, r := range reqs {
			if val, has := labels[r.Key]; has && !r.Matches(val, true) {
				ok = false
				break
			}
		}
		if ok {
			return true
		}
	}
	return false
}

// typesUnder returns the types with an offering strictly cheaper than
// limit (every type when limit is +Inf).
func (v *view) typesUnder(limit float64) []*catalog.InstanceType {
	i := sort.SearchFloat64s(v.minPrices, limit)
	return v.typesByPrice[:i]
}

// disruptionCost is Karpenter's (pkg/utils/disruption: ReschedulingCost x
// LifetimeRemaining): each active pod costs 1, plus its deletion cost /
// 2^27 and its priority / 2^25, clamped to [-10, 10]; the sum is scaled by
// the fraction of expireAfter the node has left.
func (v *view) disruptionCost(ni *nodeInfo) float64 {
	cost := 0.0
	for _, p := range ni.pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		cost += evictionCost(p)
	}
	if ni.rec == nil || ni.pool == nil {
		return cost
	}
	if d := ni.pool.Spec.Template.Spec.ExpireAfter.Duration; d != nil && *d > 0 {
		left := (d.Seconds() - v.now.Sub(ni.rec.CreatedAt).Seconds()) / d.Seconds()
		cost *= min(max(left, 0), 1)
	}
	return cost
}

func evictionCost(p *corev1.Pod) float64 {
	cost := 1.0
	if s, ok := p.Annotations[corev1.PodDeletionCost]; ok {
		if c, err := strconv.ParseFloat(s, 64); err == nil {
			cost += c / math.Pow(2, 27)
		}
	}
	if p.Spec.Priority != nil {
		cost += float64(*p.Spec.Priority) / math.Pow(2, 25)
	}
	return min(max(cost, -10), 10)
}

func (v *view) indexPDBs() {
	for _, b := range v.in.PDBs {
		if b == nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(b.Spec.Selector)
		if err != nil {
			v.warn("PodDisruptionBudget %s/%s: selector: %v (it blocks every pod of its namespace)", b.Namespace, b.Name, err)
			sel = labels.Everything()
			b = b.DeepCopy()
			b.Status.DisruptionsAllowed = 0
		}
		v.pdbs = append(v.pdbs, pdbInfo{
			key: b.Namespace + "/" + b.Name, namespace: b.Namespace, selector: sel, allowed: b.Status.DisruptionsAllowed,
			unhealthyOK: b.Spec.UnhealthyPodEvictionPolicy != nil && *b.Spec.UnhealthyPodEvictionPolicy == policyv1.AlwaysAllow,
		})
	}
	sort.Slice(v.pdbs, func(i, j int) bool { return v.pdbs[i].key < v.pdbs[j].key })
}

// inFlightNode is the Node a launched record will register as
// (provision.InFlightNode: the same Node the provision function counts).
func (v *view) inFlightNode(r *state.NodeClaim) (*corev1.Node, error) {
	if v.in.Catalog == nil {
		return nil, fmt.Errorf("nodeclaim %s: no catalog to size it: not counted in flight", r.Name)
	}
	return provision.InFlightNode(r, v.in.Catalog, v.classes[r.NodeClass])
}
