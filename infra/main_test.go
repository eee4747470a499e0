package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/jsii-runtime-go"

	"github.com/nodewright/nodewright/infra/stack"
)

func TestMain(m *testing.M) {
	code := m.Run()
	jsii.Close()
	os.Exit(code)
}

func mapContext(m map[string]any) appContext {
	return appContext{get: func(key string) any { return m[key] }}
}

func TestContextProps(t *testing.T) {
	p, err := mapContext(map[string]any{
		"cluster": "prod", "config": "cfg", "nodeRole": "R", "importNodeRole": "true", "skipAccessEntries": true,
		"skipAuditLogTrigger": "false", "skipReservedConcurrency": "1", "sweepSchedule": "rate(2 minutes)",
		"launchFailureThreshold": "7", "functionErrorThreshold": 2.0, "webhookTimeoutSeconds": "3",
		"webhookTokenRotationDays": "7", "logRetentionDays": "90", "pendingPodAgeThreshold": "10m", "alarmEmail": "a@b.c", "region": "eu-west-1",
		"subnetIds": "subnet-0123456789abcdef0, subnet-0fedcba9876543210", "securityGroupIds": []any{"sg-0123456789abcdef0"},
		"registrationTimeout": "20m", "ssmParameters": "/team/ami, /platform/ami",
	}).props()
	if err != nil {
		t.Fatal(err)
	}
	if p.ClusterName != "prod" || p.NodeRoleName != "R" || !p.ImportNodeRole || !p.SkipAccessEntries || p.SkipAuditLogTrigger ||
		!p.SkipReservedConcurrency || p.SweepSchedule != "rate(2 minutes)" || p.LaunchFailureThreshold != 7 ||
		p.FunctionErrorThreshold != 2 || p.WebhookTimeoutSeconds != 3 || p.WebhookTokenRotationDays != 7 || p.LogRetention != awslogs.RetentionDays_THREE_MONTHS ||
		p.PendingPodAgeThreshold != 10*time.Minute || p.AlarmEmail != "a@b.c" || *p.Env.Region != "eu-west-1" || p.Env.Account != nil ||
		strings.Join(p.Network.SubnetIDs, " ") != "subnet-0123456789abcdef0 subnet-0fedcba9876543210" ||
		strings.Join(p.Network.SecurityGroupIDs, " ") != "sg-0123456789abcdef0" || p.RegistrationTimeout != 20*time.Minute ||
		strings.Join(p.SSMParameters, " ") != "/team/ami /platform/ami" {
		t.Fatalf("%+v", p)
	}
	if p, err := mapContext(map[string]any{"cluster": "c", "config": "d"}).props(); err != nil || p.Env != nil || p.Network != nil {
		t.Fatalf("env-agnostic by default: %+v %v", p.Env, err)
	}
}

func TestContextErrors(t *testing.T) {
	cases := []struct {
		ctx  map[string]any
		want string
	}{
		{map[string]any{"cluster": "c"}, "nodewright:config"},
		{map[string]any{"cluster": "c", "config": "d", "importNodeRole": "yes please"}, "nodewright:importNodeRole"},
		{map[string]any{"cluster": "c", "config": "d", "skipAccessEntries": 3.0}, "nodewright:skipAccessEntries"},
		{map[string]any{"cluster": "c", "config": "d", "launchFailureThreshold": "many"}, "want a number"},
		{map[string]any{"cluster": "c", "config": "d", "logRetentionDays": "42"}, "use one of"},
		{map[string]any{"cluster": "c", "config": "d", "pendingPodAgeThreshold": "soon"}, "want a duration"},
		{map[string]any{"cluster": "c", "config": "d", "webhookTimeoutSeconds": true}, "want a number"},
		{map[string]any{"cluster": "c", "config": "d", "registrationTimeout": "a while"}, "nodewright:registrationTimeout"},
	}
	for _, tc := range cases {
		if _, err := mapContext(tc.ctx).props(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: err %v, want %q", tc.ctx, err, tc.want)
		}
	}
}

func appProps(t *testing.T, ctx map[string]any) (*awscdk.AppProps, string) {
	t.Helper()
	out := t.TempDir()
	c := map[string]any{}
	for k, v := range ctx {
		c[contextPrefix+k] = v
	}
	return &awscdk.AppProps{Outdir: jsii.String(out), Context: &c}, out
}

// A bad configuration file fails the synth, naming the file and the field,
// before anything is built.
func TestRunFailsOnBadConfig(t *testing.T) {
	dir := t.TempDir()
	pool := "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata:\n  name: default\nspec:\n  template:\n    spec:\n" +
		"      requirements:\n        - key: kubernetes.io/arch\n          operator: In\n      nodeClassRef:\n" +
		"        group: karpenter.k8s.aws\n        kind: EC2NodeClass\n        name: default\n  weight: 500\n"
	if err := os.WriteFile(filepath.Join(dir, "pool.yaml"), []byte(pool), 0o644); err != nil {
		t.Fatal(err)
	}
	props, out := appProps(t, map[string]any{"cluster": "demo-cluster", "config": dir})
	err := run(props)
	if err == nil {
		t.Fatal("synth succeeded")
	}
	for _, want := range []string{"pool.yaml", "NodePool default", "spec.weight"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "manifest.json")); err == nil {
		t.Error("a cloud assembly was written")
	}
}

// The app end to end, with CloudFormation template validation on: the
// template, the assets and the manifests land in the output directory.
func TestRunSynthesizes(t *testing.T) {
	root, err := stack.ModuleRoot(".")
	if err != nil {
		t.Fatal(err)
	}
	props, out := appProps(t, map[string]any{"cluster": "demo-cluster", "config": filepath.Join(root, "infra", "config")})
	if err := run(props); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(out, "Nodewright-demo-cluster.template.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tpl struct {
		Resources map[string]struct{ Type string }
	}
	if err := json.Unmarshal(b, &tpl); err != nil {
		t.Fatal(err)
	}
	var fns int
	for _, r := range tpl.Resources {
		if r.Type == "AWS::Lambda::Function" {
			fns++
		}
	}
	if fns != len(stack.FunctionNames()) {
		t.Errorf("%d functions in the template", fns)
	}
	for _, f := range []string{stack.WebhookManifestFile, stack.RBACManifestFile, stack.CRDsManifestFile} {
		if _, err := os.Stat(filepath.Join(out, "nodewright", "Nodewright-demo-cluster", f)); err != nil {
			t.Error(err)
		}
	}
	assets, err := filepath.Glob(filepath.Join(out, "asset.*", "bootstrap"))
	if err != nil || len(assets) != len(stack.FunctionNames()) {
		t.Fatalf("bootstrap assets %v %v", assets, err)
	}
	for _, a := range assets {
		if st, err := os.Stat(a); err != nil || st.Mode()&0o111 == 0 {
			t.Errorf("%s not executable", a)
		}
	}
	lintTemplate(t, filepath.Join(out, "Nodewright-demo-cluster.template.json"))
}

// lintTemplate runs the pinned cfn-lint (stack.FindCfnLint: the test fails
// without it, as TestCfnLint does) on the app's template: no findings but
// the warnings the stack accepts (stack.CfnLintAccepted, each with why).
func lintTemplate(t *testing.T, template string) {
	t.Helper()
	bin, err := stack.FindCfnLint()
	if err != nil {
		t.Fatal(err)
	}
	var accepted []string
	for rule := range stack.CfnLintAccepted {
		accepted = append(accepted, rule)
	}
	sort.Strings(accepted)
	args := []string{"--format", "parseable"}
	if len(accepted) > 0 {
		args = append(append(args, "--ignore-checks"), accepted...)
	}
	out, err := exec.Command(bin, append(args, "--", template)...).CombinedOutput()
	if err != nil {
		t.Fatalf("cfn-lint %s: %v\n%s", stack.CfnLintVersion, err, out)
	}
}
