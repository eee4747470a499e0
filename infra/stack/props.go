// Package stack is Nodewright's CloudFormation stack as a CDK construct: the
// functions, their triggers, the state table, the interruption queue, IAM,
// EKS access entries, the webhook and its secret, the dashboard and alarms.
// The CDK app in infra/ builds it from context values; tests build it from
// Props and assert on the synthesized template.
package stack

import (
	"errors"
	"fmt"
	"regexp"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/provision"
)

// Function names: the directories under functions/ and the construct IDs.
const (
	FnProvision     = "provision"
	FnInterruption  = "interruption"
	FnConsolidation = "consolidation"
	FnWebhook       = "webhook"
	FnRotation      = "rotation"
)

// FunctionNames lists every function, in a fixed order.
func FunctionNames() []string {
	return []string{FnProvision, FnInterruption, FnConsolidation, FnWebhook, FnRotation}
}

// Props is what a user sets. Only ClusterName, Config and FunctionAssets are
// required; every other field has a default chosen for a production cluster.
type Props struct {
	awscdk.StackProps

	// ClusterName is the EKS cluster Nodewright manages. It must be a literal
	// (it appears in IAM condition keys), not a CloudFormation token.
	ClusterName string

	// Config is the validated Karpenter configuration (see LoadConfig). Its
	// NodePools and EC2NodeClasses reach the functions through a Lambda layer.
	Config *apis.Config
	// ConfigWarnings are LoadConfig's warnings; each becomes a CDK warning
	// on the stack, so `cdk synth` shows it (and `--strict` fails on it).
	ConfigWarnings []string

	// FunctionAssets maps each function name to a directory holding its
	// linux/arm64 `bootstrap` (see BuildFunctions).
	FunctionAssets map[string]string

	// StagingDir is where the configuration layer is written before CDK
	// copies it into the cloud assembly. Required.
	StagingDir string

	// NodeRoleName is the IAM role of launched nodes; every EC2NodeClass's
	// spec.role must name it. Default "KarpenterNodeRole-<cluster>", the name
	// Karpenter's getting-started guide uses, so existing EC2NodeClasses work
	// unchanged.
	NodeRoleName string
	// ImportNodeRole says the node role exists already (for example created
	// by Karpenter's CloudFormation template, with its EKS access entry): the
	// stack then neither creates it nor its access entry.
	ImportNodeRole bool

	// SkipAccessEntries leaves out the EKS access entries (for clusters that
	// still use the aws-auth ConfigMap only; map the roles there instead).
	SkipAccessEntries bool
	// SkipAuditLogTrigger leaves out the subscription to the cluster's audit
	// log group (for clusters without control-plane audit logging).
	SkipAuditLogTrigger bool
	// SkipReservedConcurrency leaves every function's concurrency
	// unreserved, for accounts whose Lambda concurrency quota is too small to
	// reserve any (new accounts start at 10).
	SkipReservedConcurrency bool

	// SSMParameters are SSM parameters (names, or ARNs of parameters shared
	// from another account) the functions may read beyond AWS's public ones
	// and those the configuration's EC2NodeClasses name in
	// amiSelectorTerms[].ssmParameter: list the parameters of EC2NodeClasses
	// applied to the cluster later (`kubectl apply`), which the stack cannot
	// see at synth. IAM denies any other.
	SSMParameters []string

	// Network, when set, runs the three controller functions in these
	// subnets with these security groups: needed when the cluster's API
	// endpoint is private. The subnets need a route to the AWS APIs (a NAT
	// gateway or VPC endpoints for EC2, DynamoDB, SQS, SSM, pricing, STS and
	// EKS) and the cluster's security group must admit the functions' on 443.
	// The webhook stays outside: it calls only public AWS endpoints.
	Network *Network

	// RegistrationTimeout: a launched NodeClaim whose Node has not
	// registered this long after launch is terminated and removed, and a
	// consolidation waiting for it gives up. Default 15 minutes (Karpenter's);
	// 2 minutes to 24 hours.
	RegistrationTimeout time.Duration

	// SweepSchedule is the provision sweep's EventBridge schedule
	// expression. Default "rate(1 minute)".
	SweepSchedule string
	// ConsolidationSchedule is consolidation's schedule. Default
	// "rate(5 minutes)".
	ConsolidationSchedule string

	// LogRetention applies to every function's log group. Default one month.
	LogRetention awslogs.RetentionDays
	// LogLevel is the functions' slog level. Default "info".
	LogLevel string

	// AlarmEmail, when set, creates an encrypted SNS topic with this email
	// subscription and sends every alarm to it.
	AlarmEmail string
	// AlarmTopicArn, when set, sends every alarm to this existing topic.
	AlarmTopicArn string
	// PendingPodAgeThreshold alarms when the oldest pending pod is older.
	// Default 5 minutes.
	PendingPodAgeThreshold time.Duration
	// LaunchFailureThreshold alarms when this many launches fail within 15
	// minutes. Default 5.
	LaunchFailureThreshold float64
	// FunctionErrorThreshold alarms when a function fails this many times
	// within 5 minutes. Default 1.
	FunctionErrorThreshold float64

	// WebhookTimeoutSeconds is the API server's timeout for the webhook
	// (1-30). Default 2: failurePolicy Ignore means a slow call only delays a
	// pod status write by this much.
	WebhookTimeoutSeconds int
	// WebhookTokenRotationDays is how often Secrets Manager rotates the
	// webhook's token (1-1000). Default 30. The webhook accepts the current
	// and the previous token, so the cluster's registration keeps working
	// for this long after a rotation: run `nodewright webhook apply` within
	// it.
	WebhookTokenRotationDays int
}

// Network is where the controller functions run when the cluster's
// endpoint is private.
type Network struct {
	SubnetIDs        []string
	SecurityGroupIDs []string
}

var (
	subnetIDPattern        = regexp.MustCompile(`^subnet-[0-9a-f]{8,17}$`)
	securityGroupIDPattern = regexp.MustCompile(`^sg-[0-9a-f]{8,17}$`)
)

func (n *Network) validate() error {
	if len(n.SubnetIDs) == 0 || len(n.SecurityGroupIDs) == 0 {
		return errors.New("network: set both subnet IDs and security group IDs")
	}
	for _, id := range n.SubnetIDs {
		if !subnetIDPattern.MatchString(id) {
			return fmt.Errorf("network: %q is not a subnet ID", id)
		}
	}
	for _, id := range n.SecurityGroupIDs {
		if !securityGroupIDPattern.MatchString(id) {
			return fmt.Errorf("network: %q is not a security group ID", id)
		}
	}
	return nil
}

// ssmParameterPattern is a parameter name (as SSM allows them) or a
// parameter ARN.
var ssmParameterPattern = regexp.MustCompile(`^(/?[A-Za-z0-9_.\-]+(/[A-Za-z0-9_.\-]+)*|arn:aws[a-z-]*:ssm:[a-z0-9-]+:[0-9]{12}:parameter/[A-Za-z0-9_.\-/]+)$`)

var clusterNamePattern = regexp.MustCompile(`^[0-9A-Za-z][A-Za-z0-9\-_]{0,99}$`)

// withDefaults returns p with defaults filled in, or an error naming the
// first invalid field.
func (p Props) withDefaults() (Props, error) {
	if !clusterNamePattern.MatchString(p.ClusterName) {
		return p, fmt.Errorf("cluster name %q: must be 1-100 letters, digits, - or _, starting with a letter or digit (set -c nodewright:cluster=NAME)", p.ClusterName)
	}
	if p.Config == nil {
		return p, errors.New("no configuration: set -c nodewright:config=DIR to a directory of NodePool and EC2NodeClass YAML")
	}
	for _, fn := range FunctionNames() {
		if p.FunctionAssets[fn] == "" {
			return p, fmt.Errorf("no asset directory for function %s", fn)
		}
	}
	if p.StagingDir == "" {
		return p, errors.New("no staging directory")
	}
	if p.NodeRoleName == "" {
		p.NodeRoleName = "KarpenterNodeRole-" + p.ClusterName
	}
	if p.RegistrationTimeout == 0 {
		p.RegistrationTimeout = provision.DefaultRegistrationTimeout
	}
	if _, err := provision.ParseRegistrationTimeout(p.RegistrationTimeout.String()); err != nil {
		return p, err
	}
	if p.SweepSchedule == "" {
		p.SweepSchedule = "rate(1 minute)"
	}
	if p.ConsolidationSchedule == "" {
		p.ConsolidationSchedule = "rate(5 minutes)"
	}
	if p.LogRetention == "" {
		p.LogRetention = awslogs.RetentionDays_ONE_MONTH
	}
	if p.LogLevel == "" {
		p.LogLevel = "info"
	}
	if p.PendingPodAgeThreshold == 0 {
		p.PendingPodAgeThreshold = 5 * time.Minute
	}
	if p.PendingPodAgeThreshold < time.Minute {
		return p, fmt.Errorf("pending pod age threshold %s: must be at least 1m", p.PendingPodAgeThreshold)
	}
	if p.LaunchFailureThreshold == 0 {
		p.LaunchFailureThreshold = 5
	}
	if p.FunctionErrorThreshold == 0 {
		p.FunctionErrorThreshold = 1
	}
	if p.LaunchFailureThreshold < 0 || p.FunctionErrorThreshold < 0 {
		return p, errors.New("alarm thresholds must be positive")
	}
	if p.WebhookTimeoutSeconds == 0 {
		p.WebhookTimeoutSeconds = 2
	}
	if p.WebhookTimeoutSeconds < 1 || p.WebhookTimeoutSeconds > 30 {
		return p, fmt.Errorf("webhook timeout %ds: the API server allows 1-30", p.WebhookTimeoutSeconds)
	}
	if p.WebhookTokenRotationDays == 0 {
		p.WebhookTokenRotationDays = 30
	}
	if p.WebhookTokenRotationDays < 1 || p.WebhookTokenRotationDays > 1000 {
		return p, fmt.Errorf("webhook token rotation every %d days: Secrets Manager allows 1-1000", p.WebhookTokenRotationDays)
	}
	for _, name := range p.SSMParameters {
		if !ssmParameterPattern.MatchString(name) {
			return p, fmt.Errorf("SSM parameter %q: want a parameter name (/a/b or a-b: letters, digits, _ . - /) or a parameter ARN", name)
		}
	}
	if p.Network != nil {
		if err := p.Network.validate(); err != nil {
			return p, err
		}
	}
	if p.AlarmEmail != "" && p.AlarmTopicArn != "" {
		return p, errors.New("set at most one of alarm email and alarm topic ARN")
	}
	return p, nil
}
