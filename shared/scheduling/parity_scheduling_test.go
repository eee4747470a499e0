package scheduling_test

// Scenarios mirroring Karpenter's provisioning/scheduling suite_test.go
// (kubernetes-sigs/karpenter v1.14.1), one per It, each naming the Its it
// mirrors ("scheduling:<line>"); docs/karpenter-parity.md lists them all.
// Karpenter's fake cloud provider becomes the synthetic catalog: its
// "small-instance-type" (2 vCPU) is fake-it-1, its "default-instance-type"
// (4 vCPU) fake-it-3, its "arm-instance-type" an arm64 type, its zones
// test-zone-1..3 us-east-1a..c.

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/scheduling"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
)

// labelledPool is the on-demand pool "default" with template labels.
func labelledPool(kv ...string) opt {
	return pools(poolWith(st.NodePoolOptions{Requirements: reqs(req(ctKey, opIn, onDemand)), Labels: labels(kv...)}))
}

// reqPool is the on-demand pool "default" with more requirements.
func reqPool(rs ...apis.NodeSelectorRequirementWithMinValues) opt {
	return pools(pool("default", 0, append([]apis.NodeSelectorRequirementWithMinValues{req(ctKey, opIn, onDemand)}, rs...)...))
}

// noClaimLabel: the pod's NodeClaim does not carry label key (any value,
// or the given one).
func noClaimLabel(pod, key string, value ...string) check {
	return func(t *testing.T, p *plan) {
		nc, ok := p.claim(t, pod)
		if !ok {
			return
		}
		if v, has := nc.Labels[key]; has && (len(value) == 0 || v == value[0]) {
			t.Errorf("%s: NodeClaim has label %s=%s", pod, key, v)
		}
	}
}

// nodePrefs is a preferred node-affinity term per requirement, weight 1.
func nodePrefs(rs ...corev1.NodeSelectorRequirement) []corev1.PreferredSchedulingTerm {
	return []corev1.PreferredSchedulingTerm{st.Preference(1, rs...)}
}

func schedulingParity() []scenario {
	tk, tv, av := "test-key", "test-value", "another-value"
	armAMD := append(st.SyntheticTypes(8), st.Type(st.TypeOptions{Name: "arm.16x", VCPU: 16, MemoryMiB: 131072, Arch: arm64, Family: "arm"}))
	inFlight := func(name, zone string, bound ...*corev1.Pod) *scheduling.Node {
		return st.Node(st.NodeOptions{Name: name, InstanceType: st.SyntheticTypes(4)[3], Zone: zone, CapacityType: onDemand, NodePool: "default", InFlight: true, Pods: bound})
	}
	foo := labels("foo", "bar")
	zoneSpread := []corev1.TopologySpreadConstraint{st.Spread(zoneKey, 1, dns, foo)}
	hostSpread := []corev1.TopologySpreadConstraint{st.Spread(hostKey, 1, dns, foo)}
	return []scenario{
		// NodePool with Labels
		// Karpenter scheduling:155: "should schedule unconstrained pods that don't have matching node selectors"
		{mirrors: []string{"scheduling:155"}, name: "K: unconstrained pods land on a pool with template labels, which the node carries",
			in: input(labelledPool(tk, tv), pods(pod(po{Name: "p"}))), want: []check{claims(1), claimLabel("p", tk, tv)}},
		// Karpenter scheduling:163: "should not schedule pods that have conflicting node selectors"
		{mirrors: []string{"scheduling:163"}, name: "K: a node selector conflicting with the pool's template label is unschedulable",
			in: input(labelledPool(tk, tv), pods(pod(po{Name: "p", NodeSelector: labels(tk, "different-value")}))), want: []check{claims(0), unschedulable("p", tk)}},
		// Karpenter scheduling:172: "should not schedule pods that have node selectors with undefined key"
		{mirrors: []string{"scheduling:172"}, name: "K: a node selector on a key no pool defines is unschedulable",
			in: input(pods(pod(po{Name: "p", NodeSelector: labels(tk, tv)}))), want: []check{claims(0), unschedulable("p", tk)}},
		// Karpenter scheduling:180: "should schedule pods that have matching requirements"
		{mirrors: []string{"scheduling:180"}, name: "K: required node affinity matching a template label",
			in: input(labelledPool(tk, tv), pods(pod(po{Name: "p", NodeRequirements: nsrs(nsr(tk, opIn, tv, av))}))), want: []check{claims(1), claimLabel("p", tk, tv)}},
		// Karpenter scheduling:192: "should not schedule pods that have conflicting requirements"
		{mirrors: []string{"scheduling:192"}, name: "K: required node affinity conflicting with a template label",
			in: input(labelledPool(tk, tv), pods(pod(po{Name: "p", NodeRequirements: nsrs(nsr(tk, opIn, av))}))), want: []check{claims(0), unschedulable("p", tk)}},
		// Well Known Labels (and their copy further down the suite)
		// Karpenter scheduling:205: "should use NodePool constraints"
		{mirrors: []string{"scheduling:205", "scheduling:679"}, name: "K: the pool's zone requirement narrows the claim",
			in: input(reqPool(req(zoneKey, opIn, zoneB)), pods(pod(po{Name: "p"}))), want: []check{claimZones("p", zoneB), claimLabel("p", zoneKey, zoneB)}},
		// Karpenter scheduling:214: "should use node selectors"
		{mirrors: []string{"scheduling:214", "scheduling:688"}, name: "K: a zone node selector within the pool's zones",
			in: input(reqPool(req(zoneKey, opIn, zoneA, zoneB)), pods(pod(po{Name: "p", NodeSelector: labels(zoneKey, zoneB)}))), want: []check{claimZones("p", zoneB)}},
		// Karpenter scheduling:233: "should not schedule the pod if nodeselector unknown"
		{mirrors: []string{"scheduling:233", "scheduling:707"}, name: "K: a zone node selector with a value no zone has",
			in: input(reqPool(req(zoneKey, opIn, zoneA)), pods(pod(po{Name: "p", NodeSelector: labels(zoneKey, "unknown")}))), want: []check{claims(0), unschedulable("p", zoneKey)}},
		// Karpenter scheduling:243: "should not schedule if node selector outside of NodePool constraints"
		{mirrors: []string{"scheduling:243", "scheduling:717"}, name: "K: a zone node selector outside the pool's zones",
			in: input(reqPool(req(zoneKey, opIn, zoneA)), pods(pod(po{Name: "p", NodeSelector: labels(zoneKey, zoneB)}))), want: []check{claims(0), unschedulable("p", zoneKey)}},
		// Karpenter scheduling:253: "should schedule compatible requirements with Operator=In"
		{mirrors: []string{"scheduling:253", "scheduling:727"}, name: "K: required zone affinity In one zone",
			in: input(pods(pod(po{Name: "p", NodeRequirements: nsrs(nsr(zoneKey, opIn, zoneC))}))), want: []check{claimZones("p", zoneC), claimLabel("p", zoneKey, zoneC)}},
		// Karpenter scheduling:264: "should schedule compatible requirements with Operator=Gt"
		{mirrors: []string{"scheduling:264", "scheduling:738"}, name: "K: a pool requirement Gt on an integer instance label",
			in:   input(reqPool(req(apis.LabelInstanceCPU, opGt, "8")), pods(pod(po{Name: "p"}))),
			want: []check{everyType("p", "more than 8 vCPUs", func(it *catalog.InstanceType) bool { return it.VCPU > 8 }), firstType("p", "fake-it-8")}},
		// Karpenter scheduling:273: "should schedule compatible requirements with Operator=Lt"
		{mirrors: []string{"scheduling:273", "scheduling:747"}, name: "K: a pool requirement Lt on an integer instance label",
			in:   input(reqPool(req(apis.LabelInstanceCPU, opLt, "8")), pods(pod(po{Name: "p"}))),
			want: []check{everyType("p", "fewer than 8 vCPUs", func(it *catalog.InstanceType) bool { return it.VCPU < 8 }), firstType("p", "fake-it-0")}},
		// Karpenter scheduling:300: "should not schedule incompatible preferences and requirements with Operator=In"
		{mirrors: []string{"scheduling:300", "scheduling:756"}, name: "K: required zone affinity In only unknown values",
			in: input(pods(pod(po{Name: "p", NodeRequirements: nsrs(nsr(zoneKey, opIn, "unknown"))}))), want: []check{claims(0), unschedulable("p", zoneKey)}},
		// Karpenter scheduling:310: "should schedule compatible requirements with Operator=NotIn"
		{mirrors: []string{"scheduling:310", "scheduling:766"}, name: "K: required zone affinity NotIn leaves the other zone",
			in: input(pods(pod(po{Name: "p", NodeRequirements: nsrs(nsr(zoneKey, opNotIn, zoneA, zoneB, "unknown"))}))), want: []check{claimZones("p", zoneC)}},
		// Karpenter scheduling:321: "should not schedule incompatible preferences and requirements with Operator=NotIn"
		{mirrors: []string{"scheduling:321", "scheduling:777"}, name: "K: required zone affinity NotIn every zone",
			in: input(pods(pod(po{Name: "p", NodeRequirements: nsrs(nsr(zoneKey, opNotIn, zoneA, zoneB, zoneC, "unknown"))}))), want: []check{claims(0), unschedulable("p", zoneKey)}},
		// Karpenter scheduling:332: "should schedule compatible preferences and requirements with Operator=In"
		{mirrors: []string{"scheduling:332", "scheduling:788"}, name: "K: a zone preference within the required zones is honoured",
			in:   input(pods(pod(po{Name: "p", NodeRequirements: nsrs(nsr(zoneKey, opIn, zoneA, zoneB, zoneC, "unknown")), NodePreferences: nodePrefs(nsr(zoneKey, opIn, zoneB, "unknown"))}))),
			want: []check{claimZones("p", zoneB)}},
		// Karpenter scheduling:346: "should schedule incompatible preferences and requirements with Operator=In"
		{mirrors: []string{"scheduling:346", "scheduling:802"}, name: "K: a zone preference nothing satisfies is relaxed",
			in:   input(pods(pod(po{Name: "p", NodeRequirements: nsrs(nsr(zoneKey, opIn, zoneA, zoneB, zoneC, "unknown")), NodePreferences: nodePrefs(nsr(zoneKey, opIn, "unknown"))}))),
			want: []check{claims(1), allScheduled()}},
		// Karpenter scheduling:359: "should schedule compatible preferences and requirements with Operator=NotIn"
		{mirrors: []string{"scheduling:359", "scheduling:815"}, name: "K: a NotIn zone preference is honoured",
			in:   input(pods(pod(po{Name: "p", NodeRequirements: nsrs(nsr(zoneKey, opIn, zoneA, zoneB, zoneC, "unknown")), NodePreferences: nodePrefs(nsr(zoneKey, opNotIn, zoneA, zoneC))}))),
			want: []check{claimZones("p", zoneB)}},
		// Karpenter scheduling:373: "should schedule incompatible preferences and requirements with Operator=NotIn"
		{mirrors: []string{"scheduling:373", "scheduling:829"}, name: "K: a NotIn zone preference excluding every zone is relaxed",
			in:   input(pods(pod(po{Name: "p", NodeRequirements: nsrs(nsr(zoneKey, opIn, zoneA, zoneB, zoneC, "unknown")), NodePreferences: nodePrefs(nsr(zoneKey, opNotIn, zoneA, zoneB, zoneC))}))),
			want: []check{claims(1), allScheduled()}},
		// Karpenter scheduling:386: "should schedule compatible node selectors, preferences and requirements"
		{mirrors: []string{"scheduling:386", "scheduling:842"}, name: "K: node selector, required and preferred zone together",
			in: input(pods(pod(po{Name: "p", NodeSelector: labels(zoneKey, zoneC), NodeRequirements: nsrs(nsr(zoneKey, opIn, zoneA, zoneB, zoneC)),
				NodePreferences: nodePrefs(nsr(zoneKey, opIn, zoneA, zoneB, zoneC))}))),
			want: []check{claimZones("p", zoneC)}},
		// Karpenter scheduling:401: "should combine multidimensional node selectors, preferences and requirements"
		{mirrors: []string{"scheduling:401", "scheduling:857"}, name: "K: node selectors, requirements and preferences on zone and instance type combine",
			in: input(types(armAMD...), pods(pod(po{Name: "p", NodeSelector: labels(zoneKey, zoneC, typeKey, "arm.16x"),
				NodeRequirements: nsrs(nsr(zoneKey, opIn, zoneA, zoneC), nsr(typeKey, opIn, "fake-it-3", "arm.16x")),
				NodePreferences:  nodePrefs(nsr(zoneKey, opNotIn, "unknown"), nsr(typeKey, opNotIn, "unknown"))}))),
			want: []check{claimZones("p", zoneC), firstType("p", "arm.16x"), claimLabel("p", typeKey, "arm.16x")}},
		// Constraints Validation
		// Karpenter scheduling:426: "should not schedule pods that have node selectors with restricted labels"
		{mirrors: []string{"scheduling:426", "scheduling:882"}, name: "K: node selectors on restricted labels are unschedulable",
			in:   input(pods(pod(po{Name: "hostname", NodeRequirements: nsrs(nsr(hostKey, opIn, "test"))}), pod(po{Name: "nodepool", NodeRequirements: nsrs(nsr(poolKey, opIn, "test"))}))),
			want: []check{claims(0), unschedulable("hostname", hostKey), unschedulable("nodepool", poolKey)}},
		// Karpenter scheduling:442: "should not schedule pods that have node selectors with restricted domains"
		{mirrors: []string{"scheduling:442", "scheduling:893"}, name: "K: node selectors on labels of a restricted domain are unschedulable",
			in:   input(pods(pod(po{Name: "p", NodeRequirements: nsrs(nsr("karpenter.sh/test", opIn, "test"))}))),
			want: []check{claims(0), unschedulable("p", "karpenter.sh/test")}},
		// Karpenter scheduling:481: "should schedule pods that have node selectors with label in wellknown label list"
		{mirrors: []string{"scheduling:481", "scheduling:932"}, name: "K: node selectors on well-known labels schedule",
			in: input(types(armAMD...), pools(pool("default", 0, req(ctKey, opIn, onDemand, spot))), pods(
				pod(po{Name: "zone", NodeSelector: labels(zoneKey, zoneA)}), pod(po{Name: "type", NodeSelector: labels(typeKey, "fake-it-3")}),
				pod(po{Name: "arch", NodeSelector: labels(archKey, arm64)}), pod(po{Name: "os", NodeSelector: labels(osKey, "linux")}),
				pod(po{Name: "ct", NodeSelector: labels(ctKey, spot)}))),
			want: []check{allScheduled(), claimZones("zone", zoneA), firstType("type", "fake-it-3"), firstType("arch", "arm.16x"), capacityType("ct", spot)}},
		// Scheduling Logic (and its copy)
		// Karpenter scheduling:509: "should not schedule pods that have node selectors with In operator and undefined key"
		{mirrors: []string{"scheduling:509", "scheduling:953"}, name: "K: In on a key no pool defines is unschedulable",
			in: input(pods(pod(po{Name: "p", NodeRequirements: nsrs(nsr(tk, opIn, tv))}))), want: []check{claims(0), unschedulable("p", tk)}},
		// Karpenter scheduling:518: "should schedule pods that have node selectors with NotIn operator and undefined key"
		{mirrors: []string{"scheduling:518", "scheduling:962"}, name: "K: NotIn on a key no pool defines schedules without the label",
			in: input(pods(pod(po{Name: "p", NodeRequirements: nsrs(nsr(tk, opNotIn, tv))}))), want: []check{claims(1), noClaimLabel("p", tk, tv)}},
		// Karpenter scheduling:528: "should not schedule pods that have node selectors with Exists operator and undefined key"
		{mirrors: []string{"scheduling:528", "scheduling:972"}, name: "K: Exists on a key no pool defines is unschedulable",
			in: input(pods(pod(po{Name: "p", NodeRequirements: nsrs(nsr(tk, opExists))}))), want: []check{claims(0), unschedulable("p", tk)}},
		// Karpenter scheduling:537: "should schedule pods that with DoesNotExists operator and undefined key"
		{mirrors: []string{"scheduling:537", "scheduling:981"}, name: "K: DoesNotExist on a key no pool defines schedules without the label",
			in: input(pods(pod(po{Name: "p", NodeRequirements: nsrs(nsr(tk, opDNE))}))), want: []check{claims(1), noClaimLabel("p", tk)}},
		// Karpenter scheduling:547: "should schedule unconstrained pods that don't have matching node selectors"
		{mirrors: []string{"scheduling:547", "scheduling:991"}, name: "K: an unconstrained pod gets the pool's single-valued requirement as a label",
			in: input(reqPool(req(tk, opIn, tv)), pods(pod(po{Name: "p"}))), want: []check{claimLabel("p", tk, tv)}},
		// Karpenter scheduling:556: "should schedule pods that have node selectors with matching value and In operator"
		{mirrors: []string{"scheduling:556", "scheduling:1000"}, name: "K: In the pool's value",
			in: input(reqPool(req(tk, opIn, tv)), pods(pod(po{Name: "p", NodeRequirements: nsrs(nsr(tk, opIn, tv))}))), want: []check{claimLabel("p", tk, tv)}},
		// Karpenter scheduling:568: "should not schedule pods that have node selectors with matching value and NotIn operator"
		{mirrors: []string{"scheduling:568", "scheduling:1012"}, name: "K: NotIn the pool's only value is unschedulable",
			in: input(reqPool(req(tk, opIn, tv)), pods(pod(po{Name: "p", NodeRequirements: nsrs(nsr(tk, opNotIn, tv))}))), want: []check{claims(0), unschedulable("p", tk)}},
		// Karpenter scheduling:579: "should schedule the pod with Exists operator and defined key"
		{mirrors: []string{"scheduling:579", "scheduling:1023"}, name: "K: Exists on a key the pool defines",
			in: input(reqPool(req(tk, opIn, tv)), pods(pod(po{Name: "p", NodeRequirements: nsrs(nsr(tk, opExists))}))), want: []check{claims(1), claimLabel("p", tk, tv)}},
		// Karpenter scheduling:591: "should not schedule the pod with DoesNotExists operator and defined key"
		{mirrors: []string{"scheduling:591", "scheduling:1035"}, name: "K: DoesNotExist on a key the pool defines is unschedulable",
			in: input(reqPool(req(tk, opIn, tv)), pods(pod(po{Name: "p", NodeRequirements: nsrs(nsr(tk, opDNE))}))), want: []check{claims(0), unschedulable("p", tk)}},
		// Karpenter scheduling:603: "should not schedule pods that have node selectors with different value and In operator"
		{mirrors: []string{"scheduling:603", "scheduling:1047"}, name: "K: In another value than the pool's is unschedulable",
			in: input(reqPool(req(tk, opIn, tv)), pods(pod(po{Name: "p", NodeRequirements: nsrs(nsr(tk, opIn, av))}))), want: []check{claims(0), unschedulable("p", tk)}},
		// Karpenter scheduling:614: "should schedule pods that have node selectors with different value and NotIn operator"
		{mirrors: []string{"scheduling:614", "scheduling:1058"}, name: "K: NotIn another value than the pool's",
			in: input(reqPool(req(tk, opIn, tv)), pods(pod(po{Name: "p", NodeRequirements: nsrs(nsr(tk, opNotIn, av))}))), want: []check{claimLabel("p", tk, tv)}},
		// Karpenter scheduling:626: "should schedule compatible pods to the same node"
		{mirrors: []string{"scheduling:626", "scheduling:1070"}, name: "K: compatible requirements share a node",
			in:   input(reqPool(req(tk, opIn, tv, av)), pods(pod(po{Name: "a", NodeRequirements: nsrs(nsr(tk, opIn, tv))}), pod(po{Name: "b", NodeRequirements: nsrs(nsr(tk, opNotIn, av))}))),
			want: []check{claims(1), sameNode("a", "b"), claimLabel("a", tk, tv)}},
		// Karpenter scheduling:646: "should schedule incompatible pods to the different node"
		{mirrors: []string{"scheduling:646", "scheduling:1090"}, name: "K: incompatible requirements get separate nodes",
			in:   input(reqPool(req(tk, opIn, tv, av)), pods(pod(po{Name: "a", NodeRequirements: nsrs(nsr(tk, opIn, tv))}), pod(po{Name: "b", NodeRequirements: nsrs(nsr(tk, opIn, av))}))),
			want: []check{claims(2), separate("a", "b"), claimLabel("a", tk, tv), claimLabel("b", tk, av)}},
		// Karpenter scheduling:666: "Exists operator should not overwrite the existing value"
		{mirrors: []string{"scheduling:666", "scheduling:1111"}, name: "K: Exists does not widen an In on the same key",
			in: input(pods(pod(po{Name: "p", NodeRequirements: nsrs(nsr(zoneKey, opIn, "non-existent-zone"), nsr(zoneKey, opExists))}))), want: []check{claims(0), unschedulable("p", zoneKey)}},
		// Preferential Fallback
		// Karpenter scheduling:1128: "should not relax the final term"
		{mirrors: []string{"scheduling:1128"}, name: "K: the last required term is never relaxed",
			in:   input(reqPool(req(zoneKey, opIn, zoneA), req(typeKey, opIn, "fake-it-3")), pods(pod(po{Name: "p", NodeRequirements: nsrs(nsr(zoneKey, opIn, "invalid"))}))),
			want: []check{claims(0), unschedulable("p", zoneKey)}},
		// Karpenter scheduling:1144: "should relax multiple terms"
		{mirrors: []string{"scheduling:1144"}, name: "K: required terms are tried in order until one fits",
			in: input(pods(pod(po{Name: "p", NodeRequirements: nsrs(nsr(zoneKey, opIn, "invalid")),
				NodeTerms: [][]corev1.NodeSelectorRequirement{{nsr(zoneKey, opIn, "invalid")}, {nsr(zoneKey, opIn, zoneA)}, {nsr(zoneKey, opIn, zoneB)}}}))),
			want: []check{claimZones("p", zoneA)}},
		// Karpenter scheduling:1168: "should relax all terms"
		{mirrors: []string{"scheduling:1168"}, name: "K: every preference term is relaxed when none fits",
			in:   input(pods(pod(po{Name: "p", NodePreferences: []corev1.PreferredSchedulingTerm{st.Preference(1, nsr(zoneKey, opIn, "invalid")), st.Preference(1, nsr(typeKey, opIn, "invalid"))}}))),
			want: []check{claims(1), allScheduled()}},
		// Karpenter scheduling:1187: "should relax to use lighter weights"
		{mirrors: []string{"scheduling:1187"}, name: "K: preferences are relaxed to lighter weights",
			in: input(reqPool(req(zoneKey, opIn, zoneA, zoneB)), pods(pod(po{Name: "p", NodePreferences: []corev1.PreferredSchedulingTerm{
				st.Preference(100, nsr(typeKey, opIn, zoneC)), st.Preference(50, nsr(zoneKey, opIn, zoneB)), st.Preference(1, nsr(zoneKey, opIn, zoneA))}}))),
			want: []check{claimZones("p", zoneB)}},
		// Karpenter scheduling:1214: "should schedule even if preference is conflicting with requirement"
		{mirrors: []string{"scheduling:1214"}, name: "K: a preference conflicting with the requirement is dropped, the requirement kept",
			in:   input(pods(pod(po{Name: "p", NodeRequirements: nsrs(nsr(zoneKey, opIn, zoneC)), NodePreferences: nodePrefs(nsr(zoneKey, opNotIn, zoneC))}))),
			want: []check{claimZones("p", zoneC)}},
		// Karpenter scheduling:1235: "should schedule even if preference requirements are conflicting"
		{mirrors: []string{"scheduling:1235"}, name: "K: a preference that contradicts itself is dropped",
			in:   input(pods(pod(po{Name: "p", NodePreferences: nodePrefs(nsr(zoneKey, opIn, "invalid"), nsr(zoneKey, opNotIn, "invalid"))}))),
			want: []check{claims(1), allScheduled()}},
		// Instance Type Compatibility
		// Karpenter scheduling:1248: "should not schedule if requesting more resources than any instance type has"
		{mirrors: []string{"scheduling:1248"}, name: "K: more cpu than any type has is unschedulable",
			in: input(pods(pod(po{Name: "p", CPU: "512"}))), want: []check{claims(0), unschedulable("p", "cpu")}},
		// Karpenter scheduling:1259: "should launch pods with different archs on different instances"
		{mirrors: []string{"scheduling:1259"}, name: "K: pods of different architectures get different nodes",
			in:   input(types(armAMD...), reqPool(req(archKey, opIn, arm64, amd64)), pods(pod(po{Name: "amd", NodeSelector: labels(archKey, amd64)}), pod(po{Name: "arm", NodeSelector: labels(archKey, arm64)}))),
			want: []check{claims(2), separate("amd", "arm"), everyType("arm", isArm, archIs(arm64)), everyType("amd", "amd64", archIs(amd64))}},
		// Karpenter scheduling:1284: "should exclude instance types that are not supported by the pod constraints (node affinity/instance type)"
		{mirrors: []string{"scheduling:1284"}, name: "K: an instance type the pool's architecture excludes is unschedulable",
			in:   input(types(armAMD...), reqPool(req(archKey, opIn, amd64)), pods(pod(po{Name: "p", NodeRequirements: nsrs(nsr(typeKey, opIn, "arm.16x"))}))),
			want: []check{claims(0), unschedulable("p", typeKey)}},
		// Karpenter scheduling:1305: "should exclude instance types that are not supported by the pod constraints (node affinity/operating system)"
		{mirrors: []string{"scheduling:1305"}, name: "K: an operating system no type has is unschedulable",
			in: input(reqPool(req(archKey, opIn, amd64)), pods(pod(po{Name: "p", NodeRequirements: nsrs(nsr(osKey, opIn, "ios"))}))), want: []check{claims(0), unschedulable("p", osKey)}},
		// Karpenter scheduling:1327: "should exclude instance types that are not supported by the provider constraints (arch)"
		{mirrors: []string{"scheduling:1327"}, name: "K: a pod too big for the types of the pool's architecture is unschedulable",
			in: input(types(armAMD...), reqPool(req(archKey, opIn, amd64)), pods(pod(po{Name: "p", Limits: res{"cpu": "14"}}))), want: []check{claims(0), unschedulable("p", "cpu")}},
		// Karpenter scheduling:1342: "should launch pods with different operating systems on different instances"
		{mirrors: []string{"scheduling:1342"}, name: "K: pods of different operating systems get different nodes",
			in: input(append(windowsPools(), pods(pod(po{Name: "linux", NodeSelector: labels(osKey, "linux")}), pod(po{Name: "windows", NodeSelector: labels(osKey, "windows")})))...),
			want: []check{claims(2), separate("linux", "windows"), fromPool("linux", "default"), fromPool("windows", "windows"),
				claimRequirement("windows", osKey, opIn, "windows"), claimRequirement("linux", osKey, opIn, "linux")}},
		// Karpenter scheduling:1367: "should launch pods with different instance type node selectors on different instances"
		{mirrors: []string{"scheduling:1367"}, name: "K: pods selecting different instance types get different nodes",
			in:   input(pods(pod(po{Name: "small", NodeSelector: labels(betaType, "fake-it-1")}), pod(po{Name: "default", NodeSelector: labels(typeKey, "fake-it-3")}))),
			want: []check{claims(2), separate("small", "default"), firstType("small", "fake-it-1"), firstType("default", "fake-it-3")}},
		// Karpenter scheduling:1392: "should launch pods with different zone selectors on different instances"
		{mirrors: []string{"scheduling:1392"}, name: "K: pods selecting different zones get different nodes",
			in:   input(pods(pod(po{Name: "a", NodeSelector: labels(zoneKey, zoneA)}), pod(po{Name: "b", NodeSelector: labels(zoneKey, zoneB)}))),
			want: []check{claims(2), separate("a", "b")}},
		// Karpenter scheduling:1417: "should launch pods with resources that aren't on any single instance type on different instances"
		{mirrors: []string{"scheduling:1417"}, name: "K: pods needing resources no single type has together get different nodes",
			in: input(types(st.Type(st.TypeOptions{Name: "gpu", VCPU: 4, GPUs: 1, Price: 1}), st.Type(st.TypeOptions{Name: "neuron", VCPU: 4, Neuron: 1, Price: 1})),
				pods(pod(po{Name: "g", Limits: res{"nvidia.com/gpu": "1"}}), pod(po{Name: "n", Limits: res{"aws.amazon.com/neuron": "1"}}))),
			want: []check{claims(2), separate("g", "n"), firstType("g", "gpu"), firstType("n", "neuron")}},
		// Karpenter scheduling:1446: "should fail to schedule a pod with resources requests that aren't on a single instance type"
		{mirrors: []string{"scheduling:1446"}, name: "K: a pod needing resources no single type has is unschedulable",
			in: input(types(st.Type(st.TypeOptions{Name: "gpu", VCPU: 4, GPUs: 1, Price: 1}), st.Type(st.TypeOptions{Name: "neuron", VCPU: 4, Neuron: 1, Price: 1})),
				pods(pod(po{Name: "both", Limits: res{"nvidia.com/gpu": "1", "aws.amazon.com/neuron": "1"}}))),
			want: []check{claims(0), unschedulable("both", "NodePool default")}},
		// Karpenter scheduling:1465: "should filter instance types that match labels"
		{mirrors: []string{"scheduling:1465"}, name: "K: provider labels filter the types",
			in:   input(types(st.SyntheticTypes(5)...), pods(pod(po{Name: "large", NodeSelector: labels(apis.LabelInstanceCPU, "5")}), pod(po{Name: "small", NodeSelector: labels(apis.LabelInstanceCPU, "1")}))),
			want: []check{firstType("large", "fake-it-4"), firstType("small", "fake-it-0")}},
		// Karpenter scheduling:1478: "should not schedule with incompatible labels"
		{mirrors: []string{"scheduling:1478"}, name: "K: provider labels that contradict the instance type are unschedulable",
			in:   input(types(st.SyntheticTypes(5)...), pods(pod(po{Name: "a", NodeSelector: labels(apis.LabelInstanceCPU, "5", typeKey, "fake-it-0")}), pod(po{Name: "b", NodeSelector: labels(apis.LabelInstanceCPU, "1", typeKey, "fake-it-4")}))),
			want: []check{claims(0), unschedulable("a", "NodePool default"), unschedulable("b", "NodePool default")}},
		// Karpenter scheduling:1495: "should schedule optional labels"
		{mirrors: []string{"scheduling:1495"}, name: "K: Exists on a label only some types have picks those types",
			in: input(types(st.Type(st.TypeOptions{Name: "plain", VCPU: 2}), st.Type(st.TypeOptions{Name: "gpu", VCPU: 8, GPUs: 1, Price: 2})),
				pods(pod(po{Name: "p", NodeRequirements: nsrs(nsr(apis.LabelInstanceGPUName, opExists))}))),
			want: []check{firstType("p", "gpu"), claimLabel("p", typeKey, "gpu")}},
		// Karpenter scheduling:1507: "should schedule without optional labels if disallowed"
		{mirrors: []string{"scheduling:1507"}, name: "K: DoesNotExist on a label only some types have leaves them out",
			in: input(types(st.Type(st.TypeOptions{Name: "plain", VCPU: 2, Price: 1}), st.Type(st.TypeOptions{Name: "gpu", VCPU: 8, GPUs: 1, Price: 0.01})),
				pods(pod(po{Name: "p", NodeRequirements: nsrs(nsr(apis.LabelInstanceGPUName, opDNE))}))),
			want: []check{firstType("p", "plain"), everyType("p", "without a GPU", func(it *catalog.InstanceType) bool { return it.GPU.Count == 0 })}},
		// Binpacking
		// Karpenter scheduling:1522: "should schedule a small pod on the smallest instance"
		{mirrors: []string{"scheduling:1522"}, name: "K: a small pod gets the smallest type",
			in: input(pods(pod(po{Name: "p", Memory: "100M"}))), want: []check{firstType("p", "fake-it-0")}},
		// Karpenter scheduling:1534: "should schedule a small pod on the smallest possible instance type"
		{mirrors: []string{"scheduling:1534"}, name: "K: a pod gets the smallest type that holds it",
			in: input(pods(pod(po{Name: "p", Memory: "2000M"}))), want: []check{firstType("p", "fake-it-1")}},
		// Karpenter scheduling:1546: "should take pod runtime class into consideration"
		{mirrors: []string{"scheduling:1546"}, name: "K: a pod's runtime class overhead counts",
			in: input(pods(pod(po{Name: "p", CPU: "1", Overhead: res{"cpu": "2"}}))), want: []check{firstType("p", "fake-it-3")}},
		// Karpenter scheduling:1574: "should schedule multiple small pods on the smallest possible instance type"
		{mirrors: []string{"scheduling:1574"}, name: "K: several small pods share the smallest type",
			in: input(podList(podsN(5, po{Name: "p", Memory: "10M"}))), want: []check{claims(1), firstType("p-0", "fake-it-0")}},
		// Karpenter scheduling:1593: "should create new nodes when a node is at capacity"
		{mirrors: []string{"scheduling:1593"}, name: "K: a full node makes a new one: 40 pods of 1.8G on 4-vCPU types make 20 nodes",
			in:   input(types(st.Type(st.TypeOptions{Name: "default-instance-type", VCPU: 4, MemoryMiB: 5056})), podList(podsN(40, po{Name: "p", Memory: "1.8G", NodeSelector: labels(archKey, amd64)}))),
			want: []check{claims(20), allScheduled()}},
		// Karpenter scheduling:1613: "should pack small and large pods together"
		{mirrors: []string{"scheduling:1613"}, name: "K: small and large pods pack together",
			in:   input(types(st.Type(st.TypeOptions{Name: "default-instance-type", VCPU: 4, MemoryMiB: 5056})), podList(podsN(40, po{Name: "large", Memory: "1.8G"}), podsN(20, po{Name: "small", Memory: "400M"}))),
			want: []check{claims(20), allScheduled()}},
		// Karpenter scheduling:1645: "should pack nodes tightly"
		{mirrors: []string{"scheduling:1645"}, name: "K: nodes are packed tightly: a big and a small pod get different sizes",
			in:   input(types(st.SyntheticTypes(5)...), pods(pod(po{Name: "big", CPU: "4500m"}), pod(po{Name: "small", CPU: "1"}))),
			want: []check{claims(2), firstType("small", "fake-it-1"), firstType("big", "fake-it-4")}},
		// Karpenter scheduling:1671: "should handle zero-quantity resource requests"
		{mirrors: []string{"scheduling:1671"}, name: "K: a zero request of a resource nothing offers is fine",
			in: input(pods(pod(po{Name: "p", Requests: res{"foo.com/weird-resources": "0"}, Limits: res{"foo.com/weird-resources": "0"}}))), want: []check{claims(1), allScheduled()}},
		// Karpenter scheduling:1683: "should not schedule pods that exceed every instance type's capacity"
		{mirrors: []string{"scheduling:1683"}, name: "K: more memory than every type is unschedulable",
			in: input(pods(pod(po{Name: "p", Memory: "2Ti"}))), want: []check{claims(0), unschedulable("p", "memory")}},
		// Karpenter scheduling:1694: "should create new nodes when a node is at capacity due to pod limits per node"
		{mirrors: []string{"scheduling:1694"}, name: "K: a node at its pod limit makes a new one",
			in:   input(types(st.Type(st.TypeOptions{Name: "small-instance-type", VCPU: 2, Pods: 5})), podList(podsN(25, po{Name: "p", CPU: "1m", Memory: "1Mi"}))),
			want: []check{claims(5), podsPerClaim(5, 5, 5, 5, 5)}},
		// Karpenter scheduling:1716: "should take into account initContainer resource requests when binpacking"
		{mirrors: []string{"scheduling:1716"}, name: "K: init containers count when binpacking",
			in: input(pods(pod(po{Name: "p", CPU: "1", Memory: "1Gi", InitContainers: []st.Container{{CPU: "2", Memory: "1Gi"}}}))), want: []check{firstType("p", "fake-it-2")}},
		// Karpenter scheduling:1741: "should not schedule pods when initContainer resource requests are greater than available instance types"
		{mirrors: []string{"scheduling:1741"}, name: "K: an init container bigger than any type is unschedulable",
			in: input(pods(pod(po{Name: "p", CPU: "1", Memory: "1Gi", InitContainers: []st.Container{{CPU: "2", Memory: "1Ti"}}}))), want: []check{claims(0), unschedulable("p", "memory")}},
		// Karpenter scheduling:1763: "should select for valid instance types, regardless of price"
		{mirrors: []string{"scheduling:1763"}, name: "K: every type that fits is listed, whatever it costs",
			in: input(types(st.Type(st.TypeOptions{Name: "medium", VCPU: 2, Price: 3}), st.Type(st.TypeOptions{Name: "small", VCPU: 1, Price: 2}), st.Type(st.TypeOptions{Name: "large", VCPU: 4, Price: 1})),
				pods(pod(po{Name: "p", Limits: res{"cpu": "1m", "memory": "1Mi"}}))),
			want: []check{firstType("p", "large"), atLeastTypes("p", 3)}},
		// In-Flight Nodes
		// Karpenter scheduling:1830: "should not launch a second node if there is an in-flight node that can support the pod"
		// Karpenter scheduling:2531: "should not launch a second node if there is an in-flight node that can support the pod (#2011)"
		// Karpenter scheduling:2788: "should not bind pods to nodes"
		{mirrors: []string{"scheduling:1830", "scheduling:2531", "scheduling:2788"}, name: "K: an in-flight node that fits takes the pod; no second node",
			in: input(nodes(inFlight("launching", zoneA)), pods(pod(po{Name: "p", Limits: res{"cpu": "10m"}}))), want: []check{claims(0), onNode("p", "launching")}},
		// Karpenter scheduling:1847: "should not launch a second node if there is an in-flight node that can support the pod (node selectors)"
		{mirrors: []string{"scheduling:1847"}, name: "K: an in-flight node in a selected zone takes the pod; one outside does not",
			in: input(nodes(inFlight("launching", zoneB)), pods(pod(po{Name: "in", CPU: "10m", NodeRequirements: nsrs(nsr(zoneKey, opIn, zoneA, zoneB))}),
				pod(po{Name: "out", CPU: "10m", NodeRequirements: nsrs(nsr(zoneKey, opIn, zoneA, zoneC))}))),
			want: []check{claims(1), onNode("in", "launching"), notOnNode("out", "launching")}},
		// Karpenter scheduling:1896: "should launch a second node if a pod won't fit on the existingNodes node"
		{mirrors: []string{"scheduling:1896"}, name: "K: a pod too big for the in-flight node gets a new one",
			in: input(nodes(inFlight("launching", zoneA, pod(po{Name: "first", CPU: "3"}))), pods(pod(po{Name: "p", Limits: res{"cpu": "1"}}))), want: []check{claims(1), notOnNode("p", "launching")}},
		// Karpenter scheduling:1915: "should launch a second node if a pod isn't compatible with the existingNodes node (node selector)"
		{mirrors: []string{"scheduling:1915"}, name: "K: a pod the in-flight node's labels do not match gets a new one",
			in: input(types(armAMD...), nodes(inFlight("launching", zoneA)), pods(pod(po{Name: "p", CPU: "10m", NodeSelector: labels(archKey, arm64)}))), want: []check{claims(1), notOnNode("p", "launching")}},
		// Karpenter scheduling:1932: "should launch a second node if an in-flight node is terminating"
		{mirrors: []string{"scheduling:1932"}, name: "K: a terminating in-flight node takes nothing",
			in: input(nodes(func() *scheduling.Node {
				n := inFlight("going", zoneA)
				n.Node.DeletionTimestamp = &metav1Now
				return n
			}()), pods(pod(po{Name: "p", CPU: "10m"}))),
			want: []check{claims(1), notOnNode("p", "going")}},
		// Karpenter scheduling:1959: "should balance pods across zones with in-flight nodes"
		{mirrors: []string{"scheduling:1959"}, name: "K: a zonal spread counts the pods on in-flight nodes and fills them",
			in: input(nodes(inFlight("a1", zoneA, podsN(1, po{Name: "a-old", Labels: foo})...), inFlight("b1", zoneB, podsN(1, po{Name: "b-old", Labels: foo})...),
				inFlight("c1", zoneC, podsN(2, po{Name: "c-old", Labels: foo})...)),
				podList(podsN(5, po{Name: "new", Labels: foo, Spread: zoneSpread}))),
			want: []check{claims(0), allScheduled(), podsOn("a1", 2), podsOn("b1", 2), podsOn("c1", 1)}},
		// Karpenter scheduling:1990: "should balance pods across hostnames with in-flight nodes"
		{mirrors: []string{"scheduling:1990"}, name: "K: a hostname spread counts the pods on in-flight nodes",
			in: input(nodes(inFlight("n1", zoneA, pod(po{Name: "o1", Labels: foo})), inFlight("n2", zoneB, pod(po{Name: "o2", Labels: foo})),
				inFlight("n3", zoneC, pod(po{Name: "o3", Labels: foo})), inFlight("n4", zoneA, pod(po{Name: "o4", Labels: foo}))),
				podList(podsN(5, po{Name: "new", Labels: foo, Spread: hostSpread}))),
			want: []check{claims(5), allScheduled(), podsPerClaim(1, 1, 1, 1, 1)}},
		// Karpenter scheduling:2018: "should assume pod will schedule to a tainted node with no taints"
		{mirrors: []string{"scheduling:2018"}, name: "K: a node whose taints were removed takes pods",
			in: input(nodes(node4("n1", zoneA)), pods(pod(po{Name: "p", Limits: res{"cpu": "1"}}))), want: []check{claims(0), onNode("p", "n1")}},
		// Karpenter scheduling:2364: "Should properly handle DaemonSet resources with Node Affinity for `karpenter.sh/initialized` and `karpenter.sh/registered`"
		{mirrors: []string{"scheduling:2364"}, name: "K: daemonsets that select karpenter.sh/initialized and registered count on new nodes",
			in: input(daemonSets(st.DaemonSet(st.DaemonSetOptions{Name: "init", CPU: "1", NodeRequirements: nsrs(nsr(apis.LabelInitialized, opIn, "true"))}),
				st.DaemonSet(st.DaemonSetOptions{Name: "reg", CPU: "1", NodeRequirements: nsrs(nsr(apis.LabelRegistered, opIn, "true"))})),
				pods(pod(po{Name: "p", Limits: res{"cpu": "2"}}))),
			want: []check{firstType("p", "fake-it-4"), requestsCPU("p", "4"), noClaimLabel("p", apis.LabelInitialized), noClaimLabel("p", apis.LabelRegistered)}},
		// Karpenter scheduling:2492: "should pack in-flight nodes before launching new nodes"
		{mirrors: []string{"scheduling:2492"}, name: "K: in-flight nodes are packed before new ones",
			in: input(nodes(inFlight("n1", zoneA, pod(po{Name: "o1", CPU: "1"})), inFlight("n2", zoneB, pod(po{Name: "o2", CPU: "2"}))),
				podList(podsN(3, po{Name: "p", CPU: "1"}))),
			want: []check{claims(0), podsOn("n1", 2), podsOn("n2", 1), unschedulableCount(0)}},
		// Karpenter scheduling:2553: "should order initialized nodes for scheduling uninitialized nodes when all other nodes are inflight"
		// Karpenter scheduling:2662: "should order initialized nodes for scheduling uninitialized nodes"
		{mirrors: []string{"scheduling:2553", "scheduling:2662"}, name: "K: an initialized node comes before nodes still coming up",
			in:   input(nodes(startingNode("a-booting", false), startingNode("m-ready", true), inFlight("z-launching", zoneA)), pods(pod(po{Name: "p", CPU: "10m"}))),
			want: []check{claims(0), onNode("p", "m-ready")}},
		// Karpenter scheduling:2593: "should schedule pods with the same host port to different nodes"
		{mirrors: []string{"scheduling:2593"}, name: "K: pods binding the same host port get different nodes",
			in: input(pods(pod(po{Name: "a", HostPorts: []int32{8080}}), pod(po{Name: "b", HostPorts: []int32{8080}}))), want: []check{claims(2), separate("a", "b")}},
		// Existing Nodes
		// Karpenter scheduling:2607: "should schedule a pod to an existing node unowned by Karpenter"
		{mirrors: []string{"scheduling:2607"}, name: "K: a pod goes to an existing node no NodePool owns",
			in:   input(nodes(st.Node(st.NodeOptions{Name: "own", Zone: zoneA, Allocatable: res{"cpu": "10", "memory": "10Gi", "pods": "110"}})), pods(pod(po{Name: "p", CPU: "10m", Limits: res{"cpu": "10m"}}))),
			want: []check{claims(0), onNode("p", "own")}},
		// Karpenter scheduling:2633: "should schedule multiple pods to an existing node unowned by Karpenter"
		{mirrors: []string{"scheduling:2633"}, name: "K: a hundred pods go to an existing node no NodePool owns",
			in:   input(nodes(st.Node(st.NodeOptions{Name: "own", Zone: zoneA, Allocatable: res{"cpu": "10", "memory": "100Gi", "pods": "110"}})), podList(podsN(100, po{Name: "p", CPU: "10m"}))),
			want: []check{claims(0), podsOn("own", 100)}},
		// Karpenter scheduling:2695: "should consider a pod incompatible with an existing node but compatible with NodePool"
		{mirrors: []string{"scheduling:2695"}, name: "K: a pod the existing node cannot take goes to a new node of the pool",
			in: input(nodes(st.Node(st.NodeOptions{Name: "n1", Zone: zoneB, NodePool: "default", Labels: labels(apis.LabelInitialized, "true"), Allocatable: res{"cpu": "10", "memory": "10Gi", "pods": "110"}})),
				pods(pod(po{Name: "p", NodeRequirements: nsrs(nsr(zoneKey, opIn, zoneA))}))),
			want: []check{claims(1), notOnNode("p", "n1"), claimZones("p", zoneA)}},
		// Karpenter scheduling:2860: "should respect self pod affinity without pod binding (zone)"
		{mirrors: []string{"scheduling:2860"}, name: "K: self pod affinity on zone follows the first pod to its in-flight node",
			in:   input(nodes(inFlight("launching", zoneB)), podList(podsN(2, po{Name: "s", Labels: labels("security", "s2"), Affinity: []corev1.PodAffinityTerm{st.Term(zoneKey, labels("security", "s2"))}}))),
			want: []check{claims(0), podsOn("launching", 2)}},
		// NodePool requirements instance filtering
		// Karpenter scheduling:5197: "should return appropriate pod error when no available instance types exist"
		// Karpenter scheduling:5242: "should handle multiple pods when requirements filter out all instance types"
		// Karpenter scheduling:5273: "should handle conflicting requirements that eliminate all instance types"
		{mirrors: []string{"scheduling:5197", "scheduling:5242", "scheduling:5273"}, name: "K: requirements that leave no instance type make the pods unschedulable with a reason",
			in:   input(reqPool(req(typeKey, opIn, "fake-it-1")), podList(podsN(2, po{Name: "p", NodeSelector: labels(typeKey, "fake-it-2")}))),
			want: []check{claims(0), unschedulableCount(2, "NodePool default", typeKey)}},
		// Karpenter scheduling:5302: "should handle zone requirements that filter out all instance types"
		{mirrors: []string{"scheduling:5302"}, name: "K: zone requirements that leave no offering make the pod unschedulable with a reason",
			in:   input(reqPool(req(zoneKey, opIn, zoneA)), pods(pod(po{Name: "p", NodeSelector: labels(zoneKey, zoneC)}))),
			want: []check{claims(0), unschedulable("p", "NodePool default", zoneKey)}},
	}
}

// metav1Now is a deletion timestamp.
var metav1Now = metav1.NewTime(time.Unix(1700000000, 0))

// windowsPools are the pool "default" (its class is not in the input: the
// default AL2023 image, Linux) and winPool. The image, not the instance
// type, decides a node's operating system, as Karpenter's AWS provider's
// AMI requirements do.
func windowsPools(winReqs ...apis.NodeSelectorRequirementWithMinValues) []opt {
	return []opt{pools(pool("default", 0), winPool(winReqs...)), nodeClasses(winClass())}
}

// winPool is the pool "windows", which requires Windows, of winClass.
func winPool(reqs ...apis.NodeSelectorRequirementWithMinValues) *apis.NodePool {
	return poolWith(st.NodePoolOptions{Name: "windows", NodeClass: "windows",
		Requirements: append([]apis.NodeSelectorRequirementWithMinValues{req(osKey, opIn, "windows")}, reqs...)})
}

// winClass is the EC2NodeClass "windows", of alias windows2022@latest.
func winClass() *apis.EC2NodeClass {
	class := st.NodeClass("windows")
	class.Spec.AMISelectorTerms = []apis.AMISelectorTerm{{Alias: "windows2022@latest"}}
	return class
}
