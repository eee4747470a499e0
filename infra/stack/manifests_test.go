package stack

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"

	"github.com/nodewright/nodewright/shared/names"
)

func TestWebhookManifest(t *testing.T) {
	b, err := WebhookManifest("https://abc.lambda-url.us-east-1.on.aws/TOKEN", 2)
	if err != nil {
		t.Fatal(err)
	}
	var cfg admissionregistrationv1.ValidatingWebhookConfiguration
	if err := yaml.UnmarshalStrict(b, &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.APIVersion != "admissionregistration.k8s.io/v1" || cfg.Kind != "ValidatingWebhookConfiguration" || cfg.Name != WebhookConfigurationName || len(cfg.Webhooks) != 1 {
		t.Fatalf("%+v", cfg)
	}
	w := cfg.Webhooks[0]
	if *w.ClientConfig.URL != "https://abc.lambda-url.us-east-1.on.aws/TOKEN" || w.ClientConfig.Service != nil || w.ClientConfig.CABundle != nil {
		t.Errorf("client config %+v", w.ClientConfig)
	}
	if *w.FailurePolicy != admissionregistrationv1.Ignore || *w.SideEffects != admissionregistrationv1.SideEffectClassNoneOnDryRun ||
		*w.MatchPolicy != admissionregistrationv1.Equivalent || *w.TimeoutSeconds != 2 ||
		strings.Join(w.AdmissionReviewVersions, ",") != "v1" || w.NamespaceSelector != nil {
		t.Errorf("webhook %+v", w)
	}
	if len(w.Rules) != 1 || strings.Join(w.Rules[0].Resources, ",") != "pods/status" || len(w.Rules[0].Operations) != 1 ||
		w.Rules[0].Operations[0] != admissionregistrationv1.Update || strings.Join(w.Rules[0].APIGroups, ",") != "" {
		t.Errorf("rules %+v", w.Rules)
	}
	exprs := map[string]string{}
	for _, c := range w.MatchConditions {
		exprs[c.Name] = c.Expression
	}
	if exprs["unschedulable"] != MatchUnschedulable || exprs["newly-unschedulable"] != MatchNewlyUnschedulable || exprs["not-bound"] != MatchNotBound {
		t.Errorf("match conditions %v", exprs)
	}
}

func TestRBACManifest(t *testing.T) {
	b, err := RBACManifest()
	if err != nil {
		t.Fatal(err)
	}
	docs := bytes.Split(b, []byte("\n---\n"))
	if len(docs) != 2 {
		t.Fatalf("%d documents", len(docs))
	}
	var role rbacv1.ClusterRole
	var binding rbacv1.ClusterRoleBinding
	if err := yaml.UnmarshalStrict(docs[0], &role); err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(docs[1], &binding); err != nil {
		t.Fatal(err)
	}
	if binding.RoleRef.Name != role.Name || len(binding.Subjects) != 1 || binding.Subjects[0].Kind != "Group" || binding.Subjects[0].Name != names.KubernetesGroup {
		t.Fatalf("binding %+v", binding)
	}
	allowed := func(group, resource, verb string) bool {
		for _, r := range role.Rules {
			if slices.Contains(r.APIGroups, group) && slices.Contains(r.Resources, resource) && slices.Contains(r.Verbs, verb) {
				return true
			}
		}
		return false
	}
	for _, c := range []struct{ group, resource, verb string }{
		{"", "pods", "list"}, {"", "nodes", "watch"}, {"apps", "daemonsets", "list"}, {"policy", "poddisruptionbudgets", "list"},
		{"", "pods/eviction", "create"}, {"", "nodes", "patch"}, {"", "nodes", "delete"}, {"", "events", "create"},
		{"", "pods", "delete"}, {"karpenter.sh", "nodepools", "list"}, {"karpenter.k8s.aws", "ec2nodeclasses", "watch"},
		{"karpenter.sh", "nodeoverlays", "get"}, {"karpenter.sh", "nodeoverlays", "list"}, {"karpenter.sh", "nodeoverlays", "watch"},
		// The volume objects the cache reads for volume topology.
		{"", "persistentvolumeclaims", "watch"}, {"", "persistentvolumes", "list"}, {"storage.k8s.io", "storageclasses", "watch"},
		// Karpenter's leader-election Lease (package handover).
		{"coordination.k8s.io", "leases", "list"},
		// One NodeClaim object per record (shared/nodeclaim).
		{"karpenter.sh", "nodeclaims", "create"}, {"karpenter.sh", "nodeclaims", "patch"}, {"karpenter.sh", "nodeclaims", "delete"},
		{"karpenter.sh", "nodeclaims", "list"}, {"karpenter.sh", "nodeclaims/status", "patch"}, {"karpenter.sh", "nodepools/status", "patch"},
		{"karpenter.k8s.aws", "ec2nodeclasses/status", "patch"},
	} {
		if !allowed(c.group, c.resource, c.verb) {
			t.Errorf("cannot %s %s/%s", c.verb, c.group, c.resource)
		}
	}
	for _, c := range []struct{ group, resource, verb string }{
		{"", "pods", "create"}, {"", "pods", "patch"}, {"", "secrets", "get"}, {"karpenter.sh", "nodepools", "patch"}, {"karpenter.sh", "nodeoverlays", "patch"}, {"", "nodes", "create"}, {"apps", "daemonsets", "patch"},
		{"coordination.k8s.io", "leases", "update"}, {"coordination.k8s.io", "leases", "get"},
		// Merge patches only: no update of NodeClaims.
		{"karpenter.sh", "nodeclaims", "update"}, {"karpenter.sh", "nodeclaims/status", "update"}, {"karpenter.sh", "nodepools/status", "update"},
	} {
		if allowed(c.group, c.resource, c.verb) {
			t.Errorf("may %s %s/%s", c.verb, c.group, c.resource)
		}
	}
	for _, r := range role.Rules {
		if slices.Contains(r.Verbs, "*") || slices.Contains(r.Resources, "*") || slices.Contains(r.APIGroups, "*") {
			t.Errorf("wildcard rule %+v", r)
		}
	}
}

func TestStackManifests(t *testing.T) {
	s := defaultStack(t)
	files, err := s.stack.Manifests()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(files[WebhookManifestFile], []byte("url: "+WebhookURLPlaceholder)) || len(files[RBACManifestFile]) == 0 {
		t.Fatalf("manifests %s", files)
	}
	for _, crd := range []string{"nodepools.karpenter.sh", "ec2nodeclasses.karpenter.k8s.aws", "nodeclaims.karpenter.sh"} {
		if !bytes.Contains(files[CRDsManifestFile], []byte("name: "+crd+"\n")) {
			t.Errorf("%s lacks the %s CRD", CRDsManifestFile, crd)
		}
	}
}
