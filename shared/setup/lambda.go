package setup

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log/slog"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	"github.com/aws/aws-sdk-go-v2/service/sts"

	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/kube/eksauth"
	"github.com/nodewright/nodewright/shared/names"
)

// envLambdaFunction is the variable Lambda sets to the function's name.
const envLambdaFunction = "AWS_LAMBDA_FUNCTION_NAME"

// environment returns the variables the functions read.
func environment(getenv func(string) string) map[string]string {
	env := map[string]string{}
	for _, k := range []string{
		names.EnvClusterName, names.EnvTableName, names.EnvQueueURL, names.EnvConfigDir, names.EnvConfigHash,
		names.EnvNodeRoleName, names.EnvInstanceProfileName, names.EnvMetricsNamespace, names.EnvLogLevel, envLambdaFunction,
	} {
		if v := getenv(k); v != "" {
			env[k] = v
		}
	}
	return env
}

// Lambda assembles a function's Options inside Lambda: the SDK
// configuration from Lambda's variables (the function's role), the cluster from EKS DescribeCluster
// (endpoint, CA, Kubernetes version, service network; called once per
// container) and a client that signs in with IAM tokens.
func Lambda(ctx context.Context, getenv func(string) string, metrics io.Writer, log *slog.Logger) (Options, error) {
	env := environment(getenv)
	cfg, err := LambdaAWSConfig(getenv)
	if err != nil {
		return Options{}, err
	}
	cluster := env[names.EnvClusterName]
	if cluster == "" {
		return Options{}, fmt.Errorf("%s is not set", names.EnvClusterName)
	}
	desc := &describeOnce{api: eks.NewFromConfig(cfg)}
	c, err := EKSCluster(ctx, cluster, desc, sts.NewPresignClient(sts.NewFromConfig(cfg)))
	if err != nil {
		return Options{}, err
	}
	return Options{Env: env, AWS: cfg, Cluster: c, Metrics: metrics, Log: log}, nil
}

// EKSCluster describes the cluster (endpoint, CA, version, service
// network) and makes its client configuration with IAM tokens.
func EKSCluster(ctx context.Context, cluster string, api eksauth.DescribeClusterAPI, presign eksauth.PresignAPI) (Cluster, error) {
	out, err := api.DescribeCluster(ctx, &eks.DescribeClusterInput{Name: aws.String(cluster)})
	if err != nil {
		return Cluster{}, fmt.Errorf("describe EKS cluster %s: %w", cluster, err)
	}
	c := out.Cluster
	if c == nil || c.Endpoint == nil || c.CertificateAuthority == nil {
		return Cluster{}, fmt.Errorf("describe EKS cluster %s: no endpoint or CA (is it active?)", cluster)
	}
	ca, err := base64.StdEncoding.DecodeString(aws.ToString(c.CertificateAuthority.Data))
	if err != nil {
		return Cluster{}, fmt.Errorf("EKS cluster %s: certificate authority: %w", cluster, err)
	}
	fc := fleet.Cluster{Name: cluster, Endpoint: aws.ToString(c.Endpoint), CertificateAuthority: ca, KubernetesVersion: aws.ToString(c.Version)}
	if n := c.KubernetesNetworkConfig; n != nil {
		fc.ServiceCIDR = aws.ToString(n.ServiceIpv4Cidr)
	}
	rest, err := eksauth.New(eksauth.Options{Cluster: cluster, EKS: api, STS: presign}).RESTConfig(ctx)
	if err != nil {
		return Cluster{}, err
	}
	return Cluster{Cluster: fc, REST: rest}, nil
}

// describeOnce answers DescribeCluster from its first answer, so the
// client configuration and the node join data cost one call.
type describeOnce struct {
	api  eksauth.DescribeClusterAPI
	mu   sync.Mutex
	last *eks.DescribeClusterOutput
}

func (d *describeOnce) DescribeCluster(ctx context.Context, in *eks.DescribeClusterInput, opts ...func(*eks.Options)) (*eks.DescribeClusterOutput, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.last != nil && aws.ToString(d.last.Cluster.Name) == aws.ToString(in.Name) {
		return d.last, nil
	}
	out, err := d.api.DescribeCluster(ctx, in, opts...)
	if err == nil && out.Cluster != nil {
		d.last = out
	}
	return out, err
}
