package scheduling_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/catalog"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
)

func arch(a string) func(*catalog.InstanceType) bool {
	return func(it *catalog.InstanceType) bool { return it.Arch == a }
}

// realPool is a pool of every type offering spot and on-demand.
func realPool(name string, weight int32) opt {
	return pools(pool(name, weight, req(ctKey, opIn, spot, onDemand)))
}

func selectionScenarios() []scenario {
	return []scenario{
		{
			name: "nodeSelector arm64 gets arm64 types",
			in:   input(realCatalog(), realPool("default", 0), pods(pod(po{Name: "arm", CPU: "1", Memory: "1Gi", NodeSelector: labels(archKey, "arm64")}))),
			want: []check{claims(1), everyType("arm", "arm64", arch("arm64")), oracleFirst("arm", false)},
		},
		{
			name: "the cheapest offering of the real catalog for a small pod",
			in:   input(realCatalog(), realPool("default", 0), pods(pod(po{Name: "inflate", CPU: "250m", Memory: "64Mi"}))),
			want: []check{claims(1), oracleFirst("inflate", false), capacityType("inflate", spot)},
		},
		{
			name: "nodeSelector on karpenter.sh/nodepool pins a pool",
			in: input(pools(pool("heavy", 10, req(ctKey, opIn, onDemand)), pool("light", 1, req(ctKey, opIn, onDemand))),
				pods(pod(po{Name: "pinned", CPU: "100m", NodeSelector: labels(poolKey, "light")}))),
			want: []check{claims(1), fromPool("pinned", "light")},
		},
		{
			name: "nodeSelector on a pool template label picks that pool",
			in: input(pools(pool("general", 10, req(ctKey, opIn, onDemand)),
				poolWith(st.NodePoolOptions{Name: "ml", Weight: 1, Requirements: reqs(req(ctKey, opIn, onDemand)), Labels: labels("team", "ml")})),
				pods(pod(po{Name: "trainer", CPU: "100m", NodeSelector: labels("team", "ml")}))),
			want: []check{claims(1), fromPool("trainer", "ml")},
		},
		{
			name: "a nodeSelector no pool satisfies is unschedulable",
			in:   input(pods(pod(po{Name: "lost", CPU: "100m", NodeSelector: labels("team", "unknown")}))),
			want: []check{claims(0), unschedulable("lost", "team")},
		},
		{
			name: "a Windows pod cannot use Linux types",
			in:   input(pods(pod(po{Name: "win", CPU: "100m", NodeSelector: labels(corev1.LabelOSStable, "windows")}))),
			want: []check{claims(0), unschedulable("win", "kubernetes.io/os")},
		},
		{
			name: "required node affinity terms are ORed",
			in: input(pods(pod(po{Name: "either", CPU: "100m",
				NodeRequirements: nsrs(nsr(familyKey, opIn, "does-not-exist")),
				NodeTerms:        [][]corev1.NodeSelectorRequirement{{nsr(zoneKey, opIn, zoneB)}}}))),
			want: []check{claims(1), claimZones("either", zoneB)},
		},
		{
			// kube-scheduler takes any term for an existing node; only new
			// NodeClaims try the terms one at a time.
			name: "an existing node that matches a later required term is used before a new node",
			in: input(pods(pod(po{Name: "either", CPU: "100m",
				NodeRequirements: nsrs(nsr(zoneKey, opIn, zoneA)),
				NodeTerms:        [][]corev1.NodeSelectorRequirement{{nsr(zoneKey, opIn, zoneB)}}})),
				nodes(node4("b-node", zoneB))),
			want: []check{claims(0), onNode("either", "b-node")},
		},
		{
			name: "required node affinity to one zone",
			in:   input(pods(pod(po{Name: "zonal", CPU: "100m", NodeRequirements: nsrs(nsr(zoneKey, opIn, zoneC))}))),
			want: []check{claims(1), claimZones("zonal", zoneC)},
		},
		{
			name: "NotIn a zone leaves the others",
			in:   input(pods(pod(po{Name: "not-a", CPU: "100m", NodeRequirements: nsrs(nsr(zoneKey, opNotIn, zoneA))}))),
			want: []check{claims(1), claimZones("not-a", zoneB, zoneC)},
		},
		{
			name: "Gt on instance-cpu",
			in:   input(pods(pod(po{Name: "big", CPU: "100m", NodeRequirements: nsrs(nsr("karpenter.k8s.aws/instance-cpu", opGt, "7"))}))),
			want: []check{claims(1), firstType("big", "fake-it-7"), everyType("big", "more than 7 vCPUs", func(it *catalog.InstanceType) bool { return it.VCPU > 7 })},
		},
		{
			name: "instance-type In picks among the named types",
			in:   input(pods(pod(po{Name: "named", CPU: "100m", NodeSelector: labels(typeKey, "fake-it-5")}))),
			want: []check{claims(1), firstType("named", "fake-it-5"), everyType("named", "fake-it-5", func(it *catalog.InstanceType) bool { return it.Name == "fake-it-5" })},
		},
		{
			name: "preferred node affinity is honoured",
			in:   input(pods(pod(po{Name: "prefers-c", CPU: "100m", NodePreferences: []corev1.PreferredSchedulingTerm{st.Preference(50, nsr(zoneKey, opIn, zoneC))}}))),
			want: []check{claims(1), claimZones("prefers-c", zoneC)},
		},
		{
			name: "preferred node affinity is relaxed when nothing matches",
			in: input(pods(pod(po{Name: "prefers-nothing", CPU: "100m",
				NodePreferences: []corev1.PreferredSchedulingTerm{st.Preference(50, nsr(familyKey, opIn, "does-not-exist"))}}))),
			want: []check{claims(1), allScheduled(), firstType("prefers-nothing", "fake-it-0")},
		},
		{
			name: "the heaviest node preference wins",
			in: input(pods(pod(po{Name: "heavy-b", CPU: "100m", NodePreferences: []corev1.PreferredSchedulingTerm{
				st.Preference(10, nsr(zoneKey, opIn, zoneA)), st.Preference(90, nsr(zoneKey, opIn, zoneB))}}))),
			want: []check{claims(1), claimZones("heavy-b", zoneB)},
		},
		{
			name: "a node preference the pool cannot meet is relaxed",
			in: input(pools(pool("zone-a", 0, req(ctKey, opIn, onDemand), req(zoneKey, opIn, zoneA))),
				pods(pod(po{Name: "wants-c", CPU: "100m", NodePreferences: []corev1.PreferredSchedulingTerm{st.Preference(100, nsr(zoneKey, opIn, zoneC))}}))),
			want: []check{claims(1), claimZones("wants-c", zoneA)},
		},
		{
			name: "a pod zone the pool does not allow is unschedulable",
			in: input(pools(pool("zone-a", 0, req(ctKey, opIn, onDemand), req(zoneKey, opIn, zoneA))),
				pods(pod(po{Name: "needs-b", CPU: "100m", NodeSelector: labels(zoneKey, zoneB)}))),
			want: []check{claims(0), unschedulable("needs-b", "zone")},
		},
		{
			name: "arm64 and amd64 pods go to separate nodes",
			in: input(realCatalog(), realPool("default", 0),
				pods(pod(po{Name: "arm", CPU: "500m", Memory: "512Mi", NodeSelector: labels(archKey, "arm64")}),
					pod(po{Name: "amd", CPU: "500m", Memory: "512Mi", NodeSelector: labels(archKey, "amd64")}))),
			want: []check{claims(2), separate("arm", "amd"), everyType("arm", "arm64", arch("arm64")), everyType("amd", "amd64", arch("amd64"))},
		},
		{
			name: "a node affinity on arch narrows the claim",
			in:   input(realCatalog(), realPool("default", 0), pods(pod(po{Name: "arm", CPU: "2", Memory: "4Gi", NodeRequirements: nsrs(nsr(archKey, opIn, "arm64"))}))),
			want: []check{claims(1), everyType("arm", "arm64", arch("arm64")), custom(func(t *testing.T, p *plan) {
				nc, ok := p.claim(t, "arm")
				if ok && nc.Labels[archKey] != "arm64" {
					t.Errorf("claim labels %v lack %s=arm64", nc.Labels, archKey)
				}
			})},
		},
		{
			name: "a required spot capacity type narrows the claim to spot",
			in:   input(realCatalog(), realPool("default", 0), pods(pod(po{Name: "batch", CPU: "1", NodeRequirements: nsrs(nsr(ctKey, opIn, spot))}))),
			want: []check{claims(1), capacityType("batch", spot), capacityTypes("batch", spot), oracleFirst("batch", false)},
		},
		{
			name: "nodeSelector on instance-category",
			in:   input(realCatalog(), realPool("default", 0), pods(pod(po{Name: "mem", CPU: "1", Memory: "4Gi", NodeSelector: labels(categoryKey, "r")}))),
			want: []check{claims(1), everyType("mem", "category r", func(it *catalog.InstanceType) bool { return it.Category == "r" }), oracleFirst("mem", false)},
		},
		{
			name: "pods pending in several namespaces",
			in:   input(pods(pod(po{Name: "web", Namespace: "shop", CPU: "400m"}), pod(po{Name: "web", Namespace: "blog", CPU: "400m"}))),
			want: []check{claims(1), sameNode("shop/web", "blog/web"), firstType("shop/web", "fake-it-0")},
		},
		{
			name: "requirements on a custom label no pool defines but the pod allows absent",
			in:   input(pods(pod(po{Name: "tolerant", CPU: "100m", NodeRequirements: nsrs(nsr("gpu-type", opNotIn, "a100"))}))),
			want: []check{claims(1), allScheduled()},
		},
	}
}
