package stack

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/nodewright/nodewright/shared/names"
)

// Where the app writes the Kubernetes manifests, relative to the repository
// root (cdk.out is the CDK CLI's default output directory), and their names.
const (
	ManifestDir         = "cdk.out/nodewright"
	WebhookManifestFile = "webhook.yaml"
	RBACManifestFile    = "rbac.yaml"
)

// WebhookURLPlaceholder stands in the webhook manifest for the Function URL
// with its token, which only exist after deploy (and the token must not be
// written to disk by the app). The ApplyWebhookCommand output replaces it.
const WebhookURLPlaceholder = "__NODEWRIGHT_WEBHOOK_URL__"

// WebhookConfigurationName is the ValidatingWebhookConfiguration's name.
const WebhookConfigurationName = "nodewright-pending-pods"

// CEL match conditions: the API server calls the webhook only for a pod that
// kube-scheduler has just marked Unschedulable and that is not bound, which
// cuts the calls from every pod status write in the cluster to the few that
// matter. (GA since Kubernetes 1.30, on by default since 1.28; the handler
// checks the same conditions itself for older clusters.)
const (
	celUnschedulable = `c.type == 'PodScheduled' && c.status == 'False' && c.reason == 'Unschedulable'`
	// MatchUnschedulable: the new pod status says Unschedulable.
	MatchUnschedulable = `has(object.status) && has(object.status.conditions) && object.status.conditions.exists(c, ` + celUnschedulable + `)`
	// MatchNewlyUnschedulable: the old status did not (the transition only).
	MatchNewlyUnschedulable = `oldObject == null || !has(oldObject.status) || !has(oldObject.status.conditions) || !oldObject.status.conditions.exists(c, ` + celUnschedulable + `)`
	// MatchNotBound: the pod has no node yet.
	MatchNotBound = `!has(object.spec.nodeName) || object.spec.nodeName == ''`
)

// WebhookManifest renders the ValidatingWebhookConfiguration for url.
//
// failurePolicy Ignore: the webhook must never block a pod. sideEffects
// NoneOnDryRun: the call may invoke the provision function, which the
// handler skips for dry runs. No namespaceSelector: kube-system pods (CoreDNS
// on a fresh cluster, for instance) need nodes too, and Ignore plus a short
// timeout means the webhook cannot wedge the control plane. matchPolicy
// Equivalent: a pods/status write through another API version is seen too.
func WebhookManifest(url string, timeoutSeconds int) ([]byte, error) {
	ignore := admissionregistrationv1.Ignore
	sideEffects := admissionregistrationv1.SideEffectClassNoneOnDryRun
	equivalent := admissionregistrationv1.Equivalent
	scope := admissionregistrationv1.NamespacedScope
	timeout := int32(timeoutSeconds)
	cfg := admissionregistrationv1.ValidatingWebhookConfiguration{
		TypeMeta: metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{
			Name:   WebhookConfigurationName,
			Labels: map[string]string{"app.kubernetes.io/name": "nodewright", "app.kubernetes.io/component": "pending-pod-webhook"},
		},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:                    "pending-pods.nodewright.io",
			ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: &url},
			AdmissionReviewVersions: []string{"v1"},
			SideEffects:             &sideEffects,
			FailurePolicy:           &ignore,
			MatchPolicy:             &equivalent,
			TimeoutSeconds:          &timeout,
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
				Rule: admissionregistrationv1.Rule{
					APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods/status"}, Scope: &scope,
				},
			}},
			MatchConditions: []admissionregistrationv1.MatchCondition{
				{Name: "unschedulable", Expression: MatchUnschedulable},
				{Name: "newly-unschedulable", Expression: MatchNewlyUnschedulable},
				{Name: "not-bound", Expression: MatchNotBound},
			},
		}},
	}
	return marshalManifest("webhook", cfg)
}

// ClusterRoleRules is what the functions may do in the cluster: read the
// objects a scheduling simulation needs (pods, nodes, DaemonSets, PDBs, the
// volume objects that pin pods to zones, and Karpenter's NodePools and
// EC2NodeClasses where their CRDs are installed), evict pods, delete pods
// that a drain's deadline (terminationGracePeriod, a spot instance's end)
// leaves, patch (cordon, taint, finalizer) and delete nodes, and record
// events (get: a repeated event bumps the count of the existing one).
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
		{APIGroups: []string{"karpenter.sh"}, Resources: []string{"nodepools"}, Verbs: read},
		{APIGroups: []string{"karpenter.k8s.aws"}, Resources: []string{"ec2nodeclasses"}, Verbs: read},
		{APIGroups: []string{"", "events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create", "patch", "get"}},
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
	return map[string][]byte{WebhookManifestFile: wh, RBACManifestFile: rbac}, nil
}
