package configstatus

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/fleet"
)

func TestNodeClass(t *testing.T) {
	class := &apis.EC2NodeClass{}
	class.Name, class.Generation = "default", 2
	whole := &fleet.Resolution{Name: "default", Class: &fleet.NodeClass{Name: "default",
		Subnets: []fleet.Subnet{{ID: "subnet-a", Zone: "us-east-1a"}}, SecurityGroups: []string{"sg-1"},
		AMIs: []fleet.AMI{{ID: "ami-1", Name: "al2023", Arch: "arm64"}}}}
	for _, c := range []struct {
		name string
		res  *fleet.Resolution
		want map[string]string
	}{
		{"resolved", whole, map[string]string{"Ready": "True/Ready", "SubnetsReady": "True/SubnetsReady", "AMIsReady": "True/AMIsReady",
			"SecurityGroupsReady": "True/SecurityGroupsReady", "InstanceProfileReady": "True/InstanceProfileReady",
			"CapacityReservationsReady": "True/CapacityReservationsReady", "ValidationSucceeded": "True/ValidationSucceeded",
			"PlacementGroupReady": "True/PlacementGroupReady"}},
		{"no placement group", &fleet.Resolution{Name: "default", Err: fmt.Errorf("EC2NodeClass default: %w", fleet.ErrNoPlacementGroup)}, map[string]string{
			"Ready": "False/UnhealthyDependents", "PlacementGroupReady": "False/PlacementGroupNotFound"}},
		{"no subnet", &fleet.Resolution{Name: "default", Err: fleet.ErrNoSubnet}, map[string]string{
			"Ready": "False/UnhealthyDependents", "SubnetsReady": "False/SubnetsNotFound", "AMIsReady": "True/AMIsReady"}},
		{"lookup failed", &fleet.Resolution{Name: "default", Err: errors.New("throttled")}, map[string]string{"Ready": "Unknown/ReconcilingDependents"}},
		{"not looked up", nil, map[string]string{"Ready": "Unknown/ReconcilingDependents"}},
	} {
		st := NodeClass(NodeClassInput{Class: class, Resolution: c.res, Now: t0})
		got := map[string]string{}
		for _, cd := range st.Conditions {
			got[cd.Type] = string(cd.Status) + "/" + cd.Reason
			if cd.ObservedGeneration != 2 {
				t.Errorf("%s: %s observedGeneration %d", c.name, cd.Type, cd.ObservedGeneration)
			}
		}
		for k, v := range c.want {
			if got[k] != v {
				t.Errorf("%s: %s = %s, want %s", c.name, k, got[k], v)
			}
		}
	}
	st := NodeClass(NodeClassInput{Class: class, Resolution: whole, Now: t0})
	if len(st.Subnets) != 1 || st.Subnets[0].Zone != "us-east-1a" || len(st.SecurityGroups) != 1 || len(st.AMIs) != 1 ||
		st.AMIs[0].Requirements[0].Values[0] != "arm64" {
		t.Errorf("resolved lists %+v", st)
	}
	if _, changed := NodeClassChange(NodeClass(NodeClassInput{Class: class, Resolution: whole, Now: t0.Add(1e12)}), st); changed {
		t.Error("the same status later is written again")
	}
	// A failed lookup keeps the lists the class had.
	failed, _ := NodeClassChange(NodeClass(NodeClassInput{Class: class, Resolution: &fleet.Resolution{Err: errors.New("throttled")}, Now: t0}), st)
	if len(failed.Subnets) != 1 {
		t.Errorf("a failed lookup dropped the resolved subnets: %+v", failed)
	}
}

// TestNodeClassCapacityReservations: the status lists the reservations the
// class resolved to, as Karpenter's does (a Capacity Block within its
// reclaim lead is expiring), with CapacityReservationsReady True; a failed
// lookup keeps the list the class had.
func TestNodeClassCapacityReservations(t *testing.T) {
	class := &apis.EC2NodeClass{}
	class.Name = "gpu"
	res := &fleet.Resolution{Name: "gpu", Class: &fleet.NodeClass{Name: "gpu",
		Subnets: []fleet.Subnet{{ID: "subnet-a", Zone: "us-east-1a"}}, SecurityGroups: []string{"sg-1"}, AMIs: []fleet.AMI{{ID: "ami-1", Arch: "amd64"}},
		Reservations: []fleet.Reservation{
			{ID: "cr-odcr", InstanceType: "p5.48xlarge", Zone: "us-east-1b", OwnerID: "123456789012", Type: apis.CapacityReservationTypeDefault, InstanceMatchCriteria: "targeted"},
			{ID: "cr-block", InstanceType: "p5.48xlarge", Zone: "us-east-1a", Type: apis.CapacityReservationTypeCapacityBlock, End: t0.Add(30 * time.Minute)},
		}}}
	st := NodeClass(NodeClassInput{Class: class, Resolution: res, Now: t0})
	got := map[string]string{}
	for _, r := range st.CapacityReservations {
		got[r.ID] = r.InstanceType + " " + r.AvailabilityZone + " " + r.ReservationType + " " + r.State
	}
	want := map[string]string{"cr-odcr": "p5.48xlarge us-east-1b default active", "cr-block": "p5.48xlarge us-east-1a capacity-block expiring"}
	if len(got) != len(want) || got["cr-odcr"] != want["cr-odcr"] || got["cr-block"] != want["cr-block"] {
		t.Errorf("capacityReservations %v, want %v", got, want)
	}
	if st.CapacityReservations[0].ID != "cr-block" || st.CapacityReservations[0].EndTime == nil {
		t.Errorf("capacityReservations %+v: want them by ID, the block with its end", st.CapacityReservations)
	}
	for _, c := range st.Conditions {
		if c.Type == ConditionCapacityReservationsReady && c.Status != "True" {
			t.Errorf("%s %s", c.Type, c.Status)
		}
	}
	failed, _ := NodeClassChange(NodeClass(NodeClassInput{Class: class, Resolution: &fleet.Resolution{Err: errors.New("throttled")}, Now: t0}), st)
	if len(failed.CapacityReservations) != 2 {
		t.Errorf("a failed lookup dropped the reservations: %+v", failed.CapacityReservations)
	}
}
