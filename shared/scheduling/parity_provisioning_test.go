package scheduling_test

// Scenarios mirroring Karpenter's pkg/controllers/provisioning suite_test.go
// (v1.14.1), one per It that a planner can decide ("provisioning:<line>").

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/scheduling"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
)

// requestsOf: the pod's NodeClaim requests exactly these amounts (other
// resources may be listed at zero).
func requestsOf(pod string, want res) check {
	return func(t *testing.T, p *plan) {
		nc, ok := p.claim(t, pod)
		if !ok {
			return
		}
		for name, q := range want.List() {
			got := nc.Requests[name]
			if got.Cmp(q) != 0 {
				t.Errorf("%s: NodeClaim requests %s %s, want %s (requests %v)", pod, name, got.String(), q.String(), nc.Requests)
			}
		}
	}
}

// containerPod is a pod whose app, init and sidecar containers request
// (and limit) cpu and memory as given.
func containerPod(name string, app st.Container, init []st.Container, sidecars []st.Container) *corev1.Pod {
	return pod(po{Name: name, CPU: app.CPU, Memory: app.Memory, InitContainers: init, Sidecars: sidecars})
}

func provisioningParity() []scenario {
	ds := func(name, cpu string, o st.DaemonSetOptions) opt {
		o.Name, o.CPU = name, cpu
		return daemonSets(st.DaemonSet(o))
	}
	deleting := func(np *apis.NodePool) *apis.NodePool { np.DeletionTimestamp = &metav1Now; return np }
	one := int64(1)
	return []scenario{
		// Karpenter provisioning:225: "should provision nodes"
		{mirrors: []string{"provisioning:225"}, name: "K: a pending pod gets a node",
			in: input(pods(pod(po{Name: "p"}))), want: []check{claims(1), allScheduled()}},
		// Karpenter provisioning:236: "Should provision nodes for multiple pods"
		{mirrors: []string{"provisioning:236"}, name: "K: a hundred pending pods get nodes",
			in: input(podList(podsN(100, po{Name: "p"}))), want: []check{allScheduled()}},
		// Karpenter provisioning:283: "should ignore NodePools that are deleting"
		// Karpenter provisioning:294: "should mark pod as unschedulable if there are no valid nodepools"
		{mirrors: []string{"provisioning:283", "provisioning:294"}, name: "K: a NodePool being deleted launches nothing and the pod says so",
			in:   input(pools(deleting(pool("default", 0, req(ctKey, opIn, onDemand)))), pods(pod(po{Name: "p"}))),
			want: []check{claims(0), unschedulable("p", "NodePool default", "being deleted")}},
		// Karpenter provisioning:336: "should provision nodes for pods with supported node selectors"
		{mirrors: []string{"provisioning:336"}, name: "K: supported node selectors schedule, unknown values do not",
			in: input(armAndAmd(), pools(pool("default", 0, req(ctKey, opIn, onDemand, spot))), pods(
				pod(po{Name: "pool", NodeSelector: labels(poolKey, "default")}), pod(po{Name: "zone", NodeSelector: labels(zoneKey, zoneA)}),
				pod(po{Name: "type", NodeSelector: labels(typeKey, "amd.4x")}), pod(po{Name: "arch", NodeSelector: labels(archKey, arm64)}), pod(po{Name: "os", NodeSelector: labels(osKey, "linux")}),
				pod(po{Name: "u-pool", NodeSelector: labels(poolKey, "unknown")}), pod(po{Name: "u-zone", NodeSelector: labels(zoneKey, "unknown")}),
				pod(po{Name: "u-type", NodeSelector: labels(typeKey, "unknown")}), pod(po{Name: "u-arch", NodeSelector: labels(archKey, "unknown")}),
				pod(po{Name: "u-os", NodeSelector: labels(osKey, "unknown")}), pod(po{Name: "u-ct", NodeSelector: labels(ctKey, "unknown")}), pod(po{Name: "u-foo", NodeSelector: labels("foo", "bar")}))),
			want: []check{fromPool("pool", "default"), fromPool("zone", "default"), fromPool("type", "default"), fromPool("arch", "default"), fromPool("os", "default"),
				unschedulable("u-pool", poolKey), unschedulable("u-zone", zoneKey), unschedulable("u-type", typeKey), unschedulable("u-arch", archKey),
				unschedulable("u-os", osKey), unschedulable("u-ct", ctKey), unschedulable("u-foo", "foo")}},
		// Karpenter provisioning:376: "should provision nodes for pods with supported node affinities"
		{mirrors: []string{"provisioning:376"}, name: "K: supported node affinities schedule, unknown values do not",
			in: input(armAndAmd(), pools(pool("default", 0, req(ctKey, opIn, onDemand, spot))), pods(
				pod(po{Name: "pool", NodeRequirements: nsrs(nsr(poolKey, opIn, "default"))}), pod(po{Name: "zone", NodeRequirements: nsrs(nsr(zoneKey, opIn, zoneA))}),
				pod(po{Name: "type", NodeRequirements: nsrs(nsr(typeKey, opIn, "amd.4x"))}), pod(po{Name: "arch", NodeRequirements: nsrs(nsr(archKey, opIn, arm64))}),
				pod(po{Name: "os", NodeRequirements: nsrs(nsr(osKey, opIn, "linux"))}),
				pod(po{Name: "u-pool", NodeRequirements: nsrs(nsr(poolKey, opIn, "unknown"))}), pod(po{Name: "u-zone", NodeRequirements: nsrs(nsr(zoneKey, opIn, "unknown"))}),
				pod(po{Name: "u-type", NodeRequirements: nsrs(nsr(typeKey, opIn, "unknown"))}), pod(po{Name: "u-arch", NodeRequirements: nsrs(nsr(archKey, opIn, "unknown"))}),
				pod(po{Name: "u-os", NodeRequirements: nsrs(nsr(osKey, opIn, "unknown"))}), pod(po{Name: "u-ct", NodeRequirements: nsrs(nsr(ctKey, opIn, "unknown"))}),
				pod(po{Name: "u-foo", NodeRequirements: nsrs(nsr("foo", opIn, "bar"))}))),
			want: []check{fromPool("pool", "default"), fromPool("zone", "default"), fromPool("type", "default"), fromPool("arch", "default"), fromPool("os", "default"),
				unschedulableCount(7, "NodePool default")}},
		// Karpenter provisioning:416: "should provision nodes for accelerators"
		{mirrors: []string{"provisioning:416"}, name: "K: pods requesting different accelerators get nodes with them",
			in: input(types(append(st.SyntheticTypes(4), st.Type(st.TypeOptions{Name: "gpu", VCPU: 4, GPUs: 2, Price: 1}), st.Type(st.TypeOptions{Name: "neuron", VCPU: 4, Neuron: 2, Price: 1}))...),
				pods(pod(po{Name: "a", Limits: res{"nvidia.com/gpu": "1"}}), pod(po{Name: "b", Limits: res{"aws.amazon.com/neuron": "1"}}))),
			want: []check{allScheduled(), firstType("a", "gpu"), firstType("b", "neuron")}},
		// Karpenter provisioning:431: "should provision multiple nodes when maxPods is set"
		{mirrors: []string{"provisioning:431"}, name: "K: a pool of one-pod types makes a node per pod",
			in: input(types(st.Type(st.TypeOptions{Name: "single-pod-instance-type", VCPU: 4, Pods: 2})), reqPool(req(typeKey, opIn, "single-pod-instance-type")),
				func(in *scheduling.Input) {
					in.NodeClasses[0].Spec.Kubelet = &apis.KubeletConfiguration{MaxPods: ptrInt32(1)}
				},
				podList(podsN(3, po{Name: "p"}))),
			want: []check{claims(3), allScheduled()}},
		// Karpenter provisioning:492: "should schedule all pods on one inflight node when node is in deleting state"
		{mirrors: []string{"provisioning:492"}, name: "K: a node being deleted takes no pods; they share one new node",
			in: input(nodes(func() *scheduling.Node {
				n := st.Node(st.NodeOptions{Name: "going", InstanceType: st.SyntheticTypes(4)[3], Zone: zoneA, NodePool: "default", Pods: podsN(3, po{Name: "old"})})
				n.Node.DeletionTimestamp = &metav1Now
				return n
			}()), podList(podsN(2, po{Name: "p"}))),
			want: []check{claims(1), notOnNode("p-0", "going"), sameNode("p-0", "p-1")}},
		// Karpenter provisioning:532: "should schedule based on the max resource requests of containers and initContainers with sidecar containers when initcontainer comes first"
		{mirrors: []string{"provisioning:532"}, name: "K: init container first, then a sidecar: max(init, app + sidecar)",
			in:   input(pods(containerPod("p", st.Container{CPU: "6", Memory: "2Gi"}, []st.Container{{CPU: "10", Memory: "4Gi"}}, []st.Container{{CPU: "4900m", Memory: "2969Mi"}}))),
			want: []check{requestsOf("p", res{"cpu": "10900m", "memory": "5017Mi"})}},
		// Karpenter provisioning:583: "should schedule based on the max resource requests of containers and initContainers with sidecar containers when sidecar container comes first and init container resources are smaller than container resources"
		{mirrors: []string{"provisioning:583"}, name: "K: sidecar first, then a smaller init container: sidecar and app",
			in:   input(pods(pod(po{Name: "p", CPU: "6", Memory: "2Gi", Sidecars: []st.Container{{CPU: "4900m", Memory: "2969Mi"}}}))),
			want: []check{requestsOf("p", res{"cpu": "10900m", "memory": "5017Mi"})}},
		// Karpenter provisioning:634: "should schedule based on the max resource requests of containers and initContainers with sidecar containers when sidecar container comes first and init container resources are bigger than container resources"
		{mirrors: []string{"provisioning:634"}, name: "K: sidecar first, then a bigger init container: the init runs beside the sidecar",
			in: input(pods(func() *corev1.Pod {
				p := pod(po{Name: "p", CPU: "5", Memory: "1Gi", Sidecars: []st.Container{{CPU: "4900m", Memory: "2969Mi"}}})
				p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: "init", Resources: corev1.ResourceRequirements{Requests: res{"cpu": "6", "memory": "2Gi"}.List()}})
				return p
			}())),
			want: []check{requestsOf("p", res{"cpu": "10900m", "memory": "5017Mi"})}},
		// Karpenter provisioning:685: "should schedule based on the pod level resources requests"
		{mirrors: []string{"provisioning:685"}, name: "K: pod-level resources decide the pod's requests",
			in: input(pods(func() *corev1.Pod {
				p := containerPod("p", st.Container{CPU: "5", Memory: "1Gi"}, []st.Container{{CPU: "6", Memory: "2Gi"}}, []st.Container{{CPU: "4", Memory: "2Gi"}})
				p.Spec.Resources = &corev1.ResourceRequirements{Limits: res{"cpu": "10", "memory": "4Gi"}.List(), Requests: res{"cpu": "9900m", "memory": "3993Mi"}.List()}
				return p
			}())),
			want: []check{requestsOf("p", res{"cpu": "9900m", "memory": "3993Mi"})}},
		{name: "pod-level limits alone set its requests, as the API server defaults them",
			in: input(pods(func() *corev1.Pod {
				p := pod(po{Name: "p", CPU: "1"})
				p.Spec.Resources = &corev1.ResourceRequirements{Limits: res{"cpu": "3", "memory": "2Gi"}.List()}
				return p
			}())),
			want: []check{requestsOf("p", res{"cpu": "1", "memory": "2Gi"})}},
		// Resource Limits
		// Karpenter provisioning:742: "should not schedule when limits are exceeded"
		{mirrors: []string{"provisioning:742"}, name: "K: a pool whose nodes already exceed its cpu limit launches nothing",
			in: input(pools(poolWith(st.NodePoolOptions{Requirements: reqs(req(ctKey, opIn, onDemand)), Limits: res{"cpu": "20"}})),
				nodes(st.Node(st.NodeOptions{Name: "big", Zone: zoneA, NodePool: "default", Allocatable: res{"cpu": "100", "memory": "1Gi", "pods": "0"}})),
				pods(pod(po{Name: "p"}))),
			want: []check{claims(0), unschedulable("p", "limit")}},
		// Karpenter provisioning:765: "should schedule if limits would be met"
		{mirrors: []string{"provisioning:765"}, name: "K: a pod within the pool's cpu limit schedules",
			in:   input(pools(poolWith(st.NodePoolOptions{Requirements: reqs(req(ctKey, opIn, onDemand)), Limits: res{"cpu": "2"}})), pods(pod(po{Name: "p", CPU: "1750m"}))),
			want: []check{claims(1), firstType("p", "fake-it-1")}},
		// Karpenter provisioning:782: "should partially schedule if limits would be exceeded"
		{mirrors: []string{"provisioning:782"}, name: "K: limits let one of two anti-affine pods schedule",
			in: input(pools(poolWith(st.NodePoolOptions{Requirements: reqs(req(ctKey, opIn, onDemand)), Limits: res{"cpu": "3"}})),
				podList(podsN(2, po{Name: "p", CPU: "1500m", Labels: labels("app", "foo"), AntiAffinity: []corev1.PodAffinityTerm{st.Term(hostKey, labels("app", "foo"))}}))),
			want: []check{claims(1), unschedulableCount(1, "limit")}},
		// Karpenter provisioning:832: "should not schedule if limits would be exceeded"
		{mirrors: []string{"provisioning:832"}, name: "K: a pod beyond the pool's cpu limit is unschedulable",
			in:   input(pools(poolWith(st.NodePoolOptions{Requirements: reqs(req(ctKey, opIn, onDemand)), Limits: res{"cpu": "2"}})), pods(pod(po{Name: "p", CPU: "2100m"}))),
			want: []check{claims(0), unschedulable("p", "limit")}},
		// Karpenter provisioning:847: "should not schedule if limits would be exceeded (GPU)"
		{mirrors: []string{"provisioning:847"}, name: "K: a pods limit keeps a GPU pod off types with more pod slots",
			in: input(types(st.Type(st.TypeOptions{Name: "gpu", VCPU: 4, GPUs: 1, Price: 1})), pools(poolWith(st.NodePoolOptions{Requirements: reqs(req(ctKey, opIn, onDemand)), Limits: res{"pods": "1"}})),
				pods(pod(po{Name: "p", Limits: res{"nvidia.com/gpu": "1"}}))),
			want: []check{claims(0), unschedulable("p", "limit")}},
		// Karpenter provisioning:863: "should not schedule to a nodepool after a scheduling round if limits would be exceeded"
		{mirrors: []string{"provisioning:863"}, name: "K: an earlier claim's capacity counts against the limit",
			in: input(pools(poolWith(st.NodePoolOptions{Requirements: reqs(req(ctKey, opIn, onDemand)), Limits: res{"cpu": "2"}})),
				nodes(st.Node(st.NodeOptions{Name: "launching", InstanceType: st.SyntheticTypes(2)[1], Zone: zoneA, NodePool: "default", InFlight: true, Pods: []*corev1.Pod{pod(po{Name: "first", CPU: "1750m"})}})),
				pods(pod(po{Name: "second", CPU: "1750m"}))),
			want: []check{claims(0), unschedulable("second", "limit")}},
		// Karpenter provisioning:891: "should not schedule if limits would be exceeded (node)"
		{mirrors: []string{"provisioning:891"}, name: "K: a nodes limit stops new nodes",
			in: input(pools(poolWith(st.NodePoolOptions{Requirements: reqs(req(ctKey, opIn, onDemand)), Limits: res{"nodes": "1"}})),
				nodes(st.Node(st.NodeOptions{Name: "n1", InstanceType: st.SyntheticTypes(1)[0], Zone: zoneA, NodePool: "default", Pods: podsN(1, po{Name: "old", CPU: "900m"})})),
				pods(pod(po{Name: "p", CPU: "500m"}))),
			want: []check{claims(0), unschedulable("p", "limit of 1 nodes")}},
		// Daemonsets
		// Karpenter provisioning:935: "should account for daemonsets"
		{mirrors: []string{"provisioning:935"}, name: "K: daemonset overhead sizes the node",
			in: input(ds("ds", "2", st.DaemonSetOptions{Memory: "1Gi"}), pods(pod(po{Name: "p", CPU: "1", Memory: "1Gi"}))), want: []check{firstType("p", "fake-it-3")}},
		// Karpenter provisioning:974: "should account for daemonsets (with startup taint)"
		{mirrors: []string{"provisioning:974"}, name: "K: daemonset overhead counts on a pool with startup taints",
			in: input(startupPool(), ds("ds", "2", st.DaemonSetOptions{Memory: "1Gi"}), pods(pod(po{Name: "p", CPU: "1", Memory: "1Gi"}))), want: []check{firstType("p", "fake-it-3")}},
		// Karpenter provisioning:1004: "should not schedule if daemonset overhead is too large"
		{mirrors: []string{"provisioning:1004"}, name: "K: daemonset overhead bigger than every type leaves pods unschedulable",
			in: input(ds("ds", "10000", st.DaemonSetOptions{Memory: "10000Gi"}), pods(pod(po{Name: "p"}))), want: []check{claims(0), unschedulable("p", "DaemonSets")}},
		// Karpenter provisioning:1119: "should not schedule if initContainer resources are too large"
		{mirrors: []string{"provisioning:1119"}, name: "K: a daemonset init container bigger than every type leaves pods unschedulable",
			in:   input(daemonSets(st.DaemonSet(st.DaemonSetOptions{Name: "ds", InitContainers: []st.Container{{CPU: "10000", Memory: "10000Gi"}}})), pods(pod(po{Name: "p"}))),
			want: []check{claims(0), unschedulable("p", "DaemonSets")}},
		// Karpenter provisioning:1135: "should be able to schedule pods if resource requests and limits are not defined"
		{mirrors: []string{"provisioning:1135"}, name: "K: a daemonset without requests or limits adds only a pod slot",
			in: input(daemonSets(st.DaemonSet(st.DaemonSetOptions{Name: "ds"})), pods(pod(po{Name: "p"}))), want: []check{claims(1), firstType("p", "fake-it-0")}},
		// Karpenter provisioning:1143: "should ignore daemonsets without matching tolerations"
		{mirrors: []string{"provisioning:1143"}, name: "K: a daemonset that does not tolerate the pool's taint adds nothing",
			in: input(taintedPool(st.Taint("foo", "bar", noSched)), ds("ds", "2", st.DaemonSetOptions{Memory: "1Gi"}),
				pods(pod(po{Name: "p", CPU: "1", Memory: "1Gi", Tolerations: tols(st.Toleration("", corev1.TolerationOpExists, "", ""))}))),
			want: []check{firstType("p", "fake-it-1")}},
		// Karpenter provisioning:1175: "should ignore daemonsets with an invalid selector"
		{mirrors: []string{"provisioning:1175"}, name: "K: a daemonset selecting a label no node will have adds nothing",
			in: input(ds("ds", "2", st.DaemonSetOptions{Memory: "1Gi", NodeSelector: labels("node", "invalid")}), pods(pod(po{Name: "p", CPU: "1", Memory: "1Gi"}))), want: []check{firstType("p", "fake-it-1")}},
		// Karpenter provisioning:1197: "should ignore daemonsets when no instance types meet the daemonset requirements"
		{mirrors: []string{"provisioning:1197"}, name: "K: a daemonset whose instance types do not exist adds nothing",
			in: input(ds("ds", "2", st.DaemonSetOptions{Memory: "1Gi", NodeRequirements: nsrs(nsr(typeKey, opIn, "non-existent"))}), pods(pod(po{Name: "p", CPU: "1", Memory: "1Gi"}))), want: []check{firstType("p", "fake-it-1")}},
		// Karpenter provisioning:1219: "should account for daemonsets with a custom label nodeSelector that matches the nodepool"
		{mirrors: []string{"provisioning:1219"}, name: "K: a daemonset selecting the pool's template label counts",
			in:   input(labelledPool("purpose", "monitoring"), ds("ds", "2", st.DaemonSetOptions{Memory: "1Gi", NodeSelector: labels("purpose", "monitoring")}), pods(pod(po{Name: "p", CPU: "1", Memory: "1Gi"}))),
			want: []check{firstType("p", "fake-it-3")}},
		// Karpenter provisioning:1246: "should filter out daemonsets based on instance type requirements"
		{mirrors: []string{"provisioning:1246"}, name: "K: daemonsets count only on the instance types they select",
			in: input(daemonSets(st.DaemonSet(st.DaemonSetOptions{Name: "small", CPU: "1", NodeRequirements: nsrs(nsr(apis.LabelInstanceCPU, opLt, "5"))}),
				st.DaemonSet(st.DaemonSetOptions{Name: "large", CPU: "10", NodeRequirements: nsrs(nsr(apis.LabelInstanceCPU, opGt, "4"))})),
				pods(pod(po{Name: "p", CPU: "1", Memory: "1Gi"}))),
			want: []check{firstType("p", "fake-it-2"), requestsCPU("p", "2")}},
		// Karpenter provisioning:1276: "should account daemonsets with NotIn operator and unspecified key"
		{mirrors: []string{"provisioning:1276"}, name: "K: a daemonset with NotIn on a key no pool defines counts",
			in:   input(ds("ds", "2", st.DaemonSetOptions{Memory: "1Gi", NodeRequirements: nsrs(nsr("foo", opNotIn, "bar"))}), pods(pod(po{Name: "p", CPU: "1", Memory: "1Gi", NodeRequirements: nsrs(nsr(zoneKey, opIn, zoneB))}))),
			want: []check{firstType("p", "fake-it-3")}},
		// Karpenter provisioning:1299: "should remove daemonset node hostname affinity when considering daemonset schedulability"
		{mirrors: []string{"provisioning:1299"}, name: "K: a running daemon pod's pin to its node does not stop its daemonset counting on new nodes",
			in: func() scheduling.Input {
				d := st.DaemonSet(st.DaemonSetOptions{Name: "ds", CPU: "4", NodeRequirements: nsrs(nsr("foo", opIn, "bar"))})
				return input(labelledPool("foo", "bar"), daemonSets(d),
					nodes(st.Node(st.NodeOptions{Name: "n1", InstanceType: st.SyntheticTypes(8)[7], Zone: zoneA, NodePool: "default", Labels: labels("foo", "bar", apis.LabelInstanceCPU, "8", apis.LabelInitialized, "true"),
						Pods: []*corev1.Pod{st.DaemonPod(d, po{Name: "ds-x1", NodeName: "n1", CPU: "4"}), pod(po{Name: "busy", CPU: "3900m"})}})),
					pods(pod(po{Name: "p", CPU: "1"})))
			}(),
			want: []check{claims(1), requestsCPU("p", "5")}},
		// Karpenter provisioning:1371: "should consider a daemonset schedulable with multiple node affinity terms"
		{mirrors: []string{"provisioning:1371"}, name: "K: a daemonset with several node affinity terms counts where any term matches",
			in: input(labelledPool("foo", "bar"), daemonSets(st.DaemonSet(st.DaemonSetOptions{Name: "ds", CPU: "2", Memory: "1Gi",
				NodeRequirements: nsrs(nsr("foo", opIn, "voo")), NodeTerms: [][]corev1.NodeSelectorRequirement{{nsr("foo", opIn, "bar")}}})),
				pods(pod(po{Name: "p", CPU: "1", Memory: "1Gi"}))),
			want: []check{firstType("p", "fake-it-3")}},
		// Karpenter provisioning:1431: "should consider a daemonset schedulable with an incompatible node affinity preference"
		{mirrors: []string{"provisioning:1431"}, name: "K: a daemonset's node preference does not stop it counting",
			in: input(daemonSets(st.DaemonSet(st.DaemonSetOptions{Name: "ds", CPU: "2", Memory: "1Gi", NodePreferences: nodePrefs(nsr("node", opIn, "invalid"))})),
				pods(pod(po{Name: "p", CPU: "1", Memory: "1Gi"}))),
			want: []check{firstType("p", "fake-it-3")}},
		// Karpenter provisioning:1459: "should consider a daemonset schedulable with a PreferNoSchedule taint"
		{mirrors: []string{"provisioning:1459"}, name: "K: a daemonset counts on a pool with a PreferNoSchedule taint",
			in:   input(taintedPool(st.Taint("test", "", preferNo)), ds("ds", "2", st.DaemonSetOptions{Memory: "1Gi"}), pods(pod(po{Name: "p", CPU: "1", Memory: "1Gi"}))),
			want: []check{firstType("p", "fake-it-3")}},
		// Karpenter provisioning:1496: "should not account for daemonset hostports when daemonset would not schedule on selected node"
		{mirrors: []string{"provisioning:1496"}, name: "K: a daemonset's host port binds only on the types it runs on",
			in: input(daemonSets(st.DaemonSet(st.DaemonSetOptions{Name: "large", CPU: "4", HostPorts: []int32{8080}, NodeRequirements: nsrs(nsr(apis.LabelInstanceCPU, opGt, "4"))}),
				st.DaemonSet(st.DaemonSetOptions{Name: "small", CPU: "2", HostPorts: []int32{8081}, NodeRequirements: nsrs(nsr(apis.LabelInstanceCPU, opLt, "5"))})),
				pods(pod(po{Name: "p", CPU: "1", HostPorts: []int32{8080}, NodeRequirements: nsrs(nsr(apis.LabelInstanceCPU, opLt, "5"))}))),
			want: []check{claims(1), firstType("p", "fake-it-3"), everyType("p", "at most 4 vCPUs", func(it *catalog.InstanceType) bool { return it.VCPU <= 4 })}},
		// Labels and taints
		// Karpenter provisioning:1546: "should label nodes"
		{mirrors: []string{"provisioning:1546"}, name: "K: a node carries its pool's labels and a value for each custom requirement",
			in: input(pools(poolWith(st.NodePoolOptions{Labels: labels("test-key-1", "test-value-1"), Requirements: reqs(req(ctKey, opIn, onDemand),
				req("test-key-2", opIn, "test-value-2"), req("test-key-3", opNotIn, "test-value-3"), req("test-key-4", opLt, "4"),
				req("test-key-5", opGt, "5"), req("test-key-6", opExists), req("test-key-7", opDNE))})), pods(pod(po{Name: "p"}))),
			want: []check{claimLabel("p", poolKey, "default"), claimLabel("p", "test-key-1", "test-value-1"), claimLabel("p", "test-key-2", "test-value-2"),
				claimLabel("p", "test-key-3", "0"), claimLabel("p", "test-key-4", "0"), claimLabel("p", "test-key-5", "6"), claimLabel("p", "test-key-6", "0"), noClaimLabel("p", "test-key-7")}},
		// Karpenter provisioning:1623: "should not label nodes with well-known labels from requirements"
		{mirrors: []string{"provisioning:1623"}, name: "K: a NotIn on a well-known label gives the node no label value from it",
			in:   input(reqPool(req("foo", opIn, "bar"), req(apis.LabelWindowsBuild, opNotIn, "test-value")), pods(pod(po{Name: "p"}))),
			want: []check{claimLabel("p", "foo", "bar"), noClaimLabel("p", apis.LabelWindowsBuild, "test-value")}},
		// Karpenter provisioning:1645: "should schedule pods that tolerate taints"
		{mirrors: []string{"provisioning:1645"}, name: "K: pods tolerating the pool's taint by key, value and effect schedule; others do not",
			in: input(taintedPool(st.Taint("nvidia.com/gpu", "true", noSched)), pods(
				pod(po{Name: "equal", Tolerations: tols(st.Toleration("nvidia.com/gpu", corev1.TolerationOpEqual, "true", noSched))}),
				pod(po{Name: "exists", Tolerations: tols(st.Toleration("nvidia.com/gpu", corev1.TolerationOpExists, "", noSched))}),
				pod(po{Name: "any-effect", Tolerations: tols(st.Toleration("nvidia.com/gpu", corev1.TolerationOpExists, "", ""))}),
				pod(po{Name: "none"}))),
			want: []check{fromPool("equal", "default"), fromPool("exists", "default"), fromPool("any-effect", "default"), unschedulable("none", "taint")}},
		// NodeClaim Creation
		// Karpenter provisioning:1695: "should create a nodeclaim request with expected requirements"
		{mirrors: []string{"provisioning:1695"}, name: "K: a NodeClaim's requirements name its pool and capacity types",
			in: input(pods(pod(po{Name: "p"}))), want: []check{claimRequirement("p", poolKey, opIn, "default"), claimRequirement("p", ctKey, opIn, onDemand)}},
		// Karpenter provisioning:1716: "should create a nodeclaim request with additional expected requirements"
		{mirrors: []string{"provisioning:1716"}, name: "K: a NodeClaim carries the pool's own requirements",
			in:   input(reqPool(req("custom-requirement-key", opIn, "value"), req("custom-requirement-key-2", opNotIn, "value")), pods(pod(po{Name: "p"}))),
			want: []check{claimRequirement("p", "custom-requirement-key", opIn, "value"), claimLabel("p", "custom-requirement-key", "value"), claimRequirement("p", poolKey, opIn, "default")}},
		// Karpenter provisioning:1766: "should create a nodeclaim request restricting instance types on architecture"
		{mirrors: []string{"provisioning:1766"}, name: "K: a NodeClaim's instance types follow the pool's architecture",
			in: input(armAndAmd(), reqPool(req(archKey, opIn, arm64)), pods(pod(po{Name: "p"}))), want: []check{everyType("p", isArm, archIs(arm64)), claimRequirement("p", archKey, opIn, arm64)}},
		// Karpenter provisioning:1803: "should create a nodeclaim request restricting instance types on operating system"
		{mirrors: []string{"provisioning:1803"}, name: "K: a NodeClaim's instance types follow the pool's operating system",
			in: input(append(windowsPools(), armAndAmd(), pods(pod(po{Name: "p", NodeSelector: labels(osKey, "windows")})))...),
			want: []check{fromPool("p", "windows"), claimRequirement("p", osKey, opIn, "windows"), claimRequirement("p", archKey, opIn, amd64),
				claimRequirement("p", corev1.LabelWindowsBuild, opIn, "10.0.20348"), everyType("p", "amd64", func(it *catalog.InstanceType) bool { return it.Arch == amd64 })}},
		// Karpenter provisioning:1840: "should create a nodeclaim request restricting instance types based on pod resource requests"
		{mirrors: []string{"provisioning:1840"}, name: "K: a NodeClaim's instance types have the resources its pods request",
			in:   input(types(append(st.SyntheticTypes(4), st.Type(st.TypeOptions{Name: "gpu", VCPU: 4, GPUs: 1, Price: 1}))...), pods(pod(po{Name: "p", Requests: res{"nvidia.com/gpu": "1"}, Limits: res{"nvidia.com/gpu": "1"}}))),
			want: []check{firstType("p", "gpu"), claimRequirement("p", typeKey, opIn, "gpu")}},
		// Karpenter provisioning:1885: "should create a nodeclaim request propagating the nodeClass reference"
		{mirrors: []string{"provisioning:1885"}, name: "K: a NodeClaim names its pool's node class",
			in: input(pools(poolWith(st.NodePoolOptions{Requirements: reqs(req(ctKey, opIn, onDemand)), NodeClass: "test"})), nodeClasses(st.NodeClass("test")), pods(pod(po{Name: "p"}))),
			want: []check{custom(func(t *testing.T, p *plan) {
				if nc, ok := p.claim(t, "p"); ok && nc.NodeClass != "test" {
					t.Errorf("node class %q", nc.NodeClass)
				}
			})}},
		// Karpenter provisioning:1913: "should create a nodeclaim with resource requests"
		{mirrors: []string{"provisioning:1913"}, name: "K: a NodeClaim requests what its pod requests, with a pod slot",
			in: input(types(append(st.SyntheticTypes(4), st.Type(st.TypeOptions{Name: "gpu", VCPU: 4, GPUs: 1, Price: 1}))...),
				pods(pod(po{Name: "p", CPU: "1", Memory: "1Mi", Requests: res{"nvidia.com/gpu": "1"}, Limits: res{"nvidia.com/gpu": "1"}}))),
			want: []check{requestsOf("p", res{"cpu": "1", "memory": "1Mi", "nvidia.com/gpu": "1", "pods": "1"})}},
		// Karpenter provisioning:1939: "should create a nodeclaim with resource requests with daemon overhead"
		{mirrors: []string{"provisioning:1939"}, name: "K: a NodeClaim requests its pod and the daemonsets' overhead",
			in:   input(ds("ds", "1", st.DaemonSetOptions{Memory: "1Mi"}), pods(pod(po{Name: "p", CPU: "1", Memory: "1Mi"}))),
			want: []check{requestsOf("p", res{"cpu": "2", "memory": "2Mi", "pods": "2"})}},
		// Karpenter provisioning:1959: "should not double-count daemon overhead when multiple pods are scheduled to the same nodeclaim"
		{mirrors: []string{"provisioning:1959"}, name: "K: daemonset overhead counts once per NodeClaim",
			in:   input(ds("ds", "1", st.DaemonSetOptions{Memory: "1Mi"}), podList(podsN(2, po{Name: "p", CPU: "1", Memory: "1Mi"}))),
			want: []check{claims(1), requestsOf("p-0", res{"cpu": "3", "memory": "3Mi", "pods": "3"})}},
		// Preferential Fallback
		// Karpenter provisioning:2389: "should not relax the final term"
		{mirrors: []string{"provisioning:2389"}, name: "K: the only required term is never relaxed",
			in: input(reqPool(req(zoneKey, opIn, zoneA)), pods(pod(po{Name: "p", NodeRequirements: nsrs(nsr(zoneKey, opIn, "invalid"))}))), want: []check{claims(0), unschedulable("p", zoneKey)}},
		// Karpenter provisioning:2410: "should relax multiple terms"
		{mirrors: []string{"provisioning:2410"}, name: "K: required terms are tried until one fits",
			in:   input(pods(pod(po{Name: "p", NodeRequirements: nsrs(nsr(zoneKey, opIn, "invalid")), NodeTerms: [][]corev1.NodeSelectorRequirement{{nsr(zoneKey, opIn, "invalid")}, {nsr(zoneKey, opIn, zoneA)}, {nsr(zoneKey, opIn, zoneB)}}}))),
			want: []check{claimZones("p", zoneA)}},
		// Karpenter provisioning:2434: "should relax all node affinity terms"
		{mirrors: []string{"provisioning:2434"}, name: "K: every node preference is relaxed when none fits",
			in:   input(pods(pod(po{Name: "p", NodePreferences: []corev1.PreferredSchedulingTerm{st.Preference(1, nsr(zoneKey, opIn, "invalid")), st.Preference(1, nsr(typeKey, opIn, "invalid"))}}))),
			want: []check{claims(1), allScheduled()}},
		// Karpenter provisioning:2453: "should relax to use lighter weights"
		{mirrors: []string{"provisioning:2453"}, name: "K: node preferences relax to lighter weights",
			in: input(reqPool(req(zoneKey, opIn, zoneA, zoneB)), pods(pod(po{Name: "p", NodePreferences: []corev1.PreferredSchedulingTerm{
				st.Preference(100, nsr(typeKey, opIn, zoneC)), st.Preference(50, nsr(zoneKey, opIn, zoneB)), st.Preference(1, nsr(zoneKey, opIn, zoneA))}}))),
			want: []check{claimZones("p", zoneB)}},
		// Karpenter provisioning:2487: "should tolerate PreferNoSchedule taint only after trying to relax Affinity terms"
		{mirrors: []string{"provisioning:2487"}, name: "K: a PreferNoSchedule taint is tolerated only after node preferences are relaxed",
			in:   input(taintedPool(st.Taint("foo", "bar", preferNo)), pods(pod(po{Name: "p", NodePreferences: []corev1.PreferredSchedulingTerm{st.Preference(1, nsr(zoneKey, opIn, "invalid")), st.Preference(1, nsr(typeKey, opIn, "invalid"))}}))),
			want: []check{claims(1), claimTaint("p", "foo")}},
		// Karpenter provisioning:2558: "should ignore node preferredDuringSchedulingIgnoredDuringExecution affinity :: corev"
		{mirrors: []string{"provisioning:2558", "provisioning:2559"}, name: "K: a relaxed node preference does not keep two pods apart",
			in:   input(pods(pod(po{Name: "a", CPU: "2", Labels: labels("app", "foo")}), pod(po{Name: "b", CPU: "1", Labels: labels("app", "baz"), NodePreferences: nodePrefs(nsr(zoneKey, opIn, "value-1"))}))),
			want: []check{allScheduled(), sameNode("a", "b")}},
		// Karpenter provisioning:2566: "should ignore node affinity preferences"
		{mirrors: []string{"provisioning:2566"}, name: "K: PreferencePolicy Ignore ignores node preferences",
			in: input(preferences(scheduling.PreferencesIgnore), pods(pod(po{Name: "z1", CPU: "2", NodeSelector: labels(zoneKey, zoneA)}),
				pod(po{Name: "free", CPU: "1", NodePreferences: nodePrefs(nsr(zoneKey, opIn, zoneC))}))),
			want: []check{allScheduled(), claims(1), sameNode("free", "z1"), planWithoutPreferences()}},
		// Karpenter provisioning:2660: "should ignore topologySpreadConstraint preferences :: corev"
		{mirrors: []string{"provisioning:2660", "provisioning:2661"}, name: "K: PreferencePolicy Ignore ignores ScheduleAnyway spreads",
			in: input(preferences(scheduling.PreferencesIgnore), podList(podsN(5, po{Name: "p", Labels: labels("app", "foo"),
				Spread: []corev1.TopologySpreadConstraint{st.Spread(zoneKey, 1, anyway, labels("app", "foo")), st.Spread(hostKey, 1, anyway, labels("app", "foo"))}}))),
			want: []check{claims(1), planWithoutPreferences()}},
		// Karpenter provisioning:2694: "should ignore pod anti-affinity preferences :: corev"
		{mirrors: []string{"provisioning:2694", "provisioning:2695"}, name: "K: PreferencePolicy Ignore ignores preferred pod anti-affinity",
			in: input(preferences(scheduling.PreferencesIgnore), podList(podsN(5, po{Name: "p", Labels: labels("app", "foo"),
				PreferredAntiAffinity: []corev1.WeightedPodAffinityTerm{st.Weighted(1, st.Term(zoneKey, labels("app", "foo"))), st.Weighted(1, st.Term(hostKey, labels("app", "foo")))}}))),
			want: []check{claims(1), planWithoutPreferences()}},
		// Karpenter provisioning:2767: "should ignore pod affinity preferences :: corev"
		{mirrors: []string{"provisioning:2767", "provisioning:2768"}, name: "K: PreferencePolicy Ignore ignores preferred pod affinity",
			in: input(preferences(scheduling.PreferencesIgnore), pods(pod(po{Name: "z1", CPU: "2", NodeSelector: labels(zoneKey, zoneA)}),
				pod(po{Name: "target", CPU: "2", Labels: labels("app", "bar"), NodeSelector: labels(zoneKey, zoneC)}),
				pod(po{Name: "aff", CPU: "1", PreferredAffinity: []corev1.WeightedPodAffinityTerm{st.Weighted(1, st.Term(hostKey, labels("app", "bar")))}}))),
			want: []check{allScheduled(), planWithoutPreferences()}},
		{name: "an unknown preferencePolicy is an error",
			in: input(preferences("Sometimes"), pods(pod(po{Name: "p"}))), err: `preferencePolicy "Sometimes" is not one of Respect, Ignore`},
		// Multiple NodePools
		// Karpenter provisioning:2773: "should schedule to an explicitly selected NodePool"
		{mirrors: []string{"provisioning:2773"}, name: "K: a pod selecting a pool by name gets it",
			in: input(pods(pod(po{Name: "p", NodeSelector: labels(poolKey, "default")}))), want: []check{fromPool("p", "default"), claimLabel("p", poolKey, "default")}},
		// Karpenter provisioning:2781: "should schedule to a NodePool by labels"
		{mirrors: []string{"provisioning:2781"}, name: "K: a pod selecting a pool's template labels gets it",
			in: input(pools(pool("other", 0, req(ctKey, opIn, onDemand)), poolWith(st.NodePoolOptions{Name: "labelled", Requirements: reqs(req(ctKey, opIn, onDemand)), Labels: labels("foo", "bar")})),
				pods(pod(po{Name: "p", NodeSelector: labels("foo", "bar")}))),
			want: []check{fromPool("p", "labelled")}},
		// Karpenter provisioning:2797: "should not match NodePool with PreferNoSchedule taint when other NodePool match"
		{mirrors: []string{"provisioning:2797"}, name: "K: a pool with a PreferNoSchedule taint is used only when no other fits",
			in: input(pools(poolWith(st.NodePoolOptions{Name: "tainted", Weight: 10, Requirements: reqs(req(ctKey, opIn, onDemand)), Taints: taints(st.Taint("foo", "bar", preferNo))}),
				pool("plain", 0, req(ctKey, opIn, onDemand))), pods(pod(po{Name: "p"}))),
			want: []check{fromPool("p", "plain")}},
		// Karpenter provisioning:2815: "should schedule to the nodepool with the highest priority always"
		{mirrors: []string{"provisioning:2815"}, name: "K: the heaviest pool takes every pod",
			in: input(pools(pool("none", 0, req(ctKey, opIn, onDemand)), pool("twenty", 20, req(ctKey, opIn, onDemand)), pool("hundred", 100, req(ctKey, opIn, onDemand))),
				podList(podsN(3, po{Name: "p"}))),
			want: []check{fromPool("p-0", "hundred"), fromPool("p-1", "hundred"), fromPool("p-2", "hundred")}},
		// Karpenter provisioning:2831: "should schedule to explicitly selected nodepool even if other nodePools are higher priority"
		{mirrors: []string{"provisioning:2831"}, name: "K: a pod selecting a lighter pool by name gets it",
			in: input(pools(pool("target", 0, req(ctKey, opIn, onDemand)), pool("twenty", 20, req(ctKey, opIn, onDemand)), pool("hundred", 100, req(ctKey, opIn, onDemand))),
				pods(pod(po{Name: "p", NodeSelector: labels(poolKey, "target")}))),
			want: []check{fromPool("p", "target")}},
		// StaticNodePool
		// Karpenter provisioning:2848: "should not create NodeClaims for StaticNodePool"
		{mirrors: []string{"provisioning:2848"}, name: "K: a static NodePool launches nothing for pending pods",
			in: input(pools(func() *apis.NodePool {
				np := pool("static", 0, req(ctKey, opIn, onDemand))
				np.Spec.Replicas = &one
				return np
			}()), pods(pod(po{Name: "p"}))),
			want: []check{claims(0), unschedulable("p", "NodePool static", "static")}},
		// Karpenter provisioning:2859: "should still provision dynamic NodeClaims when there are both Static and Dynamic NodePools"
		{mirrors: []string{"provisioning:2859"}, name: "K: a dynamic NodePool beside a static one provisions",
			in: input(pools(func() *apis.NodePool {
				np := pool("static", 100, req(ctKey, opIn, onDemand))
				np.Spec.Replicas = &one
				return np
			}(), pool("dynamic", 0, req(ctKey, opIn, onDemand))), pods(pod(po{Name: "p"}))),
			want: []check{fromPool("p", "dynamic")}},
	}
}

func preferences(p scheduling.PreferencePolicy) opt {
	return func(in *scheduling.Input) { in.PreferencePolicy = p }
}

func ptrInt32(v int32) *int32 { return &v }

// claimRequirement: the pod's NodeClaim's requirements include key op
// values (values as a subset for In).
func claimRequirement(pod, key string, op corev1.NodeSelectorOperator, values ...string) check {
	return func(t *testing.T, p *plan) {
		nc, ok := p.claim(t, pod)
		if !ok {
			return
		}
		for _, r := range nc.Requirements {
			if r.Key != key || r.Operator != op {
				continue
			}
			have := map[string]bool{}
			for _, v := range r.Values {
				have[v] = true
			}
			for _, v := range values {
				if !have[v] {
					t.Errorf("%s: requirement %s %s %v lacks %s", pod, key, op, r.Values, v)
				}
			}
			return
		}
		t.Errorf("%s: no requirement %s %s in %v", pod, key, op, nc.Requirements)
	}
}

// planWithoutPreferences: the plan costs what the same pods without any
// preference (preferred node and pod affinity and anti-affinity,
// ScheduleAnyway spreads) cost, with as many NodeClaims.
func planWithoutPreferences() check {
	return func(t *testing.T, p *plan) {
		in := p.in
		in.PreferencePolicy = ""
		in.Pods = nil
		for _, x := range p.in.Pods {
			x = x.DeepCopy()
			if a := x.Spec.Affinity; a != nil {
				if a.NodeAffinity != nil {
					a.NodeAffinity.PreferredDuringSchedulingIgnoredDuringExecution = nil
				}
				if a.PodAffinity != nil {
					a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution = nil
				}
				if a.PodAntiAffinity != nil {
					a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution = nil
				}
			}
			var keep []corev1.TopologySpreadConstraint
			for _, c := range x.Spec.TopologySpreadConstraints {
				if c.WhenUnsatisfiable != corev1.ScheduleAnyway {
					keep = append(keep, c)
				}
			}
			x.Spec.TopologySpreadConstraints = keep
			in.Pods = append(in.Pods, x)
		}
		r, err := scheduling.Solve(in)
		if err != nil {
			t.Fatal(err)
		}
		if r.PricePerHour != p.res.PricePerHour || len(r.NodeClaims) != len(p.res.NodeClaims) {
			t.Errorf("ignoring preferences: %d claims at %v; without them: %d at %v", len(p.res.NodeClaims), p.res.PricePerHour, len(r.NodeClaims), r.PricePerHour)
		}
	}
}
