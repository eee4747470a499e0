package localcloud

import (
	"path/filepath"

	"github.com/nodewright/nodewright/shared/names"
	"github.com/nodewright/nodewright/test/localcloud/iamauth"
)

// Account is the AWS account of the local cloud (moto's default).
const Account = "123456789012"

// Functions whose roles the local cluster maps, as the stack's access entries
// map them on EKS.
var Functions = []string{"provision", "interruption", "consolidation"}

// FunctionRoleARN is the IAM role of a function in the local cloud. The API
// server's token webhook maps it to user nodewright:<function> in group
// nodewright:controller (shared/names), as the stack's EKS access entries
// do; a client that assumes this role (sts:AssumeRole on the AWS front) and
// signs its token with package eksauth acts as that user, under the RBAC
// the stack's rbac.yaml grants.
func FunctionRoleARN(function string) string {
	return "arn:aws:iam::" + Account + ":role/nodewright-" + function
}

// startIAM starts the token webhook with the functions' access entries and
// writes the API server's webhook configuration; it returns its path.
func (c *Cloud) startIAM() (string, error) {
	a := iamauth.New(iamauth.Config{
		Cluster: c.Options.Cluster, Log: c.log,
		STSEndpoint: func() string {
			if u := c.awsURL.Load(); u != nil {
				return *u
			}
			return ""
		},
	})
	for _, fn := range Functions {
		a.Map(iamauth.Mapping{RoleARN: FunctionRoleARN(fn), Username: names.KubernetesUsernamePrefix + fn, Groups: []string{names.KubernetesGroup}})
	}
	if err := a.Start(); err != nil {
		return "", err
	}
	c.IAM = a
	path := filepath.Join(c.StateDir, "pki", "token-webhook.kubeconfig")
	if err := a.WriteWebhookConfig(path); err != nil {
		return "", err
	}
	return path, nil
}
