package stack

import (
	"fmt"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/nodewright/nodewright/shared/names"
)

// Stack is the synthesized construct and what the app writes beside it.
type Stack struct {
	awscdk.Stack

	props     Props
	staged    stagedConfig
	table     awsdynamodb.Table
	queue     awssqs.Queue
	recheck   awssqs.Queue // the recheck queue (addQueue)
	dlq       awssqs.Queue
	secret    awssecretsmanager.Secret
	nodeRole  awsiam.IRole
	functions map[string]awslambda.Function
	roles     map[string]awsiam.Role
	url       awslambda.FunctionUrl

	instanceProfileName *string
	controllerPolicy    awsiam.ManagedPolicy
}

// New builds the stack. It fails, before creating anything, on invalid props
// or a configuration the stack cannot serve (an EC2NodeClass naming another
// node role).
func New(scope constructs.Construct, id string, props Props) (*Stack, error) {
	p, err := props.withDefaults()
	if err != nil {
		return nil, err
	}
	if err := checkNodeRoles(p.Config, p.NodeRoleName); err != nil {
		return nil, fmt.Errorf("configuration:\n%w", err)
	}
	staged, err := stageConfig(p.Config, p.StagingDir)
	if err != nil {
		return nil, err
	}
	sp := p.StackProps
	if sp.Description == nil {
		sp.Description = jsii.String("Nodewright: node autoscaling for EKS cluster " + p.ClusterName + " (github.com/nodewright/nodewright)")
	}
	s := &Stack{
		Stack:     awscdk.NewStack(scope, jsii.String(id), &sp),
		props:     p,
		staged:    staged,
		functions: map[string]awslambda.Function{},
		roles:     map[string]awsiam.Role{},
	}
	// Every taggable resource names its cluster; not the dashboard, whose
	// Tags property is newer than the CloudFormation specs linters ship.
	awscdk.Tags_Of(s.Stack).Add(jsii.String("nodewright:cluster"), jsii.String(p.ClusterName), &awscdk.TagProps{
		ExcludeResourceTypes: jsii.Strings("AWS::CloudWatch::Dashboard"),
	})
	for _, w := range p.ConfigWarnings {
		awscdk.Annotations_Of(s.Stack).AddWarningV2(jsii.String("nodewright:config"), jsii.String(w))
	}

	s.addState()
	s.addQueue()
	s.addNodeRole()
	s.addFunctions()
	s.addControllerPolicy()
	s.addWebhook()
	s.addTriggers()
	s.addAccessEntries()
	s.addObservability()
	s.addOutputs()
	s.addNagSuppressions()
	return s, nil
}

// ConfigHash is the SHA-256 of the configuration the functions receive.
func (s *Stack) ConfigHash() string { return s.staged.Hash }

// addState creates the DynamoDB state table.
//
// On-demand billing: the load is a few requests a minute when idle and
// bursts during scale-ups, which provisioned capacity would either waste or
// throttle. Point-in-time recovery: NodeClaim and disruption records are what
// lets a later invocation resume a half-done action. Encryption with the
// AWS-managed key (aws/dynamodb): key use is visible in CloudTrail, there is
// no monthly key fee and no key policy to get wrong; a customer key would add
// $1/month and nothing the table's IAM scoping does not already give. The
// TTL attribute lets DynamoDB drop expired records (offering-unavailable
// marks, leases), lazily: readers check the expiry themselves. RETAIN: a
// `cdk destroy` must not lose the record of instances still running.
func (s *Stack) addState() {
	str := awsdynamodb.AttributeType_STRING
	s.table = awsdynamodb.NewTable(s.Stack, jsii.String("State"), &awsdynamodb.TableProps{
		PartitionKey:        &awsdynamodb.Attribute{Name: jsii.String(names.PartitionKey), Type: str},
		SortKey:             &awsdynamodb.Attribute{Name: jsii.String(names.SortKey), Type: str},
		BillingMode:         awsdynamodb.BillingMode_PAY_PER_REQUEST,
		Encryption:          awsdynamodb.TableEncryption_AWS_MANAGED,
		TimeToLiveAttribute: jsii.String(names.TTLAttribute),
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		DeletionProtection: jsii.Bool(true),
		RemovalPolicy:      awscdk.RemovalPolicy_RETAIN,
	})
	s.table.AddGlobalSecondaryIndex(&awsdynamodb.GlobalSecondaryIndexProps{
		IndexName:      jsii.String(names.IndexByInstanceID),
		PartitionKey:   &awsdynamodb.Attribute{Name: jsii.String(names.InstanceIDAttribute), Type: str},
		ProjectionType: awsdynamodb.ProjectionType_ALL,
	})
	s.table.AddGlobalSecondaryIndex(&awsdynamodb.GlobalSecondaryIndexProps{
		IndexName:      jsii.String(names.IndexByNodePool),
		PartitionKey:   &awsdynamodb.Attribute{Name: jsii.String(names.NodePoolAttribute), Type: str},
		SortKey:        &awsdynamodb.Attribute{Name: jsii.String(names.IndexByNodePoolSortKey), Type: str},
		ProjectionType: awsdynamodb.ProjectionType_ALL,
	})
}

// clusterTag is the ownership tag key of this cluster.
func (s *Stack) clusterTag() string { return names.TagKeyCluster(s.props.ClusterName) }

// arn formats an ARN in this stack's partition and region.
func (s *Stack) arn(service, account, resource string) string {
	return fmt.Sprintf("arn:%s:%s:%s:%s:%s", *awscdk.Aws_PARTITION(), service, *awscdk.Aws_REGION(), account, resource)
}

func title(s string) string { return strings.ToUpper(s[:1]) + s[1:] }
