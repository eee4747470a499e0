package names

import (
	"strings"
	"testing"

	"github.com/nodewright/nodewright/shared/apis"
)

// The tag keys on instances double as node labels in Karpenter: they must
// stay equal to the label constants of package apis.
func TestTagKeysMatchLabels(t *testing.T) {
	for tag, label := range map[string]string{
		TagKeyNodePool:     apis.LabelNodePool,
		TagKeyNodeClaim:    apis.LabelNodeClaim,
		TagKeyEC2NodeClass: apis.LabelEC2NodeClass,
	} {
		if tag != label {
			t.Errorf("tag %q != label %q", tag, label)
		}
	}
}

func TestTagKeyCluster(t *testing.T) {
	if got := TagKeyCluster("prod-1"); got != "kubernetes.io/cluster/prod-1" {
		t.Fatalf("TagKeyCluster = %q", got)
	}
}

func TestEnvNamesArePrefixed(t *testing.T) {
	for _, n := range []string{EnvClusterName, EnvTableName, EnvQueueURL, EnvRecheckQueueURL, EnvRecheckQueueARN, EnvConfigDir, EnvConfigHash,
		EnvNodeRoleName, EnvInstanceProfileName, EnvProvisionFunction, EnvWebhookSecretARN,
		EnvMetricsNamespace, EnvLogLevel} {
		if !strings.HasPrefix(n, "NODEWRIGHT_") {
			t.Errorf("%s lacks the NODEWRIGHT_ prefix", n)
		}
	}
}

// Kubernetes refuses access entry groups that start with "system:".
func TestKubernetesGroupAllowedInAccessEntries(t *testing.T) {
	if strings.HasPrefix(KubernetesGroup, "system:") {
		t.Fatalf("group %q is reserved", KubernetesGroup)
	}
}
