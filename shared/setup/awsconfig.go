package setup

import (
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// LambdaAWSConfig is the SDK configuration inside Lambda, read from the
// variables Lambda sets for the function's role (AWS_REGION and the role's
// AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN; valid for
// the execution environment's lifetime) and AWS_ENDPOINT_URL when set. It
// replaces the SDK's config.LoadDefaultConfig, whose shared-file, SSO,
// process and IMDS credential chains are dead weight in Lambda (about
// 2 MB of each function's binary) and would only hide a missing variable.
func LambdaAWSConfig(getenv func(string) string) (aws.Config, error) {
	region := getenv("AWS_REGION")
	if region == "" {
		region = getenv("AWS_DEFAULT_REGION")
	}
	if region == "" {
		return aws.Config{}, fmt.Errorf("AWS configuration: AWS_REGION is not set (Lambda sets it; elsewhere set it)")
	}
	key, secret := getenv("AWS_ACCESS_KEY_ID"), getenv("AWS_SECRET_ACCESS_KEY")
	if key == "" || secret == "" {
		return aws.Config{}, fmt.Errorf("AWS configuration: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set (Lambda sets them from the function's role)")
	}
	cfg := aws.Config{
		Region:      region,
		Credentials: aws.NewCredentialsCache(credentials.NewStaticCredentialsProvider(key, secret, getenv("AWS_SESSION_TOKEN"))),
	}
	if ep := getenv("AWS_ENDPOINT_URL"); ep != "" {
		cfg.BaseEndpoint = aws.String(ep)
	}
	return cfg, nil
}
