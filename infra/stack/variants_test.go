package stack

import (
	"sort"
	"strings"
	"testing"

	"github.com/aws/jsii-runtime-go"

	"github.com/nodewright/nodewright/shared/apis"
)

// variantEdits are every stack variant the tests synthesize, by name, as
// edits of the base props; cfn-lint checks each of them.
var variantEdits = map[string]func(*Props){
	"default": nil,
	// Alarms to an encrypted topic created for an email address.
	"email": func(p *Props) { p.AlarmEmail = "oncall@example.com" },
	// An existing node role (say Karpenter's), no access entries, no audit
	// log, no reserved concurrency, custom schedules and thresholds.
	"minimal": func(p *Props) {
		p.ImportNodeRole = true
		p.SkipAccessEntries = true
		p.SkipAuditLogTrigger = true
		p.SkipReservedConcurrency = true
		p.SweepSchedule = "rate(2 minutes)"
		p.AlarmTopicArn = "arn:aws:sns:us-east-1:123456789012:ops"
	},
	// Controllers in a VPC (private cluster endpoint).
	"vpc": func(p *Props) {
		p.Network = &Network{SubnetIDs: []string{"subnet-0123456789abcdef0", "subnet-0fedcba9876543210"}, SecurityGroupIDs: []string{"sg-0123456789abcdef0"}}
	},
	// An EC2NodeClass that selects its AMI through parameters of its own,
	// and parameters listed for classes applied to the cluster later.
	"ssm": func(p *Props) {
		custom := *p.Config.NodeClasses[0]
		custom.Name = "custom-ami"
		custom.Spec.AMISelectorTerms = []apis.AMISelectorTerm{{SSMParameter: "/team/ami/arm64"}, {SSMParameter: "team-ami-x86"}}
		p.Config.NodeClasses = append(p.Config.NodeClasses, &custom)
		p.SSMParameters = []string{"/platform/golden-ami", "arn:aws:ssm:us-east-1:210987654321:parameter/shared/ami"}
	},
	// A configuration warning becomes an annotation.
	"warned": func(p *Props) {
		p.ConfigWarnings = []string{"x.yaml: document 2 (v1 Pod p) is not a NodePool or EC2NodeClass: ignored"}
	},
}

// namedVariant synthesizes (once) the variant of variantEdits named name.
func namedVariant(t *testing.T, name string) *synthesized {
	t.Helper()
	edit, ok := variantEdits[name]
	if !ok {
		t.Fatalf("no variant %q", name)
	}
	return variant(t, name, edit)
}

// Alarms to an encrypted topic created for an email address.
func TestAlarmEmailVariant(t *testing.T) {
	s := namedVariant(t, "email")
	if f := nagFindings(s); f != "" {
		t.Fatalf("cdk-nag findings:\n%s", f)
	}
	s.template.ResourceCountIs(jsii.String("AWS::SNS::Topic"), jsii.Number(1))
	s.template.ResourceCountIs(jsii.String("AWS::KMS::Key"), jsii.Number(1))
	s.template.HasResourceProperties(jsii.String("AWS::SNS::Subscription"), map[string]any{"Protocol": "email", "Endpoint": "oncall@example.com"})
	topic := s.one(t, "AWS::SNS::Topic", "AlarmTopic")
	if !strings.Contains(js(topic["KmsMasterKeyId"]), "AlarmTopicKey") {
		t.Errorf("topic %v", topic)
	}
	key := s.one(t, "AWS::KMS::Key", "AlarmTopicKey")
	if key["EnableKeyRotation"] != true || !strings.Contains(js(key["KeyPolicy"]), `"Service":"cloudwatch.amazonaws.com"`) {
		t.Errorf("key %v", js(key))
	}
	for id, a := range s.resources("AWS::CloudWatch::Alarm") {
		p := a["Properties"].(map[string]any)
		if !strings.Contains(js(p["AlarmActions"]), "AlarmTopic") || !strings.Contains(js(p["OKActions"]), "AlarmTopic") {
			t.Errorf("%s: actions %v", id, p["AlarmActions"])
		}
	}
}

// An existing node role (say Karpenter's), no access entries, no audit log,
// no reserved concurrency, custom schedules and thresholds.
func TestMinimalVariant(t *testing.T) {
	s := namedVariant(t, "minimal")
	if f := nagFindings(s); f != "" {
		t.Fatalf("cdk-nag findings:\n%s", f)
	}
	for typ, n := range map[string]int{"AWS::EKS::AccessEntry": 0, "AWS::Logs::SubscriptionFilter": 0, "AWS::IAM::Role": 5,
		"AWS::IAM::InstanceProfile": 1, "AWS::SNS::Topic": 0} {
		s.template.ResourceCountIs(jsii.String(typ), jsii.Number(float64(n)))
	}
	for id, f := range s.resources("AWS::Lambda::Function") {
		if r := f["Properties"].(map[string]any)["ReservedConcurrentExecutions"]; r != nil {
			t.Errorf("%s: reserved %v", id, r)
		}
	}
	if p := s.one(t, "AWS::Events::Rule", "ProvisionSweep"); p["ScheduleExpression"] != "rate(2 minutes)" {
		t.Errorf("sweep %v", p["ScheduleExpression"])
	}
	pol := s.one(t, "AWS::IAM::ManagedPolicy", "ControllerPolicy")
	pass := statements(t, pol["PolicyDocument"])["AllowPassingInstanceRole"]
	if r := js(pass["Resource"]); !strings.Contains(r, ":role/KarpenterNodeRole-demo-cluster") {
		t.Errorf("pass role on %s", r)
	}
	if ip := s.one(t, "AWS::IAM::InstanceProfile", "NodeInstanceProfile"); js(ip["Roles"]) != `["KarpenterNodeRole-demo-cluster"]` {
		t.Errorf("instance profile roles %v", ip["Roles"])
	}
	for id, a := range s.resources("AWS::CloudWatch::Alarm") {
		if p := a["Properties"].(map[string]any); js(p["AlarmActions"]) != `["arn:aws:sns:us-east-1:123456789012:ops"]` {
			t.Errorf("%s: actions %v", id, p["AlarmActions"])
		}
	}
}

// Controllers in a VPC (private cluster endpoint); the webhook stays out.
func TestNetworkVariant(t *testing.T) {
	s := namedVariant(t, "vpc")
	if f := nagFindings(s); f != "" {
		t.Fatalf("cdk-nag findings:\n%s", f)
	}
	for _, fn := range FunctionNames() {
		p := s.one(t, "AWS::Lambda::Function", title(fn))
		vpc := js(p["VpcConfig"])
		if fn == FnWebhook || fn == FnRotation {
			if p["VpcConfig"] != nil {
				t.Errorf("%s in a VPC: %s", fn, vpc)
			}
			continue
		}
		if vpc != `{"SecurityGroupIds":["sg-0123456789abcdef0"],"SubnetIds":["subnet-0123456789abcdef0","subnet-0fedcba9876543210"]}` {
			t.Errorf("%s: VpcConfig %s", fn, vpc)
		}
	}
	for id, pol := range s.resources("AWS::IAM::Policy") {
		props := pol["Properties"].(map[string]any)
		eni := statements(t, props["PolicyDocument"])["ManageVpcNetworkInterfaces"]
		if strings.Contains(js(props["Roles"]), "WebhookRole") || strings.Contains(js(props["Roles"]), "RotationRole") {
			if eni != nil {
				t.Errorf("%s: the webhook or rotation may manage ENIs", id)
			}
			continue
		}
		if eni == nil || len(strs(eni["Action"])) != len(NetworkInterfaceActions()) {
			t.Errorf("%s: ENI statement %v", id, eni)
		}
	}
	// The function waits for its role's policy (else Lambda cannot create
	// the network interfaces).
	for id, f := range s.resources("AWS::Lambda::Function") {
		if strings.HasPrefix(id, "Webhook") || strings.HasPrefix(id, "Rotation") {
			continue
		}
		if !strings.Contains(js(f["DependsOn"]), "RoleDefaultPolicy") {
			t.Errorf("%s depends on %v", id, f["DependsOn"])
		}
	}
}

// The functions may read exactly the SSM parameters the configuration and
// the props name, beside the public ones: each custom parameter by its ARN
// in the stack's account, a shared parameter by the ARN given, and no
// wildcard over the account's parameters.
func TestSSMVariantGrantsTheNamedParameters(t *testing.T) {
	s := namedVariant(t, "ssm")
	pol := s.one(t, "AWS::IAM::ManagedPolicy", "ControllerPolicy")
	got := resourceList(statements(t, pol["PolicyDocument"])["AllowSSMReadActions"]["Resource"])
	sort.Strings(got)
	want := []string{
		"arn:aws:ssm:us-east-1::parameter/aws/service/*",
		"arn:aws:ssm:us-east-1:123456789012:parameter/platform/golden-ami",
		"arn:aws:ssm:us-east-1:123456789012:parameter/team-ami-x86",
		"arn:aws:ssm:us-east-1:123456789012:parameter/team/ami/arm64",
		"arn:aws:ssm:us-east-1:210987654321:parameter/shared/ami",
	}
	sort.Strings(want)
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("SSM resources:\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	def := resourceList(statements(t, defaultStack(t).one(t, "AWS::IAM::ManagedPolicy", "ControllerPolicy")["PolicyDocument"])["AllowSSMReadActions"]["Resource"])
	if strings.Join(def, " ") != "arn:aws:ssm:us-east-1::parameter/aws/service/*" {
		t.Errorf("default stack's SSM resources %v: want the public parameters only", def)
	}
}
