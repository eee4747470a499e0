package kubeaccess

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/eks"
	ekstypes "github.com/aws/aws-sdk-go-v2/service/eks/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"github.com/nodewright/nodewright/infra/stack"
	"github.com/nodewright/nodewright/shared/kube"
	"github.com/nodewright/nodewright/shared/kube/eksauth"
	"github.com/nodewright/nodewright/test/localcloud"
)

// roleConfig is an SDK config with the credentials of the function's role,
// assumed through the AWS front as a Lambda's execution role would be.
func roleConfig(t *testing.T, function string) aws.Config {
	t.Helper()
	base := cloud.AWSConfig()
	out, err := sts.NewFromConfig(base).AssumeRole(context.Background(), &sts.AssumeRoleInput{
		RoleArn: aws.String(localcloud.FunctionRoleARN(function)), RoleSessionName: aws.String(function),
	})
	if err != nil {
		t.Fatalf("assume role: %v", err)
	}
	cfg := base.Copy()
	c := out.Credentials
	cfg.Credentials = credentials.NewStaticCredentialsProvider(*c.AccessKeyId, *c.SecretAccessKey, *c.SessionToken)
	return cfg
}

// provider is the functions' EKS access for the local cluster.
func provider(cfg aws.Config, cluster string) *eksauth.Provider {
	return eksauth.New(eksauth.Options{Cluster: cluster, EKS: eks.NewFromConfig(cfg), STS: sts.NewPresignClient(sts.NewFromConfig(cfg))})
}

// applyRBAC creates the stack's ClusterRole and binding (rbac.yaml) once.
func applyRBAC(t *testing.T) {
	t.Helper()
	data, err := stack.RBACManifest()
	if err != nil {
		t.Fatal(err)
	}
	docs := bytes.Split(data, []byte("\n---\n"))
	var role rbacv1.ClusterRole
	var binding rbacv1.ClusterRoleBinding
	if err := yaml.Unmarshal(docs[0], &role); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(docs[1], &binding); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	rbac := cloud.Kube.RbacV1()
	if _, err := rbac.ClusterRoles().Create(ctx, &role, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	if _, err := rbac.ClusterRoleBindings().Create(ctx, &binding, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
}

// TestIAMTokenThroughWebhookAndRBAC: a function's role becomes user
// nodewright:<function> in group nodewright:controller through the API
// server's token webhook, and can do exactly what rbac.yaml grants.
func TestIAMTokenThroughWebhookAndRBAC(t *testing.T) {
	ctx := context.Background()
	p := provider(roleConfig(t, "provision"), cloud.Cluster.Name)
	rc, err := p.RESTConfig(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rc.Host != cloud.Cluster.Endpoint || !bytes.Equal(rc.CAData, cloud.Cluster.CAData) {
		t.Fatalf("DescribeCluster gave %s, want %s and the cluster CA", rc.Host, cloud.Cluster.Endpoint)
	}
	tok, exp, err := p.Token(ctx)
	if err != nil || !strings.HasPrefix(tok, eksauth.TokenPrefix) || time.Until(exp) < 14*time.Minute {
		t.Fatalf("token %.20s... expires %s, %v", tok, exp, err)
	}
	kc, err := kube.New(rc)
	if err != nil {
		t.Fatal(err)
	}
	typed, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	// Who am I, as the API server sees it.
	review, err := typed.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authnv1SelfSubjectReview, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if u := review.Status.UserInfo; u.Username != "nodewright:provision" || !slices.Contains(u.Groups, "nodewright:controller") {
		t.Fatalf("authenticated as %+v, want nodewright:provision in nodewright:controller", u)
	}

	applyRBAC(t)
	eventually(t, 20*time.Second, "RBAC in force", func() (bool, error) {
		v, err := kube.NewCache(kc, kube.CacheOptions{}).Sync(ctx)
		// The role may list Leases: the read can tell whether Karpenter's
		// controller runs.
		return err == nil && !v.KarpenterUnknown, err
	})
	// Not granted: writing ConfigMaps, reading Secrets.
	_, err = typed.CoreV1().Secrets("default").List(ctx, metav1.ListOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("listing secrets: %v, want forbidden", err)
	}
	_, err = typed.CoreV1().Pods("default").Create(ctx, testPod("rbac-probe", ""), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) {
		t.Errorf("creating a pod: %v, want forbidden", err)
	}
}

// TestIAMTokenRefused: a token bound to another cluster, and one from a
// role without an access entry, are refused (401).
func TestIAMTokenRefused(t *testing.T) {
	ctx := context.Background()
	for name, p := range map[string]*eksauth.Provider{
		"other cluster":   provider(roleConfig(t, "provision"), "someone-elses-cluster"),
		"unmapped role":   provider(roleConfig(t, "intruder"), cloud.Cluster.Name),
		"static IAM user": provider(cloud.AWSConfig(), cloud.Cluster.Name),
	} {
		t.Run(name, func(t *testing.T) {
			tok, _, err := p.Token(ctx)
			if err != nil {
				t.Fatal(err)
			}
			rc := *cloud.REST
			rc.BearerToken, rc.BearerTokenFile = tok, ""
			typed, err := kubernetes.NewForConfig(&rc)
			if err != nil {
				t.Fatal(err)
			}
			_, err = typed.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			if !apierrors.IsUnauthorized(err) {
				t.Fatalf("list nodes: %v, want 401", err)
			}
		})
	}
	var nf *ekstypes.ResourceNotFoundException
	if _, err := provider(roleConfig(t, "provision"), "no-such-cluster").RESTConfig(ctx); !errors.As(err, &nf) {
		t.Errorf("DescribeCluster of a missing cluster: %v, want ResourceNotFoundException", err)
	}
}
