package scheduling_test

import (
	corev1 "k8s.io/api/core/v1"

	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
)

// pinnedTo is a pod whose required node affinity selects nodes by name
// (matchFields metadata.name; none: an empty term).
func pinnedTo(name, cpu string, nodes ...string) *corev1.Pod {
	p := pod(po{Name: name, CPU: cpu})
	term := corev1.NodeSelectorTerm{}
	if len(nodes) > 0 {
		term.MatchFields = []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: nodes}}
	}
	p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{term}}}}
	return p
}

// reasonScenarios: an unschedulable pod's reason names the constraint that
// failed and the NodePool it failed on, with what a person needs to act
// (every scenario's reasons are also checked for empty parentheses and for
// naming every NodePool).
func reasonScenarios() []scenario {
	twoPools := pools(pool("general", 0, req(ctKey, opIn, onDemand)), pool("batch", 0, req(ctKey, opIn, spot)))
	return []scenario{
		{
			// Karpenter scheduling:172: "should not schedule pods that have node selectors with undefined key"
			mirrors: []string{"scheduling:172"},
			name:    "a label no pool defines: the reason names it and how to provide it",
			in:      input(pods(pod(po{Name: "web", NodeSelector: labels("team", "a")}))),
			want:    []check{unschedulable("web", "NodePool default", "team In [a]", "will not have label team", "template labels or requirements")},
		},
		{
			// Karpenter scheduling:225: "should not schedule nodes with a hostname selector"
			mirrors: []string{"scheduling:225", "scheduling:699"},
			name:    "a hostname selector: a new node's hostname cannot be chosen",
			in:      input(pods(pod(po{Name: "web", NodeSelector: labels(hostKey, "red-node")}))),
			want:    []check{claims(0), unschedulable("web", "NodePool default", "kubernetes.io/hostname In [red-node]", "hostname cannot be chosen")},
		},
		{
			name: "a value the pool excludes: the reason shows both sides",
			in:   input(pools(pool("zone-a", 0, req(ctKey, opIn, onDemand), req(zoneKey, opIn, zoneA))), pods(pod(po{Name: "web", NodeSelector: labels(zoneKey, zoneB)}))),
			want: []check{unschedulable("web", "NodePool zone-a", "requires topology.kubernetes.io/zone In [us-east-1b]", "allows only topology.kubernetes.io/zone In [us-east-1a]")},
		},
		{
			name: "an architecture none of the pool's types has: the reason says what they have",
			in:   input(pods(pod(po{Name: "web", NodeSelector: labels(archKey, arm64)}))),
			want: []check{unschedulable("web", "NodePool default", "kubernetes.io/arch In [arm64]", "they have kubernetes.io/arch amd64")},
		},
		{
			name: "a zone the cluster has no subnets in: the reason lists the cluster's zones",
			in:   input(pods(pod(po{Name: "web", NodeSelector: labels(zoneKey, "us-west-2a")}))),
			want: []check{unschedulable("web", "NodePool default", "us-west-2a", "the cluster's zones are us-east-1a, us-east-1b, us-east-1c")},
		},
		{
			name: "a GPU no type has: the reason names the resource, not a zero-sized largest type",
			in:   input(pods(pod(po{Name: "gpu", Requests: res{"nvidia.com/gpu": "1"}}))),
			want: []check{unschedulable("gpu", "NodePool default", "none of its instance types has nvidia.com/gpu")},
		},
		{
			name: "a resource nothing offers: the reason names it",
			in:   input(pods(pod(po{Name: "web", Requests: res{"example.com/dongle": "1"}}))),
			want: []check{unschedulable("web", "example.com/dongle", "no existing node", "no instance type of any NodePool")},
		},
		{
			name: "an empty node selector term matches no node, and the reason says so",
			in:   input(pods(pinnedTo("web", "100m"))),
			want: []check{unschedulable("web", "empty nodeSelectorTerm", "matches no node")},
		},
		{
			name: "a pod pinned to a node that is gone: the reason names the node",
			in:   input(pods(pinnedTo("web", "100m", "ip-10-0-9-9"))),
			want: []check{unschedulable("web", "ip-10-0-9-9 is not in the cluster")},
		},
		{
			name: "a pod pinned to a full node: the reason says what the node lacks",
			in: input(nodes(smallNode("n1", zoneA, "1", false, pod(po{Name: "old", CPU: "900m"}))),
				pods(pinnedTo("web", "500m", "n1"))),
			want: []check{unschedulable("web", "node n1 has 100m free", "less than the pod's 500m cpu")},
		},
		{
			name: "a spread no pool can satisfy: the reason gives the pods per domain",
			in: input(pools(pool("zone-a", 0, req(ctKey, opIn, onDemand), req(zoneKey, opIn, zoneA))),
				nodes(smallNode("b-1", zoneB, "100m", false), smallNode("c-1", zoneC, "100m", false)),
				podList(spreadPods(5, zoneKey, 1, dns))),
			want: []check{unschedulableCount(1, "NodePool zone-a", "topology spread on topology.kubernetes.io/zone (maxSkew 1)", "us-east-1a has 2", "us-east-1b has 1")},
		},
		{
			name: "pod affinity to pods that are nowhere: the reason gives the selector",
			in:   input(pods(pod(po{Name: "web", Affinity: []corev1.PodAffinityTerm{st.Term(zoneKey, labels("app", "db"))}}))),
			want: []check{unschedulable("web", "NodePool default", "pod affinity on topology.kubernetes.io/zone", "app=db")},
		},
		{
			name: "every NodePool is named with its own reason",
			in:   input(twoPools, pods(pod(po{Name: "web", NodeSelector: labels("team", "a")}))),
			want: []check{unschedulable("web", "NodePool general", "NodePool batch", "label team")},
		},
	}
}
