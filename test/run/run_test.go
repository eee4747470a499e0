package run

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/nodewright/nodewright/infra/sdkcalls"
	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/names"
	"github.com/nodewright/nodewright/test/harness"
	"github.com/nodewright/nodewright/test/localcloud"
	"github.com/nodewright/nodewright/test/localcloud/awscalls"
	"github.com/nodewright/nodewright/test/localcloud/awsfront"
)

// TestScenario runs `make run`'s scenario with a few replicas and checks
// what it did against the plan, in the cluster and in the AWS account.
func TestScenario(t *testing.T) {
	cfg, err := LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Cluster != "my-production-cluster" {
		t.Fatalf("cluster %q, want the example EC2NodeClass's my-production-cluster", cfg.Cluster)
	}
	lc := localcloud.StartForTest(t, localcloud.Options{Cluster: cfg.Cluster, BootDelay: 300 * time.Millisecond})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	calls := awscalls.New()
	res, err := Scenario(ctx, lc, cfg, Options{Replicas: 6, Timeout: time.Minute, Progress: NewProgress(&out, time.Now), Calls: calls})
	t.Logf("scenario output:\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("summary:\n%s", Summary(res, nil))
	ec2c := ec2.NewFromConfig(lc.AWSConfig())

	t.Run("pods run on nodes that match the plan", func(t *testing.T) { checkNodes(t, res) })
	t.Run("instances carry the IAM-required tags", func(t *testing.T) { checkInstanceTags(ctx, t, ec2c, lc, res) })
	t.Run("launch templates require IMDSv2", func(t *testing.T) { checkTemplates(ctx, t, ec2c, lc) })
	t.Run("a retried launch is idempotent", func(t *testing.T) { checkIdempotent(ctx, t, lc, res) })
	t.Run("an exhausted pool is a typed unavailable offering", func(t *testing.T) { checkExhausted(ctx, t, lc, res) })
	t.Run("every AWS call is one the IAM check covers", func(t *testing.T) { checkCalls(t, calls) })
}

// checkCalls compares the operations the pass (and the launches above)
// made with the static scan of the provision function's source, which the
// stack's tests check its IAM policy against: what ran must be within what
// the scan found, or the policy check has a blind spot.
func checkCalls(t *testing.T, calls *awscalls.Recorder) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	found, err := sdkcalls.Scan(root, "./functions/provision", sdkcalls.LambdaBuild)
	if err != nil {
		t.Fatal(err)
	}
	scanned := map[string]bool{}
	for _, f := range found {
		scanned[f.String()] = true
	}
	got := calls.Calls()
	for _, want := range []string{"ec2:CreateFleet", "ssm:GetParameters", "ec2:DescribeSubnets", "dynamodb:PutItem"} {
		if got[callOf(want)] == 0 {
			t.Errorf("the pass never called %s (recorded %v)", want, got)
		}
	}
	if outside := calls.Outside(scanned); len(outside) > 0 {
		t.Errorf("operations called but not found by the static scan (so not checked against IAM): %v", outside)
	}
	t.Logf("%d operations called, %d found by the scan", len(got), len(found))
}

func callOf(s string) awscalls.Call {
	svc, op, _ := strings.Cut(s, ":")
	return awscalls.Call{Service: svc, Operation: op}
}

func checkNodes(t *testing.T, res *Result) {
	launches := map[string]int{}
	for i, l := range res.Report.Launches {
		if l.Instance != nil {
			launches[l.Instance.InstanceID] = i
		}
	}
	if len(res.Pods) != 6 {
		t.Errorf("%d pods, want 6", len(res.Pods))
	}
	onNode := map[string]int{}
	for _, p := range res.Pods {
		onNode[p.Spec.NodeName]++
	}
	for _, n := range res.Nodes {
		i, ok := launches[InstanceID(n.Spec.ProviderID)]
		if !ok {
			t.Errorf("node %s (%s) is not a launched instance", n.Name, n.Spec.ProviderID)
			continue
		}
		l := res.Report.Launches[i]
		c, in, lb := l.Claim, l.Instance, n.Labels
		want := map[string]string{
			apis.LabelNodePool: "default", apis.LabelEC2NodeClass: "default", "environment": "production", "team": "platform",
			apis.LabelInstanceType: in.InstanceType, apis.LabelZone: in.Zone, apis.LabelCapacityType: in.CapacityType,
		}
		for k, v := range want {
			if lb[k] != v {
				t.Errorf("node %s label %s = %q, want %q", n.Name, k, lb[k], v)
			}
		}
		if !slices.Contains(c.InstanceTypes, in.InstanceType) || !slices.Contains(c.Zones, in.Zone) || !slices.Contains(c.CapacityTypes, in.CapacityType) {
			t.Errorf("node %s is %s in %s (%s): outside its claim's types %v, zones %v, capacity types %v",
				n.Name, in.InstanceType, in.Zone, in.CapacityType, c.InstanceTypes, c.Zones, c.CapacityTypes)
		}
		if onNode[n.Name] != len(c.Pods) {
			t.Errorf("node %s runs %d inflate pods, the plan put %d on its claim", n.Name, onNode[n.Name], len(c.Pods))
		}
	}
	if len(res.Nodes) != len(res.Report.Launched()) {
		t.Errorf("%d nodes run pods, %d instances launched", len(res.Nodes), len(res.Report.Launched()))
	}
}

func checkInstanceTags(ctx context.Context, t *testing.T, ec2c *ec2.Client, lc *localcloud.Cloud, res *Result) {
	var ids []string
	claimOf := map[string]string{}
	for _, in := range res.Report.Launched() {
		ids = append(ids, in.InstanceID)
		claimOf[in.InstanceID] = in.NodeClaim
	}
	out, err := ec2c.DescribeInstances(ctx, &ec2.DescribeInstancesInput{InstanceIds: ids})
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, r := range out.Reservations {
		for _, in := range r.Instances {
			seen++
			tags := map[string]string{}
			for _, tg := range in.Tags {
				tags[aws.ToString(tg.Key)] = aws.ToString(tg.Value)
			}
			want := map[string]string{
				names.TagKeyCluster(lc.Cluster.Name): names.TagValueOwned, names.TagKeyEKSClusterName: lc.Cluster.Name,
				names.TagKeyNodePool: "default", names.TagKeyNodeClaim: claimOf[aws.ToString(in.InstanceId)],
				names.TagKeyEC2NodeClass: "default", "Environment": "production", "ManagedBy": "karpenter", "Team": "platform",
			}
			for k, v := range want {
				if tags[k] != v {
					t.Errorf("instance %s tag %s = %q, want %q", aws.ToString(in.InstanceId), k, tags[k], v)
				}
			}
		}
	}
	if seen != len(ids) {
		t.Errorf("described %d instances, launched %d", seen, len(ids))
	}
}

func checkTemplates(ctx context.Context, t *testing.T, ec2c *ec2.Client, lc *localcloud.Cloud) {
	out, err := ec2c.DescribeLaunchTemplates(ctx, &ec2.DescribeLaunchTemplatesInput{
		Filters: []ec2types.Filter{{Name: aws.String("tag:" + names.TagKeyCluster(lc.Cluster.Name)), Values: []string{names.TagValueOwned}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.LaunchTemplates) == 0 {
		t.Fatal("no launch template tagged for the cluster")
	}
	for _, lt := range out.LaunchTemplates {
		name := aws.ToString(lt.LaunchTemplateName)
		if !strings.HasPrefix(name, "nodewright-"+lc.Cluster.Name+"-") {
			t.Errorf("launch template %q", name)
		}
		v, err := ec2c.DescribeLaunchTemplateVersions(ctx, &ec2.DescribeLaunchTemplateVersionsInput{LaunchTemplateName: lt.LaunchTemplateName, Versions: []string{"$Latest"}})
		if err != nil || len(v.LaunchTemplateVersions) != 1 {
			t.Fatalf("versions of %s: %v", name, err)
		}
		d := v.LaunchTemplateVersions[0].LaunchTemplateData
		if m := d.MetadataOptions; m == nil || m.HttpTokens != ec2types.LaunchTemplateHttpTokensStateRequired || aws.ToInt32(m.HttpPutResponseHopLimit) != 2 {
			t.Errorf("%s metadata options %+v: want IMDSv2 required with the example's hop limit 2", name, m)
		}
		if d.IamInstanceProfile == nil || aws.ToString(d.IamInstanceProfile.Name) != lc.Env()[names.EnvInstanceProfileName] {
			t.Errorf("%s instance profile %+v, want %s", name, d.IamInstanceProfile, lc.Env()[names.EnvInstanceProfileName])
		}
		if b := d.BlockDeviceMappings; len(b) != 1 || aws.ToInt32(b[0].Ebs.VolumeSize) != 100 || !aws.ToBool(b[0].Ebs.Encrypted) {
			t.Errorf("%s block devices %+v: want the example's encrypted 100 GiB root", name, b)
		}
		if !reflect.DeepEqual(d.SecurityGroupIds, []string{lc.Seeded.SecurityGroupID}) {
			t.Errorf("%s security groups %v, want the discovered %s", name, d.SecurityGroupIds, lc.Seeded.SecurityGroupID)
		}
	}
}

// checkIdempotent re-drives a launch as the next round does after a
// crash: the fleet request stored in the record (its ClientToken, unique
// per cluster and launch) sent again gives the first launch's instance.
func checkIdempotent(ctx context.Context, t *testing.T, lc *localcloud.Cloud, res *Result) {
	l := res.Report.Launches[0]
	st, err := harness.Store(lc)
	if err != nil {
		t.Fatal(err)
	}
	rec, err := st.GetNodeClaim(ctx, l.NodeClaim)
	if err != nil {
		t.Fatal(err)
	}
	var plan fleet.Plan
	if err := json.Unmarshal(rec.Launch, &plan); err != nil || plan.Token == "" {
		t.Fatalf("record %s's stored fleet request %s: %v", rec.Name, rec.Launch, err)
	}
	again, err := res.Launcher.LaunchPlan(ctx, &plan)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, in := range again {
		ids = append(ids, in.InstanceID)
	}
	if len(ids) != plan.Count || !slices.Contains(ids, l.Instance.InstanceID) {
		t.Errorf("re-drive of %s gave %v, want the first launch's %d instances, %s among them (ClientToken %s)", l.NodeClaim, ids, plan.Count, l.Instance.InstanceID, plan.Token)
	}
}

func checkExhausted(ctx context.Context, t *testing.T, lc *localcloud.Cloud, res *Result) {
	nc := defaultClass(t)
	claim := res.Report.Launches[0].Claim
	typ, zones := claim.InstanceTypes[0], lc.Options.Zones[:2]
	claim.InstanceTypes, claim.Zones, claim.CapacityTypes = []string{typ}, zones[:1], []string{apis.CapacityTypeSpot}
	lc.AWS.SetCapacity(typ, zones[0], awsfront.Spot, 0)
	t.Cleanup(func() { lc.AWS.SetCapacity(typ, zones[0], awsfront.Spot, -1) })

	_, err := res.Launcher.Launch(ctx, fleet.Request{Name: "default-exhausted", Claim: claim, NodeClass: nc})
	want := []fleet.UnavailableOffering{{InstanceType: typ, Zone: zones[0], CapacityType: "spot", Code: "InsufficientInstanceCapacity"}}
	if !errors.Is(err, fleet.ErrUnavailableOffering) || !reflect.DeepEqual(fleet.UnavailableOfferings(err), want) {
		t.Fatalf("err = %v, offerings %v; want ErrUnavailableOffering with %v", err, fleet.UnavailableOfferings(err), want)
	}
	if !strings.HasPrefix(err.Error(), "launch nodeclaim default-exhausted: ") {
		t.Errorf("error %q does not name the nodeclaim", err)
	}
	// With a second zone the fleet launches there and reports the refusal.
	claim.Zones = zones
	in, err := res.Launcher.Launch(ctx, fleet.Request{Name: "default-fallback", Claim: claim, NodeClass: nc})
	if err != nil {
		t.Fatal(err)
	}
	if in.Zone != zones[1] || in.InstanceType != typ || in.CapacityType != "spot" || !reflect.DeepEqual(in.Unavailable, want) {
		t.Errorf("fallback launch %+v: want %s spot in %s, refused %v", in, typ, zones[1], want)
	}
}

func defaultClass(t *testing.T) *apis.EC2NodeClass {
	cfg, err := LoadConfig()
	if err != nil {
		t.Fatal(err)
	}
	return cfg.NodeClasses[0]
}
