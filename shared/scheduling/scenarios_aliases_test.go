package scheduling_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/catalog"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
)

// The deprecated aliases of well-known labels; nodes carry both names.
const (
	betaArch     = "beta.kubernetes.io/arch"
	betaOS       = "beta.kubernetes.io/os"
	betaType     = corev1.LabelInstanceType            // beta.kubernetes.io/instance-type
	betaZone     = corev1.LabelFailureDomainBetaZone   // failure-domain.beta.kubernetes.io/zone
	betaRegion   = corev1.LabelFailureDomainBetaRegion // failure-domain.beta.kubernetes.io/region
	isArm        = "an arm64 type"
	osKey        = corev1.LabelOSStable
	amd64, arm64 = "amd64", "arm64"
)

func archIs(arch string) func(*catalog.InstanceType) bool {
	return func(it *catalog.InstanceType) bool { return it.Arch == arch }
}

// claimLabel: the pod's NodeClaim carries label key=value.
func claimLabel(pod, key, value string) check {
	return func(t *testing.T, p *plan) {
		if nc, ok := p.claim(t, pod); ok && nc.Labels[key] != value {
			t.Errorf("%s: NodeClaim label %s=%q, want %q (labels %v)", pod, key, nc.Labels[key], value, nc.Labels)
		}
	}
}

// aliasScenarios: beta.kubernetes.io/arch, beta.kubernetes.io/os,
// beta.kubernetes.io/instance-type, failure-domain.beta.kubernetes.io/zone
// and failure-domain.beta.kubernetes.io/region mean their stable labels in
// selectors, affinity, spread keys and NodePool requirements (Karpenter's
// normalized labels), and the nodes Nodewright plans carry both.
func aliasScenarios() []scenario {
	onDemandPool := pools(pool("default", 0, req(ctKey, opIn, onDemand)))
	return []scenario{
		{
			name: "a nodeSelector on beta.kubernetes.io/arch selects the architecture",
			in:   input(armAndAmd(), onDemandPool, pods(pod(po{Name: "web", CPU: "100m", NodeSelector: labels(betaArch, arm64)}))),
			want: []check{claims(1), everyType("web", isArm, archIs(arm64)), claimLabel("web", betaArch, arm64), claimLabel("web", archKey, arm64)},
		},
		{
			name: "required node affinity on failure-domain.beta.kubernetes.io/zone selects the zone",
			in:   input(pods(pod(po{Name: "web", CPU: "100m", NodeRequirements: nsrs(nsr(betaZone, opIn, zoneB))}))),
			want: []check{claims(1), claimZones("web", zoneB), claimLabel("web", betaZone, zoneB), claimLabel("web", zoneKey, zoneB)},
		},
		{
			name: "a nodeSelector on beta.kubernetes.io/instance-type selects the type",
			in:   input(pods(pod(po{Name: "web", CPU: "100m", NodeSelector: labels(betaType, "fake-it-5")}))),
			want: []check{claims(1), firstType("web", "fake-it-5"), everyType("web", "fake-it-5", func(it *catalog.InstanceType) bool { return it.Name == "fake-it-5" }),
				claimLabel("web", betaType, "fake-it-5"), claimLabel("web", typeKey, "fake-it-5")},
		},
		{
			name: "a nodeSelector on beta.kubernetes.io/os selects the operating system",
			in:   input(pods(pod(po{Name: "linux", CPU: "100m", NodeSelector: labels(betaOS, "linux")}), pod(po{Name: "windows", CPU: "100m", NodeSelector: labels(betaOS, "windows")}))),
			want: []check{claims(1), fromPool("linux", "default"), unschedulable("windows", "NodePool default", osKey, "windows"),
				claimLabel("linux", betaOS, "linux"), claimLabel("linux", osKey, "linux")},
		},
		{
			name: "a nodeSelector on failure-domain.beta.kubernetes.io/region is the cluster's region",
			in:   input(pods(pod(po{Name: "web", CPU: "100m", NodeSelector: labels(betaRegion, "us-east-1")}))),
			want: []check{claims(1), allScheduled(), claimLabel("web", betaRegion, "us-east-1"), claimLabel("web", corev1.LabelTopologyRegion, "us-east-1")},
		},
		{
			name: "a NodePool requirement on beta.kubernetes.io/arch limits its types",
			in:   input(armAndAmd(), pools(pool("default", 0, req(ctKey, opIn, onDemand), req(betaArch, opIn, arm64))), pods(pod(po{Name: "web", CPU: "100m"}))),
			want: []check{claims(1), everyType("web", isArm, archIs(arm64))},
		},
		{
			name: "a spread on failure-domain.beta.kubernetes.io/zone spreads over zones",
			in:   input(podList(spreadPods(3, betaZone, 1, dns))),
			want: []check{allScheduled(), podZoneCounts(webLabels, 1, 1, 1), keyCounts(betaZone, webLabels, 1, 1, 1)},
		},
		{
			name: "a preferred node affinity on beta.kubernetes.io/arch is honoured",
			in: input(armAndAmd(), onDemandPool, pods(pod(po{Name: "web", CPU: "100m",
				NodePreferences: []corev1.PreferredSchedulingTerm{st.Preference(10, nsr(betaArch, opIn, arm64))}}))),
			want: []check{claims(1), everyType("web", isArm, archIs(arm64))},
		},
		{
			name: "an existing node labelled only with the stable names takes a pod that selects an alias",
			in: input(nodes(st.Node(st.NodeOptions{Name: "n1", Zone: zoneA, Labels: labels(archKey, amd64), Allocatable: res{"cpu": "4", "memory": "8Gi", "pods": "10"}})),
				pods(pod(po{Name: "web", CPU: "100m", NodeSelector: labels(betaArch, amd64, betaZone, zoneA)}))),
			want: []check{claims(0), onNode("web", "n1")},
		},
		{
			name: "anti-affinity on failure-domain.beta.kubernetes.io/zone keeps pods out of a zone with a matching pod",
			in: input(nodes(st.Node(st.NodeOptions{Name: "n1", Zone: zoneA, Allocatable: res{"cpu": "1", "memory": "1Gi", "pods": "10"},
				Pods: []*corev1.Pod{pod(po{Name: "db-0", CPU: "1", Labels: labels("app", "db")})}})),
				pods(pod(po{Name: "db-1", CPU: "100m", Labels: labels("app", "db"), AntiAffinity: []corev1.PodAffinityTerm{st.Term(betaZone, labels("app", "db"))}}))),
			want: []check{claims(1), notInZone("db-1", zoneA)},
		},
		{
			name: "a daemonset selecting an alias counts on the types it names",
			in: input(armAndAmd(), onDemandPool, pods(pod(po{Name: "web", CPU: "800m", NodeSelector: labels(archKey, arm64)})),
				daemonSets(st.DaemonSet(st.DaemonSetOptions{Name: "arm-agent", CPU: "300m", NodeSelector: labels(betaArch, arm64)}))),
			want: []check{claims(1), firstType("web", "arm.2x")},
		},
	}
}
