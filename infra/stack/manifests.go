package stack

import (
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/nodewright/nodewright/shared/apis/crds"
	"github.com/nodewright/nodewright/shared/names"
	"github.com/nodewright/nodewright/shared/webhookconfig"
)

// Where the app writes the Kubernetes manifests, relative to the repository
// root (cdk.out is the CDK CLI's default output directory), and their names.
const (
	ManifestDir         = "cdk.out/nodewright"
	WebhookManifestFile = "webhook.yaml"
	RBACManifestFile    = "rbac.yaml"
	CRDsManifestFile    = "crds.yaml"
)

// The webhook registration's names and match conditions (package
// webhookconfig holds the registration; the stack writes it with the URL
// placeholder, and `nodewright webhook apply` fills it in).
const (
	WebhookURLPlaceholder    = webhookconfig.URLPlaceholder
	WebhookConfigurationName = webhookconfig.Name
	MatchUnschedulable       = webhookconfig.MatchUnschedulable
	MatchNewlyUnschedulable  = webhookconfig.MatchNewlyUnschedulable
	MatchNotBound            = webhookconfig.MatchNotBound
)

// WebhookManifest renders the ValidatingWebhookConfiguration for url.
func WebhookManifest(url string, timeoutSeconds int) ([]byte, error) {
	return marshalManifest("webhook", webhookconfig.Configuration(url, timeoutSeconds))
}

// ClusterRoleRules is what the functions may do in the cluster: read the
// objects a scheduling simulation needs (pods, nodes, DaemonSets, PDBs, the
// volume objects that pin pods to zones, and Karpenter's NodePools and
// EC2NodeClasses where their CRDs are installed), evict pods, delete pods
// that a drain's deadline (terminationGracePeriod, a spot instance's end)
// leaves, patch (cordon, taint, finalizer) and delete nodes, keep a
// NodeClaim object per node (create; merge-patch its metadata and status;
// delete it when its record is gone), write the status of NodePools and
// EC2NodeClasses, record events (get: a repeated event bumps the count of
// the existing one), and list Leases to see Karpenter's leader-election
// Lease (package handover: Nodewright launches nothing while Karpenter's
// controller runs).
func ClusterRoleRules() []rbacv1.PolicyRule {
	read := []string{"get", "list", "watch"}
	return []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"pods", "persistentvolumeclaims", "persistentvolumes"}, Verbs: read},
		{APIGroups: []string{""}, Resources: []string{"nodes"}, Verbs: []string{"get", "list", "watch", "patch", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"pods/eviction"}, Verbs: []string{"create"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"delete"}},
		{APIGroups: []string{"apps"}, Resources: []string{"daemonsets"}, Verbs: read},
		{APIGroups: []string{"policy"}, Resources: []string{"poddisruptionbudgets"}, Verbs: read},
		{APIGroups: []string{"storage.k8s.io"}, Resources: []string{"storageclasses", "csinodes"}, Verbs: read},
		{APIGroups: []string{"karpenter.sh"}, Resources: []string{"nodepools", "nodeoverlays"}, Verbs: read},
		{APIGroups: []string{"karpenter.sh"}, Resources: []string{"nodeclaims"}, Verbs: []string{"get", "list", "watch", "create", "patch", "delete"}},
		{APIGroups: []string{"karpenter.sh"}, Resources: []string{"nodeclaims/status", "nodepools/status"}, Verbs: []string{"patch"}},
		{APIGroups: []string{"karpenter.k8s.aws"}, Resources: []string{"ec2nodeclasses"}, Verbs: read},
		{APIGroups: []string{"karpenter.k8s.aws"}, Resources: []string{"ec2nodeclasses/status"}, Verbs: []string{"patch"}},
		{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch", "get"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"list"}},
	}
}

// RBACManifest renders the ClusterRole and its binding to the group the
// stack's access entries give the functions' roles.
func RBACManifest() ([]byte, error) {
	role := rbacv1.ClusterRole{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole"},
		ObjectMeta: metav1.ObjectMeta{Name: names.ClusterRoleName, Labels: map[string]string{"app.kubernetes.io/name": "nodewright"}},
		Rules:      ClusterRoleRules(),
	}
	binding := rbacv1.ClusterRoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: names.ClusterRoleName, Labels: map[string]string{"app.kubernetes.io/name": "nodewright"}},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: names.ClusterRoleName},
		Subjects:   []rbacv1.Subject{{APIGroup: "rbac.authorization.k8s.io", Kind: "Group", Name: names.KubernetesGroup}},
	}
	a, err := marshalManifest("cluster role", role)
	if err != nil {
		return nil, err
	}
	b, err := marshalManifest("cluster role binding", binding)
	if err != nil {
		return nil, err
	}
	return append(append(a, []byte("---\n")...), b...), nil
}

func marshalManifest(what string, obj any) ([]byte, error) {
	b, err := yaml.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("render %s manifest: %w", what, err)
	}
	return append([]byte("# Generated by the Nodewright CDK app.\n"), b...), nil
}

// Manifests returns the files the app writes under ManifestDir/<stack name>.
func (s *Stack) Manifests() (map[string][]byte, error) {
	wh, err := WebhookManifest(WebhookURLPlaceholder, s.props.WebhookTimeoutSeconds)
	if err != nil {
		return nil, err
	}
	rbac, err := RBACManifest()
	if err != nil {
		return nil, err
	}
	return map[string][]byte{WebhookManifestFile: wh, RBACManifestFile: rbac, CRDsManifestFile: CRDsManifest()}, nil
}

// CRDsManifest is the NodePool, EC2NodeClass and NodeClaim CRDs
// (shared/apis/crds) in one file, for a cluster that has no Karpenter CRDs
// yet; one that has them keeps Karpenter's.
func CRDsManifest() []byte {
	var out []byte
	files := crds.Files()
	for i, name := range crds.Names() {
		if i > 0 {
			out = append(out, "---\n"...)
		}
		out = append(out, files[name]...)
	}
	return out
}
