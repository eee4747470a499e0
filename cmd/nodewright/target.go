package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/cloudformation"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/nodewright/nodewright/shared/state"
)

// Stack outputs `-stack` reads (infra/stack writes them).
const (
	outputTable   = "StateTableName"
	outputCluster = "ClusterName"
)

// targetFlags say where a cluster's state is: the state table and the
// cluster's partition in it, given directly or read from the stack's
// outputs, in an AWS region or behind an endpoint (the local cloud).
type targetFlags struct {
	region, table, cluster, stack, endpoint, profile string
	timeout                                          time.Duration
}

const targetHelp = `
Where the state is: -table and -cluster name the state table and the
cluster; -stack NAME reads both from the CloudFormation stack's outputs
(StateTableName, ClusterName) instead. AWS credentials and the region come
from the usual AWS configuration (environment, shared files, -profile);
-region overrides. -endpoint-url (or AWS_ENDPOINT_URL) sends every AWS call
to another endpoint, such as the local cloud's.
`

func (tf *targetFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&tf.region, "region", "", "AWS `REGION` (default: the AWS configuration's)")
	fs.StringVar(&tf.table, "table", "", "the state `TABLE` (stack output StateTableName)")
	fs.StringVar(&tf.cluster, "cluster", "", "the EKS `CLUSTER` name (stack output ClusterName)")
	fs.StringVar(&tf.stack, "stack", "", "read -table and -cluster from the outputs of CloudFormation `STACK` (e.g. Nodewright-default)")
	fs.StringVar(&tf.endpoint, "endpoint-url", "", "send AWS calls to `URL` (default: $AWS_ENDPOINT_URL, else AWS)")
	fs.StringVar(&tf.profile, "profile", "", "AWS shared-config `PROFILE` (default: $AWS_PROFILE)")
	fs.DurationVar(&tf.timeout, "timeout", time.Minute, "give up after this long")
}

// check reports flags that cannot work together or are missing.
func (tf *targetFlags) check() error {
	switch {
	case tf.stack != "" && (tf.table != "" || tf.cluster != ""):
		return errors.New("-stack reads the table and the cluster from the stack's outputs: give either -stack or -table and -cluster")
	case tf.stack == "" && tf.table == "" && tf.cluster == "":
		return errors.New("which cluster? pass -stack NAME (the deployed stack, e.g. Nodewright-default), or -table TABLE and -cluster CLUSTER")
	case tf.stack == "" && tf.table == "":
		return errors.New("missing -table (the stack's StateTableName output), or pass -stack NAME instead")
	case tf.stack == "" && tf.cluster == "":
		return errors.New("missing -cluster (the EKS cluster's name, the stack's ClusterName output), or pass -stack NAME instead")
	}
	return nil
}

// stateReader is what status and explain read of a cluster's state
// (*state.Store; stand-ins in tests).
type stateReader interface {
	NodeClaims(ctx context.Context) ([]*state.NodeClaim, error)
	Decisions(ctx context.Context, since time.Time, limit int) ([]state.Decision, error)
	PoolReadiness(ctx context.Context) (state.PoolReadiness, error)
}

// stackDescriber is the CloudFormation call -stack makes.
type stackDescriber interface {
	DescribeStacks(ctx context.Context, in *cloudformation.DescribeStacksInput, opts ...func(*cloudformation.Options)) (*cloudformation.DescribeStacksOutput, error)
}

// stateDeps reach the state table (stand-ins in tests; zero: AWS).
type stateDeps struct {
	// open returns the reader of the target's state and the table and
	// cluster it reads.
	open func(ctx context.Context, tf *targetFlags) (stateReader, target, error)
	now  func() time.Time
}

// target is the resolved table and cluster.
type target struct {
	Table   string `json:"table"`
	Cluster string `json:"cluster"`
}

func (c cli) stateDeps() stateDeps {
	d := c.state
	if d.open == nil {
		d.open = openAWS
	}
	if d.now == nil {
		d.now = time.Now
	}
	return d
}

// openAWS loads the AWS configuration, resolves the stack's outputs if
// asked, and returns a store of the cluster's state.
func openAWS(ctx context.Context, tf *targetFlags) (stateReader, target, error) {
	cfg, err := awsConfig(ctx, tf)
	if err != nil {
		return nil, target{}, err
	}
	t := target{Table: tf.table, Cluster: tf.cluster}
	if tf.stack != "" {
		if t, err = stackTarget(ctx, cloudformation.NewFromConfig(cfg), tf.stack); err != nil {
			return nil, target{}, err
		}
	}
	s, err := state.New(dynamodb.NewFromConfig(cfg), t.Table, t.Cluster, time.Now)
	if err != nil {
		return nil, target{}, err
	}
	return s, t, nil
}

// awsConfig is the SDK configuration the flags describe, with the region
// and credentials checked first so that their absence is reported as what
// to set, not as a failed call.
func awsConfig(ctx context.Context, tf *targetFlags) (aws.Config, error) {
	var opts []func(*config.LoadOptions) error
	if tf.region != "" {
		opts = append(opts, config.WithRegion(tf.region))
	}
	if tf.profile != "" {
		opts = append(opts, config.WithSharedConfigProfile(tf.profile))
	}
	if tf.endpoint != "" {
		opts = append(opts, config.WithBaseEndpoint(tf.endpoint))
	}
	cfg, err := config.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return aws.Config{}, fmt.Errorf("AWS configuration: %w", err)
	}
	if cfg.Region == "" {
		return aws.Config{}, errors.New("no AWS region: pass -region (e.g. -region us-east-1) or set AWS_REGION")
	}
	if _, err := cfg.Credentials.Retrieve(ctx); err != nil {
		hint := "set AWS_PROFILE (or pass -profile), or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY"
		if tf.endpoint != "" || os.Getenv("AWS_ENDPOINT_URL") != "" {
			hint += " (the local cloud accepts any values)"
		}
		return aws.Config{}, fmt.Errorf("no AWS credentials: %s: %w", hint, err)
	}
	return cfg, nil
}

// stackTarget reads the table and the cluster from the stack's outputs.
func stackTarget(ctx context.Context, cf stackDescriber, stack string) (target, error) {
	out, err := cf.DescribeStacks(ctx, &cloudformation.DescribeStacksInput{StackName: aws.String(stack)})
	if err != nil {
		return target{}, fmt.Errorf("read stack %s (check -stack and -region, or pass -table and -cluster): %w", stack, err)
	}
	if len(out.Stacks) == 0 {
		return target{}, fmt.Errorf("stack %s not found (check -stack and -region)", stack)
	}
	var t target
	for _, o := range out.Stacks[0].Outputs {
		switch aws.ToString(o.OutputKey) {
		case outputTable:
			t.Table = aws.ToString(o.OutputValue)
		case outputCluster:
			t.Cluster = aws.ToString(o.OutputValue)
		}
	}
	var missing []string
	if t.Table == "" {
		missing = append(missing, outputTable)
	}
	if t.Cluster == "" {
		missing = append(missing, outputCluster)
	}
	if len(missing) > 0 {
		return target{}, fmt.Errorf("stack %s lacks the output %s: redeploy it with this version, or pass -table and -cluster instead of -stack", stack, strings.Join(missing, " and "))
	}
	return t, nil
}
