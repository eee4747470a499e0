package sdkcalls

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"testing"
)

func ops(hits []hit) []string {
	var out []string
	for _, h := range hits {
		out = append(out, h.op.String())
	}
	sort.Strings(out)
	return out
}

func TestScanFile(t *testing.T) {
	cases := []struct {
		name, src string
		want      []string
	}{
		{"narrow interface", `package p
import ("context"; "github.com/aws/aws-sdk-go-v2/service/ssm")
type API interface {
	GetParameters(context.Context, *ssm.GetParametersInput, ...func(*ssm.Options)) (*ssm.GetParametersOutput, error)
}`, []string{"ssm:GetParameters"}},
		{"named parameters and an import alias", `package p
import ("context"; awsec2 "github.com/aws/aws-sdk-go-v2/service/ec2")
type API interface {
	CreateFleet(ctx context.Context, in *awsec2.CreateFleetInput, opts ...func(*awsec2.Options)) (*awsec2.CreateFleetOutput, error)
	TerminateInstances(context.Context, *awsec2.TerminateInstancesInput, ...func(*awsec2.Options)) (*awsec2.TerminateInstancesOutput, error)
}`, []string{"ec2:CreateFleet", "ec2:TerminateInstances"}},
		{"anonymous interface in a struct field", `package p
import ("context"; "github.com/aws/aws-sdk-go-v2/service/eks")
type C struct{ API interface {
	DescribeCluster(context.Context, *eks.DescribeClusterInput, ...func(*eks.Options)) (*eks.DescribeClusterOutput, error)
} }`, []string{"eks:DescribeCluster"}},
		{"an input built for a concrete client", `package p
import ("context"; "github.com/aws/aws-sdk-go-v2/service/sqs")
func f(ctx context.Context, c *sqs.Client) { c.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{}) }`,
			[]string{"sqs:DeleteMessageBatch"}},
		{"not the shape: other method, types package, wrong option type", `package p
import ("context"; "github.com/aws/aws-sdk-go-v2/service/ec2"; "github.com/aws/aws-sdk-go-v2/service/ec2/types"; "github.com/aws/aws-sdk-go-v2/service/ssm")
type A interface {
	Launch(context.Context, *ec2.CreateFleetInput, ...func(*ec2.Options)) error
	DescribeImages(context.Context, *ec2.DescribeImagesInput, ...func(*ssm.Options)) error
	DescribeSubnets(context.Context, *ec2.DescribeSubnetsInput) error
}
var _ = types.Filter{}
var _ = ec2.Options{}`, nil},
		{"no SDK import", `package p
type A interface{ GetParameters(int) }`, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, err := parser.ParseFile(token.NewFileSet(), "x.go", tc.src, 0)
			if err != nil {
				t.Fatal(err)
			}
			if got := ops(scanFile(f)); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestActions(t *testing.T) {
	cases := map[Operation][]string{
		{"ssm", "GetParameters"}:             {"ssm:GetParameters"},
		{"ec2", "CreateFleet"}:               {"ec2:CreateFleet"},
		{"lambda", "Invoke"}:                 {"lambda:InvokeFunction"},
		{"cloudwatchlogs", "PutLogEvents"}:   {"logs:PutLogEvents"},
		{"dynamodb", "TransactWriteItems"}:   {"dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem", "dynamodb:ConditionCheckItem"},
		{"sqs", "DeleteMessageBatch"}:        {"sqs:DeleteMessage"},
		{"secretsmanager", "GetSecretValue"}: {"secretsmanager:GetSecretValue"},
		{"sts", "GetCallerIdentity"}:         {},
	}
	for op, want := range cases {
		if got := op.Actions(); !reflect.DeepEqual(got, want) {
			t.Errorf("%s: %v, want %v", op, got, want)
		}
	}
	for _, c := range []struct {
		pattern, action string
		want            bool
	}{
		{"ssm:GetParameter", "ssm:GetParameters", false},
		{"ssm:GetParameter*", "ssm:GetParameters", true},
		{"ec2:Describe*", "ec2:DescribeInstances", true},
		{"EC2:describeinstances", "ec2:DescribeInstances", true},
		{"*", "ec2:TerminateInstances", true},
		{"ec2:*", "ssm:GetParameters", false},
	} {
		if got := Allows(c.pattern, c.action); got != c.want {
			t.Errorf("Allows(%q, %q) = %v", c.pattern, c.action, got)
		}
	}
}

func TestMatchesResource(t *testing.T) {
	public := "arn:aws:ssm:us-east-1::parameter/aws/service/*"
	for _, c := range []struct {
		pattern, arn string
		want         bool
	}{
		{public, "arn:aws:ssm:us-east-1::parameter/aws/service/eks/optimized-ami/1.35/amazon-linux-2023/arm64/standard/recommended/image_id", true},
		{public, "arn:aws:ssm:us-east-1:123456789012:parameter/team/ami", false},
		{"arn:aws:ssm:us-east-1:123456789012:parameter/team/ami", "arn:aws:ssm:us-east-1:123456789012:parameter/team/ami", true},
		{"arn:aws:ssm:us-east-1:123456789012:parameter/team/ami", "arn:aws:ssm:us-east-1:123456789012:parameter/team/ami2", false},
		{"arn:aws:ssm:us-east-1:123456789012:parameter/Team/ami", "arn:aws:ssm:us-east-1:123456789012:parameter/team/ami", false},
		{"arn:aws:eks:?s-east-1:*:cluster/demo", "arn:aws:eks:us-east-1:123456789012:cluster/demo", true},
		{"*", "arn:aws:ssm:us-east-1:123456789012:parameter/x", true},
		{"arn:aws:ssm:us-east-1:1234.6789012:parameter/x", "arn:aws:ssm:us-east-1:123456789012:parameter/x", false},
	} {
		if got := MatchesResource(c.pattern, c.arn); got != c.want {
			t.Errorf("MatchesResource(%q, %q) = %v", c.pattern, c.arn, got)
		}
	}
}

func moduleRoot(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// The real functions: the webhook links only what it uses; the controllers
// reach EC2, SSM and DynamoDB through shared/fleet and shared/state.
func TestScanFunctions(t *testing.T) {
	root := moduleRoot(t)
	for fn, want := range map[string][]string{
		"webhook":   {"lambda:Invoke", "secretsmanager:GetSecretValue"},
		"provision": {"dynamodb:PutItem", "ec2:CreateFleet", "ssm:GetParameters"},
	} {
		found, err := Scan(root, "./functions/"+fn, LambdaBuild)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string][]string{}
		for _, f := range found {
			got[f.String()] = f.Where
			if len(f.Where) == 0 {
				t.Errorf("%s: %s found nowhere", fn, f)
			}
		}
		for _, w := range want {
			if got[w] == nil {
				t.Errorf("%s: %s not found in %v", fn, w, found)
			}
		}
		if fn == "webhook" {
			for op := range got {
				if op[:4] == "ec2:" || op[:4] == "ssm:" {
					t.Errorf("webhook links %s (at %v): it must not link the controllers' packages", op, got[op])
				}
			}
		}
	}
}
