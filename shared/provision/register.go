package provision

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/metrics"
	"github.com/nodewright/nodewright/shared/state"
)

// ephemeralTaints are the taints a node carries while it comes up.
var ephemeralTaints = []string{
	corev1.TaintNodeNotReady, corev1.TaintNodeUnreachable, "node.cloudprovider.kubernetes.io/uninitialized",
}

// Registration is what registration decides for one record.
type Registration struct {
	Record *state.NodeClaim
	Node   *corev1.Node
	// Phase is the record's new phase (empty: unchanged).
	Phase state.Phase
	// Mark: the Node lacks Nodewright's finalizer or labels.
	Mark bool
}

// Registrations matches records to Nodes by instance ID (from the Node's
// providerID): a launched record whose Node appeared is Registered, a
// registered one whose Node is Ready with no startup or ephemeral taint
// left and its extended resources reported is Initialized; a Node of ours
// without the termination finalizer or the registered/initialized labels is
// to be marked. Pure: it returns decisions and changes nothing.
func Registrations(records []*state.NodeClaim, nodes []*corev1.Node, pools []*apis.NodePool, cat *catalog.Catalog) []Registration {
	byInstance := map[string]*corev1.Node{}
	for _, n := range nodes {
		if id := InstanceIDOf(n.Spec.ProviderID); id != "" {
			byInstance[id] = n
		}
	}
	startup := map[string][]corev1.Taint{}
	for _, p := range pools {
		startup[p.Name] = p.Spec.Template.Spec.StartupTaints
	}
	var out []Registration
	for _, rec := range records {
		n := byInstance[rec.InstanceID]
		if rec.InstanceID == "" || n == nil {
			continue
		}
		reg := Registration{Record: rec, Node: n}
		phase := rec.Phase
		if phase == state.Launched || phase == state.Launching {
			phase = state.Registered
		}
		if phase == state.Registered && initialized(n, startup[rec.NodePool], rec.InstanceType, cat) {
			phase = state.Initialized
		}
		if phase != rec.Phase {
			reg.Phase = phase
		}
		if n.DeletionTimestamp == nil && needsMark(n, phase) {
			reg.Mark = true
		}
		if reg.Phase != "" || reg.Mark {
			out = append(out, reg)
		}
	}
	return out
}

// initialized reports whether a registered Node is ready for pods as its
// NodePool meant: Ready, no startup or ephemeral taint, and the extended
// resources (GPUs, Neuron, EFA) its instance type has are reported.
func initialized(n *corev1.Node, startup []corev1.Taint, typ string, cat *catalog.Catalog) bool {
	ready := false
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
			ready = true
		}
	}
	if !ready {
		return false
	}
	for _, t := range n.Spec.Taints {
		if slices.Contains(ephemeralTaints, t.Key) {
			return false
		}
		for _, s := range startup {
			if s.Key == t.Key && s.Effect == t.Effect {
				return false
			}
		}
	}
	if it, ok := cat.Get(typ); ok {
		capacity, _ := it.Compute(catalog.NodeSettings{})
		for name, q := range capacity.ResourceList() {
			if name == corev1.ResourceCPU || name == corev1.ResourceMemory || name == corev1.ResourcePods || name == corev1.ResourceEphemeralStorage || q.IsZero() {
				continue
			}
			if got, ok := n.Status.Allocatable[name]; !ok || got.IsZero() {
				return false
			}
		}
	}
	return true
}

func needsMark(n *corev1.Node, phase state.Phase) bool {
	if !slices.Contains(n.Finalizers, apis.FinalizerTermination) || n.Labels[apis.LabelRegistered] != "true" {
		return true
	}
	return phase == state.Initialized && n.Labels[apis.LabelInitialized] != "true"
}

// nodeAnnotations are the annotations of the NodePool's template, which a
// registering Node gets as Karpenter's does (from its NodeClaim, which has
// them from the template): nil when there are none or the pool is gone.
func nodeAnnotations(pools []*apis.NodePool, pool string) map[string]string {
	for _, p := range pools {
		if p.Name == pool && len(p.Spec.Template.ObjectMeta.Annotations) > 0 {
			return maps.Clone(p.Spec.Template.ObjectMeta.Annotations)
		}
	}
	return nil
}

// register carries out the round's registrations: records move on, Nodes
// get the finalizer, labels and the template's annotations, and an event
// says the Node registered.
func (r *Reconciler) register(ctx context.Context, w *world, rep *Report) {
	now := r.Now()
	for _, reg := range Registrations(w.records, w.view.Nodes, w.pools, r.Catalog) {
		rec, n := reg.Record, reg.Node
		if reg.Mark && r.Nodes != nil {
			// What Karpenter puts on its nodes beyond what the kubelet and
			// the cloud provider set: the capacity type, the instance-type
			// labels selectors use, and the registration state.
			labels := map[string]string{apis.LabelRegistered: "true"}
			if it, ok := r.Catalog.Get(rec.InstanceType); ok {
				for k, v := range it.Labels() {
					if _, set := n.Labels[k]; !set {
						labels[k] = v
					}
				}
			}
			if rec.CapacityType != "" {
				labels[apis.LabelCapacityType] = rec.CapacityType
			}
			labels[apis.LabelNodePool] = rec.NodePool
			if reg.Phase == state.Initialized || (reg.Phase == "" && rec.Phase == state.Initialized) {
				labels[apis.LabelInitialized] = "true"
			}
			if err := r.Nodes.MarkNode(ctx, n.Name, labels, nodeAnnotations(w.pools, rec.NodePool)); err != nil {
				r.Log.Warn("mark node", "node", n.Name, "error", err)
				continue // the record moves on once the Node carries the finalizer
			}
		}
		if reg.Phase == "" {
			continue
		}
		was := rec.Phase
		if rec.RegisteredAt.IsZero() {
			// The Node's creation is when it registered, however late a
			// round notices it.
			at := n.CreationTimestamp.Time
			if at.IsZero() || at.After(now) || at.Before(rec.LaunchedAt) {
				// No creation time, or one the clocks disagree on (the
				// API server's against the function's): when it was seen.
				at = now
			}
			rec.RegisteredAt, rec.NodeName, rec.ProviderID = at, n.Name, n.Spec.ProviderID
		}
		if reg.Phase == state.Initialized {
			rec.InitializedAt = now
		}
		rec.Phase = reg.Phase
		if err := r.Store.PutNodeClaim(ctx, rec); err != nil {
			if !errors.Is(err, state.ErrConflict) {
				r.Log.Error("record registration", "nodeClaim", rec.Name, "error", err)
			}
			continue
		}
		if was == state.Launched || was == state.Launching {
			rep.Registered = append(rep.Registered, rec.Name)
			took := rec.RegisteredAt.Sub(rec.LaunchedAt)
			_ = r.Metrics.Emit(metrics.RegistrationDuration, took.Seconds(), nil)
			r.karpenterRegistered(rec)
			r.Events.Event(ctx, Ref{Kind: "Node", Name: n.Name, UID: string(n.UID)}, corev1.EventTypeNormal, string(EventRegistered),
				fmt.Sprintf("NodeClaim %s (%s, %s, %s, $%.4f/h) registered %s after launch", rec.Name, rec.InstanceType, rec.CapacityType, rec.Zone, rec.PricePerHour, took.Round(time.Second)))
			r.Log.Info("nodeclaim registered", "nodeClaim", rec.Name, "node", n.Name, "after", took.String())
		}
	}
}

// Register brings the records up to date with the Nodes (registered,
// initialized, finalizer and labels) outside a round: consolidation calls
// it before it decides, so that a node that came up since the last round
// is a candidate.
func (r *Reconciler) Register(ctx context.Context) (*Report, error) {
	if err := r.init(); err != nil {
		return nil, err
	}
	rep := &Report{}
	view, err := r.Source.View(ctx)
	if err != nil {
		return rep, err
	}
	records, err := r.Store.NodeClaims(ctx)
	if err != nil {
		return rep, err
	}
	pools, classes, _ := MergeConfig(r.NodePools, r.NodeClasses, view)
	r.register(ctx, &world{view: view, pools: pools, classes: classes, records: records}, rep)
	return rep, nil
}
