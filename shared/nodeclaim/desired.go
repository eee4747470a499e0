package nodeclaim

import (
	"fmt"
	"maps"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/names"
	"github.com/nodewright/nodewright/shared/state"
)

// Input is what one record's NodeClaim is derived from: the record, its
// Node (nil until it registers), its NodePool and EC2NodeClass as
// configured now (nil when gone), and the time.
type Input struct {
	Record *state.NodeClaim
	Node   *corev1.Node
	Pool   *apis.NodePool
	Class  *apis.EC2NodeClass
	Now    time.Time
}

// Desired is the NodeClaim object the record stands for. The spec is the
// claim the node was launched from; the status what the record and the
// Node say; the labels, annotations (the NodePool template's), finalizer
// and owner reference those Karpenter sets. Pure.
func Desired(in Input) *NodeClaim {
	rec := in.Record
	nc := &NodeClaim{
		TypeMeta: metav1.TypeMeta{APIVersion: APIVersion, Kind: Kind},
		ObjectMeta: metav1.ObjectMeta{
			Name:       rec.Name,
			Labels:     labels(rec),
			Finalizers: []string{apis.FinalizerTermination},
		},
		Spec:   spec(rec, in.Pool),
		Status: status(in),
	}
	if p := in.Pool; p != nil && len(p.Spec.Template.ObjectMeta.Annotations) > 0 {
		// The template's annotations, as Karpenter's NodeClaims carry them.
		nc.Annotations = maps.Clone(p.Spec.Template.ObjectMeta.Annotations)
	}
	if p := in.Pool; p != nil && p.UID != "" {
		// Only a NodePool read from the cluster has a UID: an owner
		// reference to another UID would have the garbage collector
		// delete the NodeClaim.
		nc.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: apis.NodePoolAPIVersion, Kind: apis.NodePoolKind, Name: p.Name, UID: p.UID,
			BlockOwnerDeletion: ptr(true),
		}}
	}
	return nc
}

// labels are the claim's labels (the template's and the single-valued
// requirements') with the NodePool's and, once launched, the instance's.
func labels(rec *state.NodeClaim) map[string]string {
	out := maps.Clone(rec.Claim.Labels)
	if out == nil {
		out = map[string]string{}
	}
	out[apis.LabelNodePool] = rec.NodePool
	out[LabelManagedBy] = names.TagValueManagedBy
	for k, v := range map[string]string{
		corev1.LabelInstanceTypeStable: rec.InstanceType,
		corev1.LabelTopologyZone:       rec.Zone,
		apis.LabelCapacityType:         rec.CapacityType,
	} {
		if v != "" {
			out[k] = v
		}
	}
	return out
}

func spec(rec *state.NodeClaim, pool *apis.NodePool) Spec {
	s := Spec{
		Taints:        rec.Claim.Taints,
		StartupTaints: rec.Claim.StartupTaints,
		Resources:     Resources{Requests: rec.Claim.Requests},
		NodeClassRef:  &NodeClassRef{Group: apis.AWSGroup, Kind: apis.EC2NodeClassKind, Name: rec.NodeClass},
		ExpireAfter:   "720h", // Karpenter's default
	}
	for _, r := range rec.Claim.Requirements {
		req := Requirement{NodeSelectorRequirement: r}
		if m, ok := rec.Claim.MinValues[r.Key]; ok && m > 0 {
			req.MinValues = ptr(m)
		}
		s.Requirements = append(s.Requirements, req)
	}
	if pool != nil {
		t := pool.Spec.Template.Spec
		switch e := t.ExpireAfter; {
		case e.IsNever():
			s.ExpireAfter = apis.Never
		case e.Raw != "":
			s.ExpireAfter = e.Raw // as the user wrote it ("720h")
		case e.Duration != nil:
			s.ExpireAfter = e.Duration.String()
		}
		s.TerminationGracePeriod = t.TerminationGracePeriod
	}
	return s
}

func status(in Input) Status {
	rec, n := in.Record, in.Node
	s := Status{ProviderID: rec.ProviderID, ImageID: rec.ImageID, Capacity: rec.Capacity}
	if n != nil {
		s.NodeName, s.ProviderID = n.Name, n.Spec.ProviderID
		if len(n.Status.Capacity) > 0 {
			s.Capacity, s.Allocatable = n.Status.Capacity, n.Status.Allocatable
		}
	}
	s.Conditions = conditions(in)
	return s
}

// conditions are Karpenter's: Launched, Registered and Initialized, the
// root Ready they make up, and Drifted, Consolidatable and
// DisruptionReason when they hold. Each transition time comes from the
// record, so the same record gives the same conditions every sweep.
func conditions(in Input) []metav1.Condition {
	rec := in.Record
	var out []metav1.Condition
	add := func(t string, ok bool, since time.Time, reason, message string) {
		c := metav1.Condition{Type: t, Status: metav1.ConditionUnknown, Reason: reason, Message: message, LastTransitionTime: metav1.NewTime(since)}
		if ok {
			c.Status, c.Reason, c.Message = metav1.ConditionTrue, t, ""
		}
		out = append(out, c)
	}
	launched := !rec.LaunchedAt.IsZero() || rec.InstanceID != ""
	registered := !rec.RegisteredAt.IsZero() || in.Node != nil
	initialized := !rec.InitializedAt.IsZero()
	add(ConditionLaunched, launched, first(rec.LaunchedAt, rec.CreatedAt), "AwaitingReconciliation", "object is awaiting reconciliation")
	add(ConditionRegistered, registered, first(rec.RegisteredAt, rec.LaunchedAt, rec.CreatedAt), "NodeNotFound", "Node not registered with cluster")
	add(ConditionInitialized, initialized, first(rec.InitializedAt, rec.RegisteredAt, rec.LaunchedAt, rec.CreatedAt), "NodeNotReady", "Node status is NotReady")
	var unhealthy []string
	for _, c := range out {
		if c.Status != metav1.ConditionTrue {
			unhealthy = append(unhealthy, c.Type+"="+string(c.Status))
		}
	}
	ready := metav1.Condition{Type: ConditionReady, Status: metav1.ConditionTrue, Reason: ConditionReady, LastTransitionTime: out[len(out)-1].LastTransitionTime}
	if len(unhealthy) > 0 {
		ready.Status, ready.Reason, ready.Message = metav1.ConditionUnknown, "ReconcilingDependents", strings.Join(unhealthy, ", ")
	}
	out = append(out, ready)
	if reason, message := drifted(in); reason != "" {
		out = append(out, metav1.Condition{Type: ConditionDrifted, Status: metav1.ConditionTrue, Reason: reason, Message: message, LastTransitionTime: metav1.NewTime(in.Now)})
	}
	if since, ok := consolidatable(in); ok {
		out = append(out, metav1.Condition{Type: ConditionConsolidatable, Status: metav1.ConditionTrue, Reason: ConditionConsolidatable, LastTransitionTime: metav1.NewTime(since)})
	}
	if d := rec.Disruption; d != nil {
		out = append(out, metav1.Condition{Type: ConditionDisruptionReason, Status: metav1.ConditionTrue, Reason: disruptionReason(*d),
			Message: d.Reason, LastTransitionTime: metav1.NewTime(first(d.Since, in.Now))})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Type < out[j].Type })
	return out
}

// drifted is Karpenter's Drifted reason when the NodePool's template or the
// EC2NodeClass changed since launch (their hashes); what is not known
// never drifts.
func drifted(in Input) (reason, message string) {
	rec := in.Record
	if in.Pool != nil && rec.NodePoolHash != "" && in.Pool.Hash() != rec.NodePoolHash {
		return "NodePoolDrifted", fmt.Sprintf("NodePool %s template changed since launch", in.Pool.Name)
	}
	if in.Class != nil && rec.NodeClassHash != "" && in.Class.Hash() != rec.NodeClassHash {
		return "NodeClassDrifted", fmt.Sprintf("EC2NodeClass %s changed since launch", in.Class.Name)
	}
	return "", ""
}

// consolidatable says whether consolidateAfter has passed since the node's
// pods last changed (its initialization when never seen), and since when.
func consolidatable(in Input) (time.Time, bool) {
	rec := in.Record
	if in.Pool == nil || rec.InitializedAt.IsZero() {
		return time.Time{}, false
	}
	after := in.Pool.Spec.Disruption.ConsolidateAfter.Duration
	if after == nil {
		return time.Time{}, false
	}
	since := first(rec.PodsChangedAt, rec.InitializedAt).Add(*after)
	return since, !in.Now.Before(since)
}

// disruptionReason is Karpenter's reason for a disruption: the
// consolidation method's budget reason when it is one (Empty,
// Underutilized, Drifted, Expired), else the cause's.
func disruptionReason(d state.Disruption) string {
	switch r := apis.DisruptionReason(d.Reason); r {
	case apis.DisruptionReasonEmpty, apis.DisruptionReasonUnderutilized, apis.DisruptionReasonDrifted, "Expired":
		return string(r)
	}
	switch d.Normalize().Cause {
	case state.CauseExpiration:
		return "Expired"
	case state.CauseDrift:
		return string(apis.DisruptionReasonDrifted)
	case state.CauseConsolidation:
		return string(apis.DisruptionReasonUnderutilized)
	case state.CauseInterruption:
		return "Interrupted"
	case state.CauseDeletion:
		return "Deleted"
	case state.CauseOrphan:
		return "Orphaned"
	}
	return "Disrupted"
}

// first is the first non-zero time.
func first(ts ...time.Time) time.Time {
	for _, t := range ts {
		if !t.IsZero() {
			return t
		}
	}
	return time.Time{}
}

func ptr[T any](v T) *T { return &v }
