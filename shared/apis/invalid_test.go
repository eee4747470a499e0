package apis

import (
	"fmt"
	"slices"
	"strings"
	"testing"
)

// nodePoolDoc is a NodePool document named default whose spec is given
// (indented by the caller's YAML, two spaces per level under spec).
func nodePoolDoc(spec string) string {
	return "apiVersion: karpenter.sh/v1\nkind: NodePool\nmetadata:\n  name: default\nspec:\n" + indent(spec, "  ")
}

// validTemplate is a template that passes validation; with requirements
// replaced by reqs when given.
func template(reqs ...string) string {
	if len(reqs) == 0 {
		reqs = []string{"{key: kubernetes.io/arch, operator: In, values: [amd64]}"}
	}
	var b strings.Builder
	b.WriteString("template:\n  spec:\n    nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}\n    requirements:\n")
	for _, r := range reqs {
		b.WriteString("      - " + r + "\n")
	}
	return b.String()
}

// nodeClassDoc is an EC2NodeClass document named default: a valid spec with
// the given YAML lines appended (or replacing keys given in drop).
func nodeClassDoc(extra string, drop ...string) string {
	base := map[string]string{
		"role":                       "role: KarpenterNodeRole-test\n",
		"amiSelectorTerms":           "amiSelectorTerms: [{alias: al2023@latest}]\n",
		"subnetSelectorTerms":        "subnetSelectorTerms: [{tags: {karpenter.sh/discovery: test}}]\n",
		"securityGroupSelectorTerms": "securityGroupSelectorTerms: [{tags: {karpenter.sh/discovery: test}}]\n",
	}
	var spec strings.Builder
	for _, k := range []string{"role", "amiSelectorTerms", "subnetSelectorTerms", "securityGroupSelectorTerms"} {
		if !slices.Contains(drop, k) {
			spec.WriteString(base[k])
		}
	}
	spec.WriteString(extra)
	return "apiVersion: karpenter.k8s.aws/v1\nkind: EC2NodeClass\nmetadata:\n  name: default\nspec:\n" + indent(spec.String(), "  ")
}

func indent(s, prefix string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = prefix + l
		}
	}
	return strings.Join(lines, "\n") + "\n"
}

const (
	npPrefix = "test.yaml: document 1 (NodePool default): "
	ncPrefix = "test.yaml: document 1 (EC2NodeClass default): "
)

var invalidCases = []struct {
	name string
	doc  string
	want string
}{
	// The second document's third requirement.
	{"operator Ge", nodeClassDoc("") + "---\n" + nodePoolDoc(template(
		"{key: kubernetes.io/arch, operator: In, values: [amd64]}",
		"{key: karpenter.sh/capacity-type, operator: In, values: [spot]}",
		"{key: karpenter.k8s.aws/instance-cpu, operator: Ge, values: ['4']}")),
		`test.yaml: document 2 (NodePool default): spec.template.spec.requirements[2].operator: "Ge" is not one of In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte`},
	{"operator missing", nodePoolDoc(template("{key: kubernetes.io/arch, values: [amd64]}")),
		npPrefix + `spec.template.spec.requirements[0].operator: required (one of In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte)`},
	{"In without values", nodePoolDoc(template("{key: kubernetes.io/arch, operator: In}")),
		npPrefix + `spec.template.spec.requirements[0].values: operator In needs at least one value`},
	{"Gt with two values", nodePoolDoc(template("{key: karpenter.k8s.aws/instance-generation, operator: Gt, values: ['1', '2']}")),
		npPrefix + `spec.template.spec.requirements[0].values: operator Gt needs exactly one non-negative integer value, got ["1", "2"]`},
	{"Lt not a number", nodePoolDoc(template("{key: karpenter.k8s.aws/instance-cpu, operator: Lt, values: [eight]}")),
		npPrefix + `spec.template.spec.requirements[0].values: operator Lt needs exactly one non-negative integer value, got ["eight"]`},
	{"minValues above values", nodePoolDoc(template("{key: karpenter.k8s.aws/instance-family, operator: In, values: [m5, c5], minValues: 3}")),
		npPrefix + `spec.template.spec.requirements[0].minValues: 3 is more than the number of values (2)`},
	{"minValues out of range", nodePoolDoc(template("{key: node.kubernetes.io/instance-type, operator: Exists, minValues: 51}")),
		npPrefix + `spec.template.spec.requirements[0].minValues: 51 is out of range 1..50`},
	{"hostname requirement", nodePoolDoc(template("{key: kubernetes.io/hostname, operator: In, values: [a]}")),
		npPrefix + `spec.template.spec.requirements[0].key: label "kubernetes.io/hostname" is restricted`},
	{"nodepool requirement", nodePoolDoc(template("{key: karpenter.sh/nodepool, operator: In, values: [a]}")),
		npPrefix + `spec.template.spec.requirements[0].key: label "karpenter.sh/nodepool" is restricted: Nodewright sets it to the NodePool's name`},
	{"karpenter.sh domain", nodePoolDoc(template("{key: karpenter.sh/custom, operator: Exists}")),
		npPrefix + `spec.template.spec.requirements[0].key: label domain "karpenter.sh" is restricted ("karpenter.sh/custom" is not one of its well-known labels)`},
	{"karpenter.k8s.aws domain", nodePoolDoc(template("{key: karpenter.k8s.aws/instance-color, operator: Exists}")),
		npPrefix + `spec.template.spec.requirements[0].key: label domain "karpenter.k8s.aws" is restricted ("karpenter.k8s.aws/instance-color" is not one of its well-known labels)`},
	{"kubernetes.io domain", nodePoolDoc(template("{key: kubernetes.io/custom, operator: Exists}")),
		npPrefix + `spec.template.spec.requirements[0].key: label domain "kubernetes.io" is restricted ("kubernetes.io/custom" is not one of its well-known labels)`},
	{"k8s.io sub-domain", nodePoolDoc(template("{key: example.k8s.io/x, operator: Exists}")),
		npPrefix + `spec.template.spec.requirements[0].key: label domain "k8s.io" is restricted ("example.k8s.io/x" is not one of its well-known labels)`},
	{"key syntax", nodePoolDoc(template("{key: 'my key', operator: Exists}")),
		npPrefix + `spec.template.spec.requirements[0].key: "my key" is not a valid label key: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`},
	{"value syntax", nodePoolDoc(template("{key: topology.kubernetes.io/zone, operator: In, values: ['us east']}")),
		npPrefix + `spec.template.spec.requirements[0].values[0]: "us east" is not a valid label value: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`},
	{"unquoted numbers", nodePoolDoc(template("{key: karpenter.k8s.aws/instance-cpu, operator: In, values: [2, 4]}")),
		npPrefix + `spec.template.spec.requirements[0].values[0]: 2 is not a valid string (quote it: "2")` + "\n" +
			npPrefix + `spec.template.spec.requirements[0].values[1]: 4 is not a valid string (quote it: "4")`},
	{"too many requirements", nodePoolDoc(template(repeat("{key: example.com/k, operator: Exists}", 101)...)),
		npPrefix + `spec.template.spec.requirements: must have at most 100 items, has 101`},
	{"label nodepool", nodePoolDoc("template:\n  metadata:\n    labels: {karpenter.sh/nodepool: x}\n" + template()[len("template:\n"):]),
		npPrefix + `spec.template.metadata.labels[karpenter.sh/nodepool]: label "karpenter.sh/nodepool" is restricted: Nodewright sets it to the NodePool's name`},
	{"label value too long", nodePoolDoc("template:\n  metadata:\n    labels: {team: " + strings.Repeat("a", 64) + "}\n" + template()[len("template:\n"):]),
		npPrefix + `spec.template.metadata.labels[team]: "` + strings.Repeat("a", 64) + `" is not a valid label value: must be no more than 63 bytes`},
	{"taint effect", nodePoolDoc(template() + "    taints: [{key: dedicated, effect: NoScheduled}]\n"),
		npPrefix + `spec.template.spec.taints[0].effect: "NoScheduled" is not one of NoSchedule, PreferNoSchedule, NoExecute`},
	{"taint key", nodePoolDoc(template() + "    startupTaints: [{key: -bad, effect: NoSchedule}]\n"),
		npPrefix + `spec.template.spec.startupTaints[0].key: "-bad" is not a valid taint key: name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`},
	{"duplicate taint", nodePoolDoc(template() + "    taints: [{key: gpu, effect: NoSchedule}]\n    startupTaints: [{key: gpu, value: x, effect: NoSchedule}]\n"),
		npPrefix + `spec.template.spec.startupTaints[0]: duplicate taint "gpu:NoSchedule": taints and startupTaints may hold each key and effect once`},
	{"no nodeClassRef", nodePoolDoc("template:\n  spec:\n    requirements: []\n"),
		npPrefix + `spec.template.spec.nodeClassRef: required (group, kind and name of the EC2NodeClass)`},
	{"nodeClassRef group with version", nodePoolDoc("template:\n  spec:\n    nodeClassRef: {group: karpenter.k8s.aws/v1, kind: EC2NodeClass, name: default}\n    requirements: []\n"),
		npPrefix + `spec.template.spec.nodeClassRef.group: "karpenter.k8s.aws/v1" must be an API group without a version (like karpenter.k8s.aws)`},
	{"no requirements", nodePoolDoc("template:\n  spec:\n    nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}\n"),
		npPrefix + `spec.template.spec.requirements: required (a list, may be empty)`},
	{"weight 0", nodePoolDoc(template() + "weight: 0\n"), npPrefix + `spec.weight: 0 is out of range 1..100`},
	{"weight 101", nodePoolDoc(template() + "weight: 101\n"), npPrefix + `spec.weight: 101 is out of range 1..100`},
	{"weight string", nodePoolDoc(template() + "weight: high\n"), npPrefix + `spec.weight: "high" is not a valid integer`},
	{"budget nodes", nodePoolDoc(template() + "disruption:\n  consolidateAfter: 30s\n  budgets: [{nodes: '10.5%'}]\n"),
		npPrefix + `spec.disruption.budgets[0].nodes: "10.5%" must be a node count (like 5) or a percentage from 0% to 100% (like 10%)`},
	{"budget percent over 100", nodePoolDoc(template() + "disruption:\n  consolidateAfter: 30s\n  budgets: [{nodes: '101%'}]\n"),
		npPrefix + `spec.disruption.budgets[0].nodes: "101%" must be a node count (like 5) or a percentage from 0% to 100% (like 10%)`},
	{"budget schedule without duration", nodePoolDoc(template() + "disruption:\n  consolidateAfter: 30s\n  budgets: [{nodes: '0', schedule: '0 9 * * mon-fri'}]\n"),
		npPrefix + `spec.disruption.budgets[0].duration: required (schedule and duration go together)`},
	{"budget duration without schedule", nodePoolDoc(template() + "disruption:\n  consolidateAfter: 30s\n  budgets: [{nodes: '0', duration: 8h}]\n"),
		npPrefix + `spec.disruption.budgets[0].schedule: required (schedule and duration go together)`},
	{"budget cron out of range", nodePoolDoc(template() + "disruption:\n  consolidateAfter: 30s\n  budgets: [{nodes: '0', schedule: '61 * * * *', duration: 1h}]\n"),
		npPrefix + `spec.disruption.budgets[0].schedule: "61 * * * *" is not a valid cron schedule: end of range (61) above maximum (59): 61`},
	{"budget cron six fields", nodePoolDoc(template() + "disruption:\n  consolidateAfter: 30s\n  budgets: [{nodes: '0', schedule: '0 0 9 * * *', duration: 1h}]\n"),
		npPrefix + `spec.disruption.budgets[0].schedule: "0 0 9 * * *" is not a valid cron schedule: want 5 fields (minute hour day-of-month month day-of-week) or one of @yearly, @annually, @monthly, @weekly, @daily, @midnight, @hourly; time zones are not supported`},
	{"budget cron never fires", nodePoolDoc(template() + "disruption:\n  consolidateAfter: 30s\n  budgets: [{nodes: '0', schedule: '0 0 31 4 *', duration: 1h}]\n"),
		npPrefix + `spec.disruption.budgets[0].schedule: "0 0 31 4 *" never fires (no such date)`},
	{"budget reason", nodePoolDoc(template() + "disruption:\n  consolidateAfter: 30s\n  budgets: [{nodes: '1', reasons: [Expired]}]\n"),
		npPrefix + `spec.disruption.budgets[0].reasons[0]: "Expired" is not one of Underutilized, Empty, Drifted`},
	{"budget duration seconds", nodePoolDoc(template() + "disruption:\n  consolidateAfter: 30s\n  budgets: [{nodes: '0', schedule: '@daily', duration: 90s}]\n"),
		npPrefix + `spec.disruption.budgets[0].duration: "1m30s" must be a non-negative duration in whole minutes (like 8h or 1h30m)`},
	{"consolidateAfter days", nodePoolDoc(template() + "disruption:\n  consolidateAfter: 5d\n"),
		npPrefix + `spec.disruption.consolidateAfter: "5d" must be a duration in s, m or h (like 720h or 1h30m) or Never`},
	{"consolidateAfter missing", nodePoolDoc(template() + "disruption:\n  consolidationPolicy: WhenEmpty\n"),
		npPrefix + `spec.disruption.consolidateAfter: required (a duration like 30s, or Never)`},
	{"expireAfter fraction", nodePoolDoc(template() + "    expireAfter: 1.5h\n"),
		npPrefix + `spec.template.spec.expireAfter: "1.5h" must be a duration in s, m or h (like 720h or 1h30m) or Never`},
	{"v1beta1 policy", nodePoolDoc(template() + "disruption:\n  consolidateAfter: Never\n  consolidationPolicy: WhenUnderutilized\n"),
		npPrefix + `spec.disruption.consolidationPolicy: "WhenUnderutilized" is the v1beta1 name: Nodewright reads karpenter.sh/v1, use WhenEmptyOrUnderutilized`},
	{"terminationGracePeriod days", nodePoolDoc(template() + "    terminationGracePeriod: 2d\n"),
		npPrefix + `spec.template.spec.terminationGracePeriod: "2d" is not a valid duration (like 30s or 1h30m): time: unknown unit "d" in duration "2d"`},
	{"limit not a quantity", nodePoolDoc(template() + "limits: {cpu: 1x}\n"),
		npPrefix + `spec.limits[cpu]: "1x" is not a valid quantity (like 500m, 4 or 16Gi)`},
	{"quantity exponent", nodePoolDoc(template() + "limits: {cpu: '1e-999999999'}\n"),
		npPrefix + `spec.limits[cpu]: "1e-999999999" is not a valid quantity (like 500m, 4 or 16Gi): exponent out of range -18..18`},
	{"volume size exponent", nodeClassDoc("blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: 1e99}}]\n"),
		ncPrefix + `spec.blockDeviceMappings[0].ebs.volumeSize: 1e+99 is not a valid quantity (like 500m, 4 or 16Gi): exponent out of range -18..18`},
	{"reserved exponent", nodeClassDoc("kubelet: {systemReserved: {memory: '1e-999999999'}}\n"),
		ncPrefix + `spec.kubelet.systemReserved[memory]: "1e-999999999" is not a valid quantity`},
	{"absurd cpu limit", nodePoolDoc(template() + "limits: {cpu: '9223372036854776'}\n"),
		npPrefix + `spec.limits[cpu]: "9223372036854776" is too large: at most 4503599627370`},
	{"absurd memory limit", nodePoolDoc(template() + "limits: {memory: 1e18}\n"),
		npPrefix + `spec.limits[memory]: "1E" is too large: at most 4Pi`},
	{"absurd kube reserved", nodeClassDoc("kubelet: {kubeReserved: {cpu: '9223372036854776'}}\n"),
		ncPrefix + `spec.kubelet.kubeReserved[cpu]: "9223372036854776" is too large: at most 4503599627370`},
	{"absurd system reserved", nodeClassDoc("kubelet: {systemReserved: {memory: 9Ei}}\n"),
		ncPrefix + `spec.kubelet.systemReserved[memory]: "9Ei" is too large: at most 4Pi`},
	{"absurd eviction threshold", nodeClassDoc("kubelet: {evictionHard: {memory.available: '1e18'}}\n"),
		ncPrefix + `spec.kubelet.evictionHard[memory.available]: "1e18" is too large: at most 4Pi`},
	{"negative limit", nodePoolDoc(template() + "limits: {memory: -1Gi}\n"),
		npPrefix + `spec.limits[memory]: "-1Gi" must not be negative`},
	{"unknown limit", nodePoolDoc(template() + "limits: {cpus: 8}\n"),
		npPrefix + `spec.limits[cpus]: "cpus" is not a known resource: use one of cpu, memory, ephemeral-storage, pods, nodes, storage, hugepages-<size>, or an extended resource with a domain (like nvidia.com/gpu)`},
	{"static pool with cpu limit", nodePoolDoc(template() + "replicas: 3\nlimits: {cpu: 8}\n"),
		npPrefix + `spec.limits[cpu]: only limits.nodes is supported on a static NodePool (replicas is set)`},
	{"unknown field", nodePoolDoc("template:\n  spec:\n    nodeClasRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}\n    requirements: []\n"),
		npPrefix + `spec.template.spec.nodeClasRef: unknown field (did you mean "nodeClassRef"?)`},
	{"unknown field in requirement", nodePoolDoc(template("{key: kubernetes.io/arch, operator: In, value: [amd64]}")),
		npPrefix + `spec.template.spec.requirements[0].value: unknown field (did you mean "values"?)`},
	{"bad name", strings.Replace(nodePoolDoc(template()), "name: default", "name: Default_Pool", 1),
		`test.yaml: document 1 (NodePool Default_Pool): metadata.name: "Default_Pool" is not a valid name: a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`},
	{"v1beta1", strings.Replace(nodePoolDoc(template()), "karpenter.sh/v1", "karpenter.sh/v1beta1", 1),
		npPrefix + `apiVersion: "karpenter.sh/v1beta1" is not supported: Nodewright reads karpenter.sh/v1 (see Karpenter's v1 migration guide)`},
	{"legacy kind", "apiVersion: karpenter.sh/v1alpha5\nkind: Provisioner\nmetadata: {name: default}\nspec: {}\n",
		`test.yaml: document 1 (Provisioner default): kind: Provisioner (karpenter.sh/v1alpha5) is not supported: Nodewright reads NodePool karpenter.sh/v1 and EC2NodeClass karpenter.k8s.aws/v1`},
	{"missing kind", "apiVersion: karpenter.sh/v1\nmetadata: {name: default}\n",
		`test.yaml: document 1: kind: required`},
	{"not an object", "- a\n- b\n",
		`test.yaml: document 1: not a Kubernetes object: want a mapping with apiVersion and kind, got ["a","b"]`},
	{"yaml duplicate key", "# leading comment\n---\n" + nodePoolDoc(template()+"weight: 1\nweight: 2\n"),
		`test.yaml: document 1: yaml: line 14: key "weight" already set in map`},
	{"yaml syntax", nodeClassDoc("") + "---\nkind: [\n",
		`test.yaml: document 2: yaml: line 11: did not find expected node content`},
	{"yaml flow style", "{apiVersion: karpenter.sh/v1, kind: NodePool, metadata: {name: default}, spec: {weight: 0}}\n",
		npPrefix + "spec.template.spec.nodeClassRef: required (group, kind and name of the EC2NodeClass)\n" +
			npPrefix + "spec.template.spec.requirements: required (a list, may be empty)\n" +
			npPrefix + "spec.weight: 0 is out of range 1..100"},
	{"json duplicate field", `{"apiVersion":"karpenter.sh/v1","kind":"NodePool","metadata":{"name":"default"},"spec":{"weight":1,"weight":2,"template":{"spec":{"nodeClassRef":{"group":"karpenter.k8s.aws","kind":"EC2NodeClass","name":"default"},"requirements":[]}}}}`,
		npPrefix + `spec.weight: duplicate field`},
	{"list item", "apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(strings.TrimSpace(nodePoolDoc(template()+"weight: 0\n")), "\n", "\n  ") + "\n",
		`test.yaml: document 1 item 1 (NodePool default): spec.weight: 0 is out of range 1..100`},

	// EC2NodeClass.
	{"role and instanceProfile", nodeClassDoc("instanceProfile: KarpenterNodeInstanceProfile\n"),
		ncPrefix + `spec.instanceProfile: Nodewright launches nodes with its stack's instance profile; remove instanceProfile and set role to the stack's node role`},
	{"no role", nodeClassDoc("", "role"),
		ncPrefix + `spec.role: required (or instanceProfile: exactly one of them)`},
	{"no amiSelectorTerms", nodeClassDoc("", "amiSelectorTerms"),
		ncPrefix + `spec.amiSelectorTerms: required (at least one term, like {alias: al2023@latest})`},
	{"alias format", nodeClassDoc("amiSelectorTerms: [{alias: al2023}]\n", "amiSelectorTerms"),
		ncPrefix + `spec.amiSelectorTerms[0].alias: "al2023" must have the form family@version (like al2023@latest)`},
	{"alias family", nodeClassDoc("amiSelectorTerms: [{alias: ubuntu@latest}]\n", "amiSelectorTerms"),
		ncPrefix + `spec.amiSelectorTerms[0].alias: "ubuntu@latest": family "ubuntu" is not one of al2, al2023, bottlerocket, windows2019, windows2022, windows2025`},
	{"windows pinned", nodeClassDoc("amiSelectorTerms: [{alias: windows2022@v20240101}]\n", "amiSelectorTerms"),
		ncPrefix + `spec.amiSelectorTerms[0].alias: "windows2022@v20240101": windows families support only version latest (like windows2022@latest)`},
	{"alias not alone", nodeClassDoc("amiSelectorTerms: [{alias: al2023@latest}, {id: ami-0123456789abcdef0}]\n", "amiSelectorTerms"),
		ncPrefix + `spec.amiSelectorTerms: a term with an alias must be the only term (has 2 terms)`},
	{"alias with tags", nodeClassDoc("amiSelectorTerms: [{alias: al2023@latest, tags: {team: a}}]\n", "amiSelectorTerms"),
		ncPrefix + `spec.amiSelectorTerms[0].alias: must not be combined with tags in the same term`},
	{"id with name", nodeClassDoc("amiFamily: AL2023\namiSelectorTerms: [{id: ami-0123, name: my-ami}]\n", "amiSelectorTerms"),
		ncPrefix + `spec.amiSelectorTerms[0].id: must not be combined with name in the same term`},
	{"ami id pattern", nodeClassDoc("amiFamily: AL2023\namiSelectorTerms: [{id: img-0123}]\n", "amiSelectorTerms"),
		ncPrefix + `spec.amiSelectorTerms[0].id: "img-0123" must look like ami-0123456789abcdef0`},
	{"owner only", nodeClassDoc("amiFamily: AL2023\namiSelectorTerms: [{owner: self}]\n", "amiSelectorTerms"),
		ncPrefix + `spec.amiSelectorTerms[0]: must set one of alias, id, name, ssmParameter, tags`},
	{"amiFamily mismatch", nodeClassDoc("amiFamily: AL2\n"),
		ncPrefix + `spec.amiFamily: "AL2" does not match the alias family AL2023: set AL2023 or Custom, or leave it unset`},
	{"amiFamily missing", nodeClassDoc("amiSelectorTerms: [{tags: {team: a}}]\n", "amiSelectorTerms"),
		ncPrefix + `spec.amiFamily: required (amiSelectorTerms have no alias, so the family must be named: one of AL2, AL2023, Bottlerocket, Custom, Windows2019, Windows2022, Windows2025)`},
	{"amiFamily enum", nodeClassDoc("amiFamily: Ubuntu\n"),
		ncPrefix + `spec.amiFamily: "Ubuntu" is not one of AL2, AL2023, Bottlerocket, Custom, Windows2019, Windows2022, Windows2025`},
	{"no subnets", nodeClassDoc("subnetSelectorTerms: []\n", "subnetSelectorTerms"),
		ncPrefix + `spec.subnetSelectorTerms: required (at least one term, like {tags: {karpenter.sh/discovery: my-cluster}})`},
	{"subnet id pattern", nodeClassDoc("subnetSelectorTerms: [{id: sub-123}]\n", "subnetSelectorTerms"),
		ncPrefix + `spec.subnetSelectorTerms[0].id: "sub-123" must look like subnet-0123456789abcdef0`},
	{"empty selector tag value", nodeClassDoc("subnetSelectorTerms: [{tags: {Name: ''}}]\n", "subnetSelectorTerms"),
		ncPrefix + `spec.subnetSelectorTerms[0].tags[Name]: tag value must not be empty (use "*" to match any value)`},
	{"security group id and name", nodeClassDoc("securityGroupSelectorTerms: [{id: sg-123, name: default}]\n", "securityGroupSelectorTerms"),
		ncPrefix + `spec.securityGroupSelectorTerms[0].id: must not be combined with name in the same term`},
	{"capacity reservation owner", nodeClassDoc("capacityReservationSelectorTerms: [{tags: {a: b}, ownerID: '1234'}]\n"),
		ncPrefix + `spec.capacityReservationSelectorTerms[0].ownerID: "1234" must be a 12-digit AWS account ID`},
	{"restricted cluster tag", nodeClassDoc("tags: {kubernetes.io/cluster/prod: owned}\n"),
		ncPrefix + `spec.tags[kubernetes.io/cluster/prod]: tag key "kubernetes.io/cluster/prod" is restricted: Nodewright sets it on the instances it launches`},
	{"restricted nodepool tag", nodeClassDoc("tags: {karpenter.sh/nodepool: x}\n"),
		ncPrefix + `spec.tags[karpenter.sh/nodepool]: tag key "karpenter.sh/nodepool" is restricted: Nodewright sets it on the instances it launches`},
	{"empty tag key", nodeClassDoc("tags: {'': x}\n"),
		ncPrefix + `spec.tags[]: tag key must not be empty`},
	{"httpTokens", nodeClassDoc("metadataOptions: {httpTokens: disabled}\n"),
		ncPrefix + `spec.metadataOptions.httpTokens: "disabled" is not one of required, optional`},
	{"yaml boolean", nodeClassDoc("metadataOptions: {httpEndpoint: off}\n"),
		ncPrefix + `spec.metadataOptions.httpEndpoint: false is not a valid string (YAML reads unquoted yes, no, on, off, true and false as booleans: quote the value)`},
	{"hop limit", nodeClassDoc("metadataOptions: {httpPutResponseHopLimit: 65}\n"),
		ncPrefix + `spec.metadataOptions.httpPutResponseHopLimit: 65 is out of range 1..64`},
	{"two root volumes", nodeClassDoc("blockDeviceMappings:\n- {deviceName: /dev/xvda, rootVolume: true, ebs: {volumeSize: 20Gi}}\n- {deviceName: /dev/xvdb, rootVolume: true, ebs: {volumeSize: 20Gi}}\n"),
		ncPrefix + `spec.blockDeviceMappings[1].rootVolume: only one block device mapping may be the root volume`},
	{"ebs without size", nodeClassDoc("blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeType: gp3}}]\n"),
		ncPrefix + `spec.blockDeviceMappings[0].ebs.volumeSize: required (or snapshotID)`},
	{"volume type", nodeClassDoc("blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: 20Gi, volumeType: gp4}}]\n"),
		ncPrefix + `spec.blockDeviceMappings[0].ebs.volumeType: "gp4" is not one of standard, io1, io2, gp2, sc1, st1, gp3`},
	{"volume size unit", nodeClassDoc("blockDeviceMappings: [{deviceName: /dev/xvda, ebs: {volumeSize: 100Mi}}]\n"),
		ncPrefix + `spec.blockDeviceMappings[0].ebs.volumeSize: "100Mi" must be whole Gi, G, Ti or T, from 1Gi to 59000Gi (or 1G to 64000G), like 100Gi`},
	{"reserved key", nodeClassDoc("kubelet: {systemReserved: {gpu: '1'}}\n"),
		ncPrefix + `spec.kubelet.systemReserved[gpu]: "gpu" is not one of cpu, memory, ephemeral-storage, pid`},
	{"negative reserved", nodeClassDoc("kubelet: {kubeReserved: {cpu: -100m}}\n"),
		ncPrefix + `spec.kubelet.kubeReserved[cpu]: "-100m" must not be negative`},
	{"eviction signal", nodeClassDoc("kubelet: {evictionHard: {memory.free: 5%}}\n"),
		ncPrefix + `spec.kubelet.evictionHard[memory.free]: "memory.free" is not one of memory.available, nodefs.available, nodefs.inodesFree, imagefs.available, imagefs.inodesFree, pid.available`},
	{"eviction percent", nodeClassDoc("kubelet: {evictionHard: {memory.available: 110%}}\n"),
		ncPrefix + `spec.kubelet.evictionHard[memory.available]: "110%" must be a percentage from 0% to 100%`},
	{"evictionSoft without grace", nodeClassDoc("kubelet: {evictionSoft: {memory.available: 500Mi}}\n"),
		ncPrefix + `spec.kubelet.evictionSoft[memory.available]: has no matching evictionSoftGracePeriod`},
	{"grace without evictionSoft", nodeClassDoc("kubelet: {evictionSoftGracePeriod: {nodefs.available: 1m}}\n"),
		ncPrefix + `spec.kubelet.evictionSoftGracePeriod[nodefs.available]: has no matching evictionSoft threshold`},
	{"image gc", nodeClassDoc("kubelet: {imageGCHighThresholdPercent: 50, imageGCLowThresholdPercent: 60}\n"),
		ncPrefix + `spec.kubelet.imageGCHighThresholdPercent: 50 must be greater than imageGCLowThresholdPercent (60)`},
	{"cluster DNS", nodeClassDoc("kubelet: {clusterDNS: [10.0.0.300]}\n"),
		ncPrefix + `spec.kubelet.clusterDNS[0]: "10.0.0.300" is not an IP address`},
	{"instanceStorePolicy", nodeClassDoc("instanceStorePolicy: RAID1\n"),
		ncPrefix + `spec.instanceStorePolicy: "RAID1" is not one of RAID0`},
	{"status type error", nodeClassDoc("") + "status:\n  subnets: {id: subnet-1}\n",
		ncPrefix + `status.subnets: {"id":"subnet-1"} is not a valid list`},
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func TestInvalidInputs(t *testing.T) {
	if len(invalidCases) < 40 {
		t.Fatalf("want at least 40 invalid cases, have %d", len(invalidCases))
	}
	seen := map[string]bool{}
	for _, tc := range invalidCases {
		if seen[tc.name] {
			t.Fatalf("duplicate case name %q", tc.name)
		}
		seen[tc.name] = true
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc), "test.yaml")
			if err == nil {
				t.Fatalf("no error for:\n%s", tc.doc)
			}
			if got := err.Error(); got != tc.want {
				t.Errorf("error\n got: %s\nwant: %s", got, tc.want)
			}
		})
	}
}

// Every document's errors are reported, not only the first one's.
func TestParseReportsEveryDocument(t *testing.T) {
	doc := nodePoolDoc(template()+"weight: 0\n") + "---\n" + nodeClassDoc("metadataOptions: {httpTokens: none}\n") + "---\n" +
		strings.Replace(nodePoolDoc(template()), "name: default", "name: good", 1)
	c, err := Parse([]byte(doc), "mixed.yaml")
	want := "mixed.yaml: document 1 (NodePool default): spec.weight: 0 is out of range 1..100\n" +
		`mixed.yaml: document 2 (EC2NodeClass default): spec.metadataOptions.httpTokens: "none" is not one of required, optional`
	if err == nil || err.Error() != want {
		t.Fatalf("got %v\nwant %s", err, want)
	}
	if c == nil || len(c.NodePools) != 1 || c.NodePools[0].Name != "good" {
		t.Fatalf("the valid document is kept: %+v", c)
	}
}

// Several problems in one object come out sorted by field path, list indexes
// compared as numbers.
func TestValidationErrorOrder(t *testing.T) {
	reqs := repeat("{key: kubernetes.io/arch, operator: In, values: [amd64]}", 12)
	reqs[10] = "{key: a, operator: Ge}"
	reqs[2] = "{key: b, operator: Le}"
	_, err := Parse([]byte(nodePoolDoc(template(reqs...)+"weight: 0\n")), "order.yaml")
	var lines []string
	for _, l := range strings.Split(fmt.Sprint(err), "\n") {
		lines = append(lines, strings.TrimPrefix(l, "order.yaml: document 1 (NodePool default): "))
	}
	want := []string{
		`spec.template.spec.requirements[2].operator: "Le" is not one of In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte`,
		`spec.template.spec.requirements[10].operator: "Ge" is not one of In, NotIn, Exists, DoesNotExist, Gt, Lt, Gte, Lte`,
		`spec.weight: 0 is out of range 1..100`,
	}
	if strings.Join(lines, "\n") != strings.Join(want, "\n") {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(lines, "\n"), strings.Join(want, "\n"))
	}
}
