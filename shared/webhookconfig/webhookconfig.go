// Package webhookconfig is the pending-pod webhook's registration in the
// cluster (the ValidatingWebhookConfiguration) and how it is applied.
//
// It exists apart from the CDK app and the webhook function so that the
// stack (which writes the registration with a placeholder URL at synth) and
// the operator CLI (which fills in the Function URL and the token read from
// Secrets Manager, and applies it) share one definition, and so that the CLI
// does not link the CDK.
//
// Apply is a server-side apply: the token travels in the request body only,
// and the object gets no kubectl.kubernetes.io/last-applied-configuration
// annotation, which a client-side `kubectl apply` fills with a second copy of
// the whole object (URL and token included); one left by an earlier
// client-side apply is removed.
package webhookconfig

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Name is the ValidatingWebhookConfiguration's name.
const Name = "nodewright-pending-pods"

// URLPlaceholder stands in the manifest the stack writes for the Function
// URL with its token, which exist only after deploy (and the token must not
// be written to disk): Fill replaces it.
const URLPlaceholder = "__NODEWRIGHT_WEBHOOK_URL__"

// FieldManager is the server-side apply field manager of the registration.
const FieldManager = "nodewright"

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

// Configuration is the registration calling url.
//
// failurePolicy Ignore: the webhook must never block a pod. sideEffects
// NoneOnDryRun: the call may invoke the provision function, which the
// handler skips for dry runs. No namespaceSelector: kube-system pods (CoreDNS
// on a fresh cluster, for instance) need nodes too, and Ignore plus a short
// timeout means the webhook cannot wedge the control plane. matchPolicy
// Equivalent: a pods/status write through another API version is seen too.
func Configuration(url string, timeoutSeconds int) *admissionregistrationv1.ValidatingWebhookConfiguration {
	ignore := admissionregistrationv1.Ignore
	sideEffects := admissionregistrationv1.SideEffectClassNoneOnDryRun
	equivalent := admissionregistrationv1.Equivalent
	scope := admissionregistrationv1.NamespacedScope
	timeout := int32(timeoutSeconds)
	return &admissionregistrationv1.ValidatingWebhookConfiguration{
		TypeMeta: metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{
			Name:   Name,
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
}

// Fill returns a copy of cfg (as the stack wrote it) whose webhooks call
// functionURL with token as its path. Every webhook must carry
// URLPlaceholder: a registration filled in already is refused rather than
// overwritten blindly.
func Fill(cfg *admissionregistrationv1.ValidatingWebhookConfiguration, functionURL, token string) (*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	u, err := url.Parse(functionURL)
	if err != nil || u.Scheme != "https" || u.Host == "" || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("function URL %q: want https://<host>/ (the stack's WebhookFunctionUrl output)", functionURL)
	}
	if token == "" || strings.ContainsAny(token, "/?#% ") {
		return nil, errors.New("the token is empty or not a single URL path segment")
	}
	if cfg.Name != Name || len(cfg.Webhooks) == 0 {
		return nil, fmt.Errorf("the manifest is not Nodewright's webhook registration (name %q, %d webhooks)", cfg.Name, len(cfg.Webhooks))
	}
	out := cfg.DeepCopy()
	full := "https://" + u.Host + "/" + token
	for i := range out.Webhooks {
		cc := &out.Webhooks[i].ClientConfig
		if cc.URL == nil || *cc.URL != URLPlaceholder {
			return nil, fmt.Errorf("webhook %s: clientConfig.url is not %s", out.Webhooks[i].Name, URLPlaceholder)
		}
		cc.URL = &full
	}
	return out, nil
}

// Client is the part of the ValidatingWebhookConfigurations client Apply
// uses (client-go's typed client satisfies it).
type Client interface {
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*admissionregistrationv1.ValidatingWebhookConfiguration, error)
}

// Result says what Apply did.
type Result struct {
	// RemovedLastApplied: a kubectl last-applied copy of the object (from
	// an earlier client-side apply) was removed.
	RemovedLastApplied bool
	Object             *admissionregistrationv1.ValidatingWebhookConfiguration
}

// Apply applies cfg server-side as FieldManager, taking over fields other
// managers hold (a registration applied before with kubectl), then removes
// a kubectl last-applied annotation if one is there.
func Apply(ctx context.Context, c Client, cfg *admissionregistrationv1.ValidatingWebhookConfiguration) (*Result, error) {
	body, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", cfg.Name, err)
	}
	force := true
	obj, err := c.Patch(ctx, cfg.Name, types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: FieldManager, Force: &force})
	if err != nil {
		return nil, fmt.Errorf("apply ValidatingWebhookConfiguration %s: %w", cfg.Name, err)
	}
	res := &Result{Object: obj}
	last, ok := obj.Annotations[corev1.LastAppliedConfigAnnotation]
	if !ok {
		return res, nil
	}
	patch, err := removeAnnotationPatch(corev1.LastAppliedConfigAnnotation, last)
	if err != nil {
		return nil, err
	}
	if obj, err = c.Patch(ctx, cfg.Name, types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: FieldManager}); err != nil {
		return nil, fmt.Errorf("remove the %s annotation of %s: %w", corev1.LastAppliedConfigAnnotation, cfg.Name, err)
	}
	res.Object, res.RemovedLastApplied = obj, true
	return res, nil
}

// removeAnnotationPatch is a JSON patch that removes annotation key if it
// still has value (so a concurrent change is not lost silently).
func removeAnnotationPatch(key, value string) ([]byte, error) {
	path := "/metadata/annotations/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(key)
	return json.Marshal([]map[string]any{
		{"op": "test", "path": path, "value": value},
		{"op": "remove", "path": path},
	})
}

// Redacted is a registration URL for people: the host, and the token's
// length in place of the token.
func Redacted(full string) string {
	u, err := url.Parse(full)
	if err != nil || u.Host == "" {
		return "(unreadable URL)"
	}
	return fmt.Sprintf("https://%s/<token: %d characters>", u.Host, len(strings.TrimPrefix(u.Path, "/")))
}
