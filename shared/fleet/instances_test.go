package fleet

import (
	"context"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
)

func TestLaunchGroupOneFleetForIdenticalClaims(t *testing.T) {
	f := newFixture(t)
	req := Request{Name: "default-grpaa", NodeClass: defaultNodeClass(), Count: 3,
		Claim: claim([]string{"c5.large", "m5.large"}, []string{"us-east-1a", "us-east-1b"})}
	insts, err := f.l.LaunchGroup(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.ec2.fleets) != 1 || aws.ToInt32(f.ec2.fleets[0].TargetCapacitySpecification.TotalTargetCapacity) != 3 {
		t.Fatalf("%d fleets; want one with target 3", len(f.ec2.fleets))
	}
	if got := aws.ToString(f.ec2.fleets[0].ClientToken); got != "default-grpaa" {
		t.Errorf("client token %q", got)
	}
	var ids []string
	for _, in := range insts {
		ids = append(ids, in.InstanceID)
		if in.InstanceType != "c5.large" || in.NodeClaim != "default-grpaa" {
			t.Errorf("instance %+v", in)
		}
	}
	if !reflect.DeepEqual(ids, []string{"i-0123", "i-0124", "i-0125"}) {
		t.Errorf("instances %v, want 3 sorted by ID", ids)
	}
	if _, err := f.l.Launch(context.Background(), req); err == nil || !strings.Contains(err.Error(), "LaunchGroup") {
		t.Errorf("Launch of a group: %v, want an error naming LaunchGroup", err)
	}
}

func TestInstancesListsTaggedInstancesAcrossPages(t *testing.T) {
	f := newFixture(t)
	at := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	inst := func(id, state, claim string) ec2types.Instance {
		i := ec2types.Instance{InstanceId: aws.String(id), InstanceType: "m5.large", LaunchTime: aws.Time(at),
			Placement: &ec2types.Placement{AvailabilityZone: aws.String("us-east-1a")}, State: &ec2types.InstanceState{Name: ec2types.InstanceStateName(state)}}
		if claim != "" {
			i.Tags = []ec2types.Tag{{Key: aws.String("karpenter.sh/nodeclaim"), Value: aws.String(claim)}, {Key: aws.String("karpenter.sh/nodepool"), Value: aws.String("default")}}
		}
		return i
	}
	f.ec2.reservations = [][]ec2types.Reservation{
		{{Instances: []ec2types.Instance{inst("i-2", "running", "default-bbbbb")}}},
		{{Instances: []ec2types.Instance{inst("i-1", "pending", "")}}},
	}
	f.ec2.reservations[0][0].Instances[0].InstanceLifecycle = ec2types.InstanceLifecycleTypeSpot
	f.ec2.reservations[0][0].Instances[0].ImageId = aws.String("ami-1")
	f.ec2.reservations[0][0].Instances[0].SubnetId = aws.String("subnet-a1")
	f.ec2.reservations[0][0].Instances[0].SecurityGroups = []ec2types.GroupIdentifier{{GroupId: aws.String("sg-2")}, {GroupId: aws.String("sg-1")}}
	got, err := f.l.Instances(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := []Running{
		{InstanceID: "i-1", InstanceType: "m5.large", Zone: "us-east-1a", State: "pending", LaunchTime: at, CapacityType: "on-demand"},
		{InstanceID: "i-2", InstanceType: "m5.large", Zone: "us-east-1a", State: "running", LaunchTime: at, NodeClaim: "default-bbbbb", NodePool: "default",
			CapacityType: "spot", ImageID: "ami-1", SubnetID: "subnet-a1", SecurityGroups: []string{"sg-1", "sg-2"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("instances %+v\nwant %+v", got, want)
	}
	var filters []string
	for _, fl := range f.ec2.describeIn[0].Filters {
		filters = append(filters, aws.ToString(fl.Name)+"="+strings.Join(fl.Values, ","))
	}
	if filters[0] != "tag:kubernetes.io/cluster/my-production-cluster=owned" {
		t.Errorf("filters %v: want the cluster's ownership tag first", filters)
	}
}

func TestTerminateIgnoresInstancesAlreadyGone(t *testing.T) {
	f := newFixture(t)
	f.ec2.missing = map[string]bool{"i-gone": true}
	if err := f.l.Terminate(context.Background(), []string{"i-1", "i-gone", "i-2"}); err != nil {
		t.Fatal(err)
	}
	var done []string
	for _, b := range f.ec2.terminated {
		done = append(done, b...)
	}
	if !reflect.DeepEqual(done, []string{"i-1", "i-2"}) {
		t.Errorf("terminated %v, want i-1 and i-2 (one unknown ID must not stop the others)", done)
	}
}

func TestTagNodeClaim(t *testing.T) {
	f := newFixture(t)
	if err := f.l.TagNodeClaim(context.Background(), "i-0124", "default", "default-ccccc"); err != nil {
		t.Fatal(err)
	}
	in := f.ec2.tagged[0]
	if in.Resources[0] != "i-0124" || aws.ToString(in.Tags[0].Value) != "default-ccccc" || aws.ToString(in.Tags[1].Value) != "default/default-ccccc" {
		t.Errorf("tags %+v", in)
	}
}

// TestCurrentImagesRefreshesTheCache: once the alias resolves to a new
// image, launches resolve it too (a drift replacement must not boot the
// image it replaces), without waiting for the cache to expire.
func TestCurrentImagesRefreshesTheCache(t *testing.T) {
	f := newFixture(t)
	nc := defaultNodeClass()
	r, err := f.l.Resolve(context.Background(), nc)
	if err != nil {
		t.Fatal(err)
	}
	if got := imageIDs(r.AMIs); !slices.Contains(got, "ami-std-x86") {
		t.Fatalf("AMIs %v", got)
	}
	const param = "/aws/service/eks/optimized-ami/1.35/amazon-linux-2023/x86_64/standard/recommended/image_id"
	f.ssm.params[param] = "ami-std-x86-next"
	r, _ = f.l.Resolve(context.Background(), nc)
	if got := imageIDs(r.AMIs); !slices.Contains(got, "ami-std-x86") {
		t.Fatalf("the cache should still hold the old image before drift is checked: %v", got)
	}
	cur, err := f.l.CurrentImages(context.Background(), nc)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(cur, "ami-std-x86-next") || slices.Contains(cur, "ami-std-x86") {
		t.Fatalf("current images %v", cur)
	}
	r, err = f.l.Resolve(context.Background(), nc)
	if err != nil {
		t.Fatal(err)
	}
	if got := imageIDs(r.AMIs); !slices.Contains(got, "ami-std-x86-next") {
		t.Errorf("after CurrentImages saw the new image, Resolve still gives %v", got)
	}
}
