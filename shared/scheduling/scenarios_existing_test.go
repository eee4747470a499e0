package scheduling_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/scheduling"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
)

// node4 is an existing 4-vCPU synthetic node (3920m allocatable) in zone.
func node4(name, zone string, bound ...*corev1.Pod) *scheduling.Node {
	return st.Node(st.NodeOptions{Name: name, InstanceType: st.SyntheticTypes(4)[3], Zone: zone, CapacityType: onDemand, NodePool: "default", Pods: bound})
}

// smallNode is an existing node with the given allocatable cpu (memory 8Gi,
// 110 pods).
func smallNode(name, zone, cpu string, inFlight bool, bound ...*corev1.Pod) *scheduling.Node {
	return st.Node(st.NodeOptions{Name: name, Zone: zone, InFlight: inFlight, NodePool: "default",
		Allocatable: res{"cpu": cpu, "memory": "8Gi", "pods": "110"}, Pods: bound})
}

// podsOn: exactly n of the pending pods go to node.
func podsOn(node string, n int) check {
	return func(t *testing.T, p *plan) {
		got := 0
		for _, on := range p.nodeOf {
			if on == node {
				got++
			}
		}
		if got != n {
			t.Errorf("%d pods on %s, want %d:%s", got, node, n, summary(p.res))
		}
	}
}

func existingScenarios() []scenario {
	return []scenario{
		{
			name: "an existing node with room comes first",
			in:   input(nodes(node4("n1", zoneA)), pods(pod(po{Name: "web", CPU: "1"}))),
			want: []check{claims(0), onNode("web", "n1"), inFlightPlacement("n1", false), price(0)},
		},
		{
			name: "an existing node too small for the pod",
			in:   input(nodes(smallNode("n1", zoneA, "500m", false)), pods(pod(po{Name: "web", CPU: "1"}))),
			want: []check{claims(1), notOnNode("web", "n1")},
		},
		{
			name: "in-flight NodeClaims take pending pods before any new claim",
			in:   input(nodes(st.Node(st.NodeOptions{Name: "launching", InstanceType: st.SyntheticTypes(4)[3], Zone: zoneB, NodePool: "default", InFlight: true})), podList(podsN(3, po{Name: "web", CPU: "1"}))),
			want: []check{claims(0), podsOn("launching", 3), inFlightPlacement("launching", true)},
		},
		{
			name: "an in-flight NodeClaim takes what fits and a new claim the rest",
			in:   input(nodes(smallNode("launching", zoneB, "1500m", true)), podList(podsN(2, po{Name: "web", CPU: "1"}))),
			want: []check{claims(1), podsOn("launching", 1)},
		},
		{
			name: "existing nodes before in-flight ones",
			in:   input(nodes(smallNode("launching", zoneA, "1500m", true), smallNode("running", zoneA, "1500m", false)), pods(pod(po{Name: "web", CPU: "1"}))),
			want: []check{claims(0), onNode("web", "running")},
		},
		{
			name: "an existing node of a lighter pool before a new node of a heavier one",
			in: input(pools(pool("heavy", 10, req(ctKey, opIn, onDemand)), pool("light", 1, req(ctKey, opIn, onDemand))),
				nodes(st.Node(st.NodeOptions{Name: "light-1", InstanceType: st.SyntheticTypes(4)[3], Zone: zoneA, NodePool: "light"})),
				pods(pod(po{Name: "web", CPU: "1"}))),
			want: []check{claims(0), onNode("web", "light-1")},
		},
		{
			name: "the bound pods of an existing node use its room",
			in: input(nodes(smallNode("n1", zoneA, "2", false, pod(po{Name: "old", CPU: "1500m"}))),
				podList(podsN(2, po{Name: "new", CPU: "400m"}))),
			want: []check{claims(1), podsOn("n1", 1)},
		},
		{
			name: "an existing node at its pod limit takes no more",
			in: input(nodes(st.Node(st.NodeOptions{Name: "n1", Zone: zoneA, Allocatable: res{"cpu": "8", "memory": "8Gi", "pods": "3"},
				Pods: podsN(3, po{Name: "old", CPU: "10m"})})), pods(pod(po{Name: "web", CPU: "10m"}))),
			want: []check{claims(1), notOnNode("web", "n1")},
		},
		{
			name: "a node selector excludes an existing node",
			in:   input(nodes(node4("n1", zoneA)), pods(pod(po{Name: "web", CPU: "100m", NodeSelector: labels(zoneKey, zoneB)}))),
			want: []check{claims(1), notOnNode("web", "n1"), claimZones("web", zoneB)},
		},
		{
			name: "an existing node's own labels satisfy a selector no pool can",
			in: input(nodes(st.Node(st.NodeOptions{Name: "db-1", Zone: zoneA, Labels: labels("team", "db"), Allocatable: res{"cpu": "4", "memory": "8Gi", "pods": "20"}})),
				pods(pod(po{Name: "db", CPU: "1", NodeSelector: labels("team", "db")}))),
			want: []check{claims(0), onNode("db", "db-1")},
		},
		{
			name: "an existing node's extended resources in use",
			in: input(nodes(st.Node(st.NodeOptions{Name: "gpu-1", Zone: zoneA, Allocatable: res{"cpu": "8", "memory": "32Gi", "pods": "20", "nvidia.com/gpu": "1"},
				Pods: []*corev1.Pod{pod(po{Name: "trainer", CPU: "1", Requests: res{"nvidia.com/gpu": "1"}})}})),
				pods(pod(po{Name: "second", CPU: "1", Requests: res{"nvidia.com/gpu": "1"}}))),
			want: []check{claims(0), unschedulable("second", "nvidia.com/gpu")},
		},
		{
			name: "an existing node's free GPU is used",
			in: input(nodes(st.Node(st.NodeOptions{Name: "gpu-1", Zone: zoneA, Allocatable: res{"cpu": "8", "memory": "32Gi", "pods": "20", "nvidia.com/gpu": "1"}})),
				pods(pod(po{Name: "trainer", CPU: "1", Requests: res{"nvidia.com/gpu": "1"}}))),
			want: []check{claims(0), onNode("trainer", "gpu-1")},
		},
		{
			name: "pods spread over existing nodes before new ones",
			in: input(nodes(smallNode("n1", zoneA, "2", false), smallNode("n2", zoneB, "2", false)),
				podList(podsN(2, po{Name: "web", CPU: "1500m"}))),
			want: []check{claims(0), podsOn("n1", 1), podsOn("n2", 1)},
		},
	}
}
