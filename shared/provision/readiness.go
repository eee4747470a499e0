package provision

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/metrics"
	"github.com/nodewright/nodewright/shared/state"
)

// PoolReason is why a NodePool is not ready: a solve leaves it out, so that
// one broken pool (of any weight) never takes pods the others could place.
// The pool is ready again as soon as a read finds its class whole: nothing
// is remembered as broken.
type PoolReason string

// The reasons a NodePool is not ready, checked in this order.
const (
	// NodeClassNotFound: the pool's nodeClassRef names no EC2NodeClass
	// (neither deployed nor applied to the cluster).
	NodeClassNotFound PoolReason = "NodeClassNotFound"
	// SubnetsNotFound: the class's subnetSelectorTerms select no available
	// subnet.
	SubnetsNotFound PoolReason = "SubnetsNotFound"
	// SecurityGroupsNotFound: its securityGroupSelectorTerms select none.
	SecurityGroupsNotFound PoolReason = "SecurityGroupsNotFound"
	// AMINotFound: its amiSelectorTerms select no image.
	AMINotFound PoolReason = "AMINotFound"
	// PlacementGroupNotFound: its placementGroupSelector names no available
	// placement group.
	PlacementGroupNotFound PoolReason = "PlacementGroupNotFound"
	// NodeClassNotResolved: looking the class up failed (throttled, denied,
	// unreachable); the next read looks again.
	NodeClassNotResolved PoolReason = "NodeClassNotResolved"
)

// PoolStatus is one NodePool's readiness.
type PoolStatus struct {
	NodePool  string
	NodeClass string
	// Reason is empty when the pool is ready.
	Reason  PoolReason
	Message string
}

// Ready reports whether solves may plan on the pool.
func (s PoolStatus) Ready() bool { return s.Reason == "" }

// Readiness decides each pool's readiness from the classes configured and
// what each resolved to in the account (by class name; a class with no
// resolution counts as not resolved). The result is sorted by pool name.
func Readiness(pools []*apis.NodePool, classes []*apis.EC2NodeClass, resolved []fleet.Resolution) []PoolStatus {
	known := map[string]bool{}
	for _, c := range classes {
		known[c.Name] = true
	}
	res := map[string]fleet.Resolution{}
	for _, r := range resolved {
		res[r.Name] = r
	}
	out := make([]PoolStatus, 0, len(pools))
	for _, p := range pools {
		s := PoolStatus{NodePool: p.Name}
		if ref := p.Spec.Template.Spec.NodeClassRef; ref != nil {
			s.NodeClass = ref.Name
		}
		s.Reason, s.Message = classReason(s.NodeClass, known[s.NodeClass], res[s.NodeClass])
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].NodePool < out[j].NodePool })
	return out
}

// classReason is why a pool whose class is name cannot launch ("" if it
// can), and a message saying so.
func classReason(name string, known bool, r fleet.Resolution) (PoolReason, string) {
	switch {
	case name == "":
		return NodeClassNotFound, "the NodePool has no spec.template.spec.nodeClassRef"
	case !known:
		return NodeClassNotFound, fmt.Sprintf("EC2NodeClass %s does not exist", name)
	case errors.Is(r.Err, fleet.ErrNoSubnet) || (r.Err == nil && r.Class != nil && len(r.Class.Subnets) == 0):
		return SubnetsNotFound, fmt.Sprintf("EC2NodeClass %s: %s", name, fleet.ErrNoSubnet)
	case errors.Is(r.Err, fleet.ErrNoSecurityGroup) || (r.Err == nil && r.Class != nil && len(r.Class.SecurityGroups) == 0):
		return SecurityGroupsNotFound, fmt.Sprintf("EC2NodeClass %s: %s", name, fleet.ErrNoSecurityGroup)
	case errors.Is(r.Err, fleet.ErrNoAMI) || (r.Err == nil && r.Class != nil && len(r.Class.AMIs) == 0):
		msg := fmt.Sprintf("EC2NodeClass %s: %s", name, fleet.ErrNoAMI)
		if r.Err != nil {
			msg = r.Err.Error()
		}
		return AMINotFound, msg
	case errors.Is(r.Err, fleet.ErrNoPlacementGroup):
		return PlacementGroupNotFound, fmt.Sprintf("EC2NodeClass %s: %s", name, fleet.ErrNoPlacementGroup)
	case r.Err != nil:
		return NodeClassNotResolved, r.Err.Error()
	case r.Class == nil:
		return NodeClassNotResolved, fmt.Sprintf("EC2NodeClass %s was not looked up", name)
	}
	return "", ""
}

// ReadyZones are the zones of the classes that resolved whole, sorted: the
// zones a solve may plan for. When there are none and a lookup failed (not
// a class selecting nothing: the account could not be read), err joins the
// failures: there is nothing to plan with.
func ReadyZones(resolved []fleet.Resolution) (zones []string, err error) {
	var lookups []error
	for _, r := range resolved {
		if r.Err != nil && !errors.Is(r.Err, fleet.ErrNoSubnet) && !errors.Is(r.Err, fleet.ErrNoSecurityGroup) && !errors.Is(r.Err, fleet.ErrNoAMI) &&
			!errors.Is(r.Err, fleet.ErrNoPlacementGroup) {
			lookups = append(lookups, r.Err)
		}
		if r.Err != nil || r.Class == nil || len(r.Class.SecurityGroups) == 0 || len(r.Class.AMIs) == 0 {
			continue
		}
		for _, z := range r.Class.Zones() {
			if !slices.Contains(zones, z) {
				zones = append(zones, z)
			}
		}
	}
	slices.Sort(zones)
	if len(zones) == 0 && len(lookups) > 0 {
		return nil, fmt.Errorf("node classes: %w", errors.Join(lookups...))
	}
	return zones, nil
}

// notReady returns the pools' statuses that are not ready, by pool name.
func notReady(statuses []PoolStatus) map[string]PoolStatus {
	out := map[string]PoolStatus{}
	for _, s := range statuses {
		if !s.Ready() {
			out[s.NodePool] = s
		}
	}
	return out
}

// poolReadiness decides the read's pool readiness and zones from the
// classes' resolutions, and reports each pool that is not ready: a warning
// in the report, a Warning event on the NodePool, the NodePoolNotReady
// metric (1, and 0 for each ready pool, so that a fixed pool's graph drops
// back) and the state item `nodewright status` shows. It fails only when
// no class resolved and a lookup failed (the account could not be read:
// the round has nothing to plan with).
func (r *Reconciler) poolReadiness(ctx context.Context, w *world, rep *Report) error {
	w.readiness = Readiness(w.pools, w.classes, w.resolved)
	zones, err := ReadyZones(w.resolved)
	if err != nil {
		return err
	}
	w.zones = zones
	uids := map[string]string{}
	for _, p := range w.view.NodePools {
		uids[p.Name] = string(p.UID)
	}
	pr := state.PoolReadiness{At: r.Now()}
	running := 0.0
	if c := w.view.Karpenter; c != nil {
		pr.Karpenter, running = c.Holding(), 1
	}
	_ = r.Metrics.Emit(metrics.KarpenterRunning, running, nil)
	if w.view.KarpenterUnknown {
		rep.Warnings = append(rep.Warnings, "cannot tell whether Karpenter's controller runs: the cluster role may not list Leases (coordination.k8s.io)")
	}
	for _, s := range w.readiness {
		value := 0.0
		if !s.Ready() {
			value = 1
			rep.Warnings = append(rep.Warnings, fmt.Sprintf("NodePool %s is not ready (%s: %s): left out of the solve", s.NodePool, s.Reason, s.Message))
			r.Log.Warn("NodePool not ready: left out of the solve", "nodePool", s.NodePool, "nodeClass", s.NodeClass, "reason", string(s.Reason), "message", s.Message)
			r.Events.Event(ctx, Ref{APIVersion: apis.NodePoolAPIVersion, Kind: apis.NodePoolKind, Name: s.NodePool, UID: uids[s.NodePool]},
				"Warning", string(s.Reason), "NodePool left out of provisioning until fixed: "+s.Message)
			pr.NotReady = append(pr.NotReady, state.NotReadyPool{NodePool: s.NodePool, NodeClass: s.NodeClass, Reason: string(s.Reason), Message: s.Message})
		}
		_ = r.Metrics.Emit(metrics.NodePoolNotReady, value, metrics.Dims{metrics.DimNodePool: s.NodePool})
	}
	r.readinessNote.store(ctx, r, pr)
	r.writeStatus(ctx, w)
	return nil
}

// readinessNote writes the pools a read left out to the state table when
// they differ from what this container last wrote (a cold container writes
// once), so that `nodewright status` shows them without a write per round.
type readinessNote struct {
	mu        sync.Mutex
	written   bool
	last      []state.NotReadyPool
	karpenter string
}

func (n *readinessNote) store(ctx context.Context, r *Reconciler, pr state.PoolReadiness) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.written && slices.Equal(n.last, pr.NotReady) && n.karpenter == pr.Karpenter {
		return
	}
	if err := r.Store.PutPoolReadiness(ctx, pr); err != nil {
		r.Log.Warn("cannot record the NodePools' readiness for nodewright status", "error", err.Error())
		return
	}
	n.written, n.last, n.karpenter = true, pr.NotReady, pr.Karpenter
}
