package scheduling_test

import (
	"strings"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
)

// Synthetic types fake-it-<i> have i+1 vCPUs and cost 0.027 per vCPU on
// demand; under the catalog's overhead model their allocatable is
// fake-it-0: 940m, 1429Mi; fake-it-1: 1930m, 3213Mi; fake-it-2: 2925m,
// 4998Mi; fake-it-3: 3920m, 6782Mi.

func notExotic(it *catalog.InstanceType) bool { return !it.Exotic() }

// memType is a type whose allocatable memory is just over 4Gi (4101Mi), so
// two pods of 1.8G fit and three do not.
func memType() *catalog.InstanceType {
	return st.Type(st.TypeOptions{Name: "mem.4gi", VCPU: 2, MemoryMiB: 5056})
}

func resourceScenarios() []scenario {
	return []scenario{
		{
			name: "smallest fit for one small pod",
			in:   input(pods(pod(po{Name: "small", CPU: "500m", Memory: "512Mi"}))),
			want: []check{claims(1), firstType("small", "fake-it-0"), capacityType("small", onDemand), price(0.027), allScheduled()},
		},
		{
			name: "cpu decides the size",
			in:   input(pods(pod(po{Name: "cpu", CPU: "1500m", Memory: "1Gi"}))),
			want: []check{claims(1), firstType("cpu", "fake-it-1")},
		},
		{
			name: "memory decides the size",
			in:   input(pods(pod(po{Name: "mem", CPU: "100m", Memory: "3Gi"}))),
			want: []check{claims(1), firstType("mem", "fake-it-1")},
		},
		{
			name: "a pod with no requests still takes a pod slot",
			in:   input(pods(pod(po{Name: "empty"}))),
			want: []check{claims(1), firstType("empty", "fake-it-0")},
		},
		{
			name: "max pods is a resource: 25 tiny pods on 5-pod types make 5 nodes",
			in: input(types(st.Type(st.TypeOptions{Name: "five-pods", VCPU: 8, MemoryMiB: 32768, Pods: 5})),
				podList(podsN(25, po{Name: "tiny", CPU: "10m", Memory: "10Mi"}))),
			want: []check{claims(5), podsPerClaim(5, 5, 5, 5, 5), allScheduled()},
		},
		{
			name: "memory packing: 40 pods of 1.8G on 4Gi types make 20 nodes",
			in:   input(types(memType()), podList(podsN(40, po{Name: "java", CPU: "100m", Memory: "1.8G"}))),
			want: []check{claims(20), podsPerClaim(2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2), allScheduled()},
		},
		{
			name: "large and small pods share a node",
			in: input(pods(pod(po{Name: "large", CPU: "3", Memory: "1Gi"})),
				podList(podsN(4, po{Name: "small", CPU: "100m", Memory: "128Mi"}))),
			want: []check{claims(1), sameNode("large", "small-0", "small-1", "small-2", "small-3"), firstType("large", "fake-it-3"), price(0.108)},
		},
		{
			// 10 x 500m needs 6 vCPUs at the least (a 5-vCPU node holds 4918m);
			// price is linear in vCPUs, so the cheapest plan costs 6 x 0.027.
			name: "ten half-core pods cost six vCPUs",
			in:   input(podList(podsN(10, po{Name: "half", CPU: "500m", Memory: "256Mi"}))),
			want: []check{price(0.162), allScheduled()},
		},
		{
			name: "a request bigger than any type is unschedulable with the pool, resource and largest type",
			in: input(realCatalog(), pools(pool("default", 0,
				req(familyKey, opIn, "r7i"), req(apis.LabelInstanceSize, opNotIn, "metal-24xl", "metal-48xl"), req(ctKey, opIn, onDemand))),
				pods(pod(po{Name: "huge", CPU: "4", Memory: "2Ti"}))),
			want: []check{claims(0), unschedulable("huge", "NodePool default", "2Ti", "memory", "r7i.48xlarge", "1536Gi")},
		},
		{
			name: "a cpu request bigger than any type names the largest",
			in:   input(types(st.SyntheticTypes(20)...), pods(pod(po{Name: "wide", CPU: "64"}))),
			want: []check{claims(0), unschedulable("wide", "default", "cpu", "fake-it-19")},
		},
		{
			name: "a GPU pod with no GPU type in the pool is unschedulable",
			in:   input(pods(pod(po{Name: "gpu", CPU: "1", Requests: res{"nvidia.com/gpu": "1"}}))),
			want: []check{claims(0), unschedulable("gpu", "nvidia.com/gpu")},
		},
		{
			name: "daemonset overhead pushes to the next size",
			in: input(pods(pod(po{Name: "app", CPU: "800m", Memory: "256Mi"})),
				daemonSets(st.DaemonSet(st.DaemonSetOptions{Name: "agent", CPU: "200m", Memory: "64Mi"}))),
			want: []check{claims(1), firstType("app", "fake-it-1")},
		},
		{
			name: "daemonset memory overhead pushes to the next size",
			in: input(pods(pod(po{Name: "app", CPU: "100m", Memory: "1Gi"})),
				daemonSets(st.DaemonSet(st.DaemonSetOptions{Name: "logs", Memory: "512Mi"}))),
			want: []check{claims(1), firstType("app", "fake-it-1")},
		},
		{
			name: "a daemonset that does not tolerate the pool's taint adds nothing",
			in: input(pools(poolWith(st.NodePoolOptions{Requirements: reqs(req(ctKey, opIn, onDemand)), Taints: taints(st.Taint("dedicated", "x", noSched))})),
				pods(pod(po{Name: "app", CPU: "800m", Tolerations: tols(st.Toleration("dedicated", "Equal", "x", noSched))})),
				daemonSets(st.DaemonSet(st.DaemonSetOptions{Name: "agent", CPU: "200m"}))),
			want: []check{claims(1), firstType("app", "fake-it-0")},
		},
		{
			name: "a daemonset for arm64 nodes adds nothing on amd64",
			in: input(pods(pod(po{Name: "app", CPU: "800m"})),
				daemonSets(st.DaemonSet(st.DaemonSetOptions{Name: "arm-agent", CPU: "200m", NodeSelector: labels(archKey, "arm64")}))),
			want: []check{claims(1), firstType("app", "fake-it-0")},
		},
		{
			name: "a daemonset selecting the pool's template label counts",
			in: input(pools(poolWith(st.NodePoolOptions{Requirements: reqs(req(ctKey, opIn, onDemand)), Labels: labels("team", "a")})),
				pods(pod(po{Name: "app", CPU: "800m"})),
				daemonSets(st.DaemonSet(st.DaemonSetOptions{Name: "team-agent", CPU: "200m", NodeRequirements: nsrs(nsr("team", opIn, "a"))}))),
			want: []check{claims(1), firstType("app", "fake-it-1")},
		},
		{
			name: "an init container bigger than the app sets the size",
			in:   input(pods(pod(po{Name: "init", CPU: "100m", InitContainers: []st.Container{{CPU: "2"}}}))),
			want: []check{claims(1), firstType("init", "fake-it-2")},
		},
		{
			name: "sidecars add to the app containers",
			in:   input(pods(pod(po{Name: "mesh", CPU: "500m", Sidecars: []st.Container{{CPU: "500m"}}}))),
			want: []check{claims(1), firstType("mesh", "fake-it-1")},
		},
		{
			// init 1700m runs before the sidecar starts: max(1700m, 300m+100m).
			name: "an init container before a sidecar does not add to it",
			in:   input(pods(pod(po{Name: "ordered", CPU: "100m", InitContainers: []st.Container{{CPU: "1700m"}}, Sidecars: []st.Container{{CPU: "300m"}}}))),
			want: []check{claims(1), firstType("ordered", "fake-it-1")},
		},
		{
			name: "pod overhead counts",
			in:   input(pods(pod(po{Name: "kata", CPU: "900m", Overhead: res{"cpu": "100m"}}))),
			want: []check{claims(1), firstType("kata", "fake-it-1")},
		},
		{
			name: "a second app container adds up",
			in:   input(pods(pod(po{Name: "two", CPU: "600m", Containers: []st.Container{{CPU: "600m"}}}))),
			want: []check{claims(1), firstType("two", "fake-it-1")},
		},
		{
			name: "a neuron pod gets the cheapest Inferentia type",
			in:   input(realCatalog(), pools(pool("default", 0)), pods(pod(po{Name: "infer", CPU: "1", Memory: "2Gi", Requests: res{"aws.amazon.com/neuron": "1"}}))),
			want: []check{claims(1), oracleFirst("infer", true), everyType("infer", "a Neuron type", func(it *catalog.InstanceType) bool {
				return strings.HasPrefix(it.Accelerator.Name, "inferentia") || strings.HasPrefix(it.Accelerator.Name, "trainium")
			})},
		},
		{
			name: "an EFA pod gets an EFA type",
			in:   input(realCatalog(), pools(pool("default", 0)), pods(pod(po{Name: "hpc", CPU: "2", Memory: "4Gi", Requests: res{"vpc.amazonaws.com/efa": "1"}}))),
			want: []check{claims(1), oracleFirst("hpc", true), everyType("hpc", "an EFA type", func(it *catalog.InstanceType) bool { return it.EFA >= 1 })},
		},
		{
			name: "GPU and other exotic types are not chosen for CPU pods",
			in:   input(realCatalog(), pools(pool("default", 0)), pods(pod(po{Name: "cpu", CPU: "4", Memory: "16Gi"}))),
			want: []check{claims(1), oracleFirst("cpu", false), everyType("cpu", "a plain type", notExotic)},
		},
		{
			name: "a GPU type is chosen for a CPU pod when nothing else fits",
			in: input(types(st.Type(st.TypeOptions{Name: "small", VCPU: 2}), st.Type(st.TypeOptions{Name: "gpu-big", VCPU: 16, GPUs: 1, Price: 2})),
				pods(pod(po{Name: "wide", CPU: "8"}))),
			want: []check{claims(1), firstType("wide", "gpu-big")},
		},
		{
			name: "a cheaper GPU type is still not chosen for a CPU pod",
			in: input(types(st.Type(st.TypeOptions{Name: "plain", VCPU: 4}), st.Type(st.TypeOptions{Name: "cheap-gpu", VCPU: 4, GPUs: 1, Price: 0.05})),
				pods(pod(po{Name: "web", CPU: "1"}))),
			want: []check{claims(1), firstType("web", "plain"), everyType("web", "a plain type", notExotic)},
		},
		{
			name: "a GPU pod takes a GPU type with enough GPUs",
			in: input(types(st.Type(st.TypeOptions{Name: "plain", VCPU: 8}), st.Type(st.TypeOptions{Name: "gpu1", VCPU: 4, GPUs: 1, Price: 0.5}),
				st.Type(st.TypeOptions{Name: "gpu4", VCPU: 16, GPUs: 4, Price: 3})),
				pods(pod(po{Name: "train", CPU: "1", Requests: res{"nvidia.com/gpu": "2"}}))),
			want: []check{claims(1), firstType("train", "gpu4")},
		},
	}
}

func reqs(rs ...apis.NodeSelectorRequirementWithMinValues) []apis.NodeSelectorRequirementWithMinValues {
	return rs
}
