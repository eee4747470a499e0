package awsfront

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	"github.com/aws/smithy-go"
)

// These unit tests put the front in front of a stub that records what the
// front forwards; test/e2e runs the front in front of moto.

type prices map[string]float64 // type -> on-demand; spot = half, +0.001 per zone letter

func (p prices) OnDemandPrice(t string) (float64, bool) { v, ok := p[t]; return v, ok }

// WindowsOnDemandPrice is the Linux price and $0.092 (a 2-vCPU licence).
func (p prices) WindowsOnDemandPrice(t string) (float64, bool) {
	v, ok := p[t]
	return v + 0.092, ok
}
func (p prices) SpotPrice(t, zone string) (float64, bool) {
	v, ok := p[t]
	return v/2 + 0.001*float64(zone[len(zone)-1]-'a'), ok
}
func (p prices) TypeNames() []string {
	var n []string
	for k := range p {
		n = append(n, k)
	}
	sort.Strings(n)
	return n
}

type stubMoto struct {
	mu    sync.Mutex
	forms []url.Values
	next  int
}

func (s *stubMoto) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	form, _ := url.ParseQuery(string(b))
	s.mu.Lock()
	s.forms = append(s.forms, form)
	s.next++
	id := s.next
	s.mu.Unlock()
	if form.Get("Action") != "CreateFleet" {
		http.Error(w, "stub: unexpected "+form.Get("Action"), http.StatusNotImplemented)
		return
	}
	fmt.Fprintf(w, `<CreateFleetResponse xmlns="%s"><requestId>r</requestId><fleetId>fleet-%d</fleetId>
<fleetInstanceSet><item><instanceIds><item>i-%05d</item></instanceIds><instanceType>%s</instanceType><lifecycle>spot</lifecycle></item></fleetInstanceSet>
<errorSet/></CreateFleetResponse>`, ec2Namespace, id, id, form.Get("LaunchTemplateConfigs.1.Overrides.1.InstanceType"))
}

func newTestFront(t *testing.T) (*Front, *stubMoto) {
	t.Helper()
	stub := &stubMoto{}
	srv := httptest.NewServer(stub)
	t.Cleanup(srv.Close)
	f, err := New(Config{
		MotoURL: srv.URL, Region: "us-east-1", Zones: []string{"us-east-1a", "us-east-1b"},
		Prices: prices{"m5.large": 0.096, "c5.large": 0.085, "r5.large": 0.126},
		Now:    func() time.Time { return time.Date(2025, 6, 1, 12, 30, 0, 0, time.UTC) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = f.Close() })
	return f, stub
}

func (f *Front) ec2Client(opts ...func(*ec2.Options)) *ec2.Client {
	return ec2.NewFromConfig(DirectConfig(f.URL(), "us-east-1"), opts...)
}

func spotFleet(n int32, types ...string) *ec2.CreateFleetInput {
	var ovs []ec2types.FleetLaunchTemplateOverridesRequest
	for _, typ := range types {
		ovs = append(ovs, ec2types.FleetLaunchTemplateOverridesRequest{InstanceType: ec2types.InstanceType(typ), AvailabilityZone: aws.String("us-east-1a")})
	}
	return &ec2.CreateFleetInput{
		Type:        ec2types.FleetTypeInstant,
		ClientToken: aws.String("token-1"),
		LaunchTemplateConfigs: []ec2types.FleetLaunchTemplateConfigRequest{{
			LaunchTemplateSpecification: &ec2types.FleetLaunchTemplateSpecificationRequest{LaunchTemplateId: aws.String("lt-1"), Version: aws.String("1")},
			Overrides:                   ovs,
		}},
		TargetCapacitySpecification: &ec2types.TargetCapacitySpecificationRequest{TotalTargetCapacity: aws.Int32(n), DefaultTargetCapacityType: ec2types.DefaultTargetCapacityTypeSpot},
		SpotOptions:                 &ec2types.SpotOptionsRequest{AllocationStrategy: ec2types.SpotAllocationStrategyPriceCapacityOptimized},
	}
}

func TestCreateFleetTriesCheapestPoolsAndReportsICE(t *testing.T) {
	f, stub := newTestFront(t)
	f.SetCapacity("c5.large", "us-east-1a", Spot, 0) // the cheapest pool is empty
	out, err := f.ec2Client().CreateFleet(context.Background(), spotFleet(1, "r5.large", "m5.large", "c5.large"))
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Errors) != 1 || aws.ToString(out.Errors[0].ErrorCode) != "InsufficientInstanceCapacity" ||
		out.Errors[0].LaunchTemplateAndOverrides.Overrides.InstanceType != "c5.large" || out.Errors[0].Lifecycle != ec2types.InstanceLifecycleSpot {
		t.Errorf("errors = %+v, want one ICE for c5.large spot", out.Errors)
	}
	if len(out.Instances) != 1 || out.Instances[0].InstanceType != "m5.large" || len(out.Instances[0].InstanceIds) != 1 {
		t.Fatalf("instances = %+v, want one m5.large (the next cheapest)", out.Instances)
	}
	if len(stub.forms) != 1 {
		t.Fatalf("forwarded %d calls, want 1", len(stub.forms))
	}
	fwd := stub.forms[0]
	if fwd.Get("LaunchTemplateConfigs.1.Overrides.1.InstanceType") != "m5.large" || fwd.Has("LaunchTemplateConfigs.1.Overrides.2.InstanceType") ||
		fwd.Get("TargetCapacitySpecification.TotalTargetCapacity") != "1" || fwd.Has("ClientToken") ||
		fwd.Get("LaunchTemplateConfigs.1.LaunchTemplateSpecification.LaunchTemplateId") != "lt-1" {
		t.Errorf("forwarded form = %v, want one m5.large override of lt-1 for 1 instance, no client token", fwd)
	}
	// Same ClientToken: the same answer, nothing launched again.
	again, err := f.ec2Client().CreateFleet(context.Background(), spotFleet(1, "r5.large", "m5.large", "c5.large"))
	if err != nil || aws.ToString(again.FleetId) != aws.ToString(out.FleetId) || len(stub.forms) != 1 {
		t.Errorf("retry with the same token: %+v, %v, %d forwarded", again, err, len(stub.forms))
	}
}

// A ClientToken that comes back with another request is
// IdempotentParameterMismatch, as EC2 answers it; nothing is launched.
func TestCreateFleetTokenWithAnotherRequest(t *testing.T) {
	f, stub := newTestFront(t)
	if _, err := f.ec2Client().CreateFleet(context.Background(), spotFleet(1, "m5.large")); err != nil {
		t.Fatal(err)
	}
	_, err := f.ec2Client(func(o *ec2.Options) { o.RetryMaxAttempts = 1 }).CreateFleet(context.Background(), spotFleet(1, "c5.large"))
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "IdempotentParameterMismatch" || len(stub.forms) != 1 {
		t.Errorf("the same token, another request: err = %v, %d forwarded; want IdempotentParameterMismatch, 1 forwarded", err, len(stub.forms))
	}
}

func TestCreateFleetAllPoolsEmpty(t *testing.T) {
	f, stub := newTestFront(t)
	for _, typ := range []string{"m5.large", "c5.large"} {
		f.SetCapacity(typ, "us-east-1a", Spot, 0)
	}
	in := spotFleet(2, "m5.large", "c5.large")
	in.ClientToken = nil
	out, err := f.ec2Client().CreateFleet(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Errors) != 2 || len(out.Instances) != 0 || aws.ToString(out.FleetId) == "" || len(stub.forms) != 0 {
		t.Errorf("got %d errors, %d instances, fleet %q, %d forwarded; want 2 ICE, none launched", len(out.Errors), len(out.Instances), aws.ToString(out.FleetId), len(stub.forms))
	}
}

func TestCreateFleetRejectsBadTarget(t *testing.T) {
	f, _ := newTestFront(t)
	in := spotFleet(1, "m5.large")
	in.TargetCapacitySpecification.TotalTargetCapacity = aws.Int32(0)
	_, err := f.ec2Client(func(o *ec2.Options) { o.RetryMaxAttempts = 1 }).CreateFleet(context.Background(), in)
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "InvalidParameterValue" {
		t.Errorf("err = %v, want InvalidParameterValue", err)
	}
}

func TestThrottleAnswersEachProtocol(t *testing.T) {
	f, _ := newTestFront(t)
	f.Throttle("DescribeInstances", 1)
	_, err := f.ec2Client(func(o *ec2.Options) { o.RetryMaxAttempts = 1 }).DescribeInstances(context.Background(), &ec2.DescribeInstancesInput{})
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "RequestLimitExceeded" {
		t.Errorf("EC2: err = %v, want RequestLimitExceeded", err)
	}
	f.Throttle("SendMessage", 1)
	_, err = sqs.NewFromConfig(DirectConfig(f.URL(), "us-east-1"), func(o *sqs.Options) { o.RetryMaxAttempts = 1 }).
		SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(f.URL() + "/123456789012/q"), MessageBody: aws.String("x")})
	if !errors.As(err, &ae) || ae.ErrorCode() != "ThrottlingException" {
		t.Errorf("SQS: err = %v, want ThrottlingException", err)
	}
	if f.Throttled("DescribeInstances") != 1 || f.Throttled("SendMessage") != 1 {
		t.Errorf("throttled counts %d, %d; want 1, 1", f.Throttled("DescribeInstances"), f.Throttled("SendMessage"))
	}
}

func TestDescribeSpotPriceHistoryPaginates(t *testing.T) {
	f, _ := newTestFront(t)
	pages := ec2.NewDescribeSpotPriceHistoryPaginator(f.ec2Client(), &ec2.DescribeSpotPriceHistoryInput{MaxResults: aws.Int32(5)})
	type key struct{ typ, zone string }
	got := map[key]string{}
	n := 0
	for pages.HasMorePages() {
		out, err := pages.NextPage(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		n++
		for _, sp := range out.SpotPriceHistory {
			got[key{string(sp.InstanceType), aws.ToString(sp.AvailabilityZone)}] = aws.ToString(sp.SpotPrice)
			if sp.ProductDescription != "Linux/UNIX" || sp.Timestamp == nil {
				t.Errorf("entry %+v", sp)
			}
		}
	}
	if len(got) != 6 || n != 2 {
		t.Errorf("%d prices in %d pages, want 6 (3 types x 2 zones) in 2 pages", len(got), n)
	}
	if got[key{"m5.large", "us-east-1a"}] != "0.048000" || got[key{"m5.large", "us-east-1b"}] != "0.049000" {
		t.Errorf("m5.large prices %v", got)
	}
}

func TestPublicSSMParameters(t *testing.T) {
	f, _ := newTestFront(t)
	const name = "/aws/service/eks/optimized-ami/1.35/amazon-linux-2023/x86_64/standard/recommended/image_id"
	f.SetPublicParameter(name, "ami-123")
	c := ssm.NewFromConfig(DirectConfig(f.URL(), "us-east-1"), func(o *ssm.Options) { o.RetryMaxAttempts = 1 })
	p, err := c.GetParameter(context.Background(), &ssm.GetParameterInput{Name: aws.String(name)})
	if err != nil || aws.ToString(p.Parameter.Value) != "ami-123" {
		t.Fatalf("GetParameter = %+v, %v", p, err)
	}
	_, err = c.GetParameter(context.Background(), &ssm.GetParameterInput{Name: aws.String("/aws/service/nope")})
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "ParameterNotFound" {
		t.Errorf("unknown public parameter: err = %v, want ParameterNotFound", err)
	}
	ps, err := c.GetParameters(context.Background(), &ssm.GetParametersInput{Names: []string{name, "/aws/service/nope"}})
	if err != nil || len(ps.Parameters) != 1 || len(ps.InvalidParameters) != 1 {
		t.Errorf("GetParameters = %+v, %v", ps, err)
	}
}

// FuzzParseFleetRequest: any Query string gives a request or an error, never a panic.
func FuzzParseFleetRequest(f *testing.F) {
	f.Add("Action=CreateFleet&Type=instant&TargetCapacitySpecification.TotalTargetCapacity=2&LaunchTemplateConfigs.1.Overrides.1.InstanceType=m5.large&LaunchTemplateConfigs.1.Overrides.1.Priority=1")
	f.Add("TargetCapacitySpecification.TotalTargetCapacity=1&LaunchTemplateConfigs.x.Overrides.1.InstanceType=m5.large")
	f.Add("TargetCapacitySpecification.TotalTargetCapacity=1&LaunchTemplateConfigs.2.Overrides.0.Priority=nan")
	f.Fuzz(func(t *testing.T, q string) {
		form, err := url.ParseQuery(q)
		if err != nil {
			return
		}
		fr, err := parseFleetRequest(form)
		if err == nil && fr.total < 1 {
			t.Errorf("accepted total %d", fr.total)
		}
	})
}

// moto has no placement groups: the front keeps them, and answers as EC2
// does (by name or ID, unknown ones refused, the state filter honoured).
func TestPlacementGroups(t *testing.T) {
	f, stub := newTestFront(t)
	c := f.ec2Client()
	ctx := context.Background()
	id := f.AddPlacementGroup("training", "cluster", 0)
	if _, err := c.CreatePlacementGroup(ctx, &ec2.CreatePlacementGroupInput{GroupName: aws.String("shards"), Strategy: ec2types.PlacementStrategyPartition, PartitionCount: aws.Int32(3)}); err != nil {
		t.Fatal(err)
	}
	available := []ec2types.Filter{{Name: aws.String("state"), Values: []string{"available"}}}
	out, err := c.DescribePlacementGroups(ctx, &ec2.DescribePlacementGroupsInput{GroupIds: []string{id}, Filters: available})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.PlacementGroups) != 1 || aws.ToString(out.PlacementGroups[0].GroupName) != "training" || out.PlacementGroups[0].Strategy != ec2types.PlacementStrategyCluster {
		t.Errorf("by ID: %+v", out.PlacementGroups)
	}
	out, err = c.DescribePlacementGroups(ctx, &ec2.DescribePlacementGroupsInput{GroupNames: []string{"shards"}, Filters: available})
	if err != nil || len(out.PlacementGroups) != 1 || aws.ToInt32(out.PlacementGroups[0].PartitionCount) != 3 {
		t.Errorf("by name: %+v, %v", out, err)
	}
	if _, err := c.DeletePlacementGroup(ctx, &ec2.DeletePlacementGroupInput{GroupName: aws.String("shards")}); err != nil {
		t.Fatal(err)
	}
	var ae smithy.APIError
	if _, err := c.DescribePlacementGroups(ctx, &ec2.DescribePlacementGroupsInput{GroupNames: []string{"shards"}}); !errors.As(err, &ae) || ae.ErrorCode() != "InvalidPlacementGroup.Unknown" {
		t.Errorf("a deleted group: %v, want InvalidPlacementGroup.Unknown", err)
	}
	if len(stub.forms) != 0 {
		t.Errorf("placement group calls reached moto: %v", stub.forms)
	}
}
