package scheduling_test

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/scheduling"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
)

// Synthetic allocatable, for reading these scenarios: fake-it-0 940m 1429Mi,
// fake-it-1 1930m 3213Mi, fake-it-2 2925m 4998Mi, fake-it-3 3920m 6782Mi.

// agent is a DaemonSet "agent" whose template requests cpu.
func agent(cpu string) *appsv1.DaemonSet {
	return st.DaemonSet(st.DaemonSetOptions{Name: "agent", CPU: cpu})
}

// nodeWithDaemons is an existing 4-vCPU node (3920m) of pool "default" in
// zone a, running the given pods.
func nodeWithDaemons(name string, bound ...*corev1.Pod) opt {
	return nodes(st.Node(st.NodeOptions{Name: name, InstanceType: st.SyntheticTypes(4)[3], Zone: zoneA, CapacityType: onDemand,
		NodePool: "default", Labels: labels("karpenter.sh/initialized", "true"), Pods: bound}))
}

// limitScenarios: a container that limits a resource and requests nothing
// requests its limit (the API server's defaulting of pods, which templates
// never get), with the init-container maximum, sidecars and overhead.
func limitScenarios() []scenario {
	return []scenario{
		{
			name: "a pod that sets only limits requests its limits",
			in:   input(pods(pod(po{Name: "limited", Limits: res{"cpu": "1500m", "memory": "1Gi"}}))),
			want: []check{claims(1), firstType("limited", "fake-it-1")},
		},
		{
			name: "a limit fills only the requests a container leaves out",
			in:   input(pods(pod(po{Name: "mixed", CPU: "100m", Limits: res{"cpu": "3", "memory": "3Gi"}}))),
			want: []check{claims(1), firstType("mixed", "fake-it-1")},
		},
		{
			name: "an init container's limit counts in the init maximum",
			in:   input(pods(pod(po{Name: "init-limit", CPU: "100m", InitContainers: []st.Container{{Limits: res{"cpu": "2"}}}}))),
			want: []check{claims(1), firstType("init-limit", "fake-it-2")},
		},
		{
			// Karpenter provisioning:1057: "should not schedule if resource requests are not defined and limits (requests) are too large"
			mirrors: []string{"provisioning:1057"},
			name:    "a daemonset that sets only limits requests them on every node",
			in: input(pods(pod(po{Name: "app", CPU: "800m"})),
				daemonSets(st.DaemonSet(st.DaemonSetOptions{Name: "agent", Limits: res{"cpu": "200m", "memory": "64Mi"}}))),
			want: []check{claims(1), firstType("app", "fake-it-1")},
		},
		{
			// Karpenter provisioning:1070: "should schedule based on the max resource requests of containers and initContainers"
			mirrors: []string{"provisioning:1070"},
			name:    "a daemonset's init container limit beyond its app containers sets its overhead",
			in: input(pods(pod(po{Name: "app", CPU: "800m"})),
				daemonSets(st.DaemonSet(st.DaemonSetOptions{Name: "agent", CPU: "100m", InitContainers: []st.Container{{Limits: res{"cpu": "1"}}}}))),
			want: []check{claims(1), firstType("app", "fake-it-1"), custom(requestsCPU("app", "1800m"))},
		},
		{
			name: "a daemonset's sidecar limit and overhead add to its app container",
			in: input(pods(pod(po{Name: "app", CPU: "500m"})),
				daemonSets(st.DaemonSet(st.DaemonSetOptions{Name: "mesh", CPU: "100m", Sidecars: []st.Container{{Limits: res{"cpu": "300m"}}}, Overhead: res{"cpu": "100m"}}))),
			want: []check{claims(1), firstType("app", "fake-it-1"), custom(requestsCPU("app", "1"))},
		},
		{
			// Karpenter provisioning:1098: "should not schedule if combined max resources are too large for any node"
			mirrors: []string{"provisioning:1098"},
			name:    "a daemonset whose limits fit no type leaves pods unschedulable and says so",
			in: input(pods(pod(po{Name: "app", CPU: "100m"})),
				daemonSets(st.DaemonSet(st.DaemonSetOptions{Name: "hog", CPU: "100m", InitContainers: []st.Container{{Limits: res{"memory": "10000Gi"}}}}))),
			want: []check{claims(0), unschedulable("app", "NodePool default", "DaemonSet", "kube-system/hog", "memory")},
		},
	}
}

// requestsCPU: the pod's NodeClaim requests this much cpu (its pods and the
// daemonsets' overhead).
func requestsCPU(pod, cpu string) check {
	return func(t *testing.T, p *plan) {
		nc, ok := p.claim(t, pod)
		if !ok {
			return
		}
		if got := nc.Requests.Cpu(); got.String() != cpu {
			t.Errorf("%s: NodeClaim requests cpu %s, want %s", pod, got.String(), cpu)
		}
	}
}

// daemonScenarios: a DaemonSet's running pod, as admission made it (a
// LimitRange, VPA, a mutating webhook), sizes its overhead on new nodes; on
// existing and in-flight nodes, the daemons that will run there and have no
// pod yet hold their room.
func daemonScenarios() []scenario {
	ds := agent("100m")
	return []scenario{
		{
			// Karpenter provisioning:1014: "should account for overhead using daemonset pod spec instead of daemonset spec"
			mirrors: []string{"provisioning:1014"},
			name:    "a daemonset's running pod, not its template, sizes the overhead of new nodes",
			in: input(daemonSets(ds), nodeWithDaemons("n1", st.DaemonPod(ds, po{Name: "agent-x1", NodeName: "n1", CPU: "1"})),
				pods(pod(po{Name: "app", CPU: "800m", NodeSelector: labels(zoneKey, zoneB)}))),
			want: []check{claims(1), firstType("app", "fake-it-1"), custom(requestsCPU("app", "1800m"))},
		},
		{
			name: "a running pod smaller than the template sizes the overhead too",
			in: input(daemonSets(agent("1")), nodeWithDaemons("n1", st.DaemonPod(agent("1"), po{Name: "agent-x1", NodeName: "n1", CPU: "100m"})),
				pods(pod(po{Name: "app", CPU: "800m", NodeSelector: labels(zoneKey, zoneB)}))),
			want: []check{claims(1), firstType("app", "fake-it-0"), custom(requestsCPU("app", "900m"))},
		},
		{
			name: "a running pod keeps its template's node selection, not the controller's pin to its node",
			in: func() scheduling.Input {
				arm := st.DaemonSet(st.DaemonSetOptions{Name: "arm-agent", CPU: "100m", NodeRequirements: nsrs(nsr(archKey, opIn, "arm64"))})
				return input(daemonSets(arm), nodeWithDaemons("n1", st.DaemonPod(arm, po{Name: "arm-agent-x1", NodeName: "n1", CPU: "1"})),
					pods(pod(po{Name: "app", CPU: "800m", NodeSelector: labels(zoneKey, zoneB)})))
			}(),
			want: []check{claims(1), firstType("app", "fake-it-0")},
		},
		{
			// Karpenter scheduling:2203: "should track daemonset usage separately so we know how many DS resources are remaining to be scheduled"
			mirrors: []string{"scheduling:2203"},
			name:    "a daemon not yet running on an existing node holds its room there",
			in: input(daemonSets(agent("1")), nodeWithDaemons("n1"),
				pods(pod(po{Name: "app", CPU: "3", NodeSelector: labels(zoneKey, zoneA)}))),
			want: []check{claims(1), notOnNode("app", "n1")},
		},
		{
			// Karpenter scheduling:2203: "should track daemonset usage separately so we know how many DS resources are remaining to be scheduled"
			mirrors: []string{"scheduling:2203"},
			name:    "a daemon already running on an existing node holds nothing more",
			in: input(daemonSets(agent("1")), nodeWithDaemons("n1", st.DaemonPod(agent("1"), po{Name: "agent-x1", NodeName: "n1", CPU: "1"})),
				pods(pod(po{Name: "app", CPU: "2900m"}))),
			want: []check{claims(0), onNode("app", "n1")},
		},
		{
			// Karpenter scheduling:2275: "should handle unexpected daemonset pods binding to the node"
			mirrors: []string{"scheduling:2275"},
			name:    "an unexpected daemon pod on a node never frees room for the others",
			in: func() scheduling.Input {
				picky := st.DaemonSet(st.DaemonSetOptions{Name: "picky", CPU: "1", NodeSelector: labels("my-node-label", "value")})
				tiny := st.DaemonSet(st.DaemonSetOptions{Name: "tiny", CPU: "1m"})
				return input(daemonSets(picky, tiny), nodeWithDaemons("n1", st.DaemonPod(picky, po{Name: "picky-x1", NodeName: "n1", CPU: "1", NodeSelector: map[string]string{}})),
					pods(pod(po{Name: "app", CPU: "2921m"})))
			}(),
			want: []check{claims(1), notOnNode("app", "n1")},
		},
		{
			// Karpenter scheduling:2729: "should not subtract daemonset overhead that is not strictly compatible with an existing node"
			mirrors: []string{"scheduling:2729"},
			name:    "a daemon that would not run on an existing node holds no room there",
			in: input(daemonSets(st.DaemonSet(st.DaemonSetOptions{Name: "arm-agent", CPU: "1", NodeSelector: labels(archKey, "arm64")})), nodeWithDaemons("n1"),
				pods(pod(po{Name: "app", CPU: "3"}))),
			want: []check{claims(0), onNode("app", "n1")},
		},
		{
			name: "an in-flight NodeClaim holds room for the daemons that will run on it",
			in: input(daemonSets(agent("1")),
				nodes(st.Node(st.NodeOptions{Name: "launching", InstanceType: st.SyntheticTypes(4)[3], Zone: zoneA, NodePool: "default", InFlight: true})),
				podList(podsN(3, po{Name: "web", CPU: "1"}))),
			want: []check{podsOn("launching", 2), claims(1)},
		},
	}
}
