package sdkcalls

import (
	"path"
	"regexp"
	"slices"
	"strings"
)

// iamPrefixes are the service packages whose IAM prefix is not the
// package's name. Most services use their package name.
var iamPrefixes = map[string]string{
	"cloudwatchlogs":         "logs",
	"eventbridge":            "events",
	"sfn":                    "states",
	"elasticloadbalancingv2": "elasticloadbalancing",
	"configservice":          "config",
}

// iamExceptions are the operations whose IAM actions are not
// "<prefix>:<Operation>", from the services' authorization references:
// Lambda authorizes Invoke as InvokeFunction; DynamoDB authorizes a
// transaction by the actions of the items it holds (a write transaction may
// hold puts, updates, deletes and condition checks: all are required, since
// the scan cannot tell which); SQS authorizes a batch by its single-message
// action; STS GetCallerIdentity needs no permission.
var iamExceptions = map[Operation][]string{
	{"lambda", "Invoke"}:                    {"lambda:InvokeFunction"},
	{"lambda", "InvokeWithResponseStream"}:  {"lambda:InvokeFunction"},
	{"lambda", "InvokeAsync"}:               {"lambda:InvokeFunction"},
	{"dynamodb", "TransactWriteItems"}:      {"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:ConditionCheckItem"},
	{"dynamodb", "TransactGetItems"}:        {"dynamodb:GetItem"},
	{"sqs", "SendMessageBatch"}:             {"sqs:SendMessage"},
	{"sqs", "DeleteMessageBatch"}:           {"sqs:DeleteMessage"},
	{"sqs", "ChangeMessageVisibilityBatch"}: {"sqs:ChangeMessageVisibility"},
	{"sts", "GetCallerIdentity"}:            {},
}

// Actions returns the IAM actions op needs ("ssm:GetParameters").
func (op Operation) Actions() []string {
	if a, ok := iamExceptions[op]; ok {
		return slices.Clone(a)
	}
	prefix := op.Service
	if p, ok := iamPrefixes[prefix]; ok {
		prefix = p
	}
	return []string{prefix + ":" + op.Name}
}

// Allows reports whether an IAM policy's action pattern (which may hold the
// wildcards * and ?) matches action. IAM compares actions case-insensitively.
func Allows(pattern, action string) bool {
	ok, err := path.Match(strings.ToLower(pattern), strings.ToLower(action))
	return err == nil && ok
}

// MatchesResource reports whether an IAM policy's resource pattern (which
// may hold the wildcards * and ?, matching any characters including "/")
// matches the ARN arn. IAM compares resource ARNs case-sensitively.
func MatchesResource(pattern, arn string) bool {
	var b strings.Builder
	b.WriteString("^")
	for _, r := range pattern {
		switch r {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString("$")
	ok, err := regexp.MatchString(b.String(), arn)
	return err == nil && ok
}
