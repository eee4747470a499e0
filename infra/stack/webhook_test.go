package stack

import (
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/nodewright/nodewright/infra/sdkcalls"
	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/shared/webhook"
)

// dynamoDBWrites are the DynamoDB actions that create, change or delete
// items or tables: a statement granting any of them (or a pattern matching
// one) is a write grant on DynamoDB.
var dynamoDBWrites = []string{
	"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:BatchWriteItem",
	"dynamodb:TransactWriteItems", "dynamodb:PartiQLInsert", "dynamodb:PartiQLUpdate", "dynamodb:PartiQLDelete",
	"dynamodb:CreateTable", "dynamodb:UpdateTable", "dynamodb:DeleteTable", "dynamodb:RestoreTableFromBackup",
	"dynamodb:RestoreTableToPointInTime", "dynamodb:ImportTable", "dynamodb:UpdateTimeToLive",
}

// leadingKeysAllowed says whether the statement lets an item request whose
// partition key is pk through its conditions: a statement without a
// dynamodb:LeadingKeys condition lets every partition through.
func leadingKeysAllowed(st map[string]any, pk string) bool {
	cond, _ := st["Condition"].(map[string]any)
	for op, v := range cond {
		keys, ok := v.(map[string]any)["dynamodb:LeadingKeys"]
		if !ok {
			continue
		}
		if op != "ForAllValues:StringEquals" {
			return true // an operator this check does not model: assume it lets pk through
		}
		if !slices.Contains(strs(keys), pk) {
			return false
		}
	}
	return true
}

// writesItem lists the grants of allows that let a write of an item of
// partition pk through.
func writesItem(allows []map[string]any, pk string) []string {
	var by []string
	for _, st := range allows {
		for _, pattern := range strs(st["Action"]) {
			for _, action := range dynamoDBWrites {
				if sdkcalls.Allows(pattern, action) && leadingKeysAllowed(st, pk) {
					by = append(by, fmt.Sprintf("%s by %s", action, js(st)))
				}
			}
		}
	}
	sort.Strings(by)
	return by
}

// The webhook is the one function reachable from outside: its role may
// write the hint item's partition and nothing else. Every DynamoDB write
// it is granted is conditioned on dynamodb:LeadingKeys being exactly the
// cluster's hint partition (so the cluster partition's NodeClaim records,
// leases and actions are out of its reach), names only the hint item's
// attributes and asks nothing back; its other grants are its own log
// group, its token and invoking provision, none of which writes state.
func TestWebhookRoleWritesOnlyTheHintPartition(t *testing.T) {
	s := defaultStack(t)
	allows, managed := roleStatements(t, s, functionRoleID(t, s, FnWebhook))
	if len(managed) > 0 {
		t.Fatalf("webhook role has managed policies %v", managed)
	}
	const hints = "demo-cluster#hints"
	if webhook.HintPartition("demo-cluster") != hints || state.HintsPartition("demo-cluster") != hints {
		t.Fatalf("webhook.HintPartition %q, state.HintsPartition %q, want %q", webhook.HintPartition("demo-cluster"), state.HintsPartition("demo-cluster"), hints)
	}
	// A forged NodeClaim record, lease or action in the cluster's
	// partition, or any item of another partition, is out of reach.
	for _, pk := range []string{"demo-cluster", state.DecisionsPartition("demo-cluster"), "other-cluster", "other-cluster#hints"} {
		if by := writesItem(allows, pk); len(by) > 0 {
			t.Errorf("the webhook role may write items of partition %q:\n  %s", pk, strings.Join(by, "\n  "))
		}
	}
	if by := writesItem(allows, hints); len(by) == 0 {
		t.Errorf("the webhook role may not write its hint partition %q", hints)
	}
	// Every statement, action by action: nothing but the four known grants.
	for _, st := range allows {
		sid, _ := st["Sid"].(string)
		acts := strs(st["Action"])
		res := js(st["Resource"])
		switch {
		case sid == "WriteOwnLogs" && reflect.DeepEqual(acts, []string{"logs:CreateLogStream", "logs:PutLogEvents"}) && strings.Contains(res, "WebhookLogs") && st["Condition"] == nil:
		case sid == "ReadWebhookToken" && reflect.DeepEqual(acts, []string{"secretsmanager:GetSecretValue"}) && strings.Contains(res, `"Ref":"WebhookToken`):
		case sid == "InvokeProvision" && reflect.DeepEqual(acts, []string{"lambda:InvokeFunction"}) && res == `{"Fn::GetAtt":["`+provisionID(t, s)+`","Arn"]}`:
		case sid == "RecordHint" && reflect.DeepEqual(acts, []string{"dynamodb:PutItem"}) && strings.Contains(res, `"State`) && !strings.Contains(res, "index"):
			want := map[string]any{
				"ForAllValues:StringEquals": map[string]any{
					"dynamodb:LeadingKeys": []any{hints},
					"dynamodb:Attributes":  toAny(webhook.HintAttributes()),
				},
				"StringEqualsIfExists": map[string]any{"dynamodb:ReturnValues": "NONE"},
			}
			if !reflect.DeepEqual(st["Condition"], want) {
				t.Errorf("hint statement's condition %s, want %s", js(st["Condition"]), js(want))
			}
		default:
			t.Errorf("the webhook role has a grant beyond its logs, token, provision and hint partition: %s", js(st))
		}
	}
}

func toAny(list []string) []any {
	out := make([]any, len(list))
	for i, s := range list {
		out[i] = s
	}
	return out
}

// The check itself: the grant before the hint had its own partition (the
// cluster's partition) lets a forged NodeClaim record through; a grant
// without the condition, or by a wildcard, lets every partition through;
// a read does not count.
func TestWritesItemSeesEveryWrite(t *testing.T) {
	cond := func(pk string) map[string]any {
		return map[string]any{"ForAllValues:StringEquals": map[string]any{"dynamodb:LeadingKeys": []any{pk}}}
	}
	for _, tc := range []struct {
		name string
		st   map[string]any
		pk   string
		want bool
	}{
		{"the old grant, the cluster's partition", map[string]any{"Action": "dynamodb:PutItem", "Condition": cond("demo-cluster")}, "demo-cluster", true},
		{"the hint partition's grant, the cluster's partition", map[string]any{"Action": "dynamodb:PutItem", "Condition": cond("demo-cluster#hints")}, "demo-cluster", false},
		{"no condition", map[string]any{"Action": []any{"dynamodb:UpdateItem"}}, "demo-cluster", true},
		{"a wildcard", map[string]any{"Action": "dynamodb:*", "Condition": map[string]any{"StringEquals": map[string]any{"aws:RequestedRegion": "us-east-1"}}}, "x", true},
		{"another operator", map[string]any{"Action": "dynamodb:DeleteItem", "Condition": map[string]any{"ForAnyValue:StringLike": map[string]any{"dynamodb:LeadingKeys": "demo-*"}}}, "x", true},
		{"a read", map[string]any{"Action": "dynamodb:GetItem"}, "demo-cluster", false},
	} {
		if got := len(writesItem([]map[string]any{tc.st}, tc.pk)) > 0; got != tc.want {
			t.Errorf("%s: writes %v, want %v", tc.name, got, tc.want)
		}
	}
}
