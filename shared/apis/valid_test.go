package apis

import (
	"strings"
	"testing"
)

// Inputs Karpenter accepts must load: Nodewright reads Karpenter's YAML
// unchanged.
func TestValidEdgeCases(t *testing.T) {
	cases := []struct{ name, doc string }{
		{"Exists with values and minValues", nodePoolDoc(template("{key: node.kubernetes.io/instance-type, operator: Exists, values: [ignored], minValues: 10}"))},
		{"NotIn without values", nodePoolDoc(template("{key: karpenter.k8s.aws/instance-family, operator: NotIn}"))},
		{"DoesNotExist", nodePoolDoc(template("{key: karpenter.k8s.aws/instance-gpu-count, operator: DoesNotExist}"))},
		{"Gt zero", nodePoolDoc(template("{key: karpenter.k8s.aws/instance-gpu-count, operator: Gt, values: ['0']}"))},
		{"deprecated beta labels", nodePoolDoc(template(
			"{key: beta.kubernetes.io/arch, operator: In, values: [amd64]}",
			"{key: failure-domain.beta.kubernetes.io/zone, operator: In, values: [us-east-1a]}",
			"{key: beta.kubernetes.io/instance-type, operator: In, values: [m5.large]}"))},
		{"allowed sub-domains and custom keys", nodePoolDoc(template(
			"{key: node.kubernetes.io/custom, operator: Exists}",
			"{key: node-restriction.kubernetes.io/team, operator: Exists}",
			"{key: kops.k8s.io/instancegroup, operator: Exists}",
			"{key: topology.k8s.aws/zone-id, operator: In, values: [use1-az1]}",
			"{key: karpenter.k8s.aws/instance-capability-flex, operator: In, values: ['false']}",
			"{key: karpenter.k8s.aws/ec2nodeclass, operator: In, values: [default]}",
			"{key: example.com/team, operator: In, values: [a]}",
			"{key: team, operator: In, values: [a]}"))},
		{"capacity-type label and empty-value taint", nodePoolDoc("template:\n  metadata:\n    labels: {karpenter.sh/capacity-type: spot, node.kubernetes.io/role: gpu}\n" +
			template()[len("template:\n"):] + "    taints: [{key: dedicated, effect: NoSchedule}, {key: dedicated, effect: NoExecute}]\n")},
		{"budget edges", nodePoolDoc(template() + "disruption:\n  consolidateAfter: 1h30m20s\n  budgets:\n  - {nodes: '0'}\n  - {nodes: 100%}\n  - {nodes: '3', schedule: '@hourly', duration: 10m}\n  - {nodes: '1', schedule: '*/15 9-17 * JAN-MAR mon-fri', duration: 1h5m}\n")},
		{"Never", nodePoolDoc(template() + "    expireAfter: Never\ndisruption: {consolidateAfter: Never}\n")},
		{"weights", nodePoolDoc(template()+"weight: 1\n") + "---\n" + strings.Replace(nodePoolDoc(template()+"weight: 100\n"), "name: default", "name: b", 1)},
		{"limits of every kind", nodePoolDoc(template() + "limits: {cpu: 100m, memory: 1.5Gi, ephemeral-storage: 1Ti, pods: 1k, nodes: 10, nvidia.com/gpu: 4, hugepages-2Mi: 1Gi}\n")},
		{"pinned aliases", nodeClassDoc("amiSelectorTerms: [{alias: al2023@v20250101}]\n", "amiSelectorTerms") + "---\n" +
			strings.Replace(nodeClassDoc("amiFamily: Custom\namiSelectorTerms: [{alias: al2023@latest}]\n", "amiSelectorTerms"), "name: default", "name: custom", 1)},
		{"selector varieties", nodeClassDoc("amiFamily: Custom\namiSelectorTerms: [{name: my-ami-*, owner: '123456789012'}, {ssmParameter: /my/param}, {tags: {a: '*'}}]\n"+
			"subnetSelectorTerms: [{tags: {Name: '*Private*', team: a}}, {id: subnet-0abc}]\n"+
			"securityGroupSelectorTerms: [{name: my-sg}, {name: x, tags: {}}]\n",
			"amiSelectorTerms", "subnetSelectorTerms", "securityGroupSelectorTerms")},
		{"volumes", nodeClassDoc("blockDeviceMappings:\n- {deviceName: /dev/xvda, rootVolume: true, ebs: {volumeSize: 1Ti}}\n- {deviceName: /dev/xvdb, ebs: {volumeSize: 64T}}\n- {deviceName: /dev/xvdc, ebs: {snapshotID: snap-1}}\n- {deviceName: /dev/xvdd, ebs: {volumeSize: 59000Gi, volumeType: io2, iops: 64000}}\n")},
		{"kubelet", nodeClassDoc("kubelet: {evictionHard: {memory.available: 500Mi, nodefs.available: '10.5%'}, systemReserved: {pid: '100'}, imageGCHighThresholdPercent: 100, imageGCLowThresholdPercent: 0, clusterDNS: ['fd00::a']}\n")},
		{"metadata options", nodeClassDoc("metadataOptions: {httpEndpoint: disabled, httpProtocolIPv6: enabled, httpPutResponseHopLimit: 64, httpTokens: optional}\n")},
		{"tags", nodeClassDoc("tags: {Name: my-node, kubernetes.io/role: x, karpenter.sh/discovery: c}\n")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(tc.doc), "valid.yaml")
			if err != nil {
				t.Fatalf("%v\n%s", err, tc.doc)
			}
			if len(c.NodePools)+len(c.NodeClasses) == 0 {
				t.Fatal("nothing read")
			}
		})
	}
}

// List limits from the CRDs.
func TestListLimits(t *testing.T) {
	many := func(item string, n int) string { return "[" + strings.Join(repeat(item, n), ", ") + "]" }
	cases := []struct{ name, doc, want string }{
		{"30 subnet terms", nodeClassDoc("subnetSelectorTerms: "+many("{id: subnet-1}", 31)+"\n", "subnetSelectorTerms"),
			ncPrefix + "spec.subnetSelectorTerms: must have at most 30 items, has 31"},
		{"50 block devices", nodeClassDoc("blockDeviceMappings: " + many("{ebs: {volumeSize: 1Gi}}", 51) + "\n"),
			ncPrefix + "spec.blockDeviceMappings: must have at most 50 items, has 51"},
		{"50 budgets", nodePoolDoc(template() + "disruption:\n  consolidateAfter: 1m\n  budgets: " + many("{nodes: '1'}", 51) + "\n"),
			npPrefix + "spec.disruption.budgets: must have at most 50 items, has 51"},
		{"20 selector tags", nodeClassDoc("subnetSelectorTerms: [{tags: {"+strings.Join(func() []string {
			var kv []string
			for i := 0; i < 21; i++ {
				kv = append(kv, "k"+strings.Repeat("x", i)+": v")
			}
			return kv
		}(), ", ")+"}}]\n", "subnetSelectorTerms"),
			ncPrefix + "spec.subnetSelectorTerms[0].tags: must have at most 20 tags, has 21"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Parse([]byte(tc.doc), "test.yaml")
			if err == nil || err.Error() != tc.want {
				t.Fatalf("got %v\nwant %s", err, tc.want)
			}
		})
	}
}

// Karpenter v1.14's Gte and Lte operators load, with Gt and Lt's rule: one
// non-negative integer value.
func TestGteLteLoad(t *testing.T) {
	c, err := Parse([]byte(nodePoolDoc(template(
		"{key: karpenter.k8s.aws/instance-cpu, operator: Gte, values: ['4']}",
		"{key: karpenter.k8s.aws/instance-memory, operator: Lte, values: ['16384']}"))), "valid.yaml")
	if err != nil {
		t.Fatal(err)
	}
	eq(t, "operators", []any{c.NodePools[0].Spec.Template.Spec.Requirements[0].Operator, c.NodePools[0].Spec.Template.Spec.Requirements[1].Operator},
		[]any{NodeSelectorOpGte, NodeSelectorOpLte})
	for _, bad := range []string{"[]", "['-1']", "['1', '2']", "[x]"} {
		_, err := Parse([]byte(nodePoolDoc(template("{key: karpenter.k8s.aws/instance-cpu, operator: Gte, values: "+bad+"}"))), "test.yaml")
		want := npPrefix + "spec.template.spec.requirements[0].values: operator Gte needs exactly one non-negative integer value"
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("values %s: got %v, want %s...", bad, err, want)
		}
	}
}
