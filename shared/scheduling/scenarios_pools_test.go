package scheduling_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/refdata"
	"github.com/nodewright/nodewright/shared/scheduling"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
	"github.com/nodewright/nodewright/shared/snapshot"
)

// limitHolds: the pool's NodeClaims, each counted at the largest capacity
// among its instance types (EC2 may launch any of them), plus the capacity
// of the pool's existing nodes stay within the limit of resource (cpu in
// vCPUs, memory in whole GiB, nvidia.com/gpu).
func limitHolds(poolName string, rname corev1.ResourceName, limit int64) check {
	return func(t *testing.T, p *plan) {
		value := func(q resource.Quantity) int64 {
			if rname == corev1.ResourceMemory {
				return q.Value() >> 30
			}
			return q.Value()
		}
		amount := func(it *catalog.InstanceType) int64 { return value(it.Capacity()[rname]) }
		var total int64
		for _, nc := range p.res.NodeClaims {
			if nc.NodePool != poolName {
				continue
			}
			var most int64
			for _, name := range nc.InstanceTypes {
				most = max(most, amount(typeByName(p.in, name)))
			}
			total += most
		}
		for _, n := range p.in.Nodes {
			if n.Node.Labels[poolKey] == poolName {
				total += value(n.Node.Status.Capacity[rname])
			}
		}
		if total > limit {
			t.Errorf("NodePool %s: %d of %s, limit %d:%s", poolName, total, rname, limit, summary(p.res))
		}
	}
}

// gettingStarted is the getting-started example (pool and node class) with
// n inflate pods, on the real catalog.
func gettingStarted(n int) scheduling.Input {
	path, err := refdata.Example("getting-started.yaml")
	if err != nil {
		panic(err)
	}
	s, err := snapshot.ReadFiles(path)
	if err != nil {
		panic(fmt.Sprintf("the getting-started example does not load: %v", err))
	}
	in := input(realCatalog(), podList(podsN(n, po{Name: "inflate", CPU: "250m", Memory: "64Mi", Labels: labels("app", "inflate")})))
	in.NodePools, in.NodeClasses = s.NodePools, s.NodeClasses
	return in
}

func gpuType(name string, vcpu, gpus int, price float64) *catalog.InstanceType {
	return st.Type(st.TypeOptions{Name: name, VCPU: vcpu, GPUs: gpus, Price: price})
}

func poolScenarios() []scenario {
	gs := gettingStarted(20)
	return []scenario{
		{
			name: "the heavier pool goes first even when dearer",
			in: input(pools(pool("cheap", 1, req(ctKey, opIn, onDemand)), pool("preferred", 10, req(ctKey, opIn, onDemand), req("karpenter.k8s.aws/instance-cpu", opGt, "3"))),
				pods(pod(po{Name: "web", CPU: "100m"}))),
			want: []check{claims(1), fromPool("web", "preferred"), firstType("web", "fake-it-3")},
		},
		{
			name: "a lighter pool takes what the heavier cannot",
			in: input(pools(pool("arm", 10, req(ctKey, opIn, onDemand), req(archKey, opIn, "arm64")), pool("fallback", 1, req(ctKey, opIn, onDemand))),
				pods(pod(po{Name: "web", CPU: "100m"}))),
			want: []check{claims(1), fromPool("web", "fallback")},
		},
		{
			name: "pools of equal weight: the cheaper first",
			in: input(pools(pool("big", 5, req(ctKey, opIn, onDemand), req("karpenter.k8s.aws/instance-cpu", opGt, "3")), pool("any", 5, req(ctKey, opIn, onDemand))),
				pods(pod(po{Name: "web", CPU: "100m"}))),
			want: []check{claims(1), fromPool("web", "any"), firstType("web", "fake-it-0")},
		},
		{
			name: "a cpu limit leaves the pods beyond it unschedulable",
			in: input(pools(poolWith(st.NodePoolOptions{Requirements: reqs(req(ctKey, opIn, onDemand)), Limits: res{"cpu": "4"}})),
				podList(podsN(3, po{Name: "worker", CPU: "1500m"}))),
			want: []check{unschedulableCount(1, "limit"), limitHolds("default", corev1.ResourceCPU, 4)},
		},
		{
			name: "a cpu limit keeps every instance type of a claim within it",
			in: input(pools(poolWith(st.NodePoolOptions{Requirements: reqs(req(ctKey, opIn, onDemand)), Limits: res{"cpu": "2"}})),
				pods(pod(po{Name: "web", CPU: "100m"}))),
			want: []check{claims(1), everyType("web", "at most 2 vCPUs", func(it *catalog.InstanceType) bool { return it.VCPU <= 2 })},
		},
		{
			// Karpenter drops only the types that would exceed what is left
			// of the limits; far from them a claim keeps every fitting type,
			// so EC2 has the same fallbacks as in a pool without limits.
			name: "ample limits do not narrow a claim's instance types",
			in: input(pools(poolWith(st.NodePoolOptions{Requirements: reqs(req(ctKey, opIn, onDemand)), Limits: res{"cpu": "1000", "memory": "4000Gi"}})),
				pods(pod(po{Name: "web", CPU: "500m"}))),
			want: []check{claims(1), firstType("web", "fake-it-0"), typeCount("web", 60)},
		},
		{
			name: "limits count the pool's existing nodes",
			in: input(pools(poolWith(st.NodePoolOptions{Requirements: reqs(req(ctKey, opIn, onDemand)), Limits: res{"cpu": "4"}})),
				nodes(st.Node(st.NodeOptions{Name: "full", InstanceType: st.SyntheticTypes(4)[3], Zone: zoneA, NodePool: "default", CapacityType: onDemand,
					Pods: []*corev1.Pod{pod(po{Name: "hog", CPU: "3900m"})}})),
				pods(pod(po{Name: "late", CPU: "500m"}))),
			want: []check{claims(0), unschedulable("late", "limit")},
		},
		{
			name: "a GPU limit",
			in: input(types(gpuType("gpu1", 4, 1, 0.5)), pools(poolWith(st.NodePoolOptions{Requirements: reqs(req(ctKey, opIn, onDemand)), Limits: res{"nvidia.com/gpu": "1"}})),
				podList(podsN(2, po{Name: "train", CPU: "1", Requests: res{"nvidia.com/gpu": "1"}}))),
			want: []check{claims(1), unschedulableCount(1, "limit"), limitHolds("default", "nvidia.com/gpu", 1)},
		},
		{
			name: "a memory limit",
			in: input(pools(poolWith(st.NodePoolOptions{Requirements: reqs(req(ctKey, opIn, onDemand)), Limits: res{"memory": "10Gi"}})),
				podList(podsN(3, po{Name: "cache", CPU: "100m", Memory: "3Gi"}))),
			want: []check{unschedulableCount(1, "limit"), limitHolds("default", corev1.ResourceMemory, 10)},
		},
		{
			name: "the getting-started pool: 20 inflate pods within its 8 vCPU limit",
			in:   gs,
			want: []check{allScheduled(), limitHolds("default", corev1.ResourceCPU, 8), everyType("default/inflate-0", "a getting-started type", func(it *catalog.InstanceType) bool {
				return (it.Category == "c" || it.Category == "m" || it.Category == "t") && (it.VCPU == 2 || it.VCPU == 4) && it.Arch == "amd64" && it.Generation > 2
			}), capacityType("inflate-0", onDemand)},
		},
		{
			name: "a pod no pool admits names every pool in its reason",
			in: input(pools(pool("arm", 10, req(ctKey, opIn, onDemand), req(archKey, opIn, "arm64")), pool("zone-a", 1, req(ctKey, opIn, onDemand), req(zoneKey, opIn, zoneA))),
				pods(pod(po{Name: "b-amd", CPU: "100m", NodeSelector: labels(zoneKey, zoneB, archKey, "amd64")}))),
			want: []check{claims(0), unschedulable("b-amd", "arm", "zone-a")},
		},
	}
}
