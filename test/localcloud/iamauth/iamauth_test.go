package iamauth

import (
	"encoding/base64"
	"strings"
	"testing"
	"time"
)

func token(rawURL string) string {
	return "k8s-aws-v1." + base64.RawURLEncoding.EncodeToString([]byte(rawURL))
}

func TestTokenChecks(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	a := New(Config{Cluster: "c", STSEndpoint: func() string { return "http://127.0.0.1:4566" }, Now: func() time.Time { return now }})
	good := "http://127.0.0.1:4566/?Action=GetCallerIdentity&Version=2011-06-15&X-Amz-Credential=AK%2F20261123%2Fus-east-1%2Fsts%2Faws4_request" +
		"&X-Amz-Date=20261123T115500Z&X-Amz-SignedHeaders=host%3Bx-k8s-aws-id&X-Amz-Signature=abc"
	for _, c := range []struct{ name, token, err string }{
		{"good", token(good), ""},
		{"not an EKS token", "abc", "not an EKS token"},
		{"not base64", "k8s-aws-v1.%%%", "not base64url"},
		{"another host", token(strings.Replace(good, "127.0.0.1:4566", "evil.example.com", 1)), "not the STS endpoint"},
		{"another action", token(strings.Replace(good, "GetCallerIdentity", "AssumeRole", 1)), "not GetCallerIdentity"},
		{"cluster header not signed", token(strings.Replace(good, "host%3Bx-k8s-aws-id", "host", 1)), "does not sign x-k8s-aws-id"},
		{"unsigned", token(strings.Replace(good, "&X-Amz-Signature=abc", "", 1)), "not a presigned request"},
		{"expired", token(strings.Replace(good, "20261123T115500Z", "20261123T113000Z", 1)), "expired"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := a.presignedURL(c.token)
			if (err == nil) != (c.err == "") || err != nil && !strings.Contains(err.Error(), c.err) {
				t.Fatalf("err %v, want %q", err, c.err)
			}
		})
	}
}

func TestRoleOf(t *testing.T) {
	role, err := roleOf("arn:aws:sts::123456789012:assumed-role/nodewright-provision/session")
	if err != nil || role != "arn:aws:iam::123456789012:role/nodewright-provision" {
		t.Fatalf("%s, %v", role, err)
	}
	if _, err := roleOf("arn:aws:sts::123456789012:user/moto"); err == nil {
		t.Fatal("a user is not a role")
	}
}
