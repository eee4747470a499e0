package scheduling_test

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/scheduling"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
)

var (
	notReadyExec  = st.Taint(corev1.TaintNodeNotReady, "", noExec)
	notReadySched = st.Taint(corev1.TaintNodeNotReady, "", noSched)
	unreachable   = st.Taint(corev1.TaintNodeUnreachable, "", noSched)
	uninitialized = st.Taint("node.cloudprovider.kubernetes.io/uninitialized", "true", noSched)
	agentNotReady = st.Taint("node.cilium.io/agent-not-ready", "true", noSched)
)

// startingNode is a 4-vCPU node of pool "default" (the pool's startup
// taint is agentNotReady) with taints; initialized sets Karpenter's
// karpenter.sh/initialized label.
func startingNode(name string, initialized bool, ts ...corev1.Taint) *scheduling.Node {
	l := map[string]string{}
	if initialized {
		l[apis.LabelInitialized] = "true"
	}
	n := st.Node(st.NodeOptions{Name: name, InstanceType: st.SyntheticTypes(4)[3], Zone: zoneA, CapacityType: onDemand, NodePool: "default", Labels: l, Taints: ts})
	n.Node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionFalse, Reason: "KubeletNotReady"}}
	if initialized {
		n.Node.Status.Conditions[0].Status = corev1.ConditionTrue
	}
	return n
}

func startupPool() opt {
	return pools(poolWith(st.NodePoolOptions{Requirements: reqs(req(ctKey, opIn, onDemand)), StartupTaints: taints(agentNotReady)}))
}

// startupScenarios: a managed node that is still coming up carries taints
// that will go away (Karpenter's known ephemeral taints and its pool's
// startup taints); pending pods that tolerate everything else count on it
// instead of causing a second launch. Once initialized, every taint counts.
func startupScenarios() []scenario {
	web := pods(pod(po{Name: "web", CPU: "1"}))
	return []scenario{
		{
			// Karpenter scheduling:2040: "should assume pod will schedule to a node with ephemeral taint node.kubernetes.io/not-ready:NoExecute when the node is uninitialized"
			mirrors: []string{"scheduling:2040"},
			name:    "a node coming up with the not-ready NoExecute taint takes pods that tolerate nothing",
			in:      input(startupPool(), nodes(startingNode("booting", false, notReadyExec)), web),
			want:    []check{claims(0), onNode("web", "booting")},
		},
		{
			// Karpenter scheduling:2040: "should assume pod will schedule to a node with ephemeral taint node.kubernetes.io/not-ready:NoExecute when the node is uninitialized"
			mirrors: []string{"scheduling:2040"},
			name:    "an initialized node's not-ready taint counts",
			in:      input(startupPool(), nodes(startingNode("sick", true, notReadyExec)), web),
			want:    []check{claims(1), notOnNode("web", "sick")},
		},
		{
			// Karpenter scheduling:2110: "should assume pod will schedule to a tainted node with a custom startup taint"
			mirrors: []string{"scheduling:2110"},
			name:    "a node coming up with its pool's startup taint takes pods that do not tolerate it",
			in:      input(startupPool(), nodes(startingNode("booting", false, agentNotReady, notReadySched)), web),
			want:    []check{claims(0), onNode("web", "booting")},
		},
		{
			// Karpenter scheduling:2143: "should not assume pod will schedule to a node with startup taints after initialization"
			mirrors: []string{"scheduling:2143"},
			name:    "a startup taint that comes back after initialization counts",
			in:      input(startupPool(), nodes(startingNode("running", true, agentNotReady)), web),
			want:    []check{claims(1), notOnNode("web", "running")},
		},
		{
			// Karpenter scheduling:2174: "should consider a tainted NotReady node as in-flight even if initialized"
			mirrors: []string{"scheduling:2174"},
			name:    "an initialized node that went not ready, unreachable and uninitialized takes no pods",
			in:      input(startupPool(), nodes(startingNode("lost", true, notReadySched, unreachable, uninitialized)), web),
			want:    []check{claims(1), notOnNode("web", "lost")},
		},
		{
			name: "every known ephemeral taint is ignored while a node comes up",
			in: input(startupPool(), nodes(startingNode("booting", false, notReadySched, notReadyExec, unreachable, uninitialized,
				st.Taint(apis.TaintKeyUnregistered, "", noExec), st.Taint("readiness.k8s.io/network-ready", "false", noSched))), web),
			want: []check{claims(0), onNode("web", "booting")},
		},
		{
			// Karpenter scheduling:2078: "should not assume pod will schedule to a tainted node"
			mirrors: []string{"scheduling:2078"},
			name:    "a node coming up still repels pods with taints that are neither ephemeral nor startup taints",
			in:      input(startupPool(), nodes(startingNode("booting", false, notReadySched, st.Taint("dedicated", "db", noSched))), web),
			want:    []check{claims(1), notOnNode("web", "booting")},
		},
		{
			name: "a node Nodewright or Karpenter does not manage is initialized whatever its taints",
			in: input(startupPool(), nodes(func() *scheduling.Node {
				n := startingNode("self-managed", false, notReadySched)
				delete(n.Node.Labels, apis.LabelNodePool)
				return n
			}()), web),
			want: []check{claims(1), notOnNode("web", "self-managed")},
		},
		{
			name: "a node whose kubelet stopped reporting is going down, not coming up",
			in: input(startupPool(), nodes(func() *scheduling.Node {
				n := startingNode("gone", false, unreachable)
				n.Node.Status.Conditions[0].Status = corev1.ConditionUnknown
				return n
			}()), web),
			want: []check{claims(1), notOnNode("web", "gone")},
		},
		{
			name: "an in-flight NodeClaim's startup and unregistered taints don't keep pods away",
			in: input(startupPool(), nodes(st.Node(st.NodeOptions{Name: "launching", InstanceType: st.SyntheticTypes(4)[3], Zone: zoneB, NodePool: "default", InFlight: true,
				Taints: taints(agentNotReady, st.Taint(apis.TaintKeyUnregistered, "", noExec))})), web),
			want: []check{claims(0), onNode("web", "launching"), inFlightPlacement("launching", true)},
		},
		{
			name: "an in-flight NodeClaim's pool taints still need tolerations",
			in: input(startupPool(), nodes(st.Node(st.NodeOptions{Name: "launching", InstanceType: st.SyntheticTypes(4)[3], Zone: zoneB, NodePool: "default", InFlight: true,
				Taints: taints(st.Taint("dedicated", "db", noSched))})), web),
			want: []check{claims(1), notOnNode("web", "launching")},
		},
		{
			// Karpenter scheduling:2818: "should handle resource zeroing of extended resources by kubelet"
			mirrors: []string{"scheduling:2818"},
			name:    "a node coming up that reports its GPUs as zero still takes a GPU pod",
			in: input(types(st.Type(st.TypeOptions{Name: "gpu.4x", VCPU: 4, GPUs: 1, Price: 0.5})),
				nodes(func() *scheduling.Node {
					n := st.Node(st.NodeOptions{Name: "gpu-1", InstanceType: st.Type(st.TypeOptions{Name: "gpu.4x", VCPU: 4, GPUs: 1, Price: 0.5}), Zone: zoneA, NodePool: "default", InFlight: true})
					n.Node.Status.Allocatable["nvidia.com/gpu"] = resource.MustParse("0")
					n.Node.Status.Capacity = n.Node.Status.Allocatable
					return n
				}()),
				pods(pod(po{Name: "train", CPU: "100m", Limits: res{"nvidia.com/gpu": "1"}}))),
			want: []check{claims(0), onNode("train", "gpu-1")},
		},
		{
			name: "daemons that tolerate only what stays count on a node coming up",
			in: input(startupPool(), nodes(startingNode("booting", false, agentNotReady)),
				daemonSets(st.DaemonSet(st.DaemonSetOptions{Name: "agent", CPU: "1"})), pods(pod(po{Name: "web", CPU: "3"}))),
			want: []check{claims(1), notOnNode("web", "booting")},
		},
	}
}
