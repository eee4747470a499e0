package setup

import (
	"context"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
)

func TestLambdaAWSConfig(t *testing.T) {
	full := map[string]string{"AWS_REGION": "eu-west-1", "AWS_ACCESS_KEY_ID": "AKIA", "AWS_SECRET_ACCESS_KEY": "secret", "AWS_SESSION_TOKEN": "tok"}
	with := func(kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range full {
			m[k] = v
		}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	for _, tc := range []struct {
		name     string
		env      map[string]string
		region   string
		endpoint string
		err      string
	}{
		{name: "lambda", env: full, region: "eu-west-1"},
		{name: "default region", env: with("AWS_REGION", "", "AWS_DEFAULT_REGION", "us-west-2"), region: "us-west-2"},
		{name: "endpoint", env: with("AWS_ENDPOINT_URL", "http://127.0.0.1:5000"), region: "eu-west-1", endpoint: "http://127.0.0.1:5000"},
		{name: "no region", env: with("AWS_REGION", ""), err: "AWS_REGION is not set"},
		{name: "no key", env: with("AWS_ACCESS_KEY_ID", ""), err: "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set"},
		{name: "no secret", env: with("AWS_SECRET_ACCESS_KEY", ""), err: "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY are not set"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := LambdaAWSConfig(func(k string) string { return tc.env[k] })
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Region != tc.region || aws.ToString(cfg.BaseEndpoint) != tc.endpoint {
				t.Errorf("region %q endpoint %q, want %q %q", cfg.Region, aws.ToString(cfg.BaseEndpoint), tc.region, tc.endpoint)
			}
			creds, err := cfg.Credentials.Retrieve(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if creds.AccessKeyID != "AKIA" || creds.SecretAccessKey != "secret" || creds.SessionToken != tc.env["AWS_SESSION_TOKEN"] {
				t.Errorf("credentials %+v", creds)
			}
		})
	}
}
