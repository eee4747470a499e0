package scheduling_test

// Scenarios mirroring the pod (anti-)affinity and taint Its of Karpenter's
// topology_test.go (v1.14.1), "topology:<line>".

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
)

func affinityParity() []scenario {
	s2 := labels("security", "s2")
	s2Term := func(key string) corev1.PodAffinityTerm { return st.Term(key, s2) }
	hostSpreadOn := func(l map[string]string) []corev1.TopologySpreadConstraint {
		return []corev1.TopologySpreadConstraint{st.Spread(hostKey, 1, dns, l)}
	}
	tenSpread := tPods(10, "spread", po{}, tSpread(hostKey, 1))
	zonePod := func(name, zone string, o po) *corev1.Pod {
		o.Name, o.CPU, o.NodeSelector = name, "2", labels(zoneKey, zone)
		return pod(o)
	}
	threeZones := func(o po) []*corev1.Pod {
		return []*corev1.Pod{zonePod("z1", zoneA, o), zonePod("z2", zoneB, o), zonePod("z3", zoneC, o)}
	}
	antiS2 := po{AntiAffinity: []corev1.PodAffinityTerm{s2Term(zoneKey)}}
	prefAntiS2 := po{PreferredAntiAffinity: []corev1.WeightedPodAffinityTerm{st.Weighted(10, s2Term(zoneKey))}}
	fivePods := types(st.Type(st.TypeOptions{Name: "five-pods", VCPU: 4, Pods: 5}))
	return []scenario{
		// Karpenter topology:1926: "should schedule a pod with empty pod affinity and anti-affinity"
		{mirrors: []string{"topology:1926"}, name: "K: empty pod affinity and anti-affinity schedule",
			in: input(pods(func() *corev1.Pod {
				p := pod(po{Name: "p"})
				p.Spec.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{}, PodAntiAffinity: &corev1.PodAntiAffinity{}}
				return p
			}())), want: []check{claims(1), allScheduled()}},
		// Karpenter topology:1936: "should respect pod affinity (hostname)"
		{mirrors: []string{"topology:1936"}, name: "K: pod affinity on hostname puts a pod with its target",
			in:   input(podList(tenSpread), pods(pod(po{Name: "target", Labels: s2}), pod(po{Name: "follower", Affinity: []corev1.PodAffinityTerm{s2Term(hostKey)}}))),
			want: []check{allScheduled(), sameNode("target", "follower")}},
		// Karpenter topology:1970: "should respect pod affinity (arch)"
		{mirrors: []string{"topology:1970"}, name: "K: pod affinity on architecture gives the same architecture, another node",
			in: input(armAndAmd(), pods(pod(po{Name: "target", CPU: "2", Labels: s2, Spread: hostSpreadOn(s2), NodeSelector: labels(archKey, arm64)}),
				pod(po{Name: "follower", CPU: "1", Labels: s2, Spread: hostSpreadOn(s2), Affinity: []corev1.PodAffinityTerm{s2Term(archKey)}}))),
			want: []check{allScheduled(), separate("target", "follower"), everyType("follower", isArm, archIs(arm64))}},
		// Karpenter topology:2013: "should respect self pod affinity (hostname)"
		{mirrors: []string{"topology:2013"}, name: "K: self pod affinity on hostname puts every pod on one node",
			in: input(podList(podsN(3, po{Name: "p", Labels: s2, Affinity: []corev1.PodAffinityTerm{s2Term(hostKey)}}))), want: []check{claims(1), sameNode("p-0", "p-1", "p-2")}},
		// Karpenter topology:2037: "should respect self pod affinity for first empty topology domain only (hostname)"
		{mirrors: []string{"topology:2037"}, name: "K: self pod affinity on hostname fills one node and no other",
			in:   input(fivePods, podList(podsN(10, po{Name: "p", Labels: s2, Affinity: []corev1.PodAffinityTerm{s2Term(hostKey)}}))),
			want: []check{claims(1), podsPerClaim(5), unschedulableCount(5, "pod affinity")}},
		// Karpenter topology:2079: "should respect self pod affinity for first empty topology domain only (hostname/constrained zones)"
		{mirrors: []string{"topology:2079"}, name: "K: self pod affinity on hostname with the target in an excluded zone is unschedulable",
			in: input(nodes(zoneNode("a1", zoneA, false, pod(po{Name: "first", Labels: s2}))),
				podList(podsN(10, po{Name: "p", Labels: s2, NodeRequirements: nsrs(nsr(zoneKey, opIn, zoneB, zoneC)), Affinity: []corev1.PodAffinityTerm{s2Term(hostKey)}}))),
			want: []check{claims(0), unschedulableCount(10, "pod affinity")}},
		// Karpenter topology:2123: "should respect self pod affinity (zone)"
		{mirrors: []string{"topology:2123"}, name: "K: self pod affinity on zone keeps the pods in one zone",
			in: input(podList(podsN(3, po{Name: "p", Labels: s2, Affinity: []corev1.PodAffinityTerm{s2Term(zoneKey)}}))), want: []check{claims(1), sameZone("p-0", "p-1", "p-2")}},
		// Karpenter topology:2147: "should respect self pod affinity (zone w/ constraint)"
		{mirrors: []string{"topology:2147"}, name: "K: self pod affinity on zone with a zone requirement",
			in:   input(podList(podsN(3, po{Name: "p", Labels: s2, NodeRequirements: nsrs(nsr(zoneKey, opIn, zoneC)), Affinity: []corev1.PodAffinityTerm{s2Term(zoneKey)}}))),
			want: []check{claims(1), claimZones("p-0", zoneC)}},
		// Karpenter topology:2231: "should allow violation of preferred pod affinity"
		{mirrors: []string{"topology:2231"}, name: "K: a preferred pod affinity nothing satisfies is relaxed",
			in:   input(podList(tenSpread), pods(pod(po{Name: "p", PreferredAffinity: []corev1.WeightedPodAffinityTerm{st.Weighted(50, s2Term(hostKey))}}))),
			want: []check{allScheduled()}},
		// Karpenter topology:2264: "should allow violation of preferred pod anti-affinity"
		{mirrors: []string{"topology:2264"}, name: "K: a preferred pod anti-affinity is relaxed when it must be",
			in: input(podList(tPods(3, "spread", po{}, tSpread(zoneKey, 1)),
				podsN(10, po{Name: "aff", PreferredAntiAffinity: []corev1.WeightedPodAffinityTerm{st.Weighted(50, st.Term(zoneKey, tLabels))}}))),
			want: []check{allScheduled()}},
		// Karpenter topology:2297: "should separate nodes using simple pod anti-affinity on hostname"
		{mirrors: []string{"topology:2297"}, name: "K: pod anti-affinity on hostname separates the pods",
			in: input(pods(pod(po{Name: "anti", AntiAffinity: []corev1.PodAffinityTerm{s2Term(hostKey)}}), pod(po{Name: "target", Labels: s2}))), want: []check{separate("anti", "target")}},
		// Karpenter topology:2319: "should not violate pod anti-affinity on zone"
		{mirrors: []string{"topology:2319"}, name: "K≠: pod anti-affinity on zone against a pod in every zone: one of the four waits, anti-affinity holds",
			in:   input(pods(append(threeZones(po{Labels: s2}), pod(po{Name: "anti", AntiAffinity: []corev1.PodAffinityTerm{s2Term(zoneKey)}}))...)),
			want: []check{unschedulableCount(1, "anti-affinity"), claims(3), podZoneCounts(s2, 1, 1)}},
		// Karpenter topology:2380: "should not violate pod anti-affinity (arch)"
		{mirrors: []string{"topology:2380"}, name: "K: pod anti-affinity on architecture gives the other architecture",
			in: input(armAndAmd(), pods(pod(po{Name: "target", CPU: "2", Labels: s2, Spread: hostSpreadOn(s2), NodeSelector: labels(archKey, arm64)}),
				pod(po{Name: "anti", CPU: "1", Labels: s2, Spread: hostSpreadOn(s2), AntiAffinity: []corev1.PodAffinityTerm{s2Term(archKey)}}))),
			want: []check{allScheduled(), everyType("anti", "amd64", archIs(amd64))}},
		// Karpenter topology:2423: "should violate preferred pod anti-affinity on zone (inverse)"
		{mirrors: []string{"topology:2423"}, name: "K: other pods' preferred anti-affinity does not keep a pod out",
			in: input(pods(append(threeZones(prefAntiS2), pod(po{Name: "target", Labels: s2}))...)), want: []check{allScheduled()}},
		// Karpenter topology:2463: "should not violate pod anti-affinity on zone (inverse)"
		{mirrors: []string{"topology:2463"}, name: "K: other pods' required anti-affinity in every zone keeps a pod out",
			in: input(pods(append(threeZones(antiS2), pod(po{Name: "target", Labels: s2}))...)), want: []check{unschedulable("target", "anti-affinity"), fromPool("z1", "default")}},
		// Karpenter topology:2530: "should not violate pod anti-affinity on zone (inverse w/existing nodes)"
		{mirrors: []string{"topology:2530"}, name: "K: running pods' required anti-affinity in every zone keeps a pod out",
			in: input(nodes(zoneNode("a1", zoneA, false, zonePod("z1", zoneA, antiS2)), zoneNode("b1", zoneB, false, zonePod("z2", zoneB, antiS2)),
				zoneNode("c1", zoneC, false, zonePod("z3", zoneC, antiS2))), pods(pod(po{Name: "target", Labels: s2}))),
			want: []check{claims(0), unschedulable("target", "anti-affinity")}},
		// Karpenter topology:2580: "should violate preferred pod anti-affinity on zone (inverse w/existing nodes)"
		{mirrors: []string{"topology:2580"}, name: "K: running pods' preferred anti-affinity does not keep a pod out",
			in: input(nodes(zoneNode("a1", zoneA, true, zonePod("z1", zoneA, prefAntiS2)), zoneNode("b1", zoneB, true, zonePod("z2", zoneB, prefAntiS2)),
				zoneNode("c1", zoneC, true, zonePod("z3", zoneC, prefAntiS2))), pods(pod(po{Name: "target", Labels: s2}))),
			want: []check{allScheduled()}},
		// Karpenter topology:2630: "should allow violation of a pod affinity preference with a conflicting required constraint"
		{mirrors: []string{"topology:2630"}, name: "K: a pod affinity preference yields to a required hostname spread",
			in:   input(pods(pod(po{Name: "target", Labels: s2})), podList(tPods(3, "p", po{PreferredAffinity: []corev1.WeightedPodAffinityTerm{st.Weighted(50, s2Term(hostKey))}}, tSpread(hostKey, 1)))),
			want: []check{allScheduled(), separate("p-0", "p-1", "p-2")}},
		// Karpenter topology:2665: "should support pod anti-affinity with a zone topology"
		{mirrors: []string{"topology:2665"}, name: "K: zonal anti-affinity: once every zone has a pod, more are unschedulable",
			in: input(nodes(zoneNode("a1", zoneA, false, pod(po{Name: "o1", Labels: s2, AntiAffinity: []corev1.PodAffinityTerm{s2Term(zoneKey)}})),
				zoneNode("b1", zoneB, false, pod(po{Name: "o2", Labels: s2, AntiAffinity: []corev1.PodAffinityTerm{s2Term(zoneKey)}})),
				zoneNode("c1", zoneC, false, pod(po{Name: "o3", Labels: s2, AntiAffinity: []corev1.PodAffinityTerm{s2Term(zoneKey)}}))),
				podList(podsN(3, po{Name: "p", Labels: s2, AntiAffinity: []corev1.PodAffinityTerm{s2Term(zoneKey)}}))),
			want: []check{claims(0), unschedulableCount(3, "anti-affinity")}},
		// Karpenter topology:2710: "should not schedule pods with affinity to a non-existent pod"
		{mirrors: []string{"topology:2710"}, name: "K: pod affinity to pods that do not exist is unschedulable",
			in: input(podList(podsN(10, po{Name: "p", Affinity: []corev1.PodAffinityTerm{s2Term(zoneKey)}}))), want: []check{claims(0), unschedulableCount(10, "pod affinity", "security=s2")}},
		// Karpenter topology:2760: "should support pod affinity with zone topology (constrained target)"
		{mirrors: []string{"topology:2760"}, name: "K: pod affinity on zone follows a target constrained to a zone",
			in: input(pods(pod(po{Name: "target", Labels: s2, NodeRequirements: nsrs(nsr(zoneKey, opIn, zoneA))})),
				podList(podsN(10, po{Name: "p", Affinity: []corev1.PodAffinityTerm{s2Term(zoneKey)}}))),
			want: []check{allScheduled(), podZoneCounts(nil, 11)}},
		// Karpenter topology:2789: "should handle multiple dependent affinities"
		{mirrors: []string{"topology:2789"}, name: "K: a chain of hostname affinities lands on one node",
			in: input(pods(pod(po{Name: "db", Labels: labels("type", "db", "spread", "spread")}),
				pod(po{Name: "web", Labels: labels("type", "web", "spread", "spread"), Affinity: []corev1.PodAffinityTerm{st.Term(hostKey, labels("type", "db", "spread", "spread"))}}),
				pod(po{Name: "cache", Labels: labels("type", "cache", "spread", "spread"), Affinity: []corev1.PodAffinityTerm{st.Term(hostKey, labels("type", "web", "spread", "spread"))}}),
				pod(po{Name: "ui", Labels: labels("type", "ui", "spread", "spread"), Affinity: []corev1.PodAffinityTerm{st.Term(hostKey, labels("type", "cache", "spread", "spread"))}}))),
			want: []check{allScheduled(), sameNode("db", "web", "cache", "ui")}},
		// Karpenter topology:2824: "should fail to schedule pods with unsatisfiable dependencies"
		{mirrors: []string{"topology:2824"}, name: "K: affinity to pods that never come is unschedulable",
			in:   input(pods(pod(po{Name: "db", Labels: labels("type", "db"), Affinity: []corev1.PodAffinityTerm{st.Term(hostKey, labels("type", "web"))}}))),
			want: []check{claims(0), unschedulable("db", "pod affinity")}},
		// Karpenter topology:2840: "should filter pod affinity topologies by namespace, no matching pods"
		{mirrors: []string{"topology:2840"}, name: "K: pod affinity does not see a matching pod in another namespace",
			in:   input(podList(tenSpread), pods(pod(po{Name: "target", Namespace: "other-ns-no-match", Labels: s2}), pod(po{Name: "follower", Affinity: []corev1.PodAffinityTerm{s2Term(hostKey)}}))),
			want: []check{fromPool("other-ns-no-match/target", "default"), unschedulable("follower", "pod affinity")}},
		// Karpenter topology:2878: "should filter pod affinity topologies by namespace, matching pods namespace list"
		{mirrors: []string{"topology:2878"}, name: "K: pod affinity sees a matching pod in a namespace it lists",
			in: input(podList(tenSpread), pods(pod(po{Name: "target", Namespace: "other-ns-list", Labels: s2}), pod(po{Name: "follower", Affinity: []corev1.PodAffinityTerm{func() corev1.PodAffinityTerm {
				t := s2Term(hostKey)
				t.Namespaces = []string{"other-ns-list"}
				return t
			}()}}))),
			want: []check{allScheduled(), sameNode("other-ns-list/target", "follower")}},
		// Karpenter topology:2917: "should filter pod affinity topologies by namespace, empty namespace selector"
		{mirrors: []string{"topology:2917"}, name: "K: pod affinity with an empty namespace selector sees every namespace",
			in: input(podList(tenSpread), pods(pod(po{Name: "target", Namespace: "empty-ns-selector", Labels: s2}), pod(po{Name: "follower", Affinity: []corev1.PodAffinityTerm{func() corev1.PodAffinityTerm {
				t := s2Term(hostKey)
				t.NamespaceSelector = &metav1.LabelSelector{}
				return t
			}()}}))),
			want: []check{allScheduled(), sameNode("empty-ns-selector/target", "follower")}},
		// Deliberately different: one solve places what Karpenter places over several scheduling loops.
		// Karpenter topology:2178: "should allow two nodes to be created when two pods with matching affinities have incompatible selectors"
		{mirrors: []string{"topology:2178"}, name: "K≠: two pods whose shared zone affinity their zone selectors contradict: one node, not two",
			in: input(pods(pod(po{Name: "a", Labels: labels("security", "s1"), NodeRequirements: nsrs(nsr(zoneKey, opIn, zoneB)), Affinity: []corev1.PodAffinityTerm{st.Term(zoneKey, labels("security", "s1"))}}),
				pod(po{Name: "b", Labels: labels("security", "s1"), NodeRequirements: nsrs(nsr(zoneKey, opIn, zoneC)), Affinity: []corev1.PodAffinityTerm{st.Term(zoneKey, labels("security", "s1"))}}))),
			want: []check{claims(1), unschedulableCount(1, "pod affinity")}},
		// Karpenter topology:2358: "should not violate pod anti-affinity on zone (other schedules first)"
		{mirrors: []string{"topology:2358"}, name: "K≠: a pod and another's zonal anti-affinity to it are both placed, in different zones, in one solve",
			in:   input(pods(pod(po{Name: "target", CPU: "2", Labels: s2}), pod(po{Name: "anti", AntiAffinity: []corev1.PodAffinityTerm{s2Term(zoneKey)}}))),
			want: []check{allScheduled(), claims(2), custom(differentZones("target", "anti"))}},
		// Karpenter topology:2499: "should not violate pod anti-affinity on zone (Schrödinger)"
		{mirrors: []string{"topology:2499"}, name: "K≠: zonal anti-affinity to a pod with no zone constraint: both placed in one solve",
			in:   input(pods(pod(po{Name: "anywhere", CPU: "2", AntiAffinity: []corev1.PodAffinityTerm{s2Term(zoneKey)}}), pod(po{Name: "target", Labels: s2}))),
			want: []check{allScheduled(), custom(differentZones("anywhere", "target"))}},
		// Karpenter topology:2665: "should support pod anti-affinity with a zone topology"
		{mirrors: []string{"topology:2665"}, name: "K≠: zonal self anti-affinity places one pod per zone in one solve",
			in:   input(podList(podsN(3, po{Name: "p", Labels: s2, AntiAffinity: []corev1.PodAffinityTerm{s2Term(zoneKey)}}))),
			want: []check{allScheduled(), podZoneCounts(s2, 1, 1, 1)}},
		// Karpenter topology:2727: "should support pod affinity with zone topology (unconstrained target)"
		{mirrors: []string{"topology:2727"}, name: "K≠: pod affinity to an unconstrained target: all placed with it in one solve",
			in:   input(pods(pod(po{Name: "target", Labels: s2})), podList(podsN(10, po{Name: "p", Affinity: []corev1.PodAffinityTerm{s2Term(zoneKey)}}))),
			want: []check{allScheduled(), podZoneCounts(nil, 11)}},
		// Taints
		// Karpenter topology:2981: "should taint nodes with NodePool taints"
		{mirrors: []string{"topology:2981"}, name: "K: a NodeClaim carries its pool's taints",
			in:   input(taintedPool(st.Taint("test", "bar", noSched)), pods(pod(po{Name: "p", Tolerations: tols(st.Toleration("", corev1.TolerationOpExists, "", noSched))}))),
			want: []check{claims(1), claimTaint("p", "test")}},
		// Karpenter topology:2991: "should schedule pods that tolerate NodePool constraints"
		{mirrors: []string{"topology:2991"}, name: "K: pods that tolerate the pool's taint schedule, others do not",
			in: input(taintedPool(st.Taint("test-key", "test-value", noSched)), pods(
				pod(po{Name: "exists", Tolerations: tols(st.Toleration("test-key", corev1.TolerationOpExists, "", noSched))}),
				pod(po{Name: "equal", Tolerations: tols(st.Toleration("test-key", corev1.TolerationOpEqual, "test-value", noSched))}),
				pod(po{Name: "none"}),
				pod(po{Name: "other-key", Tolerations: tols(st.Toleration("invalid", corev1.TolerationOpExists, "", ""))}),
				pod(po{Name: "no-value", Tolerations: tols(st.Toleration("test-key", corev1.TolerationOpEqual, "", noSched))}))),
			want: []check{fromPool("exists", "default"), fromPool("equal", "default"), unschedulable("none", "taint"), unschedulable("other-key", "taint"), unschedulable("no-value", "taint")}},
		// Karpenter topology:3018: "should provision nodes with taints and schedule pods if the taint is only a startup taint"
		{mirrors: []string{"topology:3018"}, name: "K: a startup taint does not keep pods away",
			in: input(startupPool(), pods(pod(po{Name: "p"}))), want: []check{claims(1), allScheduled()}},
		// Karpenter topology:3026: "should not generate taints for OpExists"
		{mirrors: []string{"topology:3026"}, name: "K: a pod's tolerations add no taints to its node",
			in: input(pods(pod(po{Name: "p", Tolerations: tols(st.Toleration("test-key", corev1.TolerationOpExists, "", noExec))}))),
			want: []check{claims(1), custom(func(t *testing.T, p *plan) {
				if nc, ok := p.claim(t, "p"); ok && len(nc.Taints) != 0 {
					t.Errorf("taints %v", nc.Taints)
				}
			})}},
	}
}

// claimTaint: the pod's NodeClaim carries a taint with this key.
func claimTaint(pod, key string) check {
	return func(t *testing.T, p *plan) {
		nc, ok := p.claim(t, pod)
		if !ok {
			return
		}
		for _, tn := range nc.Taints {
			if tn.Key == key {
				return
			}
		}
		t.Errorf("%s: NodeClaim taints %v lack %s", pod, nc.Taints, key)
	}
}

// differentZones: the two pods' NodeClaims are each in one zone, not the same.
func differentZones(a, b string) check {
	return func(t *testing.T, p *plan) {
		na, okA := p.claim(t, a)
		nb, okB := p.claim(t, b)
		if !okA || !okB {
			return
		}
		if len(na.Zones) != 1 || len(nb.Zones) != 1 || na.Zones[0] == nb.Zones[0] {
			t.Errorf("%s in %v, %s in %v: want one different zone each", a, na.Zones, b, nb.Zones)
		}
	}
}
