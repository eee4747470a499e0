// Package adoption decides which of the nodes Karpenter launched become
// Nodewright's, once Karpenter's controller is gone, and what their
// records say.
//
// It exists so that switching from Karpenter churns no node: an instance
// Karpenter launched (its karpenter.sh/nodepool and karpenter.sh/nodeclaim
// tags, with the cluster tag, and no Nodewright managed-by tag) whose
// NodePool Nodewright is configured with gets a record under the name of
// its NodeClaim, built from the instance, its Node and its NodeClaim
// object as Karpenter wrote them. From then on it is expired, drifted,
// consolidated, interrupted and repaired as Nodewright's own, and the
// sweep keeps its NodeClaim object as Nodewright's (package nodeclaim).
//
// The record's name is the NodeClaim's, so two sweeps that adopt the same
// instance write the same key, and the conditional create lets one win: an
// instance never gets two records. The instance is not tagged: Nodewright's
// EC2 permissions are scoped, as Karpenter's are, by the cluster tag and
// the karpenter.sh/nodepool tag, which Karpenter's instances carry, so the
// termination path and interruption handling reach it as they are.
//
// Hashes: Nodewright's NodePool and EC2NodeClass hashes are not
// Karpenter's, so the record is stamped with the hashes of the NodePool and
// EC2NodeClass as configured at adoption. A change made before the switch
// that Karpenter had not yet seen as drift is therefore not seen either;
// drift Karpenter had seen (its NodeClaim's Drifted condition, by
// NodePoolDrifted or NodeClassDrift) is carried over, and the drift
// Nodewright reads from the instance itself (AMI, subnet, security groups,
// requirements) is seen as for any node. Pure.
package adoption

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/nodeclaim"
	"github.com/nodewright/nodewright/shared/scheduling"
	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/shared/termination"
)

// Input is what adoption decides from: the records, the instances carrying
// the cluster's tag, the Nodes, the cluster's NodeClaim objects (nil when
// none are served), the NodePools and EC2NodeClasses Nodewright is
// configured with (deployed and applied to the cluster), and the time.
type Input struct {
	Records   []*state.NodeClaim
	Instances []fleet.Running
	Nodes     []*corev1.Node
	Objects   []*nodeclaim.NodeClaim
	Pools     map[string]*apis.NodePool
	Classes   map[string]*apis.EC2NodeClass
	Now       time.Time
	// Price is an offering's price per hour, as launches record theirs
	// (nil: 0, shown as unknown).
	Price func(instanceType, zone, capacityType string) float64
}

// Reason says why one of Karpenter's instances is not adopted.
type Reason string

const (
	// NodePoolNotConfigured: its NodePool is neither deployed nor applied
	// to the cluster. It is left alone: never launched into, disrupted or
	// terminated by Nodewright; applying the NodePool adopts it.
	NodePoolNotConfigured Reason = "NodePoolNotConfigured"
	// NameTaken: a record of another instance has its NodeClaim's name.
	NameTaken Reason = "NameTaken"
	// NotRunning: the instance is stopping, stopped or shutting down.
	NotRunning Reason = "NotRunning"
)

// Skip is one of Karpenter's instances left alone, with why.
type Skip struct {
	Instance  string `json:"instance"`
	NodeClaim string `json:"nodeClaim"`
	NodePool  string `json:"nodePool"`
	Reason    Reason `json:"reason"`
	Message   string `json:"message"`
}

// Plan is what adoption decides: the records to write, sorted by name,
// and the instances left alone, sorted by instance.
type Plan struct {
	Adopt []*state.NodeClaim
	Skip  []Skip
}

// DriftedBeforeAdoption is the hash stamped on a record whose NodeClaim
// Karpenter had found drifted: it equals no NodePool's or EC2NodeClass's
// hash, so Nodewright's drift sees it too.
const DriftedBeforeAdoption = "drifted-before-adoption"

// ReasonPrefix starts the Reason of every adopted record, for people
// (code reads the record's AdoptedAt).
const ReasonPrefix = "adopted from Karpenter"

// Karpenters reports whether an instance is one Karpenter launched: its
// NodePool and NodeClaim tags without Nodewright's managed-by tag.
func Karpenters(in fleet.Running) bool {
	return !in.ManagedBy && in.NodePool != "" && in.NodeClaim != ""
}

// Decide returns the plan. Instances already claimed by a record are not
// candidates. A node whose NodeClaim object is being deleted (Karpenter
// was to terminate it) is adopted too: the sweep then carries the
// deletion out through the termination path, as for `kubectl delete
// nodeclaim`.
func Decide(in Input) Plan {
	claimed := map[string]bool{}
	named := map[string]string{}
	for _, r := range in.Records {
		if r.InstanceID != "" {
			claimed[r.InstanceID] = true
		}
		named[r.Name] = r.InstanceID
	}
	nodeOf := map[string]*corev1.Node{}
	for _, n := range in.Nodes {
		if id := termination.InstanceIDOf(n.Spec.ProviderID); id != "" {
			nodeOf[id] = n
		}
	}
	objects := map[string]*nodeclaim.NodeClaim{}
	for _, o := range in.Objects {
		objects[o.Name] = o
	}
	var p Plan
	for _, inst := range in.Instances {
		if !Karpenters(inst) || claimed[inst.InstanceID] {
			continue
		}
		skip := func(r Reason, format string, args ...any) {
			p.Skip = append(p.Skip, Skip{Instance: inst.InstanceID, NodeClaim: inst.NodeClaim, NodePool: inst.NodePool, Reason: r, Message: fmt.Sprintf(format, args...)})
		}
		obj := objects[inst.NodeClaim]
		switch _, taken := named[inst.NodeClaim]; {
		case inst.State != "pending" && inst.State != "running":
			skip(NotRunning, "instance %s is %s", inst.InstanceID, inst.State)
		case in.Pools[inst.NodePool] == nil:
			skip(NodePoolNotConfigured, "NodePool %s is not configured in Nodewright: its node %s (instance %s) is left alone; apply the NodePool to adopt it",
				inst.NodePool, inst.NodeClaim, inst.InstanceID)
		case taken:
			skip(NameTaken, "a record of instance %s is named %s", named[inst.NodeClaim], inst.NodeClaim)
		default:
			p.Adopt = append(p.Adopt, record(in, inst, nodeOf[inst.InstanceID], obj))
		}
	}
	sort.Slice(p.Adopt, func(i, j int) bool { return p.Adopt[i].Name < p.Adopt[j].Name })
	sort.Slice(p.Skip, func(i, j int) bool { return p.Skip[i].Instance < p.Skip[j].Instance })
	return p
}

// record is the adopted record of inst: launched (no Node yet: the
// registration timeout applies from its launch, as Karpenter's would),
// registered, or initialized.
func record(in Input, inst fleet.Running, n *corev1.Node, obj *nodeclaim.NodeClaim) *state.NodeClaim {
	pool := in.Pools[inst.NodePool]
	rec := &state.NodeClaim{
		Name: inst.NodeClaim, NodePool: inst.NodePool, Phase: state.Launched,
		Reason:     fmt.Sprintf("%s (instance %s)", ReasonPrefix, inst.InstanceID),
		InstanceID: inst.InstanceID, InstanceType: inst.InstanceType, Zone: inst.Zone, CapacityType: inst.CapacityType,
		ImageID: inst.ImageID, SubnetID: inst.SubnetID, SecurityGroups: inst.SecurityGroups,
		ProviderID:   state.ProviderIDFor(inst.Zone, inst.InstanceID),
		PricePerHour: price(in, inst),
		CreatedAt:    inst.LaunchTime, LaunchedAt: inst.LaunchTime, AdoptedAt: in.Now,
	}
	rec.NodeClass = nodeClass(pool, n, obj)
	rec.Claim = claim(rec, pool, obj)
	if obj != nil {
		if !obj.CreationTimestamp.IsZero() {
			rec.CreatedAt = obj.CreationTimestamp.Time
		}
		rec.Capacity = obj.Status.Capacity
	}
	if n != nil {
		rec.Phase, rec.NodeName, rec.ProviderID = state.Registered, n.Name, n.Spec.ProviderID
		rec.RegisteredAt = first(n.CreationTimestamp.Time, in.Now)
		if len(n.Status.Capacity) > 0 {
			rec.Capacity = n.Status.Capacity
		}
		if at, ok := initialized(n, obj); ok {
			rec.Phase, rec.InitializedAt = state.Initialized, first(at, in.Now)
		}
	}
	rec.NodePoolHash = pool.Hash()
	if c := in.Classes[rec.NodeClass]; c != nil {
		rec.NodeClassHash = c.Hash()
	}
	if obj != nil {
		if d := obj.Condition(nodeclaim.ConditionDrifted); d != nil && d.Status == metav1.ConditionTrue {
			switch d.Reason {
			case "NodePoolDrifted":
				rec.NodePoolHash = DriftedBeforeAdoption
			case "NodeClassDrift":
				rec.NodeClassHash = DriftedBeforeAdoption
			}
		}
	}
	return rec
}

// nodeClass is the EC2NodeClass the node was launched with: its
// NodeClaim's reference, else its Node's label, else its NodePool's.
func nodeClass(pool *apis.NodePool, n *corev1.Node, obj *nodeclaim.NodeClaim) string {
	if obj != nil && obj.Spec.NodeClassRef != nil && obj.Spec.NodeClassRef.Name != "" {
		return obj.Spec.NodeClassRef.Name
	}
	if n != nil && n.Labels[apis.LabelEC2NodeClass] != "" {
		return n.Labels[apis.LabelEC2NodeClass]
	}
	if ref := pool.Spec.Template.Spec.NodeClassRef; ref != nil {
		return ref.Name
	}
	return ""
}

// claim is the planned NodeClaim the node stands for: its NodeClaim
// object's spec as Karpenter wrote it, narrowed to what was launched.
func claim(rec *state.NodeClaim, pool *apis.NodePool, obj *nodeclaim.NodeClaim) scheduling.NodeClaim {
	c := scheduling.NodeClaim{
		NodePool: rec.NodePool, NodeClass: rec.NodeClass,
		InstanceTypes: []string{rec.InstanceType}, CapacityType: rec.CapacityType, CapacityTypes: []string{rec.CapacityType},
		Zones: []string{rec.Zone}, Labels: map[string]string{},
	}
	if obj == nil || len(obj.Spec.Requirements) == 0 {
		// Without Karpenter's NodeClaim, its requirements as Karpenter
		// writes them: the pool's, narrowed to what the instance is.
		pinned := map[string]string{apis.LabelNodePool: rec.NodePool, apis.LabelInstanceType: rec.InstanceType,
			apis.LabelZone: rec.Zone, apis.LabelCapacityType: rec.CapacityType}
		for _, r := range pool.Spec.Template.Spec.Requirements {
			if _, ok := pinned[r.Key]; !ok {
				c.Requirements = append(c.Requirements, corev1.NodeSelectorRequirement{Key: r.Key, Operator: r.Operator, Values: r.Values})
			}
		}
		for _, k := range slices.Sorted(maps.Keys(pinned)) {
			c.Requirements = append(c.Requirements, corev1.NodeSelectorRequirement{Key: k, Operator: corev1.NodeSelectorOpIn, Values: []string{pinned[k]}})
		}
	}
	if obj == nil {
		for k, v := range pool.Spec.Template.ObjectMeta.Labels {
			c.Labels[k] = v
		}
		c.Taints, c.StartupTaints = pool.Spec.Template.Spec.Taints, pool.Spec.Template.Spec.StartupTaints
		return c
	}
	// Karpenter labels its NodeClaim with the template's labels and the
	// single-valued requirements'.
	for k, v := range obj.Labels {
		if k != apis.LabelNodePool && k != nodeclaim.LabelManagedBy {
			c.Labels[k] = v
		}
	}
	c.Taints, c.StartupTaints, c.Requests = obj.Spec.Taints, obj.Spec.StartupTaints, obj.Spec.Resources.Requests
	for _, r := range obj.Spec.Requirements {
		c.Requirements = append(c.Requirements, r.NodeSelectorRequirement)
		if r.MinValues != nil {
			if c.MinValues == nil {
				c.MinValues = map[string]int{}
			}
			c.MinValues[r.Key] = *r.MinValues
		}
	}
	return c
}

// initialized says whether the node is initialized, and since when: its
// NodeClaim's Initialized condition, else its Node Ready with Karpenter's
// initialized label.
func initialized(n *corev1.Node, obj *nodeclaim.NodeClaim) (time.Time, bool) {
	if obj != nil {
		if c := obj.Condition(nodeclaim.ConditionInitialized); c != nil && c.Status == metav1.ConditionTrue {
			return c.LastTransitionTime.Time, true
		}
	}
	if n.Labels[apis.LabelInitialized] != "true" {
		return time.Time{}, false
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time, true
		}
	}
	return time.Time{}, false
}

func first(ts ...time.Time) time.Time {
	for _, t := range ts {
		if !t.IsZero() {
			return t
		}
	}
	return time.Time{}
}

// price is inst's offering's price per hour (0: unknown).
func price(in Input, inst fleet.Running) float64 {
	if in.Price == nil {
		return 0
	}
	return in.Price(inst.InstanceType, inst.Zone, inst.CapacityType)
}
