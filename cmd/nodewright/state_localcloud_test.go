package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/orchestration"
	"github.com/nodewright/nodewright/shared/provision"
	"github.com/nodewright/nodewright/shared/scheduling"
	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/test/localcloud"
)

// status and explain against DynamoDB as moto serves it (no Kubernetes):
// records and decisions written the way the functions write them, read
// back through the real SDK configuration path (-endpoint-url or
// AWS_ENDPOINT_URL, credentials from the environment), by flags and by
// -stack through CloudFormation's outputs.
func TestStatusAndExplainOnTheLocalCloud(t *testing.T) {
	lc := awsOnlyCloud(t, localcloud.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	const cluster = "cli-test"
	table := lc.Names.Table
	store, err := state.New(dynamodb.NewFromConfig(lc.AWSConfig()), table, cluster, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC()
	for _, nc := range []*state.NodeClaim{
		{Name: "default-b2", NodePool: "default", Phase: state.Initialized, InstanceType: "m7g.large", Zone: "us-east-1b", CapacityType: "spot",
			PricePerHour: 0.0301, NodeName: "ip-10-0-1-2", InstanceID: "i-2", CreatedAt: now.Add(-time.Hour)},
		{Name: "default-a1", NodePool: "default", Phase: state.Launched, InstanceType: "c6g.large", Zone: "us-east-1a", CapacityType: "on-demand",
			PricePerHour: 0.068, InstanceID: "i-1", CreatedAt: now.Add(-time.Minute)},
		{Name: "gpu-c3", NodePool: "gpu", Phase: state.Launching, CreatedAt: now},
	} {
		if err := store.PutNodeClaim(ctx, nc); err != nil {
			t.Fatal(err)
		}
	}
	// A round as the provision function records it, then a consolidation
	// action as disruption records it.
	claim := scheduling.NodeClaim{NodePool: "default", InstanceTypes: []string{"m6g.large", "m7g.large", "c7g.xlarge"}, CapacityTypes: []string{"on-demand"},
		Zones: []string{"us-east-1b"}, Pods: []string{"web/api-1", "web/api-2"}}
	rep := &provision.Report{Pending: 3, Plan: &scheduling.Result{Unschedulable: []scheduling.Unschedulable{{Pod: "web/huge", Reason: "no instance type in NodePool default has 2Ti memory"}}},
		Launches: []provision.Launch{{NodeClaim: "default-b2", Claim: claim, Instance: &fleet.Instance{InstanceType: "m7g.large", CapacityType: "on-demand", Zone: "us-east-1b", PricePerHour: 0.0816}}}}
	round := provision.Decision(rep)
	round.NodeClaims = provision.DecidedNodeClaims(rep, catalog.Default(), nil)
	round.Time = now.Add(-time.Hour)
	if err := store.RecordDecision(ctx, round, "1"); err != nil {
		t.Fatal(err)
	}
	act := orchestration.ActionDecision(&state.Action{ID: "consolidation-single-node-x", Kind: state.KindConsolidation, Method: "single-node", Reason: "Underutilized",
		Step: state.StepPlanned, NodeClaims: []string{"default-b2"}, Nodes: []string{"ip-10-0-1-2"}, PriceBefore: 0.0816, PriceAfter: 0.0301}, "replace with a cheaper node")
	act.Time = now.Add(-time.Minute)
	if err := store.RecordDecision(ctx, act, "2"); err != nil {
		t.Fatal(err)
	}

	cli := cli{}
	run := func(args ...string) (int, string, string) {
		t.Helper()
		var out, errOut bytes.Buffer
		code := cli.run(args, nil, &out, &errOut)
		return code, out.String(), errOut.String()
	}
	byFlags := []string{"-endpoint-url", lc.AWS.URL(), "-region", "us-east-1", "-table", table, "-cluster", cluster}

	code, stdout, stderr := run(append([]string{"status"}, byFlags...)...)
	if code != exitOK {
		t.Fatalf("status: exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	for i, want := range map[int]string{
		3: "default-a1 default c6g.large us-east-1a on-demand $0.0680",
		4: "default-b2 default m7g.large us-east-1b spot $0.0301",
		5: "gpu-c3 gpu - - - - ",
		8: "default 2 $0.0981", 9: "gpu 1 -", 10: "(all) 3 $0.0981",
	} {
		if i >= len(lines) || !strings.HasPrefix(strings.Join(strings.Fields(lines[i]), " ")+" ", want) {
			t.Errorf("status line %d: want %q\n%s", i, want, stdout)
		}
	}

	// By the stack's outputs (CloudFormation as moto serves it), as JSON.
	cf := cloudformation.NewFromConfig(lc.AWSConfig())
	tmpl := `{"Resources":{"Handle":{"Type":"AWS::CloudFormation::WaitConditionHandle"}},
	  "Outputs":{"StateTableName":{"Value":"` + table + `"},"ClusterName":{"Value":"` + cluster + `"}}}`
	if _, err := cf.CreateStack(ctx, &cloudformation.CreateStackInput{StackName: aws.String("Nodewright-cli-test"), TemplateBody: aws.String(tmpl)}); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr = run("status", "-endpoint-url", lc.AWS.URL(), "-region", "us-east-1", "-stack", "Nodewright-cli-test", "-o", "json")
	var st statusReport
	if code != exitOK || json.Unmarshal([]byte(stdout), &st) != nil {
		t.Fatalf("status -stack: exit %d: %s%s", code, stdout, stderr)
	}
	if st.Table != table || st.Cluster != cluster || len(st.NodeClaims) != 3 || st.Total.PricePerHour != 0.0981 {
		t.Errorf("status -stack: %+v", st)
	}
	if code, _, stderr = run("status", "-endpoint-url", lc.AWS.URL(), "-region", "us-east-1", "-stack", "NoSuchStack"); code != exitError || !strings.Contains(stderr, "read stack NoSuchStack (check -stack and -region") {
		t.Errorf("status of a missing stack: exit %d: %s", code, stderr)
	}

	// explain, with the endpoint from the environment.
	t.Setenv("AWS_ENDPOINT_URL", lc.AWS.URL())
	code, stdout, stderr = run("explain", "web/api-2", "-region", "us-east-1", "-table", table, "-cluster", cluster)
	if code != exitOK {
		t.Fatalf("explain: exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"placed on the new NodeClaim default-b2",
		"NodeClaim default-b2 (NodePool default, 2 pods) launched as m7g.large, on-demand, us-east-1b at $0.0816/h",
		"chosen from 3 instance types; the cheapest:",
		"NodeClaim default-b2 now: initialized, Node ip-10-0-1-2",
		"consolidation single-node planned: Underutilized ip-10-0-1-2, $0.0816/h -> $0.0301/h; replace with a cheaper node",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("explain lacks %q:\n%s", want, stdout)
		}
	}
	code, stdout, _ = run("explain", "web/huge", "-region", "us-east-1", "-table", table, "-cluster", cluster, "-o", "json")
	var ex explanation
	if code != exitOK || json.Unmarshal([]byte(stdout), &ex) != nil || ex.Latest == nil || ex.Latest.Outcome != "pending: no instance type in NodePool default has 2Ti memory" {
		t.Errorf("explain a pending pod: exit %d: %s", code, stdout)
	}
	if code, _, stderr = run("explain", "web/unknown", "-region", "us-east-1", "-table", table, "-cluster", cluster); code != exitError || !strings.Contains(stderr, "no decision names pod web/unknown") {
		t.Errorf("explain an unknown pod: exit %d: %s", code, stderr)
	}
}

// awsOnlyCloud starts a local cloud of AWS alone (moto behind the AWS front)
// and gives the CLI the environment of a user with credentials and no AWS
// configuration: what the commands find comes from their flags.
func awsOnlyCloud(t *testing.T, opts localcloud.Options) *localcloud.Cloud {
	t.Helper()
	opts.AWSOnly = true
	lc := localcloud.StartForTest(t, opts)
	dir := t.TempDir()
	t.Setenv("AWS_ACCESS_KEY_ID", "testing")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "testing")
	t.Setenv("AWS_SESSION_TOKEN", "")
	t.Setenv("AWS_PROFILE", "")
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(dir, "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(dir, "none"))
	t.Setenv("AWS_ENDPOINT_URL", "")
	t.Setenv("AWS_REGION", "")
	return lc
}
