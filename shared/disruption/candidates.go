package disruption

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/podstate"
	"github.com/nodewright/nodewright/shared/requirements"
	"github.com/nodewright/nodewright/shared/state"
)

// class is how forcefully a method disrupts, which decides what blocks it.
type class int

const (
	// forceful (expiration): nothing blocks, as Karpenter v1's expiration;
	// the drain honours PDBs and do-not-disrupt until the pool's
	// terminationGracePeriod. It is not a choice: a forceful method's
	// candidate is no later method's, and its commands do not end the run
	// (the next method's join them).
	forceful class = iota
	// eventual (drift): a do-not-disrupt node blocks; do-not-disrupt pods
	// and PDBs block unless the pool sets terminationGracePeriod
	// (Karpenter's EventualDisruptionClass).
	eventual
	// graceful (emptiness, multi-node, single-node): everything blocks.
	graceful
	// unhealthy (repair): forceful, and it also takes a node that
	// registered but never initialized (Karpenter's repair takes any
	// NodeClaim with a Node: a kubelet that never became Ready included).
	unhealthy
)

// isForceful says whether nothing blocks the class: a forceful method's
// candidate is no later method's, and its commands do not end the run.
func (c class) isForceful() bool { return c == forceful || c == unhealthy }

// blocked says why a node cannot be disrupted in class c ("" when it can),
// and the cause a validation that finds it reports.
func (v *view) blocked(n *nodeInfo, c class) (string, Cause) {
	r := n.rec
	switch {
	case r == nil:
		return "not launched by Nodewright", CauseChanged
	case r.Disruption != nil:
		return fmt.Sprintf("already being disrupted (%s: %s)", r.Disruption.Action, r.Disruption.Reason), CauseChanged
	case r.Phase != state.Initialized && !(c == unhealthy && r.Phase == state.Registered):
		return fmt.Sprintf("not initialized (nodeclaim %s is %s)", r.Name, r.Phase), CauseChanged
	case n.node.DeletionTimestamp != nil:
		return "being deleted", CauseChanged
	case n.pool == nil:
		return fmt.Sprintf("NodePool %q not found", r.NodePool), CauseChanged
	case n.pool.Spec.Replicas != nil && c == graceful:
		// As Karpenter's: never consolidated, but expired and drifted.
		return fmt.Sprintf("NodePool %s is static (replicas)", n.pool.Name), CauseChanged
	}
	if c.isForceful() {
		return "", ""
	}
	if n.node.Annotations[apis.AnnotationDoNotDisrupt] == "true" {
		return "node is annotated " + apis.AnnotationDoNotDisrupt, CauseDoNotDisrupt
	}
	if c == eventual && n.pool.Spec.Template.Spec.TerminationGracePeriod != nil {
		return "", ""
	}
	return v.podsBlock(n)
}

// podsBlock says which pod keeps the node: an active pod annotated
// do-not-disrupt (DaemonSet and static pods included, as in Karpenter), or
// an evictable pod whose PDB allows no disruption now, or that several
// PDBs cover (the Eviction API refuses those).
func (v *view) podsBlock(n *nodeInfo) (string, Cause) {
	for _, p := range n.pods {
		if !podstate.Terminating(p) && podstate.DoNotDisrupt(p) {
			return fmt.Sprintf("pod %s is annotated %s", podKey(p), apis.AnnotationDoNotDisrupt), CauseDoNotDisrupt
		}
	}
	for _, p := range n.pods {
		if why := v.evictionBlocked(p); why != "" {
			return why, CausePDB
		}
	}
	return "", ""
}

// evictionBlocked applies the PDBs to one pod as the Eviction API would
// now (status.disruptionsAllowed), for the pods a drain evicts.
func (v *view) evictionBlocked(p *corev1.Pod) string {
	// A drain evicts every pod but a static one.
	if podstate.Terminating(p) || podstate.Static(p) || podstate.ToleratesDisrupted(p) {
		return ""
	}
	var match []pdbInfo
	for _, b := range v.pdbs {
		if b.namespace == p.Namespace && b.selector.Matches(labels.Set(p.Labels)) {
			match = append(match, b)
		}
	}
	switch {
	case len(match) > 1:
		keys := make([]string, len(match))
		for i, b := range match {
			keys[i] = b.key
		}
		return fmt.Sprintf("pod %s is covered by several PodDisruptionBudgets (%s): the Eviction API refuses it", podKey(p), strings.Join(keys, ", "))
	case len(match) == 1 && match[0].allowed <= 0 && !(match[0].unhealthyOK && !podstate.Ready(p)):
		return fmt.Sprintf("PodDisruptionBudget %s allows no disruption now (pod %s)", match[0].key, podKey(p))
	}
	return ""
}

// consolidatable says why a node that may be disrupted gracefully is still
// no consolidation candidate ("" when it is): consolidation disabled,
// consolidateAfter not elapsed since its pods last changed, pending pods
// counting on its room, or a WhenEmpty pool and pods on it.
func (v *view) consolidatable(n *nodeInfo, nominated map[string]bool) string {
	pool := n.pool
	after := pool.Spec.Disruption.ConsolidateAfter.Duration
	if after == nil {
		return fmt.Sprintf("consolidation disabled (NodePool %s: consolidateAfter Never)", pool.Name)
	}
	since := n.rec.PodsChangedAt
	if since.IsZero() {
		since = n.rec.InitializedAt
	}
	if since.IsZero() {
		since = n.rec.CreatedAt
	}
	if idle := v.now.Sub(since); idle < *after {
		return fmt.Sprintf("consolidateAfter %s not elapsed (pods unchanged for %s)", after, idle.Round(time.Second))
	}
	if nominated[n.name()] {
		return "pending pods are to use its room"
	}
	if pool.Spec.Disruption.ConsolidationPolicy == apis.ConsolidationPolicyWhenEmpty && len(n.moving) > 0 {
		return fmt.Sprintf("NodePool %s consolidates WhenEmpty and the node has %d pods", pool.Name, len(n.moving))
	}
	if !n.priced && len(n.moving) > 0 {
		return fmt.Sprintf("price of %s %s in %s unknown: cannot compare replacements", n.instanceType, n.capacityType, n.zone)
	}
	return ""
}

// expired says whether the node has outlived its pool's expireAfter, or
// runs in a Capacity Block that is about to end.
func (v *view) expired(n *nodeInfo) string {
	if n.rec != nil && n.rec.Claim.CapacityReservationID != "" {
		if end, ok := v.in.EndingBlocks[n.rec.Claim.CapacityReservationID]; ok {
			return fmt.Sprintf("expired: its Capacity Block %s ends at %s, in %s", n.rec.Claim.CapacityReservationID,
				end.UTC().Format(time.RFC3339), end.Sub(v.now).Round(time.Second))
		}
	}
	d := n.pool.Spec.Template.Spec.ExpireAfter.Duration
	if d == nil {
		return ""
	}
	if age := v.now.Sub(n.rec.CreatedAt); age >= *d {
		return fmt.Sprintf("expired: %s old, NodePool %s expireAfter %s", age.Round(time.Second), n.pool.Name, d)
	}
	return ""
}

// drifted says how the node no longer matches what it would be launched
// as now (reason "" when it does), in Karpenter's order: its NodePool's
// template changed (its hash), its instance no longer meets the pool's
// requirements, its EC2NodeClass changed (its hash) or is gone, its AMI,
// security groups or subnet are no longer those the class selects. What
// is not known (no stored hash, no resolution, a record without its
// subnet or security groups) never drifts.
func (v *view) drifted(n *nodeInfo) (DriftReason, string) {
	r, pool := n.rec, n.pool
	if r.NodePoolHash != "" {
		if h := v.poolHash(pool); h != "" && h != r.NodePoolHash {
			return DriftNodePool, fmt.Sprintf("NodePool %s template changed (hash %s, launched with %s)", pool.Name, h, r.NodePoolHash)
		}
	}
	if why := v.requirementsDrift(n); why != "" {
		return DriftRequirements, why
	}
	if why := v.typeNotFound(n); why != "" {
		return DriftInstanceTypeNotFound, why
	}
	class := v.classes[r.NodeClass]
	if class == nil && r.NodeClass != "" {
		return DriftNodeClass, fmt.Sprintf("EC2NodeClass %s no longer exists", r.NodeClass)
	}
	if class != nil && r.NodeClassHash != "" {
		if h := v.classHash(class); h != "" && h != r.NodeClassHash {
			return DriftNodeClass, fmt.Sprintf("EC2NodeClass %s changed (hash %s, launched with %s)", class.Name, h, r.NodeClassHash)
		}
	}
	if images, ok := v.in.CurrentImages[r.NodeClass]; ok && r.ImageID != "" && !images[r.ImageID] {
		return DriftAMI, fmt.Sprintf("AMI %s is no longer selected by EC2NodeClass %s (now %s)", r.ImageID, r.NodeClass, sortedKeys(images))
	}
	if sgs, ok := v.in.CurrentSecurityGroups[r.NodeClass]; ok && len(sgs) > 0 && len(r.SecurityGroups) > 0 && !sameSet(sgs, r.SecurityGroups) {
		return DriftSecurityGroup, fmt.Sprintf("security groups %s are no longer those EC2NodeClass %s selects (now %s)",
			strings.Join(slices.Sorted(slices.Values(r.SecurityGroups)), ", "), r.NodeClass, sortedKeys(sgs))
	}
	if subnets, ok := v.in.CurrentSubnets[r.NodeClass]; ok && len(subnets) > 0 && r.SubnetID != "" && !subnets[r.SubnetID] {
		return DriftSubnet, fmt.Sprintf("subnet %s is no longer selected by EC2NodeClass %s (now %s)", r.SubnetID, r.NodeClass, sortedKeys(subnets))
	}
	if id := r.Claim.CapacityReservationID; id != "" {
		if selected, ok := v.in.CurrentReservations[r.NodeClass]; ok && !selected[id] {
			return DriftCapacityReservation, fmt.Sprintf("capacity reservation %s is no longer selected by EC2NodeClass %s (now %s)", id, r.NodeClass, sortedKeys(selected))
		}
	}
	return v.placementDrifted(n)
}

// sortedKeys lists a set's members, sorted, comma-separated.
func sortedKeys(set map[string]bool) string {
	return strings.Join(slices.Sorted(maps.Keys(set)), ", ")
}

// sameSet says whether ids hold exactly set's members (as Karpenter
// compares security groups).
func sameSet(set map[string]bool, ids []string) bool {
	seen := map[string]bool{}
	for _, id := range ids {
		if !set[id] {
			return false
		}
		seen[id] = true
	}
	return len(seen) == len(set)
}

// poolHash and classHash compute each object's hash once per run.
func (v *view) poolHash(p *apis.NodePool) string {
	if h, ok := v.hashes["NodePool/"+p.Name]; ok {
		return h
	}
	h := p.Hash()
	v.hashes["NodePool/"+p.Name] = h
	return h
}

func (v *view) classHash(c *apis.EC2NodeClass) string {
	if h, ok := v.hashes["EC2NodeClass/"+c.Name]; ok {
		return h
	}
	h := c.Hash()
	v.hashes["EC2NodeClass/"+c.Name] = h
	return h
}

// requirementsDrift checks the pool's requirements on the labels the
// instance itself determines (its type's labels, zone, capacity type), as
// Karpenter's requirements drift; keys it cannot know are not checked.
func (v *view) requirementsDrift(n *nodeInfo) string {
	if v.in.Catalog == nil || n.instanceType == "" {
		return ""
	}
	it, ok := v.in.Catalog.Get(n.instanceType)
	if !ok {
		return ""
	}
	known := it.Labels()
	if n.zone != "" {
		known[apis.LabelZone] = n.zone
	}
	if n.capacityType != "" {
		known[apis.LabelCapacityType] = n.capacityType
	}
	// The image, not the instance type, decides the node's OS (a Windows
	// image on an x86 type): the Node's own label says which it runs.
	delete(known, apis.LabelOS)
	if n.node != nil {
		if os, ok := n.node.Labels[apis.LabelOS]; ok {
			known[apis.LabelOS] = os
		}
	}
	reqs, err := requirements.FromNodePool(n.pool)
	if err != nil {
		return ""
	}
	for _, req := range reqs {
		val, ok := known[req.Key]
		if !ok {
			continue
		}
		if !req.Matches(val, true) {
			return fmt.Sprintf("NodePool %s no longer allows %s=%s", n.pool.Name, req.Key, val)
		}
	}
	return ""
}

// byCost orders consolidation candidates as Karpenter does (ascending
// disruption cost: the cheapest to disrupt first), then, deterministically,
// by price (dearest first: the larger saving) and name.
func byCost(ns []*nodeInfo) {
	sort.SliceStable(ns, func(i, j int) bool {
		a, b := ns[i], ns[j]
		if a.cost != b.cost {
			return a.cost < b.cost
		}
		if a.price != b.price {
			return a.price > b.price
		}
		return a.name() < b.name()
	})
}

// byAge orders nodes oldest first, then by name.
func byAge(ns []*nodeInfo) {
	sort.SliceStable(ns, func(i, j int) bool {
		a, b := ns[i].rec.CreatedAt, ns[j].rec.CreatedAt
		if !a.Equal(b) {
			return a.Before(b)
		}
		return ns[i].name() < ns[j].name()
	})
}
