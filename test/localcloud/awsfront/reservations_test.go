package awsfront

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

// The front emulates capacity reservations: DescribeCapacityReservations
// lists them by ID and filters with what is left of each; a fleet whose
// launch template targets one launches into it (on-demand) until it is
// full, then answers ReservationCapacityExceeded; an ended block is
// expired and takes no launch.
func TestReservationsDescribeAndLaunch(t *testing.T) {
	f, stub := newTestFront(t)
	ctx := context.Background()
	now := f.Now()
	f.AddReservation(Reservation{ID: "cr-h100", InstanceType: "m5.large", Zone: "us-east-1a", Count: 2, Tags: map[string]string{"team": "ml"}})
	f.AddReservation(Reservation{ID: "cr-ended", InstanceType: "m5.large", Zone: "us-east-1a", Count: 1, Type: ReservationCapacityBlock, End: now.Add(-time.Minute)})
	c := f.ec2Client()

	out, err := c.DescribeCapacityReservations(ctx, &ec2.DescribeCapacityReservationsInput{Filters: []ec2types.Filter{
		{Name: aws.String("state"), Values: []string{"active"}}, {Name: aws.String("tag:team"), Values: []string{"ml"}}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.CapacityReservations) != 1 || aws.ToString(out.CapacityReservations[0].CapacityReservationId) != "cr-h100" ||
		aws.ToInt32(out.CapacityReservations[0].AvailableInstanceCount) != 2 || out.CapacityReservations[0].ReservationType != ec2types.CapacityReservationTypeDefault {
		t.Fatalf("tag query: %+v", out.CapacityReservations)
	}
	byID, err := c.DescribeCapacityReservations(ctx, &ec2.DescribeCapacityReservationsInput{CapacityReservationIds: []string{"cr-ended"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(byID.CapacityReservations) != 1 || byID.CapacityReservations[0].State != ec2types.CapacityReservationStateExpired {
		t.Fatalf("ended block: %+v, want it expired", byID.CapacityReservations)
	}

	// The template is moto's to make (the stub refuses it); the front
	// remembers its target all the same.
	_, _ = c.CreateLaunchTemplate(ctx, &ec2.CreateLaunchTemplateInput{LaunchTemplateName: aws.String("lt-h100"),
		LaunchTemplateData: &ec2types.RequestLaunchTemplateData{CapacityReservationSpecification: &ec2types.LaunchTemplateCapacityReservationSpecificationRequest{
			CapacityReservationPreference: ec2types.CapacityReservationPreferenceCapacityReservationsOnly,
			CapacityReservationTarget:     &ec2types.CapacityReservationTarget{CapacityReservationId: aws.String("cr-h100")}}}})
	fleet := func(token string) *ec2.CreateFleetOutput {
		in := spotFleet(1, "m5.large")
		in.ClientToken = aws.String(token)
		in.LaunchTemplateConfigs[0].LaunchTemplateSpecification = &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateName: aws.String("lt-h100"), Version: aws.String("$Latest")}
		in.TargetCapacitySpecification.DefaultTargetCapacityType = ec2types.DefaultTargetCapacityTypeOnDemand
		in.SpotOptions = nil
		out, err := c.CreateFleet(ctx, in)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	for i, token := range []string{"a", "b"} {
		if out := fleet(token); len(out.Instances) != 1 || len(out.Errors) != 0 {
			t.Fatalf("launch %d into the reservation: %+v", i+1, out)
		}
		if got := stub.forms[len(stub.forms)-1].Get("TargetCapacitySpecification.DefaultTargetCapacityType"); got != OnDemand {
			t.Errorf("moto asked for %q, want on-demand", got)
		}
	}
	if used := f.ReservationUsed("cr-h100"); used != 2 {
		t.Errorf("reservation uses %d, want 2", used)
	}
	full := fleet("c")
	if len(full.Instances) != 0 || len(full.Errors) != 1 || aws.ToString(full.Errors[0].ErrorCode) != "ReservationCapacityExceeded" {
		t.Fatalf("third launch: %+v, want ReservationCapacityExceeded", full)
	}
	f.releaseReservations([]string{"i-00002"})
	left, err := c.DescribeCapacityReservations(ctx, &ec2.DescribeCapacityReservationsInput{CapacityReservationIds: []string{"cr-h100"}})
	if err != nil {
		t.Fatal(err)
	}
	if n := aws.ToInt32(left.CapacityReservations[0].AvailableInstanceCount); n != 1 {
		t.Errorf("after a termination %d available, want 1", n)
	}
}
