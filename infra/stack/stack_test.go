package stack

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/nodewright/nodewright/shared/metrics"
	"github.com/nodewright/nodewright/shared/names"
	"github.com/nodewright/nodewright/shared/trigger"
)

// js renders v as compact JSON, for containment checks on token values.
func js(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// strs normalizes an IAM "Action"/"Resource" value (string or list).
func strs(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			if s, ok := e.(string); ok {
				out = append(out, s)
			} else {
				out = append(out, js(e))
			}
		}
		sort.Strings(out)
		return out
	default:
		return []string{js(v)}
	}
}

// statements returns a policy document's statements by Sid.
func statements(t *testing.T, doc any) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	for i, s := range doc.(map[string]any)["Statement"].([]any) {
		st := s.(map[string]any)
		sid, _ := st["Sid"].(string)
		if sid == "" {
			sid = fmt.Sprintf("#%d", i)
		}
		out[sid] = st
	}
	return out
}

func TestResourceCounts(t *testing.T) {
	s := defaultStack(t)
	want := map[string]int{
		"AWS::Lambda::Function":                 5,
		"AWS::Lambda::LayerVersion":             1,
		"AWS::Lambda::Url":                      1,
		"AWS::Lambda::EventSourceMapping":       2,
		"AWS::Lambda::EventInvokeConfig":        2,
		"AWS::Logs::LogGroup":                   5,
		"AWS::Logs::SubscriptionFilter":         1,
		"AWS::DynamoDB::Table":                  1,
		"AWS::SQS::Queue":                       3,
		"AWS::SQS::QueuePolicy":                 3,
		"AWS::Events::Rule":                     7,
		"AWS::IAM::Role":                        6,
		"AWS::IAM::ManagedPolicy":               1,
		"AWS::IAM::InstanceProfile":             1,
		"AWS::EKS::AccessEntry":                 4,
		"AWS::SecretsManager::Secret":           1,
		"AWS::SecretsManager::RotationSchedule": 1,
		"AWS::CloudWatch::Dashboard":            1,
		"AWS::CloudWatch::Alarm":                13,
		"AWS::SNS::Topic":                       0,
		"AWS::KMS::Key":                         0,
	}
	for typ, n := range want {
		s.template.ResourceCountIs(jsii.String(typ), jsii.Number(float64(n)))
	}
}

func TestFunctionSettings(t *testing.T) {
	s := defaultStack(t)
	for _, fn := range FunctionNames() {
		t.Run(fn, func(t *testing.T) {
			set := Settings()[fn]
			p := s.one(t, "AWS::Lambda::Function", title(fn))
			if p["Runtime"] != "provided.al2023" || p["Handler"] != "bootstrap" || js(p["Architectures"]) != `["arm64"]` {
				t.Errorf("runtime %v handler %v arch %v", p["Runtime"], p["Handler"], p["Architectures"])
			}
			var reserved any
			if set.Reserved > 0 {
				reserved = float64(set.Reserved)
			}
			if p["MemorySize"] != float64(set.MemoryMB) || p["Timeout"] != set.Timeout.Seconds() || p["ReservedConcurrentExecutions"] != reserved {
				t.Errorf("memory %v timeout %v reserved %v", p["MemorySize"], p["Timeout"], p["ReservedConcurrentExecutions"])
			}
			if lc := p["LoggingConfig"].(map[string]any); lc["LogFormat"] != "JSON" || !strings.Contains(js(lc["LogGroup"]), title(fn)+"Logs") {
				t.Errorf("logging %v", lc)
			}
			env := p["Environment"].(map[string]any)["Variables"].(map[string]any)
			if env[names.EnvClusterName] != "demo-cluster" || env[names.EnvLogLevel] != "info" {
				t.Errorf("env %v", env)
			}
			if fn == FnWebhook {
				for _, k := range []string{names.EnvProvisionFunction, names.EnvWebhookSecretARN, names.EnvTableName} {
					if env[k] == nil {
						t.Errorf("webhook env lacks %s", k)
					}
				}
				if p["Layers"] != nil || env[names.EnvConfigDir] != nil {
					t.Errorf("webhook has the configuration layer")
				}
				return
			}
			if fn == FnRotation {
				if p["Layers"] != nil || len(env) != 3 { // cluster name, log level, GOMEMLIMIT
					t.Errorf("rotation: layers %v, env %v", p["Layers"], env)
				}
				return
			}
			if env[names.EnvConfigDir] != ConfigLayerPath || env[names.EnvConfigHash] != s.stack.ConfigHash() ||
				env[names.EnvNodeRoleName] != "KarpenterNodeRole-demo-cluster" || env[names.EnvMetricsNamespace] != metrics.Namespace ||
				env[names.EnvTableName] == nil || env[names.EnvInstanceProfileName] == nil || env[names.EnvRegistrationTimeout] != "15m0s" {
				t.Errorf("env %v", env)
			}
			if (env[names.EnvQueueURL] != nil) != (fn == FnInterruption) {
				t.Errorf("queue URL given to %s: %v", fn, env[names.EnvQueueURL])
			}
			// The recheck queue: its URL (visibility) and ARN (to tell its
			// batches apart), the interruption function's only.
			wantRecheck := map[string]string{}
			if fn == FnInterruption {
				wantRecheck = map[string]string{names.EnvRecheckQueueURL: `{"Ref":"RecheckQueue`, names.EnvRecheckQueueARN: `{"Fn::GetAtt":["RecheckQueue`}
			}
			for _, k := range []string{names.EnvRecheckQueueURL, names.EnvRecheckQueueARN} {
				if want, got := wantRecheck[k], js(env[k]); want == "" && env[k] != nil || want != "" && !strings.HasPrefix(got, want) {
					t.Errorf("%s of %s: %s, want %q", k, fn, got, want)
				}
			}
			if !strings.Contains(js(p["Layers"]), "ConfigLayer") {
				t.Errorf("layers %v", p["Layers"])
			}
		})
	}
}

func TestAsyncInvokeConfig(t *testing.T) {
	s := defaultStack(t)
	for _, fn := range []string{FnProvision, FnConsolidation} {
		s.template.HasResourceProperties(jsii.String("AWS::Lambda::EventInvokeConfig"), map[string]any{
			"FunctionName":             map[string]any{"Ref": assertions.Match_StringLikeRegexp(jsii.String("^" + title(fn)))},
			"MaximumRetryAttempts":     0,
			"MaximumEventAgeInSeconds": 60,
		})
	}
}

func TestStateTable(t *testing.T) {
	s := defaultStack(t)
	s.template.HasResource(jsii.String("AWS::DynamoDB::Table"), map[string]any{
		"DeletionPolicy": "Retain",
		"Properties": map[string]any{
			"BillingMode":                      "PAY_PER_REQUEST",
			"DeletionProtectionEnabled":        true,
			"PointInTimeRecoverySpecification": map[string]any{"PointInTimeRecoveryEnabled": true},
			"SSESpecification":                 map[string]any{"SSEEnabled": true},
			"TimeToLiveSpecification":          map[string]any{"AttributeName": names.TTLAttribute, "Enabled": true},
			"KeySchema": []any{
				map[string]any{"AttributeName": names.PartitionKey, "KeyType": "HASH"},
				map[string]any{"AttributeName": names.SortKey, "KeyType": "RANGE"},
			},
			"GlobalSecondaryIndexes": []any{
				map[string]any{
					"IndexName":  names.IndexByInstanceID,
					"KeySchema":  []any{map[string]any{"AttributeName": names.InstanceIDAttribute, "KeyType": "HASH"}},
					"Projection": map[string]any{"ProjectionType": "ALL"},
				},
				map[string]any{
					"IndexName": names.IndexByNodePool,
					"KeySchema": []any{
						map[string]any{"AttributeName": names.NodePoolAttribute, "KeyType": "HASH"},
						map[string]any{"AttributeName": names.IndexByNodePoolSortKey, "KeyType": "RANGE"},
					},
					"Projection": map[string]any{"ProjectionType": "ALL"},
				},
			},
		},
	})
	// AWS-managed key: SSE with no customer key ID.
	p := s.one(t, "AWS::DynamoDB::Table", "State")
	sse := p["SSESpecification"].(map[string]any)
	if sse["SSEEnabled"] != true || sse["KMSMasterKeyId"] != nil {
		t.Errorf("SSE %v", sse)
	}
}

func TestInterruptionQueue(t *testing.T) {
	s := defaultStack(t)
	q := s.one(t, "AWS::SQS::Queue", "InterruptionQueue")
	if q["SqsManagedSseEnabled"] != true || q["MessageRetentionPeriod"] != float64(3600) ||
		q["VisibilityTimeout"] != interruptionQueueVisibility.Seconds() {
		t.Errorf("queue %v", q)
	}
	rp := q["RedrivePolicy"].(map[string]any)
	if rp["maxReceiveCount"] != float64(names.InterruptionMaxReceives) || !strings.Contains(js(rp["deadLetterTargetArn"]), "InterruptionDLQ") {
		t.Errorf("redrive %v", rp)
	}
	if dlq := s.one(t, "AWS::SQS::Queue", "InterruptionDLQ"); dlq["SqsManagedSseEnabled"] != true || dlq["MessageRetentionPeriod"] != float64(14*86400) {
		t.Errorf("dlq %v", dlq)
	}
	// Both queues feed the interruption function, the same way.
	sources := map[string]bool{}
	for id, r := range s.resources("AWS::Lambda::EventSourceMapping") {
		esm := r["Properties"].(map[string]any)
		if esm["BatchSize"] != float64(10) || js(esm["FunctionResponseTypes"]) != `["ReportBatchItemFailures"]` ||
			js(esm["ScalingConfig"]) != `{"MaximumConcurrency":5}` || !strings.Contains(js(esm["FunctionName"]), "Interruption") {
			t.Errorf("event source %s %v", id, esm)
		}
		for _, q := range []string{"InterruptionQueue", "RecheckQueue"} {
			if strings.Contains(js(esm["EventSourceArn"]), `"`+q) {
				sources[q] = true
			}
		}
	}
	if len(sources) != 2 {
		t.Errorf("event sources of %v: want the interruption and the recheck queues", sources)
	}
}

// Only EventBridge, delivering one of our rules, may send to the queue; no
// one may use it without TLS.
func TestQueuePolicy(t *testing.T) {
	s := defaultStack(t)
	// The recheck queue takes the urgent rules only (trigger.RecheckDetailTypes).
	for _, tc := range []struct {
		policy string
		rules  int
	}{{"InterruptionQueuePolicy", 5}, {"RecheckQueuePolicy", len(trigger.RecheckDetailTypes())}} {
		t.Run(tc.policy, func(t *testing.T) { queuePolicy(t, s, tc.policy, tc.rules) })
	}
}

// queuePolicy checks that only EventBridge, delivering one of our n rules,
// may send to the queue of policy, and only over TLS.
func queuePolicy(t *testing.T, s *synthesized, policy string, n int) {
	pol := s.one(t, "AWS::SQS::QueuePolicy", policy)
	st := statements(t, pol["PolicyDocument"])
	var allows int
	ruleArns := map[string]bool{}
	for sid, stmt := range st {
		switch stmt["Effect"] {
		case "Allow":
			allows++
			if js(stmt["Principal"]) != `{"Service":"events.amazonaws.com"}` {
				t.Errorf("%s: principal %v", sid, stmt["Principal"])
			}
			cond := stmt["Condition"].(map[string]any)["ArnEquals"].(map[string]any)["aws:SourceArn"]
			ruleArns[js(cond)] = true
			for _, a := range strs(stmt["Action"]) {
				if a != "sqs:SendMessage" && a != "sqs:GetQueueAttributes" && a != "sqs:GetQueueUrl" {
					t.Errorf("%s: action %s", sid, a)
				}
			}
		case "Deny":
		default:
			t.Errorf("%s: effect %v", sid, stmt["Effect"])
		}
	}
	if allows != n || len(ruleArns) != n {
		t.Errorf("%d allow statements for %d rules, want %d", allows, len(ruleArns), n)
	}
	deny := st["OnlyNodewrightRulesMaySend"]
	if deny == nil || deny["Effect"] != "Deny" || js(deny["Principal"]) != `{"AWS":"*"}` || deny["Action"] != "sqs:SendMessage" {
		t.Fatalf("deny statement %v", deny)
	}
	denied := deny["Condition"].(map[string]any)["ArnNotEquals"].(map[string]any)["aws:SourceArn"].([]any)
	if len(denied) != n {
		t.Errorf("deny lists %d rules, want %d", len(denied), n)
	}
	for _, r := range denied {
		if !ruleArns[js(r)] {
			t.Errorf("deny exempts %s, which has no allow", js(r))
		}
	}
	var tls bool
	for _, stmt := range st {
		if stmt["Effect"] == "Deny" && js(stmt["Condition"]) == `{"Bool":{"aws:SecureTransport":"false"}}` {
			tls = true
		}
	}
	if !tls {
		t.Error("no TLS-only statement")
	}
}

func TestInterruptionRules(t *testing.T) {
	s := defaultStack(t)
	want := map[string]map[string]any{
		"SpotInterruptionRule":                {"source": []any{"aws.ec2"}, "detail-type": []any{trigger.DetailTypeSpotInterruption}},
		"RebalanceRule":                       {"source": []any{"aws.ec2"}, "detail-type": []any{trigger.DetailTypeRebalanceRecommendation}},
		"InstanceStateChangeRule":             {"source": []any{"aws.ec2"}, "detail-type": []any{trigger.DetailTypeStateChange}},
		"CapacityReservationInterruptionRule": {"source": []any{"aws.ec2"}, "detail-type": []any{trigger.DetailTypeCapacityReservationInterruption}},
		"ScheduledChangeRule": {"source": []any{"aws.health"}, "detail-type": []any{"AWS Health Event"},
			"detail": map[string]any{"service": []any{"EC2"}, "eventTypeCategory": []any{"scheduledChange"}}},
	}
	for id, pattern := range want {
		t.Run(id, func(t *testing.T) {
			p := s.one(t, "AWS::Events::Rule", id)
			if !reflect.DeepEqual(p["EventPattern"], pattern) {
				t.Errorf("pattern %s, want %s", js(p["EventPattern"]), js(pattern))
			}
			if p["State"] != "ENABLED" || !strings.Contains(js(p["Targets"]), "InterruptionQueue") {
				t.Errorf("state %v targets %v", p["State"], js(p["Targets"]))
			}
			// The urgent events go to the recheck queue too.
			dt := pattern["detail-type"].([]any)[0].(string)
			wantRecheck := pattern["source"].([]any)[0] == trigger.EC2Source && slices.Contains(trigger.RecheckDetailTypes(), dt)
			targets, _ := p["Targets"].([]any)
			if got := strings.Contains(js(p["Targets"]), "RecheckQueue"); got != wantRecheck || len(targets) != 1+btoi(wantRecheck) {
				t.Errorf("targets %s: want the recheck queue too: %v", js(p["Targets"]), wantRecheck)
			}
		})
	}
	// Every event the decoder accepts is matched by a rule, and vice versa:
	// the samples in events/ decode to the kinds the rules route.
	if len(want) != len(interruptionRules()) {
		t.Errorf("%d rules, want %d", len(interruptionRules()), len(want))
	}
}

func TestSchedules(t *testing.T) {
	s := defaultStack(t)
	for id, c := range map[string]struct{ expr, fn string }{
		"ProvisionSweep":        {"rate(1 minute)", "Provision"},
		"ConsolidationSchedule": {"rate(5 minutes)", "Consolidation"},
	} {
		p := s.one(t, "AWS::Events::Rule", id)
		target := p["Targets"].([]any)[0].(map[string]any)
		if p["ScheduleExpression"] != c.expr || !strings.Contains(js(target["Arn"]), c.fn) ||
			js(target["RetryPolicy"]) != `{"MaximumEventAgeInSeconds":60,"MaximumRetryAttempts":0}` {
			t.Errorf("%s: %v", id, js(p))
		}
	}
}

func TestAuditLogSubscription(t *testing.T) {
	s := defaultStack(t)
	p := s.one(t, "AWS::Logs::SubscriptionFilter", "AuditLogPods")
	if p["LogGroupName"] != "/aws/eks/demo-cluster/cluster" || !strings.Contains(js(p["DestinationArn"]), "Provision") {
		t.Errorf("filter %v", js(p))
	}
	pattern := p["FilterPattern"].(string)
	for _, want := range []string{`$.objectRef.resource = "pods"`, `$.stage = "ResponseComplete"`, `$.verb = "create"`,
		`$.objectRef.subresource NOT EXISTS`, `$.verb = "patch"`, `$.verb = "update"`, `$.objectRef.subresource = "status"`} {
		if !strings.Contains(pattern, want) {
			t.Errorf("pattern %s lacks %s", pattern, want)
		}
	}
	s.template.HasResourceProperties(jsii.String("AWS::Lambda::Permission"), map[string]any{
		"Action":    "lambda:InvokeFunction",
		"Principal": "logs.amazonaws.com",
		"SourceArn": assertions.Match_ObjectLike(&map[string]any{}),
	})
}

// The controller policy, statement by statement.
func TestControllerPolicy(t *testing.T) {
	s := defaultStack(t)
	pol := s.one(t, "AWS::IAM::ManagedPolicy", "ControllerPolicy")
	st := statements(t, pol["PolicyDocument"])
	var sids []string
	for sid := range st {
		sids = append(sids, sid)
	}
	sort.Strings(sids)
	wantSids := ControllerStatementIDs()
	sort.Strings(wantSids)
	if !reflect.DeepEqual(sids, wantSids) {
		t.Fatalf("statements %v, want %v", sids, wantSids)
	}
	if len(strs(pol["Roles"])) != 3 || strings.Contains(js(pol["Roles"]), "Webhook") {
		t.Errorf("policy attached to %v", pol["Roles"])
	}
	cond := func(sid string) string { return js(st[sid]["Condition"]) }
	requestTags := `"aws:RequestTag/eks:eks-cluster-name":"demo-cluster","aws:RequestTag/kubernetes.io/cluster/demo-cluster":"owned"`
	nodepool := `"StringLike":{"aws:RequestTag/karpenter.sh/nodepool":"*"}`
	for _, sid := range []string{"AllowScopedEC2InstanceActionsWithTags", "AllowScopedResourceCreationTagging"} {
		if !strings.Contains(cond(sid), requestTags) || !strings.Contains(cond(sid), nodepool) {
			t.Errorf("%s: condition %s", sid, cond(sid))
		}
	}
	if got := strs(st["AllowScopedEC2InstanceActionsWithTags"]["Action"]); !reflect.DeepEqual(got, []string{"ec2:CreateFleet", "ec2:CreateLaunchTemplate", "ec2:RunInstances"}) {
		t.Errorf("create actions %v", got)
	}
	if st["AllowScopedResourceCreationTagging"]["Action"] != "ec2:CreateTags" ||
		!strings.Contains(cond("AllowScopedResourceCreationTagging"), `"ec2:CreateAction":["RunInstances","CreateFleet","CreateLaunchTemplate"]`) {
		t.Errorf("tagging: %v %s", st["AllowScopedResourceCreationTagging"]["Action"], cond("AllowScopedResourceCreationTagging"))
	}
	resourceTags := `{"StringEquals":{"aws:ResourceTag/kubernetes.io/cluster/demo-cluster":"owned"},"StringLike":{"aws:ResourceTag/karpenter.sh/nodepool":"*"}}`
	for _, sid := range []string{"AllowScopedDeletion", "AllowScopedEC2LaunchTemplateAccessActions"} {
		if cond(sid) != resourceTags {
			t.Errorf("%s: condition %s", sid, cond(sid))
		}
	}
	if got := strs(st["AllowScopedDeletion"]["Action"]); !reflect.DeepEqual(got, []string{"ec2:DeleteLaunchTemplate", "ec2:TerminateInstances"}) {
		t.Errorf("deletion actions %v", got)
	}
	pass := st["AllowPassingInstanceRole"]
	if pass["Action"] != "iam:PassRole" || cond("AllowPassingInstanceRole") != `{"StringEquals":{"iam:PassedToService":"ec2.amazonaws.com"}}` ||
		!strings.Contains(js(pass["Resource"]), `"NodeRole`) {
		t.Errorf("pass role %s", js(pass))
	}
	if ssm := js(st["AllowSSMReadActions"]["Resource"]); st["AllowSSMReadActions"]["Action"] != "ssm:GetParameters" ||
		!strings.Contains(ssm, `":ssm:"`) || !strings.Contains(ssm, `"::parameter/aws/service/*"`) {
		t.Errorf("ssm %s", js(st["AllowSSMReadActions"]))
	}
	if !strings.Contains(cond("AllowRegionalReadActions"), `"aws:RequestedRegion"`) {
		t.Errorf("describe not region-scoped: %s", cond("AllowRegionalReadActions"))
	}
	if got := js(st["AllowAPIServerEndpointDiscovery"]["Resource"]); !strings.Contains(got, ":cluster/demo-cluster") {
		t.Errorf("eks resource %s", got)
	}
	if got := js(st["AllowStateTableAccess"]["Resource"]); !strings.Contains(got, `"/index/*"`) || strings.Contains(got, `"*"`) {
		t.Errorf("table resources %s", got)
	}
	// Every statement is an Allow; wildcard resources only for read-only
	// actions; no action is a wildcard.
	for sid, stmt := range st {
		if stmt["Effect"] != "Allow" {
			t.Errorf("%s: effect %v", sid, stmt["Effect"])
		}
		for _, a := range strs(stmt["Action"]) {
			if strings.Contains(a, "*") {
				t.Errorf("%s: wildcard action %s", sid, a)
			}
			if js(stmt["Resource"]) == `"*"` && !strings.HasPrefix(a, "ec2:Describe") && a != "pricing:GetProducts" {
				t.Errorf("%s: %s on every resource", sid, a)
			}
		}
	}
}

// Each function's own role: its log group only, SQS only for interruption,
// the secret and the provision function only for the webhook.
func TestFunctionRoles(t *testing.T) {
	s := defaultStack(t)
	pols := s.resources("AWS::IAM::Policy")
	byRole := map[string]map[string]map[string]any{}
	for _, p := range pols {
		props := p["Properties"].(map[string]any)
		role := js(props["Roles"])
		for _, fn := range FunctionNames() {
			if strings.Contains(role, title(fn)+"Role") {
				byRole[fn] = statements(t, props["PolicyDocument"])
			}
		}
	}
	for _, fn := range FunctionNames() {
		st := byRole[fn]
		logs := st["WriteOwnLogs"]
		if logs == nil || !strings.Contains(js(logs["Resource"]), title(fn)+"Logs") {
			t.Errorf("%s: log statement %v", fn, logs)
		}
		var sqs bool
		visibility := map[string]bool{} // the queues whose messages' visibility the role may change
		for _, stmt := range st {
			for _, a := range strs(stmt["Action"]) {
				if strings.HasPrefix(a, "sqs:") {
					sqs = true
					res := js(stmt["Resource"])
					if !strings.Contains(res, "InterruptionQueue") && !strings.Contains(res, "RecheckQueue") {
						t.Errorf("%s: %s on %v", fn, a, stmt["Resource"])
					}
					if a == "sqs:ChangeMessageVisibility" {
						for _, q := range []string{"InterruptionQueue", "RecheckQueue"} {
							if strings.Contains(res, `"`+q) {
								visibility[q] = true
							}
						}
					}
				}
			}
		}
		if sqs != (fn == FnInterruption) {
			t.Errorf("%s: SQS access %v", fn, sqs)
		}
		if fn == FnInterruption && len(visibility) != 2 {
			t.Errorf("%s may change the visibility of messages of %v: want the interruption and the recheck queues (the heartbeat)", fn, visibility)
		}
	}
	wh := byRole[FnWebhook]
	if len(wh) != 4 {
		t.Errorf("webhook role has %d statements: %s", len(wh), js(wh))
	}
	if r := wh["ReadWebhookToken"]; r["Action"] != "secretsmanager:GetSecretValue" || !strings.Contains(js(r["Resource"]), `"Ref":"WebhookToken`) {
		t.Errorf("secret statement %s", js(r))
	}
	if r := wh["InvokeProvision"]; r["Action"] != "lambda:InvokeFunction" || js(r["Resource"]) != `{"Fn::GetAtt":["`+provisionID(t, s)+`","Arn"]}` {
		t.Errorf("invoke statement %s", js(r))
	}
	// The hint gate: PutItem on the table only, of this cluster's hint
	// partition, naming only the hint item's attributes (and
	// TestWebhookRoleWritesOnlyTheHintPartition: nothing else).
	if r := wh["RecordHint"]; r["Action"] != "dynamodb:PutItem" || !strings.Contains(js(r["Resource"]), `"State`) || strings.Contains(js(r["Resource"]), "index") ||
		js(r["Condition"]) != `{"ForAllValues:StringEquals":{"dynamodb:Attributes":["pk","sk","expiresAt","data"],"dynamodb:LeadingKeys":["demo-cluster#hints"]},"StringEqualsIfExists":{"dynamodb:ReturnValues":"NONE"}}` {
		t.Errorf("hint statement %s", js(r))
	}
	rot := byRole[FnRotation]
	if len(rot) != 2 {
		t.Errorf("rotation role has %d statements: %s", len(rot), js(rot))
	}
	if r := rot["RotateWebhookToken"]; js(strs(r["Action"])) != `["secretsmanager:DescribeSecret","secretsmanager:GetSecretValue","secretsmanager:PutSecretValue","secretsmanager:UpdateSecretVersionStage"]` ||
		!strings.Contains(js(r["Resource"]), `"Ref":"WebhookToken`) {
		t.Errorf("rotation statement %s", js(r))
	}
	for _, fn := range FunctionNames() {
		role := s.one(t, "AWS::IAM::Role", title(fn)+"Role")
		if role["ManagedPolicyArns"] != nil {
			t.Errorf("%s role has managed policies %v", fn, role["ManagedPolicyArns"])
		}
	}
}

func provisionID(t *testing.T, s *synthesized) string {
	t.Helper()
	for id := range s.resources("AWS::Lambda::Function") {
		if strings.HasPrefix(id, "Provision") {
			return id
		}
	}
	t.Fatal("no provision function")
	return ""
}

func TestNodeRoleAndAccessEntries(t *testing.T) {
	s := defaultStack(t)
	role := s.one(t, "AWS::IAM::Role", "NodeRole")
	if role["RoleName"] != "KarpenterNodeRole-demo-cluster" || !strings.Contains(js(role["AssumeRolePolicyDocument"]), `"Service":"ec2.amazonaws.com"`) {
		t.Errorf("node role %s", js(role))
	}
	for _, p := range NodeManagedPolicies() {
		if !strings.Contains(js(role["ManagedPolicyArns"]), ":iam::aws:policy/"+p) {
			t.Errorf("node role lacks %s", p)
		}
	}
	if ip := s.one(t, "AWS::IAM::InstanceProfile", "NodeInstanceProfile"); !strings.Contains(js(ip["Roles"]), "NodeRole") {
		t.Errorf("instance profile %v", ip)
	}
	node := s.one(t, "AWS::EKS::AccessEntry", "NodeAccessEntry")
	if node["Type"] != "EC2_LINUX" || node["ClusterName"] != "demo-cluster" {
		t.Errorf("node entry %v", node)
	}
	for _, fn := range []string{FnProvision, FnInterruption, FnConsolidation} {
		e := s.one(t, "AWS::EKS::AccessEntry", title(fn)+"AccessEntry")
		if e["Type"] != "STANDARD" || js(e["KubernetesGroups"]) != `["`+names.KubernetesGroup+`"]` ||
			e["Username"] != names.KubernetesUsernamePrefix+fn || !strings.Contains(js(e["PrincipalArn"]), title(fn)+"Role") {
			t.Errorf("%s entry %v", fn, e)
		}
	}
}

// The token rotates on a schedule through the rotation function, which
// only Secrets Manager, for this secret, may invoke.
func TestWebhookTokenRotation(t *testing.T) {
	s := defaultStack(t)
	rs := s.one(t, "AWS::SecretsManager::RotationSchedule", "WebhookTokenRotation")
	if !strings.Contains(js(rs["SecretId"]), `"Ref":"WebhookToken`) || !strings.Contains(js(rs["RotationLambdaARN"]), "Rotation") ||
		js(rs["RotationRules"]) != `{"ScheduleExpression":"rate(30 days)"}` || rs["RotateImmediatelyOnUpdate"] != false {
		t.Errorf("rotation schedule %s", js(rs))
	}
	perm := s.one(t, "AWS::Lambda::Permission", "RotationInvokedBySecretsManager")
	if perm["Principal"] != "secretsmanager.amazonaws.com" || !strings.Contains(js(perm["SourceArn"]), `"Ref":"WebhookToken`) ||
		perm["SourceAccount"] == nil || !strings.Contains(js(perm["FunctionName"]), "Rotation") {
		t.Errorf("permission %s", js(perm))
	}
	for id, r := range s.resources("AWS::SecretsManager::RotationSchedule") {
		if deps := js(r["DependsOn"]); !strings.Contains(deps, "RotationInvokedBySecretsManager") || !strings.Contains(deps, "RotationRole") {
			t.Errorf("%s depends on %s", id, deps)
		}
	}
}

func TestWebhookURLAndSecret(t *testing.T) {
	s := defaultStack(t)
	if u := s.one(t, "AWS::Lambda::Url", "Webhook"); u["AuthType"] != "NONE" || u["InvokeMode"] != "BUFFERED" {
		t.Errorf("url %v", u)
	}
	sec := s.one(t, "AWS::SecretsManager::Secret", "WebhookToken")
	gen := sec["GenerateSecretString"].(map[string]any)
	if gen["PasswordLength"] != float64(WebhookTokenLength) || gen["ExcludePunctuation"] != true || sec["SecretString"] != nil {
		t.Errorf("secret %v", sec)
	}
}

// No output may carry the token; the apply command fetches it at run time.
func TestOutputs(t *testing.T) {
	s := defaultStack(t)
	outs := s.json["Outputs"].(map[string]any)
	if js(outs["ClusterName"]) != `{"Description":"EKS cluster Nodewright manages (nodewright status and explain -stack read it with StateTableName)","Value":"demo-cluster"}` {
		t.Errorf("ClusterName output %s", js(outs["ClusterName"]))
	}
	for _, k := range []string{"StateTableName", "ClusterName", "InterruptionQueueUrl", "InterruptionDLQUrl", "NodeRoleArn", "NodeInstanceProfileName",
		"WebhookFunctionUrl", "WebhookSecretArn", "ConfigHash", "ApplyWebhookCommand", "ApplyRBACCommand"} {
		if outs[k] == nil {
			t.Errorf("no output %s", k)
		}
	}
	for k, v := range outs {
		if strings.Contains(js(v), "resolve:secretsmanager") {
			t.Errorf("output %s exposes the secret: %s", k, js(v))
		}
	}
	// The apply command puts no token on a command line: the CLI reads it
	// through the SDK and applies server-side.
	cmd := js(outs["ApplyWebhookCommand"])
	for _, want := range []string{"go run ./cmd/nodewright webhook apply -f " + ManifestDir + "/Nodewright-default/" + WebhookManifestFile,
		" -url ", `{"Fn::GetAtt":["WebhookFunctionUrl`, " -secret ", `{"Ref":"WebhookToken`, " -region "} {
		if !strings.Contains(cmd, want) {
			t.Errorf("apply command lacks %q: %s", want, cmd)
		}
	}
	for _, bad := range []string{"get-secret-value", "kubectl apply", "$("} {
		if strings.Contains(cmd, bad) {
			t.Errorf("apply command has %q: %s", bad, cmd)
		}
	}
}

func TestDashboard(t *testing.T) {
	s := defaultStack(t)
	d := s.one(t, "AWS::CloudWatch::Dashboard", "Dashboard")
	body := js(d["DashboardBody"])
	for _, def := range metrics.Definitions() {
		if !strings.Contains(body, def.Name) {
			t.Errorf("dashboard lacks %s", def.Name)
		}
	}
	for _, want := range []string{"SEARCH(", "NodePool,CapacityType", "Errors", "Duration", "Throttles", "ApproximateNumberOfMessagesVisible", metrics.Namespace} {
		if !strings.Contains(body, want) {
			t.Errorf("dashboard lacks %s", want)
		}
	}
}

func TestAlarms(t *testing.T) {
	s := defaultStack(t)
	alarms := map[string]map[string]any{}
	for _, a := range s.resources("AWS::CloudWatch::Alarm") {
		p := a["Properties"].(map[string]any)
		alarms[strings.TrimPrefix(p["AlarmName"].(string), "Nodewright-demo-cluster-")] = p
		if p["TreatMissingData"] != "notBreaching" || p["AlarmActions"] != nil {
			t.Errorf("alarm %v: missing data %v actions %v", p["AlarmName"], p["TreatMissingData"], p["AlarmActions"])
		}
	}
	want := []string{"InterruptionDLQNotEmpty", "LaunchFailures", "PendingPodsTooOld"}
	for _, fn := range FunctionNames() {
		want = append(want, title(fn)+"Errors", title(fn)+"Throttles")
	}
	for _, name := range want {
		if alarms[name] == nil {
			t.Errorf("no alarm %s (have %d)", name, len(alarms))
		}
	}
	if a := alarms["PendingPodsTooOld"]; a["MetricName"] != metrics.PendingPodOldestAge || a["Namespace"] != metrics.Namespace ||
		a["Threshold"] != float64(300) || a["ComparisonOperator"] != "GreaterThanThreshold" {
		t.Errorf("pending alarm %v", a)
	}
	if a := alarms["LaunchFailures"]; a["MetricName"] != metrics.LaunchFailures || a["Threshold"] != float64(5) || a["Period"] != float64(900) ||
		js(a["Dimensions"]) != `[{"Name":"ClusterName","Value":"demo-cluster"}]` {
		t.Errorf("launch failures alarm %v", a)
	}
	if a := alarms["InterruptionDLQNotEmpty"]; a["MetricName"] != "ApproximateNumberOfMessagesVisible" || a["Threshold"] != float64(1) {
		t.Errorf("dlq alarm %v", a)
	}
}

// nagFindings returns every AwsSolutions error and warning on the stack.
func nagFindings(s *synthesized) string {
	re := assertions.Match_StringLikeRegexp(jsii.String("AwsSolutions-.*"))
	return messages(s.annotations.FindError(jsii.String("*"), re)) + messages(s.annotations.FindWarning(jsii.String("*"), re))
}

func TestNagDefault(t *testing.T) {
	if f := nagFindings(defaultStack(t)); f != "" {
		t.Fatalf("cdk-nag findings:\n%s", f)
	}
}

// The suppressions are there, each with a reason, and cdk-nag recorded them
// (it writes suppressions into the template metadata).
func TestNagSuppressionsHaveReasons(t *testing.T) {
	s := defaultStack(t)
	var count int
	for id, r := range s.json["Resources"].(map[string]any) {
		md, _ := r.(map[string]any)["Metadata"].(map[string]any)
		nag, _ := md["cdk_nag"].(map[string]any)
		if nag == nil {
			continue
		}
		for _, sup := range nag["rules_to_suppress"].([]any) {
			m := sup.(map[string]any)
			count++
			if reason, _ := m["reason"].(string); len(reason) < 40 {
				t.Errorf("%s: suppression %v has no real reason", id, m["id"])
			}
		}
	}
	if count < 5 { // the secret needs none since it rotates
		t.Errorf("%d suppressions recorded", count)
	}
}

func TestConfigWarningsBecomeAnnotations(t *testing.T) {
	s := namedVariant(t, "warned")
	got := s.annotations.FindWarning(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String("is not a NodePool")))
	if len(*got) != 1 {
		t.Fatalf("%d warnings", len(*got))
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestControllerPolicyReachesAdoptedInstances: the nodes adopted from
// Karpenter are not tagged (package adoption), so the statement that
// terminates instances must match the tags Karpenter puts on its own:
// every condition on the resource's tags is met by them, none asks for
// Nodewright's managed-by tag.
func TestControllerPolicyReachesAdoptedInstances(t *testing.T) {
	s := defaultStack(t)
	st := statements(t, s.one(t, "AWS::IAM::ManagedPolicy", "ControllerPolicy")["PolicyDocument"])
	karpenters := map[string]string{ // as Karpenter v1 tags an instance of cluster demo-cluster
		"kubernetes.io/cluster/demo-cluster": "owned", "eks:eks-cluster-name": "demo-cluster",
		"karpenter.sh/nodepool": "default", "karpenter.sh/nodeclaim": "default-abcde", "karpenter.k8s.aws/ec2nodeclass": "default",
	}
	del := st["AllowScopedDeletion"]
	if !strings.Contains(js(del["Action"]), "ec2:TerminateInstances") {
		t.Fatalf("AllowScopedDeletion: actions %s", js(del["Action"]))
	}
	conds, _ := del["Condition"].(map[string]any)
	if len(conds) == 0 {
		t.Fatal("AllowScopedDeletion has no condition: the test would prove nothing")
	}
	for op, kv := range conds {
		for key, want := range kv.(map[string]any) {
			tag, ok := strings.CutPrefix(key, "aws:ResourceTag/")
			if !ok {
				t.Errorf("%s %s: not a resource tag condition", op, key)
				continue
			}
			got, has := karpenters[tag]
			switch {
			case op == "StringEquals" && (!has || got != want):
				t.Errorf("%s %s=%v: Karpenter's instance has %q", op, key, want, got)
			case op == "StringLike" && want == "*" && !has:
				t.Errorf("%s %s: Karpenter's instance lacks the tag", op, key)
			case op != "StringEquals" && !(op == "StringLike" && want == "*"):
				t.Errorf("condition %s %s=%v: not understood by this test", op, key, want)
			}
		}
	}
}
