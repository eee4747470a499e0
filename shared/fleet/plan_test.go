package fleet

import (
	"context"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
)

// A plan is the whole request: launched from its JSON (as a re-drive reads
// it from the record), it sends the same CreateFleet as the first call,
// with the launch's token, and leaves out the excluded offerings.
func TestPlanIsTheRequestAndExcludesOfferings(t *testing.T) {
	f := newFixture(t)
	token := LaunchToken("my-production-cluster", "default-abcde", "nonce-1")
	req := Request{Name: "default-abcde", Token: token, NodeClass: defaultNodeClass(), Count: 2,
		Claim:   claim([]string{"c5.large", "m5.large"}, []string{"us-east-1a", "us-east-1b"}),
		Exclude: []UnavailableOffering{{InstanceType: "c5.large", Zone: "us-east-1b", CapacityType: "spot"}, {InstanceType: "m5.large", Zone: "us-east-1a", CapacityType: "on-demand"}}}
	p, err := f.l.Prepare(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.ec2.fleets) != 0 {
		t.Fatalf("Prepare called CreateFleet %d times", len(f.ec2.fleets))
	}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var stored Plan
	if err := json.Unmarshal(b, &stored); err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := f.l.LaunchPlan(context.Background(), &stored); err != nil {
			t.Fatal(err)
		}
	}
	if len(f.ec2.fleets) != 2 || !reflect.DeepEqual(f.ec2.fleets[0], f.ec2.fleets[1]) {
		t.Fatalf("the two calls of one plan differ:\n%+v\n%+v", f.ec2.fleets[0], f.ec2.fleets[1])
	}
	in := f.ec2.fleets[0]
	if got := aws.ToString(in.ClientToken); got != token || len(got) > maxClientToken {
		t.Errorf("client token %q, want %q", got, token)
	}
	var got []string
	for _, c := range in.LaunchTemplateConfigs {
		for _, o := range c.Overrides {
			got = append(got, string(o.InstanceType)+"@"+aws.ToString(o.AvailabilityZone))
		}
	}
	want := []string{"c5.large@us-east-1a", "m5.large@us-east-1a", "m5.large@us-east-1b"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("overrides %v, want %v (c5.large in us-east-1b spot excluded; the on-demand exclusion does not apply to a spot fleet)", got, want)
	}
	if tags := tagMap(in.TagSpecifications[0].Tags); tags["karpenter.sh/nodeclaim"] != "default-abcde" {
		t.Errorf("instance tags %v: want the NodeClaim's name", tags)
	}
}

// Launch tokens differ by cluster, name and nonce, and fit EC2's limit.
func TestLaunchToken(t *testing.T) {
	a := LaunchToken("c1", "default-abcde", "n1")
	for _, other := range []string{LaunchToken("c2", "default-abcde", "n1"), LaunchToken("c1", "default-abcdf", "n1"), LaunchToken("c1", "default-abcde", "n2")} {
		if other == a {
			t.Errorf("token %s shared", a)
		}
	}
	if a != LaunchToken("c1", "default-abcde", "n1") || len(a) > maxClientToken {
		t.Errorf("token %q: want it stable and at most %d characters", a, maxClientToken)
	}
}
