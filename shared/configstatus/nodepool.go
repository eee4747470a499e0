// Package configstatus derives the status Karpenter's controllers write on
// the configuration objects: a NodePool's (resources in use, node count,
// the conditions Ready, NodeClassReady, ValidationSucceeded and
// NodeRegistrationHealthy with their observedGeneration) and an
// EC2NodeClass's (the subnets, security groups and AMIs it resolved to,
// and its readiness conditions), so that `kubectl get nodepools` fills
// NODES and READY and GitOps health checks read them as they read
// Karpenter's. They are derived from the records and the classes'
// resolutions, never read back for a decision. Pure: the provision
// function writes them.
package configstatus

import (
	"slices"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/state"
)

// Condition types of a NodePool (Karpenter's); Ready is the root of
// ValidationSucceeded and NodeClassReady.
const (
	ConditionReady                   = "Ready"
	ConditionValidationSucceeded     = "ValidationSucceeded"
	ConditionNodeClassReady          = "NodeClassReady"
	ConditionNodeRegistrationHealthy = "NodeRegistrationHealthy"
)

// ResourceNodes is the node count among status.resources, as Karpenter
// counts it.
const ResourceNodes corev1.ResourceName = "nodes"

// Input is what a NodePool's status is derived from.
type Input struct {
	Pool *apis.NodePool
	// Class is the pool's EC2NodeClass as the cluster holds it (nil:
	// none, or deployed configuration).
	Class *apis.EC2NodeClass
	// Records are every record (those of other pools are skipped).
	Records []*state.NodeClaim
	// NotReady and Message say why the pool's class cannot launch (empty:
	// it can): the round's readiness (a reason such as SubnetsNotFound).
	NotReady, Message string
	Now               time.Time
}

// Desired is the pool's status. The pool was read and validated (an
// invalid NodePool is left out before this), so ValidationSucceeded is
// True; NodeClassReady follows the class's readiness; Ready is True when
// both are; NodeRegistrationHealthy is True once a node of the pool has
// registered, Unknown before.
func Desired(in Input) apis.NodePoolStatus {
	gen := in.Pool.Generation
	res := corev1.ResourceList{}
	var nodes int64
	registered := false
	for _, r := range in.Records {
		if r.NodePool != in.Pool.Name {
			continue
		}
		if !r.RegisteredAt.IsZero() {
			registered = true
		}
		if r.Phase == state.Terminating {
			continue
		}
		nodes++
		for name, q := range r.Capacity {
			sum := res[name]
			sum.Add(q)
			res[name] = sum
		}
	}
	res[ResourceNodes] = *resource.NewQuantity(nodes, resource.DecimalSI)
	st := apis.NodePoolStatus{Resources: res, Nodes: &nodes}
	if in.Class != nil {
		st.NodeClassObservedGeneration = in.Class.Generation
	}
	cond := func(t string, status metav1.ConditionStatus, reason, message string) metav1.Condition {
		return metav1.Condition{Type: t, Status: status, Reason: reason, Message: message, ObservedGeneration: gen, LastTransitionTime: metav1.NewTime(in.Now)}
	}
	classReady := cond(ConditionNodeClassReady, metav1.ConditionTrue, ConditionNodeClassReady, "")
	if in.NotReady != "" {
		classReady = cond(ConditionNodeClassReady, metav1.ConditionFalse, in.NotReady, in.Message)
	}
	ready := cond(ConditionReady, metav1.ConditionTrue, ConditionReady, "")
	if in.NotReady != "" {
		ready = cond(ConditionReady, metav1.ConditionFalse, "UnhealthyDependents", ConditionNodeClassReady+"=False")
	}
	health := cond(ConditionNodeRegistrationHealthy, metav1.ConditionUnknown, "AwaitingReconciliation", "no node of the NodePool has registered yet")
	if registered {
		health = cond(ConditionNodeRegistrationHealthy, metav1.ConditionTrue, ConditionNodeRegistrationHealthy, "")
	}
	st.Conditions = []metav1.Condition{classReady, health, ready, cond(ConditionValidationSucceeded, metav1.ConditionTrue, ConditionValidationSucceeded, "")}
	sort.Slice(st.Conditions, func(i, j int) bool { return st.Conditions[i].Type < st.Conditions[j].Type })
	return st
}

// Change is desired with each unchanged condition's transition time kept
// from current, and whether it differs from current (nothing to write
// when not).
func Change(desired, current apis.NodePoolStatus) (apis.NodePoolStatus, bool) {
	out := desired
	out.Conditions = apis.KeepTransitionTimes(desired.Conditions, current.Conditions)
	cur := current
	cur.Conditions = sortedConditions(current.Conditions)
	return out, !semanticEqual(out, cur)
}

func sortedConditions(cs []metav1.Condition) []metav1.Condition {
	out := slices.Clone(cs)
	sort.Slice(out, func(i, j int) bool { return out[i].Type < out[j].Type })
	return out
}

func semanticEqual(a, b any) bool { return equality.Semantic.DeepEqual(a, b) }
