package scheduling_test

// Scenarios mirroring Karpenter's provisioning/scheduling topology_test.go
// (v1.14.1), one per It ("topology:<line>"). Karpenter's tests that provision
// in several rounds are one solve here: the earlier rounds' pods are bound
// to existing nodes of the input.

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/scheduling"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
)

var tLabels = map[string]string{"test": "test"}

// tPods are n pods labelled test=test with the given spread constraints
// (and options).
func tPods(n int, name string, o po, spreads ...corev1.TopologySpreadConstraint) []*corev1.Pod {
	o.Name, o.Labels, o.Spread = name, tLabels, spreads
	return podsN(n, o)
}

func tSpread(key string, skew int32) corev1.TopologySpreadConstraint {
	return st.Spread(key, skew, dns, tLabels)
}

// zoneNode is an existing node in zone with pods bound (allocatable 100
// cpu unless full).
func zoneNode(name, zone string, full bool, bound ...*corev1.Pod) *scheduling.Node {
	cpu := "100"
	if full {
		cpu = "0"
	}
	return st.Node(st.NodeOptions{Name: name, Zone: zone, CapacityType: onDemand, Allocatable: res{"cpu": cpu, "memory": "100Gi", "pods": "110"}, Pods: bound})
}

// labelledNode is an existing node with labels (and taints) and pods.
func labelledNode(name string, l map[string]string, ts []corev1.Taint, cpu string, bound ...*corev1.Pod) *scheduling.Node {
	return st.Node(st.NodeOptions{Name: name, Labels: l, Taints: ts, Allocatable: res{"cpu": cpu, "memory": "100Gi", "pods": "110"}, Pods: bound})
}

// maxPerClaim: no NodeClaim holds more than n of the pending pods.
func maxPerClaim(n int) check {
	return func(t *testing.T, p *plan) {
		for i, nc := range p.res.NodeClaims {
			if len(nc.Pods) > n {
				t.Errorf("claim %d holds %d pods, want at most %d", i, len(nc.Pods), n)
			}
		}
	}
}

// scheduledCount: exactly n pending pods are placed.
func scheduledCount(n int) check {
	return func(t *testing.T, p *plan) {
		if got := len(p.in.Pods) - len(p.res.Unschedulable); got != n {
			t.Errorf("%d pods placed, want %d:%s", got, n, summary(p.res))
		}
	}
}

func topologyParity() []scenario {
	zoneSpread := tSpread(zoneKey, 1)
	hostSpread := tSpread(hostKey, 1)
	ctSpread := tSpread(ctKey, 1)
	spotOD := pools(pool("default", 0, req(ctKey, opIn, spot, onDemand)))
	zones := func(zs ...string) opt {
		return pools(pool("default", 0, req(ctKey, opIn, onDemand), req(zoneKey, opIn, zs...)))
	}
	bound := func(name string, n int) []*corev1.Pod { return podsN(n, po{Name: name, Labels: tLabels}) }
	cpu11 := po{CPU: "1100m"}
	const spreadLabel = "fake-label"
	return []scenario{
		// Karpenter topology:58: "should ignore unknown topology keys"
		{mirrors: []string{"topology:58"}, name: "K: a spread over a key no node or pool has leaves its pod unschedulable, others schedule",
			in:   input(podList(tPods(1, "spread", po{}, st.Spread("unknown", 1, dns, tLabels))), pods(pod(po{Name: "plain"}))),
			want: []check{unschedulable("spread-0", "unknown"), fromPool("plain", "default")}},
		// Karpenter topology:92: "should not spread when a nil label selector is defined"
		{mirrors: []string{"topology:92"}, name: "K: a spread with no label selector constrains nothing",
			in:   input(podList(podsN(2, po{Name: "p", Labels: tLabels, Spread: []corev1.TopologySpreadConstraint{{TopologyKey: zoneKey, MaxSkew: 1, WhenUnsatisfiable: dns}}}))),
			want: []check{claims(1), sameNode("p-0", "p-1")}},
		// Zonal
		// Karpenter topology:108: "should balance pods across zones (match labels)"
		// Karpenter topology:142: "should respect NodePool zonal constraints"
		{mirrors: []string{"topology:108", "topology:142"}, name: "K: 4 pods over 3 zones make 2, 1, 1 (match labels)",
			in: input(zones(zoneA, zoneB, zoneC), podList(tPods(4, "p", po{}, zoneSpread))), want: []check{podZoneCounts(tLabels, 1, 1, 2)}},
		// Karpenter topology:121: "should balance pods across zones (match expressions)"
		{mirrors: []string{"topology:121"}, name: "K: 4 pods over 3 zones make 2, 1, 1 (match expressions)",
			in: input(podList(podsN(4, po{Name: "p", Labels: tLabels, Spread: []corev1.TopologySpreadConstraint{{TopologyKey: zoneKey, MaxSkew: 1, WhenUnsatisfiable: dns,
				LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "test", Operator: metav1.LabelSelectorOpIn, Values: []string{"test"}}}}}}}))),
			want: []check{podZoneCounts(tLabels, 1, 1, 2)}},
		// Karpenter topology:157: "should respect NodePool zonal constraints (subset) with requirements"
		{mirrors: []string{"topology:157"}, name: "K: a pool with two zones spreads over those two",
			in: input(zones(zoneA, zoneB), podList(tPods(4, "p", po{}, zoneSpread))), want: []check{podZoneCounts(tLabels, 2, 2)}},
		// Karpenter topology:173: "should respect NodePool zonal constraints (subset) with labels"
		{mirrors: []string{"topology:173"}, name: "K: a pool whose template label sets the zone puts all pods there",
			in:   input(pools(poolWith(st.NodePoolOptions{Requirements: reqs(req(ctKey, opIn, onDemand)), Labels: labels(zoneKey, zoneA)})), podList(tPods(4, "p", po{}, zoneSpread))),
			want: []check{podZoneCounts(tLabels, 4), allScheduled()}},
		// Karpenter topology:188: "should respect NodePool zonal constraints (subset) with requirements and labels"
		{mirrors: []string{"topology:188"}, name: "K: a zone label within the pool's zone requirement puts all pods there",
			in:   input(pools(poolWith(st.NodePoolOptions{Requirements: reqs(req(ctKey, opIn, onDemand), req(zoneKey, opIn, zoneA, zoneB)), Labels: labels(zoneKey, zoneA)})), podList(tPods(4, "p", po{}, zoneSpread))),
			want: []check{podZoneCounts(tLabels, 4), allScheduled()}},
		// Karpenter topology:204: "should respect NodePool zonal constraints (subset) with labels across NodePools"
		{mirrors: []string{"topology:204"}, name: "K: two pools labelled with different zones share the spread",
			in: input(pools(poolWith(st.NodePoolOptions{Name: "one", Requirements: reqs(req(ctKey, opIn, onDemand), req(zoneKey, opIn, zoneA, zoneB)), Labels: labels(zoneKey, zoneA)}),
				poolWith(st.NodePoolOptions{Name: "two", Requirements: reqs(req(ctKey, opIn, onDemand)), Labels: labels(zoneKey, zoneB)})), podList(tPods(4, "p", po{}, zoneSpread))),
			want: []check{podZoneCounts(tLabels, 2, 2)}},
		// Karpenter topology:232: "should respect NodePool zonal constraints (existing pod)"
		{mirrors: []string{"topology:232"}, name: "K: an existing pod in a zone the pool excludes counts in the spread",
			in:   input(zones(zoneA, zoneB), nodes(zoneNode("c1", zoneC, true, bound("old", 1)...)), podList(tPods(6, "p", cpu11, zoneSpread))),
			want: []check{podZoneCounts(tLabels, 2, 2), unschedulableCount(2, "topology spread")}},
		// Karpenter topology:266: "should schedule to the non-minimum domain if its all that's available"
		{mirrors: []string{"topology:266"}, name: "K: the only zone left takes pods up to maxSkew above the others",
			in: input(zones(zoneC), nodes(zoneNode("a1", zoneA, true, bound("oa", 1)...), zoneNode("b1", zoneB, true, bound("ob", 1)...)),
				podList(tPods(10, "p", cpu11, tSpread(zoneKey, 5)))),
			want: []check{podZoneCounts(tLabels, 6), unschedulableCount(4, "topology spread")}},
		// Karpenter topology:308: "should only schedule to minimum domains if already violating max skew"
		{mirrors: []string{"topology:308"}, name: "K: when a zone already exceeds maxSkew, pods go to the least loaded zones",
			in:   input(nodes(zoneNode("a1", zoneA, false, bound("oa", 3)...)), podList(tPods(3, "p", cpu11, zoneSpread))),
			want: []check{allScheduled(), notInZone("p-0", zoneA), notInZone("p-1", zoneA), notInZone("p-2", zoneA), podZoneCounts(tLabels, 1, 2)}},
		// Karpenter topology:347: "should not violate max-skew when unsat = do not schedule"
		{mirrors: []string{"topology:347"}, name: "K: DoNotSchedule never exceeds maxSkew against an existing pod in a zone the pool excludes",
			in:   input(zones(zoneB, zoneC), nodes(zoneNode("a1", zoneA, true, bound("oa", 1)...)), podList(tPods(10, "p", cpu11, zoneSpread))),
			want: []check{podZoneCounts(tLabels, 2, 2), unschedulableCount(6, "topology spread")}},
		// Karpenter topology:380: "should not violate max-skew when unsat = do not schedule (discover domains)"
		{mirrors: []string{"topology:380"}, name: "K: a matching pod without the spread makes its zone a domain",
			in:   input(zones(zoneB, zoneC), nodes(zoneNode("a1", zoneA, true, pod(po{Name: "oa", Labels: tLabels, CPU: "1100m"}))), podList(tPods(10, "p", cpu11, zoneSpread))),
			want: []check{podZoneCounts(tLabels, 2, 2), unschedulableCount(6)}},
		// Karpenter topology:412: "should only count running/scheduled pods with matching labels scheduled to nodes with a corresponding domain"
		{mirrors: []string{"topology:412"}, name: "K: only running pods with matching labels in the namespace on nodes with the key count",
			in: input(nodes(
				zoneNode("n1", zoneA, false,
					pod(po{Name: "unlabelled"}),
					pod(po{Name: "other-ns", Namespace: "elsewhere", Labels: tLabels}),
					pod(po{Name: "failed", Labels: tLabels, Phase: corev1.PodFailed}),
					pod(po{Name: "succeeded", Labels: tLabels, Phase: corev1.PodSucceeded}),
					func() *corev1.Pod {
						p := pod(po{Name: "terminating", Labels: tLabels})
						p.DeletionTimestamp = &metav1Now
						return p
					}(),
					pod(po{Name: "m1", Labels: tLabels}), pod(po{Name: "m2", Labels: tLabels})),
				zoneNode("n2", zoneB, false, pod(po{Name: "m3", Labels: tLabels})),
				labelledNode("no-zone", nil, nil, "100", pod(po{Name: "nozone", Labels: tLabels}))),
				podList(tPods(2, "p", po{}, zoneSpread))),
			want: []check{allScheduled(), podsOn("n2", 1), notOnNode("p-0", "n1"), notOnNode("p-1", "n1"), podZoneCounts(tLabels, 1, 1)}},
		// Karpenter topology:445: "should match all pods when labelSelector is not specified"
		{mirrors: []string{"topology:445", "topology:780"}, name: "K: a pod without labels is not counted by a spread selecting labels",
			in: input(pods(pod(po{Name: "plain"}))), want: []check{claims(1), allScheduled()}},
		// Karpenter topology:457: "should handle interdependent selectors"
		{mirrors: []string{"topology:457", "topology:792"}, name: "K: a hostname spread whose selector does not match its own pods constrains nothing",
			in: input(podList(podsN(5, po{Name: "p", Spread: []corev1.TopologySpreadConstraint{hostSpread}}))), want: []check{claims(1)}},
		// Karpenter topology:482: "should respect minDomains constraints"
		{mirrors: []string{"topology:482"}, name: "K: minDomains above the zones there are caps each zone at maxSkew",
			in: input(zones(zoneA, zoneB), podList(func() []*corev1.Pod {
				s := zoneSpread
				three := int32(3)
				s.MinDomains = &three
				return tPods(3, "p", po{}, s)
			}())),
			want: []check{podZoneCounts(tLabels, 1, 1), unschedulableCount(1)}},
		// Karpenter topology:502: "satisfied minDomains constraints (equal) should allow expected pod scheduling"
		{mirrors: []string{"topology:502"}, name: "K: minDomains equal to the zones there are",
			in: input(podList(func() []*corev1.Pod {
				s := zoneSpread
				three := int32(3)
				s.MinDomains = &three
				return tPods(11, "p", po{}, s)
			}())),
			want: []check{podZoneCounts(tLabels, 4, 4, 3)}},
		// Karpenter topology:522: "satisfied minDomains constraints (greater than minimum) should allow expected pod scheduling"
		{mirrors: []string{"topology:522"}, name: "K: minDomains below the zones there are",
			in: input(podList(func() []*corev1.Pod {
				s := zoneSpread
				two := int32(2)
				s.MinDomains = &two
				return tPods(11, "p", po{}, s)
			}())),
			want: []check{podZoneCounts(tLabels, 4, 4, 3)}},
		// Hostname
		// Karpenter topology:545: "should balance pods across nodes"
		{mirrors: []string{"topology:545"}, name: "K: a hostname spread puts one pod per node",
			in: input(podList(tPods(4, "p", po{}, hostSpread))), want: []check{claims(4), podsPerClaim(1, 1, 1, 1)}},
		// Karpenter topology:558: "should balance pods on the same hostname up to maxskew"
		{mirrors: []string{"topology:558"}, name: "K: a hostname spread with maxSkew 4 fills one node with four",
			in: input(podList(tPods(4, "p", po{}, tSpread(hostKey, 4)))), want: []check{claims(1), podsPerClaim(4)}},
		// Karpenter topology:571: "balance multiple deployments with hostname topology spread"
		{mirrors: []string{"topology:571"}, name: "K: two deployments with hostname spreads share two nodes",
			in: input(podList(podsN(2, po{Name: "app1", Labels: labels("app", "app1"), Spread: []corev1.TopologySpreadConstraint{st.Spread(hostKey, 1, dns, labels("app", "app1"))}}),
				podsN(2, po{Name: "app2", Labels: labels("app", "app2"), Spread: []corev1.TopologySpreadConstraint{st.Spread(hostKey, 1, dns, labels("app", "app2"))}}))),
			want: []check{claims(2), allScheduled()}},
		// Karpenter topology:607: "balance multiple deployments with hostname topology spread & varying arch"
		{mirrors: []string{"topology:607"}, name: "K: two deployments of different architectures with hostname spreads make four nodes",
			in: input(armAndAmd(), podList(
				podsN(2, po{Name: "app1", Labels: labels("app", "app1"), NodeRequirements: nsrs(nsr(archKey, opIn, amd64)), Spread: []corev1.TopologySpreadConstraint{st.Spread(hostKey, 1, dns, labels("app", "app1"))}}),
				podsN(2, po{Name: "app2", Labels: labels("app", "app2"), NodeRequirements: nsrs(nsr(archKey, opIn, arm64)), Spread: []corev1.TopologySpreadConstraint{st.Spread(hostKey, 1, dns, labels("app", "app2"))}}))),
			want: []check{claims(4), allScheduled()}},
		// CapacityType
		// Karpenter topology:653: "should balance pods across capacity types"
		// Karpenter topology:666: "should respect NodePool capacity type constraints"
		// Karpenter topology:852: "should balance pods across capacity-types (no constraints)"
		{mirrors: []string{"topology:653", "topology:666", "topology:852"}, name: "K: a capacity-type spread balances spot and on-demand",
			in: input(spotOD, podList(tPods(4, "p", po{}, ctSpread))), want: []check{keyCounts(ctKey, tLabels, 2, 2)}},
		// Karpenter topology:681: "should not violate max-skew when unsat = do not schedule (capacity type)"
		{mirrors: []string{"topology:681"}, name: "K: DoNotSchedule on capacity type never exceeds maxSkew against an existing spot pod",
			in: input(nodes(st.Node(st.NodeOptions{Name: "s1", Zone: zoneA, CapacityType: spot, Allocatable: res{"cpu": "0", "memory": "1Gi", "pods": "10"}, Pods: bound("os", 1)})),
				podList(tPods(5, "p", cpu11, ctSpread))),
			want: []check{keyCounts(ctKey, tLabels, 2), unschedulableCount(3, "topology spread")}},
		// Karpenter topology:716: "should violate max-skew when unsat = schedule anyway (capacity type)"
		{mirrors: []string{"topology:716"}, name: "K: ScheduleAnyway on capacity type exceeds maxSkew when it must",
			in: input(nodes(st.Node(st.NodeOptions{Name: "s1", Zone: zoneA, CapacityType: spot, Allocatable: res{"cpu": "0", "memory": "1Gi", "pods": "10"}, Pods: bound("os", 1)})),
				podList(tPods(5, "p", cpu11, st.Spread(ctKey, 1, anyway, tLabels)))),
			want: []check{allScheduled(), keyCounts(ctKey, tLabels, 5)}},
		// Karpenter topology:747: "should only count running/scheduled pods with matching labels scheduled to nodes with a corresponding domain"
		{mirrors: []string{"topology:747"}, name: "K: only running pods with matching labels on nodes with a capacity type count",
			in: input(spotOD, nodes(
				st.Node(st.NodeOptions{Name: "n1", CapacityType: spot, Allocatable: res{"cpu": "100", "memory": "10Gi", "pods": "110"}, Pods: []*corev1.Pod{
					pod(po{Name: "unlabelled"}), pod(po{Name: "other-ns", Namespace: "elsewhere", Labels: tLabels}), pod(po{Name: "failed", Labels: tLabels, Phase: corev1.PodFailed}),
					pod(po{Name: "m1", Labels: tLabels}), pod(po{Name: "m2", Labels: tLabels})}}),
				st.Node(st.NodeOptions{Name: "n2", CapacityType: onDemand, Allocatable: res{"cpu": "100", "memory": "10Gi", "pods": "110"}, Pods: []*corev1.Pod{pod(po{Name: "m3", Labels: tLabels})}}),
				labelledNode("no-ct", nil, nil, "100", pod(po{Name: "noct", Labels: tLabels}))),
				podList(tPods(2, "p", po{}, ctSpread))),
			want: []check{allScheduled(), onNode("p-0", "n2"), finalSkew(map[string]int{"n1": 2, "n2": 1}, 1)}},
		// Karpenter topology:815: "should balance pods across capacity-types (node required affinity constrained)"
		{mirrors: []string{"topology:815"}, name: "K: an existing on-demand pod outside the pods' node affinity does not count",
			in: input(spotOD, nodes(st.Node(st.NodeOptions{Name: "od1", Zone: zoneA, CapacityType: onDemand, Allocatable: res{"cpu": "0", "memory": "1Gi", "pods": "10"}, Pods: bound("od", 1)})),
				podList(tPods(5, "p", po{NodeRequirements: nsrs(nsr(zoneKey, opIn, zoneB), nsr(ctKey, opIn, spot))}, ctSpread))),
			want: []check{allScheduled(), capacityType("p-0", spot)}},
		// Combined
		// Karpenter topology:941: "should spread pods while respecting both constraints (hostname and zonal)"
		{mirrors: []string{"topology:941"}, name: "K: zone and hostname spreads together (7, 7, 7 with at most 3 a node)",
			in:   input(podList(tPods(21, "p", po{}, zoneSpread, tSpread(hostKey, 3)))),
			want: []check{allScheduled(), podZoneCounts(tLabels, 7, 7, 7), maxPerClaim(3)}},
		// Karpenter topology:1049: "should spread pods while respecting both constraints"
		{mirrors: []string{"topology:1049"}, name: "K: a zone only a pool at its limit offers still counts as a domain",
			in: input(pools(pool("default", 0, req(ctKey, opIn, onDemand), req(zoneKey, opIn, zoneA, zoneB)),
				poolWith(st.NodePoolOptions{Name: "b", Requirements: reqs(req(ctKey, opIn, onDemand), req(zoneKey, opIn, zoneC)), Limits: res{"cpu": "0"}})),
				podList(tPods(10, "p", po{}, zoneSpread, st.Spread(hostKey, 1, anyway, tLabels)))),
			want: []check{podZoneCounts(tLabels, 1, 1), scheduledCount(2)}},
		// Karpenter topology:1090: "should spread pods while respecting both constraints"
		{mirrors: []string{"topology:1090"}, name: "K: capacity-type and hostname spreads together (11, 10 with at most 3 a node)",
			in:   input(spotOD, podList(tPods(21, "p", po{}, ctSpread, tSpread(hostKey, 3)))),
			want: []check{allScheduled(), keyCounts(ctKey, tLabels, 11, 10), maxPerClaim(3)}},
		// Karpenter topology:1139: "should support matchLabelKeys"
		{mirrors: []string{"topology:1139"}, name: "K: matchLabelKeys spreads each value separately",
			in: input(podList(
				podsN(2, po{Name: "a", Labels: labels("test", "test", "test-label", "value-a"), Spread: []corev1.TopologySpreadConstraint{withMatchKeys(hostSpread, "test-label")}}),
				podsN(2, po{Name: "b", Labels: labels("test", "test", "test-label", "value-b"), Spread: []corev1.TopologySpreadConstraint{withMatchKeys(hostSpread, "test-label")}}))),
			want: []check{allScheduled(), claims(2), podsPerClaim(2, 2)}},
		// Karpenter topology:1168: "should ignore unknown labels specified in matchLabelKeys"
		{mirrors: []string{"topology:1168"}, name: "K: matchLabelKeys naming a label the pods lack is ignored",
			in:   input(podList(podsN(4, po{Name: "p", Labels: tLabels, Spread: []corev1.TopologySpreadConstraint{withMatchKeys(hostSpread, "test-label")}}))),
			want: []check{claims(4), podsPerClaim(1, 1, 1, 1)}},
		// NodeTaintsPolicy
		// Karpenter topology:1196: "should balance pods across a label (NodeTaintsPolicy=ignore)"
		{mirrors: []string{"topology:1196"}, name: "K: NodeTaintsPolicy Ignore counts tainted nodes' domains",
			in: input(labelledPool(spreadLabel, "baz"), nodes(
				labelledNode("foo", labels(spreadLabel, "foo"), taints(st.Taint("taintname", "taintvalue", noSched)), "100m"),
				labelledNode("bar", labels(spreadLabel, "bar"), taints(st.Taint("taintname", "taintvalue", noSched)), "100m")),
				podList(tPods(5, "p", po{CPU: "1"}, withTaintsPolicy(tSpread(spreadLabel, 1), corev1.NodeInclusionPolicyIgnore)))),
			want: []check{keyCounts(spreadLabel, tLabels, 1), unschedulableCount(4)}},
		// Karpenter topology:1267: "should balance pods across a label (NodeTaintsPolicy=honor)"
		{mirrors: []string{"topology:1267"}, name: "K: NodeTaintsPolicy Honor leaves tainted nodes' domains out",
			in: input(labelledPool(spreadLabel, "baz"), nodes(
				labelledNode("foo", labels(spreadLabel, "foo"), taints(st.Taint("taintname", "taintvalue", noSched)), "100m"),
				labelledNode("bar", labels(spreadLabel, "bar"), taints(st.Taint("taintname", "taintvalue", noSched)), "100m")),
				podList(tPods(5, "p", po{CPU: "1"}, withTaintsPolicy(tSpread(spreadLabel, 1), corev1.NodeInclusionPolicyHonor)))),
			want: []check{allScheduled(), keyCounts(spreadLabel, tLabels, 5)}},
		// Karpenter topology:1336: "should balance pods across a label when discovered from the nodepool (NodeTaintsPolicy=ignore)"
		{mirrors: []string{"topology:1336"}, name: "K: NodeTaintsPolicy Ignore counts a tainted pool's domain",
			in: input(pools(pool("default", 0, req(ctKey, opIn, onDemand), req(spreadLabel, opIn, "foo")),
				poolWith(st.NodePoolOptions{Name: "tainted", Requirements: reqs(req(ctKey, opIn, onDemand), req(spreadLabel, opIn, "bar")), Taints: taints(st.Taint("taint-key", "taint-value", noSched))})),
				podList(tPods(2, "p", po{}, withTaintsPolicy(tSpread(spreadLabel, 1), corev1.NodeInclusionPolicyIgnore)))),
			want: []check{keyCounts(spreadLabel, tLabels, 1), unschedulableCount(1)}},
		// Karpenter topology:1392: "should balance pods across a label when discovered from the nodepool (NodeTaintsPolicy=honor)"
		{mirrors: []string{"topology:1392"}, name: "K: NodeTaintsPolicy Honor leaves a tainted pool's domain out",
			in: input(pools(pool("default", 0, req(ctKey, opIn, onDemand), req(spreadLabel, opIn, "foo")),
				poolWith(st.NodePoolOptions{Name: "tainted", Requirements: reqs(req(ctKey, opIn, onDemand), req(spreadLabel, opIn, "bar")), Taints: taints(st.Taint("taint-key", "taint-value", noSched))})),
				podList(tPods(2, "p", po{}, withTaintsPolicy(tSpread(spreadLabel, 1), corev1.NodeInclusionPolicyHonor)))),
			want: []check{allScheduled(), keyCounts(spreadLabel, tLabels, 2)}},
		// Karpenter topology:1448: "should balance pods across a label when mutually exclusive NodePools (by taints) share domains (NodeTaintsPolicy=honor)"
		{mirrors: []string{"topology:1448"}, name: "K: NodeTaintsPolicy Honor with pools that share a domain and are exclusive by taints",
			in: func() scheduling.Input {
				var nps []*apis.NodePool
				var ps []*corev1.Pod
				for i, domains := range [][]string{{"foo", "bar"}, {"foo", "baz"}} {
					taint := st.Taint("taint-key", fmt.Sprintf("nodepool-%d", i), noSched)
					nps = append(nps, poolWith(st.NodePoolOptions{Name: fmt.Sprintf("np-%d", i), Requirements: reqs(req(ctKey, opIn, onDemand), req(spreadLabel, opIn, domains...)), Taints: taints(taint)}))
					ps = append(ps, tPods((i+1)*2, fmt.Sprintf("d%d", i), po{Tolerations: tols(st.Toleration("taint-key", corev1.TolerationOpEqual, taint.Value, noSched))},
						withTaintsPolicy(tSpread(spreadLabel, 1), corev1.NodeInclusionPolicyHonor))...)
				}
				return input(pools(nps...), podList(ps))
			}(),
			want: []check{allScheduled(), keyCounts(spreadLabel, tLabels, 3, 2, 1)}},
		// NodeAffinityPolicy
		// Karpenter topology:1529: "should balance pods across a label (NodeAffinityPolicy=ignore)"
		{mirrors: []string{"topology:1529"}, name: "K: NodeAffinityPolicy Ignore counts domains the pods' node selector excludes",
			in: input(labelledPool(spreadLabel, "baz", "selector", "value"), nodes(
				labelledNode("foo", labels(spreadLabel, "foo", "selector", "mismatch"), nil, "100m"), labelledNode("bar", labels(spreadLabel, "bar", "selector", "mismatch"), nil, "100m")),
				podList(tPods(5, "p", po{CPU: "1", NodeSelector: labels("selector", "value")}, withAffinityPolicy(tSpread(spreadLabel, 1), corev1.NodeInclusionPolicyIgnore)))),
			want: []check{keyCounts(spreadLabel, tLabels, 1), unschedulableCount(4)}},
		// Karpenter topology:1596: "should balance pods across a label (NodeAffinityPolicy=honor)"
		{mirrors: []string{"topology:1596"}, name: "K: NodeAffinityPolicy Honor leaves out domains the pods' node selector excludes",
			in: input(labelledPool(spreadLabel, "baz", "selector", "value"), nodes(
				labelledNode("foo", labels(spreadLabel, "foo", "selector", "mismatch"), nil, "100m"), labelledNode("bar", labels(spreadLabel, "bar", "selector", "mismatch"), nil, "100m")),
				podList(tPods(5, "p", po{CPU: "1", NodeSelector: labels("selector", "value")}, withAffinityPolicy(tSpread(spreadLabel, 1), corev1.NodeInclusionPolicyHonor)))),
			want: []check{allScheduled(), keyCounts(spreadLabel, tLabels, 5)}},
		// Karpenter topology:1662: "should spread pods while respecting both constraints"
		{mirrors: []string{"topology:1662"}, name: "K: capacity-type and zone spreads together",
			in:   input(spotOD, podList(tPods(19, "p", po{}, ctSpread, zoneSpread))),
			want: []check{allScheduled(), keyCounts(ctKey, tLabels, 10, 9), podZoneCounts(tLabels, 6, 6, 7)}},
		// Karpenter topology:1702: "should spread pods while respecting all constraints"
		{mirrors: []string{"topology:1702"}, name: "K: capacity-type, zone and hostname spreads together",
			in:   input(spotOD, podList(tPods(14, "p", po{}, ctSpread, tSpread(zoneKey, 2), tSpread(hostKey, 3)))),
			want: []check{allScheduled(), keyCounts(ctKey, tLabels, 7, 7), maxPerClaim(3)}},
		// Karpenter topology:1740: "should limit spread options by nodeSelector"
		{mirrors: []string{"topology:1740"}, name: "K: node selectors limit a zonal spread's domains",
			in:   input(podList(tPods(5, "a", po{NodeSelector: labels(zoneKey, zoneA)}, zoneSpread), tPods(10, "b", po{NodeSelector: labels(zoneKey, zoneB)}, zoneSpread))),
			want: []check{allScheduled(), podZoneCounts(tLabels, 5, 10)}},
		// Karpenter topology:1766: "should limit spread options by node requirements"
		{mirrors: []string{"topology:1766"}, name: "K: node requirements limit a zonal spread's domains",
			in: input(podList(tPods(10, "p", po{NodeRequirements: nsrs(nsr(zoneKey, opIn, zoneA, zoneB))}, zoneSpread))), want: []check{allScheduled(), podZoneCounts(tLabels, 5, 5)}},
		// Karpenter topology:1788: "should limit spread options by required node affinity"
		{mirrors: []string{"topology:1788"}, name: "K: required node affinity limits a zonal spread's domains; unconstrained pods then fill all zones",
			in: input(nodes(zoneNode("a1", zoneA, false, bound("oa", 3)...), zoneNode("b1", zoneB, false, bound("ob", 3)...), zoneNode("c1", zoneC, false, bound("oc", 1)...)),
				podList(tPods(5, "p", po{}, zoneSpread))),
			want: []check{allScheduled(), podsOn("a1", 1), podsOn("b1", 1), podsOn("c1", 3)}},
		// Karpenter topology:1832: "should not limit spread options by preferred node affinity"
		{mirrors: []string{"topology:1832"}, name: "K: preferred node affinity does not limit a zonal spread's domains",
			in: input(podList(tPods(6, "p", po{NodePreferences: nodePrefs(nsr(zoneKey, opIn, zoneA, zoneB))}, zoneSpread))), want: []check{allScheduled(), podZoneCounts(tLabels, 2, 2, 2)}},
		// Karpenter topology:1857: "should limit spread options by nodeSelector"
		{mirrors: []string{"topology:1857"}, name: "K: node selectors limit a capacity-type spread's domains",
			in:   input(spotOD, podList(tPods(5, "s", po{NodeSelector: labels(ctKey, spot)}, st.Spread(ctKey, 1, anyway, tLabels)), tPods(5, "o", po{NodeSelector: labels(ctKey, onDemand)}, st.Spread(ctKey, 1, anyway, tLabels)))),
			want: []check{allScheduled(), keyCounts(ctKey, tLabels, 5, 5)}},
		// Karpenter topology:1881: "should limit spread options by node affinity (capacity type)"
		{mirrors: []string{"topology:1881"}, name: "K: node affinity limits a capacity-type spread's domains; unconstrained pods then balance",
			in: input(spotOD, nodes(st.Node(st.NodeOptions{Name: "s1", Zone: zoneA, CapacityType: spot, Allocatable: res{"cpu": "100", "memory": "10Gi", "pods": "110"}, Pods: bound("os", 3)}),
				st.Node(st.NodeOptions{Name: "o1", Zone: zoneA, CapacityType: onDemand, Allocatable: res{"cpu": "100", "memory": "10Gi", "pods": "110"}, Pods: bound("oo", 1)})),
				podList(tPods(5, "p", po{}, ctSpread))),
			want: []check{allScheduled(), finalSkew(map[string]int{"s1": 3, "o1": 1}, 1)}},
	}
}

// finalSkew: with the pending pods placed on them, the existing nodes
// (each its own domain, holding the given matching pods already) differ by
// at most skew.
func finalSkew(before map[string]int, skew int) check {
	return func(t *testing.T, p *plan) {
		lo, hi := 1<<30, 0
		for node, n := range before {
			for _, on := range p.nodeOf {
				if on == node {
					n++
				}
			}
			lo, hi = min(lo, n), max(hi, n)
		}
		if hi-lo > skew {
			t.Errorf("pods per node from %d to %d, skew above %d:%s", lo, hi, skew, summary(p.res))
		}
	}
}

func withMatchKeys(s corev1.TopologySpreadConstraint, keys ...string) corev1.TopologySpreadConstraint {
	s.MatchLabelKeys = keys
	return s
}

func withTaintsPolicy(s corev1.TopologySpreadConstraint, p corev1.NodeInclusionPolicy) corev1.TopologySpreadConstraint {
	s.NodeTaintsPolicy = &p
	return s
}

func withAffinityPolicy(s corev1.TopologySpreadConstraint, p corev1.NodeInclusionPolicy) corev1.TopologySpreadConstraint {
	s.NodeAffinityPolicy = &p
	return s
}
