package stack

import (
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/jsii-runtime-go"

	"github.com/nodewright/nodewright/shared/metrics"
	"github.com/nodewright/nodewright/shared/names"
)

// FunctionSettings are one function's sizing, explained where they are set.
type FunctionSettings struct {
	MemoryMB int
	Timeout  time.Duration
	// Reserved is the reserved concurrency (0: none).
	Reserved int
	Purpose  string
}

// interruptionTimeout is also the basis of the queue's visibility timeout
// (interruptionQueueVisibility).
const interruptionTimeout = 5 * time.Minute

// Settings returns every function's settings. Memory comes from
// MemoryTable (memory.go): each function's measured peak at 5,000 nodes and
// 150,000 pods with headroom; the rest is explained here.
//
//   - provision: the solve is CPU-bound and Lambda's CPU grows with memory
//     (1,769 MB is one full vCPU; the memory the cluster read needs gives
//     more). 5 minutes covers batching
//     (10 s at most), the solve, CreateFleet and the state writes with a wide
//     margin. Reserved concurrency 2: one invocation holds the cluster's
//     DynamoDB lease (single flight per cluster) and one more may wait on it
//     to mark more work pending; a storm of webhook or audit-log triggers
//     then queues in Lambda's async queue (and ages out after a minute)
//     instead of fanning out into hundreds of pod listings against the API
//     server.
//   - interruption: I/O-bound (cordon, evict, terminate), but it reads the
//     cluster's view like provision. 5 minutes
//     is more than a spot warning's 2 minutes plus a drain blocked by a PDB
//     (client-go waits about 100 s per eviction retried on 429); longer
//     drains continue from DynamoDB state in the next invocation. Reserved 5
//     (and the event source's maximum concurrency 5) lets a burst of spot
//     reclaims be handled in parallel without starving the other functions.
//   - consolidation: reads and simulates like provision; 15 minutes, the
//     Lambda maximum, since evaluating every node of a large cluster takes a
//     while; multi-step actions resume from DynamoDB. Reserved 1: decisions
//     must not race one another.
//   - webhook: parses one AdmissionReview and maybe sends one async invoke
//     (256 MB: a faster cold start than 128 MB, since CPU scales with
//     memory), 5 s timeout (the API server gives up after 2 s and ignores
//     the call), reserved 10 so it can never eat the account's concurrency.
//   - rotation: Secrets Manager calls it four times per rotation of the
//     webhook's token (once a month by default): 30 s, no reserved
//     concurrency.
func Settings() map[string]FunctionSettings {
	return map[string]FunctionSettings{
		FnProvision:     {memoryMB(FnProvision), 5 * time.Minute, 2, "pending pods to EC2 CreateFleet"},
		FnInterruption:  {memoryMB(FnInterruption), interruptionTimeout, 5, "spot interruptions, rebalance, scheduled changes"},
		FnConsolidation: {memoryMB(FnConsolidation), 15 * time.Minute, 1, "removes or replaces underused, expired and drifted nodes"},
		FnWebhook:       {memoryMB(FnWebhook), 5 * time.Second, 10, "pending-pod webhook behind a Function URL"},
		FnRotation:      {memoryMB(FnRotation), 30 * time.Second, 0, "rotates the webhook's token in Secrets Manager"},
	}
}

// esmConcurrency is the SQS event source's maximum concurrency: equal to
// the interruption function's reserved concurrency, so the poller does not
// throttle itself (2 is the smallest value SQS accepts).
func (s *Stack) esmConcurrency() *float64 {
	return jsii.Number(float64(Settings()[FnInterruption].Reserved))
}

// addFunctions creates the three controller functions with their own roles
// and log groups; the webhook is added by addWebhook.
func (s *Stack) addFunctions() {
	layer := awslambda.NewLayerVersion(s.Stack, jsii.String("ConfigLayer"), &awslambda.LayerVersionProps{
		Description:             jsii.String("Nodewright configuration (validated NodePools and EC2NodeClasses), sha256 " + s.staged.Hash),
		Code:                    awslambda.Code_FromAsset(jsii.String(s.staged.LayerDir), nil),
		CompatibleArchitectures: &[]awslambda.Architecture{awslambda.Architecture_ARM_64()},
		CompatibleRuntimes:      &[]awslambda.Runtime{awslambda.Runtime_PROVIDED_AL2023()},
	})
	for _, fn := range []string{FnProvision, FnInterruption, FnConsolidation} {
		env := map[string]*string{
			names.EnvClusterName:         jsii.String(s.props.ClusterName),
			names.EnvTableName:           s.table.TableName(),
			names.EnvConfigDir:           jsii.String(ConfigLayerPath),
			names.EnvConfigHash:          jsii.String(s.staged.Hash),
			names.EnvNodeRoleName:        jsii.String(s.props.NodeRoleName),
			names.EnvInstanceProfileName: s.instanceProfileName,
			names.EnvMetricsNamespace:    jsii.String(metrics.Namespace),
			names.EnvLogLevel:            jsii.String(s.props.LogLevel),
			names.EnvRegistrationTimeout: jsii.String(s.props.RegistrationTimeout.String()),
		}
		if fn == FnInterruption {
			env[names.EnvQueueURL] = s.queue.QueueUrl()
			env[names.EnvRecheckQueueURL] = s.recheck.QueueUrl()
			env[names.EnvRecheckQueueARN] = s.recheck.QueueArn()
		}
		f := s.newFunction(fn, env, []awslambda.ILayerVersion{layer})
		if s.props.Network != nil {
			s.attachNetwork(fn, f)
		}
	}
	// Provision and consolidation are invoked asynchronously (schedules, the
	// audit log subscription, the webhook). A failed hint is not worth a
	// retry: the next sweep comes within a minute.
	for _, fn := range []string{FnProvision, FnConsolidation} {
		s.functions[fn].ConfigureAsyncInvoke(&awslambda.EventInvokeConfigOptions{
			RetryAttempts: jsii.Number(0),
			MaxEventAge:   awscdk.Duration_Minutes(jsii.Number(1)),
		})
	}
}

// newFunction creates one function with its role and log group. The role
// starts empty: CDK's default AWSLambdaBasicExecutionRole would let it write
// to any log group, so it gets write access to its own group only.
func (s *Stack) newFunction(fn string, env map[string]*string, layers []awslambda.ILayerVersion) awslambda.Function {
	set := Settings()[fn]
	env[envGoMemLimit] = jsii.String(GoMemLimit(set.MemoryMB))
	logs := awslogs.NewLogGroup(s.Stack, jsii.String(title(fn)+"Logs"), &awslogs.LogGroupProps{
		Retention:     s.props.LogRetention,
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	role := awsiam.NewRole(s.Stack, jsii.String(title(fn)+"Role"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: jsii.String("Nodewright " + fn + " function (" + s.props.ClusterName + ")"),
	})
	role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("WriteOwnLogs"),
		Actions:   jsii.Strings("logs:CreateLogStream", "logs:PutLogEvents"),
		Resources: &[]*string{logs.LogGroupArn()},
	}))
	var reserved *float64
	if !s.props.SkipReservedConcurrency && set.Reserved > 0 {
		reserved = jsii.Number(float64(set.Reserved))
	}
	f := awslambda.NewFunction(s.Stack, jsii.String(title(fn)), &awslambda.FunctionProps{
		Description:                  jsii.String("Nodewright " + fn + ": " + set.Purpose),
		Runtime:                      awslambda.Runtime_PROVIDED_AL2023(),
		Architecture:                 awslambda.Architecture_ARM_64(),
		Handler:                      jsii.String("bootstrap"),
		Code:                         awslambda.Code_FromAsset(jsii.String(s.props.FunctionAssets[fn]), nil),
		MemorySize:                   jsii.Number(float64(set.MemoryMB)),
		Timeout:                      awscdk.Duration_Seconds(jsii.Number(set.Timeout.Seconds())),
		ReservedConcurrentExecutions: reserved,
		Environment:                  &env,
		Layers:                       &layers,
		Role:                         role,
		LogGroup:                     logs,
		LoggingFormat:                awslambda.LoggingFormat_JSON,
		RecursiveLoop:                awslambda.RecursiveLoop_TERMINATE,
	})
	s.functions[fn], s.roles[fn] = f, role
	return f
}

// NetworkInterfaceActions are what Lambda needs, through the function's role,
// to attach a function to a VPC (the content of AWSLambdaVPCAccessExecutionRole,
// without its log permissions).
func NetworkInterfaceActions() []string {
	return []string{"ec2:CreateNetworkInterface", "ec2:DescribeNetworkInterfaces", "ec2:DescribeSubnets",
		"ec2:DeleteNetworkInterface", "ec2:AssignPrivateIpAddresses", "ec2:UnassignPrivateIpAddresses"}
}

// attachNetwork puts a function in the configured subnets. It sets the
// template's VpcConfig directly: the subnets and groups are given by ID, so
// no VPC lookup (which needs AWS credentials at synth) is involved. The
// function already depends on its role's policy, so the permission exists
// before Lambda creates the network interfaces.
func (s *Stack) attachNetwork(fn string, f awslambda.Function) {
	s.roles[fn].AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:       jsii.String("ManageVpcNetworkInterfaces"),
		Actions:   jsii.Strings(NetworkInterfaceActions()...),
		Resources: jsii.Strings("*"),
	}))
	cfn := f.Node().DefaultChild().(awslambda.CfnFunction)
	cfn.SetVpcConfig(&awslambda.CfnFunction_VpcConfigProperty{
		SubnetIds:        jsii.Strings(s.props.Network.SubnetIDs...),
		SecurityGroupIds: jsii.Strings(s.props.Network.SecurityGroupIDs...),
	})
}
