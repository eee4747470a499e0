package apis

import (
	"regexp"
	"strings"
	"testing"
)

func poolHash(t *testing.T, spec string) string {
	t.Helper()
	return mustParse(t, nodePoolDoc(spec)).NodePools[0].Hash()
}

func classHash(t *testing.T, extra string, drop ...string) string {
	t.Helper()
	return mustParse(t, nodeClassDoc(extra, drop...)).NodeClasses[0].Hash()
}

func TestNodePoolHash(t *testing.T) {
	base := poolHash(t, template()+"    taints: [{key: a, effect: NoSchedule}, {key: b, effect: NoExecute}]\n")
	if !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(base) {
		t.Fatalf("hash %q is not 16 hex digits", base)
	}
	same := map[string]string{
		"taints in another order": template() + "    taints: [{key: b, effect: NoExecute}, {key: a, effect: NoSchedule}]\n",
		"other requirements": template("{key: karpenter.sh/capacity-type, operator: In, values: [spot]}") +
			"    taints: [{key: a, effect: NoSchedule}, {key: b, effect: NoExecute}]\n",
		"budgets, limits and weight": template() + "    taints: [{key: a, effect: NoSchedule}, {key: b, effect: NoExecute}]\n" +
			"disruption: {consolidateAfter: 5m, budgets: [{nodes: '1'}]}\nlimits: {cpu: 10}\nweight: 5\n",
		"explicit default expireAfter":    template() + "    expireAfter: 720h\n    taints: [{key: a, effect: NoSchedule}, {key: b, effect: NoExecute}]\n",
		"same expireAfter written longer": template() + "    expireAfter: 719h60m\n    taints: [{key: a, effect: NoSchedule}, {key: b, effect: NoExecute}]\n",
	}
	for name, spec := range same {
		if got := poolHash(t, spec); got != base {
			t.Errorf("%s changed the hash: %s != %s", name, got, base)
		}
	}
	differ := map[string]string{
		"a taint removed": template() + "    taints: [{key: a, effect: NoSchedule}]\n",
		"a label":         "template:\n  metadata: {labels: {team: a}}\n" + template()[len("template:\n"):] + "    taints: [{key: a, effect: NoSchedule}, {key: b, effect: NoExecute}]\n",
		"an annotation":   "template:\n  metadata: {annotations: {team: a}}\n" + template()[len("template:\n"):] + "    taints: [{key: a, effect: NoSchedule}, {key: b, effect: NoExecute}]\n",
		"expireAfter":     template() + "    expireAfter: 24h\n    taints: [{key: a, effect: NoSchedule}, {key: b, effect: NoExecute}]\n",
		"grace period":    template() + "    terminationGracePeriod: 1h\n    taints: [{key: a, effect: NoSchedule}, {key: b, effect: NoExecute}]\n",
		"node class":      strings.Replace(template(), "name: default", "name: other", 1) + "    taints: [{key: a, effect: NoSchedule}, {key: b, effect: NoExecute}]\n",
		"startup taint":   template() + "    taints: [{key: a, effect: NoSchedule}]\n    startupTaints: [{key: b, effect: NoExecute}]\n",
	}
	seen := map[string]string{base: "base"}
	for name, spec := range differ {
		got := poolHash(t, spec)
		if other, dup := seen[got]; dup {
			t.Errorf("%s has the same hash as %s", name, other)
		}
		seen[got] = name
	}
}

func TestNodePoolHashDoesNotNeedDefaults(t *testing.T) {
	c := mustParse(t, nodePoolDoc(template()))
	built := &NodePool{}
	built.Name = "default"
	built.Spec.Template.Spec.NodeClassRef = &NodeClassReference{Group: AWSGroup, Kind: EC2NodeClassKind, Name: "default"}
	if built.Hash() != c.NodePools[0].Hash() {
		t.Error("an un-defaulted object hashes as its defaulted form")
	}
	if built.Spec.Template.Spec.ExpireAfter.IsSet() {
		t.Error("Hash must not modify the object")
	}
}

func TestEC2NodeClassHash(t *testing.T) {
	base := classHash(t, "tags: {team: a, app: b}\n")
	same := map[string]string{
		"other subnets":            "tags: {app: b, team: a}\nsubnetSelectorTerms: [{id: subnet-1}]\n",
		"amiFamily matching alias": "amiFamily: AL2023\ntags: {team: a, app: b}\n",
		"default metadata spelled": "tags: {team: a, app: b}\nmetadataOptions: {httpTokens: required, httpPutResponseHopLimit: 1}\n",
		"pinned alias (AMI drift)": "tags: {team: a, app: b}\namiSelectorTerms: [{alias: al2023@v20250101}]\n",
	}
	for name, extra := range same {
		var drop []string
		if strings.Contains(extra, "subnetSelectorTerms") {
			drop = append(drop, "subnetSelectorTerms")
		}
		if strings.Contains(extra, "amiSelectorTerms") {
			drop = append(drop, "amiSelectorTerms")
		}
		if got := classHash(t, extra, drop...); got != base {
			t.Errorf("%s changed the hash", name)
		}
	}
	differ := map[string]string{
		"user data":     "tags: {team: a, app: b}\nuserData: echo hi\n",
		"a tag":         "tags: {team: a}\n",
		"hop limit":     "tags: {team: a, app: b}\nmetadataOptions: {httpPutResponseHopLimit: 2}\n",
		"custom family": "tags: {team: a, app: b}\namiFamily: Custom\n",
		"kubelet":       "tags: {team: a, app: b}\nkubelet: {maxPods: 20}\n",
		"root volume":   "tags: {team: a, app: b}\nblockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: 50Gi}}]\n",
	}
	seen := map[string]string{base: "base"}
	for name, extra := range differ {
		got := classHash(t, extra)
		if other, dup := seen[got]; dup {
			t.Errorf("%s has the same hash as %s", name, other)
		}
		seen[got] = name
	}
}
