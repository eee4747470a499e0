package fleet

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/scheduling"
)

func capacityReservation(id, typ, zone string, available int32, kind ec2types.CapacityReservationType, end *time.Time) ec2types.CapacityReservation {
	return ec2types.CapacityReservation{
		CapacityReservationId: aws.String(id), InstanceType: aws.String(typ), AvailabilityZone: aws.String(zone),
		AvailableInstanceCount: aws.Int32(available), ReservationType: kind, EndDate: end, OwnerId: aws.String("123456789012"),
		InstanceMatchCriteria: ec2types.InstanceMatchCriteriaTargeted, State: ec2types.CapacityReservationStateActive,
	}
}

// TestResolveCapacityReservations: the class's capacityReservationSelectorTerms
// are looked up with DescribeCapacityReservations (IDs in one call, each tag
// or owner term in its own, in every state: one that expired has ended),
// and a Capacity Block within BlockReclaimLead of its end is expiring.
func TestResolveCapacityReservations(t *testing.T) {
	f := newFixture(t)
	soon, later := f.now.Add(30*time.Minute), f.now.Add(3*time.Hour)
	f.ec2.capacityReservations = []ec2types.CapacityReservation{
		capacityReservation("cr-odcr", "p5.48xlarge", "us-east-1b", 2, ec2types.CapacityReservationTypeDefault, nil),
		capacityReservation("cr-block", "p5.48xlarge", "us-east-1a", 1, ec2types.CapacityReservationTypeCapacityBlock, &later),
		capacityReservation("cr-ending", "p5.48xlarge", "us-east-1a", 1, ec2types.CapacityReservationTypeCapacityBlock, &soon),
		capacityReservation("cr-expired", "p5.48xlarge", "us-east-1a", 0, ec2types.CapacityReservationTypeDefault, nil),
	}
	f.ec2.capacityReservations[3].State = ec2types.CapacityReservationStateExpired
	nc := defaultNodeClass()
	nc.Spec.CapacityReservationSelectorTerms = []apis.CapacityReservationSelectorTerm{
		{ID: "cr-odcr"}, {Tags: map[string]string{"team": "ml"}, OwnerID: "123456789012", InstanceMatchCriteria: "targeted"},
	}
	r, err := f.l.Resolve(context.Background(), nc)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.ec2.crCalls) != 2 {
		t.Fatalf("%d DescribeCapacityReservations calls, want 2 (the IDs, the tag term)", len(f.ec2.crCalls))
	}
	if ids := f.ec2.crCalls[0].CapacityReservationIds; len(ids) != 1 || ids[0] != "cr-odcr" {
		t.Errorf("first call asks for IDs %v, want [cr-odcr]", ids)
	}
	filters := map[string]string{}
	for _, fl := range f.ec2.crCalls[1].Filters {
		filters[aws.ToString(fl.Name)] = fl.Values[0]
	}
	for k, v := range map[string]string{"owner-id": "123456789012", "tag:team": "ml", "instance-match-criteria": "targeted"} {
		if filters[k] != v {
			t.Errorf("tag term's filter %s = %q, want %q (filters %v)", k, filters[k], v, filters)
		}
	}
	got := map[string]Reservation{}
	for _, res := range r.Reservations {
		got[res.ID] = res
	}
	if len(got) != 4 || got["cr-odcr"].Available != 2 || got["cr-odcr"].Type != apis.CapacityReservationTypeDefault || got["cr-odcr"].Ended {
		t.Fatalf("reservations %+v", r.Reservations)
	}
	if !got["cr-expired"].Ended {
		t.Errorf("expired reservation %+v, want ended", got["cr-expired"])
	}
	if b := got["cr-block"]; !b.IsBlock() || b.Expiring {
		t.Errorf("block ending in 3h: %+v, want a block not expiring", b)
	}
	if b := got["cr-ending"]; !b.Expiring {
		t.Errorf("block ending in 30m: %+v, want expiring", b)
	}
}

// TestReservedLaunch: a claim that names a reservation launches through a
// launch template that targets it (capacity-reservations-only; the
// capacity-block market type for a block) with one override, its type in
// its zone; the instance is reserved, priced as already paid. A claim whose
// reservation the class no longer selects, and a fleet EC2 refuses as
// full, fail as unavailable reserved offerings, so the caller solves again.
func TestReservedLaunch(t *testing.T) {
	later := time.Date(2025, 6, 1, 20, 0, 0, 0, time.UTC)
	cases := []struct {
		name       string
		id         string
		full       bool
		wantTarget string // "" : the launch fails as unavailable
		wantMarket ec2types.MarketType
		wantFleet  ec2types.DefaultTargetCapacityType
	}{
		{"reservation", "cr-odcr", false, "cr-odcr", "", ec2types.DefaultTargetCapacityTypeOnDemand},
		{"capacity block", "cr-block", false, "cr-block", ec2types.MarketTypeCapacityBlock, ec2types.DefaultTargetCapacityTypeCapacityBlock},
		{"not selected", "cr-gone", false, "", "", ""},
		{"full", "cr-odcr", true, "", "", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			f.ec2.capacityReservations = []ec2types.CapacityReservation{
				capacityReservation("cr-odcr", "m5.large", "us-east-1b", 2, ec2types.CapacityReservationTypeDefault, nil),
				capacityReservation("cr-block", "m5.large", "us-east-1b", 1, ec2types.CapacityReservationTypeCapacityBlock, &later),
			}
			if tc.full {
				f.ec2.fleet = func(in *ec2.CreateFleetInput) (*ec2.CreateFleetOutput, error) {
					return &ec2.CreateFleetOutput{Errors: []ec2types.CreateFleetError{
						fleetError("ReservationCapacityExceeded", "m5.large", "subnet-b1", "us-east-1b", "on-demand")}}, nil
				}
			}
			nc := defaultNodeClass()
			nc.Spec.CapacityReservationSelectorTerms = []apis.CapacityReservationSelectorTerm{{ID: "cr-odcr"}, {ID: "cr-block"}}
			c := claim([]string{"m5.large"}, []string{"us-east-1b"}, apis.CapacityTypeReserved)
			c.CapacityReservationID = tc.id
			inst, err := f.l.Launch(context.Background(), Request{Name: "default-abcde", Claim: c, NodeClass: nc})
			if tc.wantTarget == "" {
				if !errors.Is(err, ErrUnavailableOffering) {
					t.Fatalf("launch: %v, want an unavailable offering", err)
				}
				u := UnavailableOfferings(err)
				if len(u) != 1 || u[0].InstanceType != "m5.large" || u[0].Zone != "us-east-1b" || u[0].CapacityType != apis.CapacityTypeReserved {
					t.Errorf("unavailable %v, want m5.large us-east-1b reserved", u)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(f.ec2.createLT) != 1 {
				t.Fatalf("%d launch templates made, want 1", len(f.ec2.createLT))
			}
			data := f.ec2.createLT[0].LaunchTemplateData
			spec := data.CapacityReservationSpecification
			if spec == nil || spec.CapacityReservationPreference != ec2types.CapacityReservationPreferenceCapacityReservationsOnly ||
				spec.CapacityReservationTarget == nil || aws.ToString(spec.CapacityReservationTarget.CapacityReservationId) != tc.wantTarget {
				t.Errorf("template's reservation specification %+v, want reservations-only targeting %s", spec, tc.wantTarget)
			}
			var market ec2types.MarketType
			if data.InstanceMarketOptions != nil {
				market = data.InstanceMarketOptions.MarketType
			}
			if market != tc.wantMarket {
				t.Errorf("market type %q, want %q", market, tc.wantMarket)
			}
			fl := f.ec2.fleets[0]
			if got := fl.TargetCapacitySpecification.DefaultTargetCapacityType; got != tc.wantFleet {
				t.Errorf("fleet's capacity type %q, want %q", got, tc.wantFleet)
			}
			if n := len(fl.LaunchTemplateConfigs[0].Overrides); n != 1 || fl.SpotOptions != nil {
				t.Errorf("%d overrides (spot options %v), want the reservation's one", n, fl.SpotOptions)
			}
			if inst.CapacityType != apis.CapacityTypeReserved || inst.Zone != "us-east-1b" {
				t.Errorf("instance %s in %s, want reserved in us-east-1b", inst.CapacityType, inst.Zone)
			}
			if want := scheduling.ReservedPrice(0.096); inst.PricePerHour != want {
				t.Errorf("instance priced %v, want %v", inst.PricePerHour, want)
			}
		})
	}
}

// TestInstancesInAReservationAreReserved: an instance launched into a
// reservation (EC2 names it, and its launch asked for reservations only)
// is listed as reserved, so that a re-drive that finds it by its tag
// records it as its launch would have; one that merely ran in an open
// reservation stays on-demand.
func TestInstancesInAReservationAreReserved(t *testing.T) {
	f := newFixture(t)
	inst := func(id string, only bool) ec2types.Instance {
		i := ec2types.Instance{InstanceId: aws.String(id), InstanceType: "p5.48xlarge", CapacityReservationId: aws.String("cr-1"),
			State: &ec2types.InstanceState{Name: ec2types.InstanceStateNameRunning}}
		if only {
			i.CapacityReservationSpecification = &ec2types.CapacityReservationSpecificationResponse{
				CapacityReservationPreference: ec2types.CapacityReservationPreferenceCapacityReservationsOnly}
		}
		return i
	}
	f.ec2.reservations = [][]ec2types.Reservation{{{Instances: []ec2types.Instance{inst("i-1", true), inst("i-2", false)}}}}
	got, err := f.l.Instances(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].CapacityType != apis.CapacityTypeReserved || got[1].CapacityType != apis.CapacityTypeOnDemand {
		t.Errorf("instances %+v: want i-1 reserved, i-2 on-demand", got)
	}
}
