package configstatus

import (
	"errors"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/fleet"
)

// Condition types of an EC2NodeClass (Karpenter's AWS provider's); Ready is
// the root of the others.
const (
	ConditionSubnetsReady              = "SubnetsReady"
	ConditionSecurityGroupsReady       = "SecurityGroupsReady"
	ConditionAMIsReady                 = "AMIsReady"
	ConditionInstanceProfileReady      = "InstanceProfileReady"
	ConditionCapacityReservationsReady = "CapacityReservationsReady"
	ConditionPlacementGroupReady       = "PlacementGroupReady"
)

// NodeClassInput is what an EC2NodeClass's status is derived from: the
// class and what it resolved to in the account (nil: not looked up).
type NodeClassInput struct {
	Class      *apis.EC2NodeClass
	Resolution *fleet.Resolution
	Now        time.Time
}

// NodeClass is the EC2NodeClass's status: the subnets (one per zone, the
// one launches use), security groups, AMIs and capacity reservations
// (active, or expiring: a Capacity Block within its reclaim lead) it
// resolved to, and SubnetsReady, SecurityGroupsReady, AMIsReady,
// InstanceProfileReady, CapacityReservationsReady (True once looked up:
// selecting none is no fault, as in Karpenter),
// ValidationSucceeded and the root Ready. A failed lookup leaves the
// resolved lists as they were and makes Ready Unknown.
func NodeClass(in NodeClassInput) apis.EC2NodeClassStatus {
	gen := in.Class.Generation
	cond := func(t string, ok bool, reason, message string) metav1.Condition {
		c := metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: t, ObservedGeneration: gen, LastTransitionTime: metav1.NewTime(in.Now)}
		if !ok {
			c.Status, c.Reason, c.Message = metav1.ConditionFalse, reason, message
		}
		return c
	}
	st := apis.EC2NodeClassStatus{}
	if p := in.Class.Spec.InstanceProfile; p != nil {
		st.InstanceProfile = *p
	}
	res := in.Resolution
	var lookup error
	if res != nil && res.Class != nil {
		for _, s := range res.Class.Subnets {
			st.Subnets = append(st.Subnets, apis.SubnetStatus{ID: s.ID, Zone: s.Zone})
		}
		for _, g := range res.Class.SecurityGroups {
			st.SecurityGroups = append(st.SecurityGroups, apis.SecurityGroupStatus{ID: g})
		}
		st.CapacityReservations = reservationStatuses(res.Class.Reservations, in.Now)
		for _, a := range res.Class.AMIs {
			st.AMIs = append(st.AMIs, apis.AMIStatus{ID: a.ID, Name: a.Name, Requirements: []apis.NodeSelectorRequirementWithMinValuesStatus{
				{Key: corev1.LabelArchStable, Operator: corev1.NodeSelectorOpIn, Values: []string{a.Arch}},
			}})
		}
	}
	if res != nil && res.Err != nil && !errors.Is(res.Err, fleet.ErrNoSubnet) && !errors.Is(res.Err, fleet.ErrNoSecurityGroup) && !errors.Is(res.Err, fleet.ErrNoAMI) &&
		!errors.Is(res.Err, fleet.ErrNoPlacementGroup) {
		lookup = res.Err
	}
	selects := func(none error, n int) bool {
		return res != nil && !errors.Is(res.Err, none) && (res.Class == nil || n > 0)
	}
	st.Conditions = []metav1.Condition{
		cond(ConditionSubnetsReady, selects(fleet.ErrNoSubnet, len(st.Subnets)), "SubnetsNotFound", "SubnetSelector did not match any Subnets"),
		cond(ConditionSecurityGroupsReady, selects(fleet.ErrNoSecurityGroup, len(st.SecurityGroups)), "SecurityGroupsNotFound", "SecurityGroupSelector did not match any SecurityGroups"),
		cond(ConditionAMIsReady, selects(fleet.ErrNoAMI, len(st.AMIs)), "AMINotFound", "AMISelector did not match any AMIs"),
		cond(ConditionInstanceProfileReady, true, "", ""),
		cond(ConditionCapacityReservationsReady, true, "", ""),
		cond(ConditionPlacementGroupReady, selects(fleet.ErrNoPlacementGroup, 1), "PlacementGroupNotFound", "PlacementGroupSelector did not match an available placement group"),
		cond(ConditionValidationSucceeded, true, "", ""),
	}
	var bad []string
	for _, c := range st.Conditions {
		if c.Status != metav1.ConditionTrue {
			bad = append(bad, c.Type+"=False")
		}
	}
	ready := cond(ConditionReady, len(bad) == 0 && lookup == nil && res != nil, "UnhealthyDependents", "")
	switch {
	case res == nil || lookup != nil:
		ready.Status, ready.Reason, ready.Message = metav1.ConditionUnknown, "ReconcilingDependents", "the class was not looked up"
		if lookup != nil {
			ready.Message = lookup.Error()
		}
	case len(bad) > 0:
		ready.Message = joinComma(bad)
	}
	st.Conditions = append(st.Conditions, ready)
	sort.Slice(st.Conditions, func(i, j int) bool { return st.Conditions[i].Type < st.Conditions[j].Type })
	return st
}

// NodeClassChange is desired with each unchanged condition's transition
// time kept from current, and whether it differs from current. A class
// not looked up (Ready Unknown) keeps the lists it had.
func NodeClassChange(desired, current apis.EC2NodeClassStatus) (apis.EC2NodeClassStatus, bool) {
	out := desired
	if out.Subnets == nil && out.SecurityGroups == nil && out.AMIs == nil {
		out.Subnets, out.SecurityGroups, out.AMIs = current.Subnets, current.SecurityGroups, current.AMIs
		out.CapacityReservations = current.CapacityReservations
	}
	out.Conditions = apis.KeepTransitionTimes(desired.Conditions, current.Conditions)
	cur := current
	cur.Conditions = sortedConditions(current.Conditions)
	return out, !semanticEqual(out, cur)
}

func joinComma(ss []string) string {
	out := ""
	for i, s := range ss {
		if i > 0 {
			out += ", "
		}
		out += s
	}
	return out
}

// reservationStatuses are the class's reservations as Karpenter's status
// lists them, by ID.
func reservationStatuses(rs []fleet.Reservation, now time.Time) []apis.CapacityReservationStatus {
	var out []apis.CapacityReservationStatus
	for _, r := range rs {
		if r.Ended {
			continue // Karpenter's status lists active reservations
		}
		s := apis.CapacityReservationStatus{AvailabilityZone: r.Zone, ID: r.ID, InstanceMatchCriteria: r.InstanceMatchCriteria,
			InstanceType: r.InstanceType, OwnerID: r.OwnerID, ReservationType: r.Type, State: apis.CapacityReservationStateActive}
		if !r.End.IsZero() {
			end := metav1.NewTime(r.End)
			s.EndTime = &end
		}
		if r.EndingAt(now) {
			s.State = apis.CapacityReservationStateExpiring
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
