package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	cftypes "github.com/aws/aws-sdk-go-v2/service/cloudformation/types"

	"github.com/nodewright/nodewright/shared/state"
)

var t0 = time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)

// fakeState is a stand-in state table.
type fakeState struct {
	records   []*state.NodeClaim
	decisions []state.Decision // newest first
	err       error
	since     time.Time
	readiness state.PoolReadiness
}

func (f *fakeState) PoolReadiness(context.Context) (state.PoolReadiness, error) {
	return f.readiness, f.err
}

func (f *fakeState) NodeClaims(context.Context) ([]*state.NodeClaim, error) { return f.records, f.err }
func (f *fakeState) Decisions(_ context.Context, since time.Time, _ int) ([]state.Decision, error) {
	f.since = since
	var out []state.Decision
	for _, d := range f.decisions {
		if !d.Time.Before(since) {
			out = append(out, d)
		}
	}
	return out, f.err
}

// runState runs the command line against st at clock t0; opened records
// the target flags the command resolved.
func runState(t *testing.T, st *fakeState, args ...string) (code int, stdout, stderr string, opened *targetFlags) {
	t.Helper()
	var out, errOut bytes.Buffer
	c := cli{state: stateDeps{
		open: func(_ context.Context, tf *targetFlags) (stateReader, target, error) {
			opened = tf
			return st, target{Table: "tbl", Cluster: "demo"}, nil
		},
		now: func() time.Time { return t0 },
	}}
	code = c.run(args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String(), opened
}

func records() []*state.NodeClaim {
	return []*state.NodeClaim{
		{Name: "gpu-b", NodePool: "gpu", Phase: state.Launching, CreatedAt: t0.Add(-20 * time.Second)},
		{Name: "default-z", NodePool: "default", Phase: state.Initialized, InstanceType: "m5.large", Zone: "us-east-1a", CapacityType: "spot",
			PricePerHour: 0.035, NodeName: "ip-10-0-0-9", InstanceID: "i-9", CreatedAt: t0.Add(-3 * time.Hour)},
		{Name: "default-a", NodePool: "default", Phase: state.Disrupting, InstanceType: "c5.xlarge", Zone: "us-east-1b", CapacityType: "on-demand",
			PricePerHour: 0.17, NodeName: "ip-10-0-0-1", InstanceID: "i-1", CreatedAt: t0.Add(-50 * time.Hour),
			Disruption: &state.Disruption{Action: "consolidation-x", Reason: "Underutilized"}},
	}
}

func TestStatusTable(t *testing.T) {
	code, stdout, stderr, tf := runState(t, &fakeState{records: records()}, "status", "-table", "tbl", "-cluster", "demo", "-region", "eu-west-1")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if tf.table != "tbl" || tf.cluster != "demo" || tf.region != "eu-west-1" {
		t.Errorf("target %+v", tf)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	want := [][]string{
		{"cluster", "demo", "(table", "tbl)"},
		nil,
		{"NODECLAIM", "NODEPOOL", "INSTANCE", "TYPE", "ZONE", "CAPACITY", "PRICE/H", "AGE", "NODE", "PHASE"},
		{"default-a", "default", "c5.xlarge", "us-east-1b", "on-demand", "$0.1700", "2d", "ip-10-0-0-1", "disrupting", "(consolidation-x:", "Underutilized)"},
		{"default-z", "default", "m5.large", "us-east-1a", "spot", "$0.0350", "3h", "ip-10-0-0-9", "initialized"},
		{"gpu-b", "gpu", "-", "-", "-", "-", "20s", "-", "launching"},
		nil,
		{"NODEPOOL", "NODECLAIMS", "PRICE/H"},
		{"default", "2", "$0.2050"},
		{"gpu", "1", "-"},
		{"(all)", "3", "$0.2050"},
	}
	if len(lines) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(lines), len(want), stdout)
	}
	for i, w := range want {
		if got := strings.Fields(lines[i]); strings.Join(got, " ") != strings.Join(w, " ") {
			t.Errorf("line %d: %q, want %q", i, got, w)
		}
	}
}

func TestStatusJSON(t *testing.T) {
	code, stdout, stderr, _ := runState(t, &fakeState{records: records()}, "status", "-stack", "Nodewright-demo", "-o", "json")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep statusReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	if rep.Cluster != "demo" || len(rep.NodeClaims) != 3 || rep.NodeClaims[0].Name != "default-a" || rep.NodeClaims[0].AgeSeconds != 50*3600 ||
		rep.NodeClaims[2].Phase != state.Launching || rep.Total.NodeClaims != 3 || rep.Total.PricePerHour != 0.205 ||
		len(rep.NodePools) != 2 || rep.NodePools[0] != (poolTotals{NodePool: "default", NodeClaims: 2, PricePerHour: 0.205}) {
		t.Errorf("report %+v", rep)
	}
	code, stdout, _, _ = runState(t, &fakeState{}, "status", "-stack", "s", "-o", "json")
	if code != exitOK || !strings.Contains(stdout, `"nodeClaims": []`) {
		t.Errorf("empty table: exit %d, %s", code, stdout)
	}
}

// The NodePools the provision function left out are listed with their
// reason, after the totals (and when there is no NodeClaim at all: a broken
// pool may be why), and in the JSON.
func TestStatusShowsNodePoolsNotReady(t *testing.T) {
	readiness := state.PoolReadiness{At: t0.Add(-time.Minute), NotReady: []state.NotReadyPool{
		{NodePool: "gpu", NodeClass: "gpu-class", Reason: "SecurityGroupsNotFound", Message: "EC2NodeClass gpu-class: no security group matches"},
		{NodePool: "broken", NodeClass: "missing", Reason: "NodeClassNotFound", Message: "EC2NodeClass missing does not exist"},
	}}
	for _, tc := range []struct {
		name    string
		records []*state.NodeClaim
	}{{"with NodeClaims", records()}, {"without NodeClaims", nil}} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr, _ := runState(t, &fakeState{records: tc.records, readiness: readiness}, "status", "-stack", "s")
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			lines := strings.Split(strings.TrimSpace(stdout), "\n")
			want := [][]string{
				{"NodePools", "not", "ready,", "left", "out", "of", "provisioning", "until", "fixed", "(found", "2026-11-24T11:59:00Z):"},
				{"NODEPOOL", "NODECLASS", "REASON", "MESSAGE"},
				{"broken", "missing", "NodeClassNotFound", "EC2NodeClass", "missing", "does", "not", "exist"},
				{"gpu", "gpu-class", "SecurityGroupsNotFound", "EC2NodeClass", "gpu-class:", "no", "security", "group", "matches"},
			}
			if len(lines) < len(want) {
				t.Fatalf("output:\n%s", stdout)
			}
			for i, w := range want {
				if got := strings.Fields(lines[len(lines)-len(want)+i]); strings.Join(got, " ") != strings.Join(w, " ") {
					t.Errorf("line %d from the end: %q, want %q", len(want)-i, got, w)
				}
			}
		})
	}
	code, stdout, _, _ := runState(t, &fakeState{readiness: readiness}, "status", "-stack", "s", "-o", "json")
	var rep statusReport
	if err := json.Unmarshal([]byte(stdout), &rep); code != exitOK || err != nil {
		t.Fatalf("exit %d, %v: %s", code, err, stdout)
	}
	if len(rep.NotReady) != 2 || rep.NotReady[0].NodePool != "broken" || rep.NotReady[0].Reason != "NodeClassNotFound" || rep.ReadinessAt == nil {
		t.Errorf("JSON not-ready pools %+v at %v", rep.NotReady, rep.ReadinessAt)
	}
}

func TestStatusAndExplainArguments(t *testing.T) {
	for _, tc := range []struct {
		args   []string
		code   int
		stderr string
	}{
		{[]string{"status"}, exitUsage, "which cluster? pass -stack NAME"},
		{[]string{"status", "-table", "t"}, exitUsage, "missing -cluster"},
		{[]string{"status", "-cluster", "c"}, exitUsage, "missing -table"},
		{[]string{"status", "-stack", "s", "-table", "t"}, exitUsage, "give either -stack or -table and -cluster"},
		{[]string{"status", "-stack", "s", "-o", "yaml"}, exitUsage, `-o "yaml": want table or json`},
		{[]string{"status", "-stack", "s", "extra"}, exitUsage, `unexpected argument "extra"`},
		{[]string{"explain", "-stack", "s"}, exitUsage, "which pod? give it as namespace/name"},
		{[]string{"explain", "a/b", "c/d", "-stack", "s"}, exitUsage, "want one pod, got 2"},
		{[]string{"explain", "a/b/c", "-stack", "s"}, exitUsage, `pod "a/b/c": want namespace/name`},
		{[]string{"explain", "/b", "-stack", "s"}, exitUsage, `pod "/b": want namespace/name`},
		{[]string{"explain", "a/b", "-stack", "s", "-since", "200h"}, exitUsage, "at most 168h0m0s"},
		{[]string{"explain", "a/b", "-stack", "s", "-o", "yaml"}, exitUsage, `-o "yaml": want text or json`},
		{[]string{"explain", "a/b"}, exitUsage, "which cluster?"},
		{[]string{"help", "nosuch"}, exitUsage, `no command "nosuch"`},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, stderr, _ := runState(t, &fakeState{}, tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.stderr) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, tc.code, tc.stderr)
			}
		})
	}
}

func TestHelpForEveryCommand(t *testing.T) {
	for _, tc := range []struct{ cmd, want string }{
		{"status", "Usage: nodewright status"}, {"explain", "Usage: nodewright explain POD"}, {"validate", "Usage: nodewright validate DIR"},
		{"plan", "Usage: nodewright plan"}, {"webhook", "Usage: nodewright webhook apply"}, {"version", "Usage: nodewright version"}, {"help", "nodewright help [COMMAND]"},
	} {
		code, stdout, stderr, _ := runState(t, &fakeState{}, "help", tc.cmd)
		if code != exitOK || !strings.Contains(stdout, tc.want) || stderr != "" {
			t.Errorf("help %s: exit %d, stdout %.60q, stderr %q", tc.cmd, code, stdout, stderr)
		}
		if tc.cmd == "status" || tc.cmd == "explain" {
			for _, flag := range []string{"-stack STACK", "-table TABLE", "-cluster CLUSTER", "-endpoint-url URL", "-region REGION", "-o FORMAT"} {
				if !strings.Contains(stdout, flag) {
					t.Errorf("help %s lacks %s", tc.cmd, flag)
				}
			}
		}
	}
	_, stdout, _, _ := runState(t, &fakeState{}, "help")
	for _, cmd := range []string{"status", "explain POD", "validate DIR", "plan", "webhook apply", "version"} {
		if !strings.Contains(stdout, "nodewright "+cmd) {
			t.Errorf("usage lacks %q", cmd)
		}
	}
}

func TestStatusReadErrorSaysWhatToCheck(t *testing.T) {
	code, _, stderr, _ := runState(t, &fakeState{err: errors.New("ResourceNotFoundException: table not found")}, "status", "-stack", "s")
	if code != exitError || !strings.Contains(stderr, "table not found (check -table, -region") {
		t.Errorf("exit %d, stderr %q", code, stderr)
	}
}

// stacks is a stand-in CloudFormation.
type stacks struct {
	outputs map[string]string
	err     error
}

func (s stacks) DescribeStacks(_ context.Context, in *cloudformation.DescribeStacksInput, _ ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error) {
	if s.err != nil {
		return nil, s.err
	}
	st := cftypes.Stack{StackName: in.StackName}
	for k, v := range s.outputs {
		st.Outputs = append(st.Outputs, cftypes.Output{OutputKey: aws.String(k), OutputValue: aws.String(v)})
	}
	return &cloudformation.DescribeStacksOutput{Stacks: []cftypes.Stack{st}}, nil
}

func TestStackTarget(t *testing.T) {
	for _, tc := range []struct {
		name string
		cf   stacks
		want target
		err  string
	}{
		{"outputs", stacks{outputs: map[string]string{"StateTableName": "t1", "ClusterName": "c1", "ConfigHash": "h"}}, target{"t1", "c1"}, ""},
		{"old stack", stacks{outputs: map[string]string{"StateTableName": "t1"}}, target{}, "stack S lacks the output ClusterName: redeploy it with this version, or pass -table and -cluster"},
		{"no outputs", stacks{outputs: map[string]string{}}, target{}, "lacks the output StateTableName and ClusterName"},
		{"no stack", stacks{err: errors.New("ValidationError: Stack with id S does not exist")}, target{}, "read stack S (check -stack and -region, or pass -table and -cluster): ValidationError"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := stackTarget(context.Background(), tc.cf, "S")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("%+v %v, want %+v", got, err, tc.want)
			}
		})
	}
}

func TestAge(t *testing.T) {
	for d, want := range map[time.Duration]string{0: "0s", 59 * time.Second: "59s", 90 * time.Second: "1m", 3 * time.Hour: "3h", 47 * time.Hour: "47h", 72 * time.Hour: "3d"} {
		if got := age(d); got != want {
			t.Errorf("age(%v) = %s, want %s", d, got, want)
		}
	}
}

// TestStatusSaysKarpenterIsRunning: while the provision function last found
// Karpenter's controller running, status says so first, in both forms, and
// says nothing of it otherwise.
func TestStatusSaysKarpenterIsRunning(t *testing.T) {
	for _, tc := range []struct {
		name, karpenter, wantLine string
	}{
		{"running", "kube-system/karpenter-7d9f_1", "Karpenter's controller is running (Lease kube-system/karpenter-leader-election, holder karpenter-7d9f_1): Nodewright launches and adopts nothing until it is gone"},
		{"gone", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			readiness := state.PoolReadiness{At: t0, Karpenter: tc.karpenter}
			code, stdout, stderr, _ := runState(t, &fakeState{records: records(), readiness: readiness}, "status", "-stack", "s")
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if got := strings.Contains(stdout, "Karpenter's controller is running"); got != (tc.wantLine != "") {
				t.Fatalf("output:\n%s", stdout)
			}
			if tc.wantLine != "" && !strings.Contains(stdout, tc.wantLine) {
				t.Errorf("output lacks %q:\n%s", tc.wantLine, stdout)
			}
			_, stdout, _, _ = runState(t, &fakeState{records: records(), readiness: readiness}, "status", "-stack", "s", "-o", "json")
			var rep statusReport
			if err := json.Unmarshal([]byte(stdout), &rep); err != nil || rep.Karpenter != tc.karpenter {
				t.Errorf("JSON karpenterRunning %q (%v), want %q", rep.Karpenter, err, tc.karpenter)
			}
		})
	}
}

// A drifted node's record says how it drifted (Karpenter's Drifted
// condition reason): status shows it in the table and the JSON.
func TestStatusShowsDriftReason(t *testing.T) {
	recs := []*state.NodeClaim{{Name: "default-d", NodePool: "default", Phase: state.Disrupting, InstanceType: "m5.large", Zone: "us-east-1a",
		CapacityType: "spot", PricePerHour: 0.035, NodeName: "ip-10-0-0-4", InstanceID: "i-4", CreatedAt: t0.Add(-time.Hour),
		Disruption: &state.Disruption{Action: "consolidation-d", Reason: "Drifted", Drift: "SubnetDrift"}}}
	code, stdout, stderr, _ := runState(t, &fakeState{records: recs}, "status", "-table", "tbl", "-cluster", "demo")
	if code != exitOK || !strings.Contains(stdout, "disrupting (consolidation-d: Drifted: SubnetDrift)") {
		t.Errorf("exit %d, stdout:\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr, _ = runState(t, &fakeState{records: recs}, "status", "-table", "tbl", "-cluster", "demo", "-o", "json")
	var rep statusReport
	if err := json.Unmarshal([]byte(stdout), &rep); code != exitOK || err != nil || len(rep.NodeClaims) != 1 || rep.NodeClaims[0].Drift != "SubnetDrift" {
		t.Errorf("exit %d, %v, report %+v %s", code, err, rep, stderr)
	}
}

// A node adopted from Karpenter says so, in the table and the JSON.
func TestStatusShowsAdoptedNodes(t *testing.T) {
	recs := []*state.NodeClaim{{Name: "default-k1", NodePool: "default", Phase: state.Initialized, InstanceType: "m5.large", Zone: "us-east-1a",
		CapacityType: "spot", NodeName: "ip-10-0-0-5", InstanceID: "i-5", CreatedAt: t0.Add(-time.Hour), AdoptedAt: t0.Add(-time.Minute)}}
	code, stdout, stderr, _ := runState(t, &fakeState{records: recs}, "status", "-table", "tbl", "-cluster", "demo")
	if code != exitOK || !strings.Contains(stdout, "initialized, adopted from Karpenter") {
		t.Errorf("exit %d, stdout:\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr, _ = runState(t, &fakeState{records: recs}, "status", "-table", "tbl", "-cluster", "demo", "-o", "json")
	var rep statusReport
	if err := json.Unmarshal([]byte(stdout), &rep); code != exitOK || err != nil || len(rep.NodeClaims) != 1 || !rep.NodeClaims[0].Adopted {
		t.Errorf("exit %d, %v, report %+v %s", code, err, rep, stderr)
	}
}
