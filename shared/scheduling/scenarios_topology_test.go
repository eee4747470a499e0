package scheduling_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
)

var webLabels = map[string]string{"app": "web"}

// spreadPods are n pods app=web (plus extra labels) with one spread
// constraint on key.
func spreadPods(n int, key string, skew int32, when corev1.UnsatisfiableConstraintAction, extra ...string) []*corev1.Pod {
	l := labels(append([]string{"app", "web"}, extra...)...)
	return podsN(n, po{Name: "web", CPU: "100m", Labels: l, Spread: []corev1.TopologySpreadConstraint{st.Spread(key, skew, when, webLabels)}})
}

// noneInZone: no pending pod matching sel lands in zone.
func noneInZone(sel map[string]string, zone string) check {
	return func(t *testing.T, p *plan) {
		if n := p.zoneCounts(t, sel)[zone]; n != 0 {
			t.Errorf("%d pods in %s:%s", n, zone, summary(p.res))
		}
	}
}

func topologyScenarios() []scenario {
	minDomains := int32(3)
	withMinDomains := spreadPods(4, zoneKey, 1, dns)
	for _, p := range withMinDomains {
		p.Spec.TopologySpreadConstraints[0].MinDomains = &minDomains
	}
	v2 := spreadPods(3, zoneKey, 1, dns, "pod-template-hash", "v2")
	for i, p := range v2 {
		p.Name = "web-v2-" + string(rune('a'+i))
		p.Spec.TopologySpreadConstraints[0].MatchLabelKeys = []string{"pod-template-hash"}
	}
	honor := spreadPods(4, zoneKey, 1, dns)
	for _, p := range honor {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: nsrs(nsr(zoneKey, opIn, zoneB, zoneC))}}}}}
	}
	boundWeb := func(n int, extra ...string) []*corev1.Pod {
		return podsN(n, po{Name: "old-web", CPU: "100m", Labels: labels(append([]string{"app", "web"}, extra...)...)})
	}
	return []scenario{
		{
			name: "zonal spread: 4 pods over 3 zones make 2, 1, 1",
			in:   input(podList(spreadPods(4, zoneKey, 1, dns))),
			want: []check{allScheduled(), podZoneCounts(webLabels, 1, 1, 2), claims(3)},
		},
		{
			name: "zonal spread with maxSkew 2 stays within 2",
			in:   input(podList(spreadPods(6, zoneKey, 2, dns))),
			want: []check{allScheduled(), custom(func(t *testing.T, p *plan) {
				c := p.zoneCounts(t, webLabels)
				lo, hi := 1<<30, 0
				for _, z := range st.Zones() {
					lo, hi = min(lo, c[z]), max(hi, c[z])
				}
				if hi-lo > 2 {
					t.Errorf("zone counts %v: skew %d", c, hi-lo)
				}
			})},
		},
		{
			name: "zonal spread counts the pods already running",
			in:   input(nodes(node4("n1", zoneA, boundWeb(2)...)), podList(spreadPods(2, zoneKey, 1, dns))),
			want: []check{allScheduled(), notOnNode("web-0", "n1"), notOnNode("web-1", "n1"), podZoneCounts(webLabels, 1, 1), noneInZone(webLabels, zoneA)},
		},
		{
			name: "zonal spread counts only pods its selector matches",
			in: input(nodes(node4("n1", zoneA, podsN(3, po{Name: "db", CPU: "100m", Labels: labels("app", "db")})...)),
				podList(spreadPods(3, zoneKey, 1, dns))),
			want: []check{allScheduled(), podZoneCounts(webLabels, 1, 1, 1)},
		},
		{
			name: "zonal spread counts the pods of in-flight NodeClaims",
			in: input(nodes(smallNode("launching", zoneA, "1", true, podsN(1, po{Name: "old-web", CPU: "500m", Labels: webLabels})...)),
				podList(podsN(2, po{Name: "web", CPU: "600m", Labels: webLabels, Spread: []corev1.TopologySpreadConstraint{st.Spread(zoneKey, 1, dns, webLabels)}}))),
			want: []check{allScheduled(), podZoneCounts(webLabels, 1, 1), noneInZone(webLabels, zoneA)},
		},
		{
			name: "hostname spread with maxSkew 1: one pod per new node",
			in:   input(podList(spreadPods(3, hostKey, 1, dns))),
			want: []check{claims(3), separate("web-0", "web-1", "web-2")},
		},
		{
			name: "hostname spread with maxSkew 2: two pods per new node",
			in:   input(podList(spreadPods(4, hostKey, 2, dns))),
			want: []check{claims(2), podsPerClaim(2, 2)},
		},
		{
			name: "hostname spread: an existing node at the skew takes no more",
			in:   input(nodes(node4("n1", zoneA, boundWeb(1)...)), podList(spreadPods(2, hostKey, 1, dns))),
			want: []check{claims(2), notOnNode("web-0", "n1"), notOnNode("web-1", "n1")},
		},
		{
			name: "ScheduleAnyway hostname spread is relaxed at the pool's limit",
			in: input(pools(poolWith(st.NodePoolOptions{Requirements: reqs(req(ctKey, opIn, onDemand)), Limits: res{"cpu": "1"}})),
				podList(spreadPods(3, hostKey, 1, anyway))),
			want: []check{claims(1), allScheduled(), sameNode("web-0", "web-1", "web-2")},
		},
		{
			name: "DoNotSchedule hostname spread is not relaxed at the pool's limit",
			in: input(pools(poolWith(st.NodePoolOptions{Requirements: reqs(req(ctKey, opIn, onDemand)), Limits: res{"cpu": "1"}})),
				podList(spreadPods(3, hostKey, 1, dns))),
			want: []check{claims(1), unschedulableCount(2)},
		},
		{
			name: "zonal spread in a single-zone pool",
			in:   input(pools(pool("zone-a", 0, req(ctKey, opIn, onDemand), req(zoneKey, opIn, zoneA))), podList(spreadPods(4, zoneKey, 1, dns))),
			want: []check{allScheduled(), podZoneCounts(webLabels, 4)},
		},
		{
			name: "minDomains above the zones available caps each zone at maxSkew",
			in:   input(pools(pool("two-zones", 0, req(ctKey, opIn, onDemand), req(zoneKey, opIn, zoneA, zoneB))), podList(withMinDomains)),
			want: []check{unschedulableCount(2), podZoneCounts(webLabels, 1, 1)},
		},
		{
			name: "matchLabelKeys spreads each revision on its own",
			in:   input(nodes(node4("n1", zoneA, boundWeb(3, "pod-template-hash", "v1")...)), podList(v2)),
			want: []check{allScheduled(), podZoneCounts(labels("app", "web", "pod-template-hash", "v2"), 1, 1, 1)},
		},
		{
			name: "nodeTaintsPolicy Ignore: pods on tainted nodes count",
			in: input(nodes(st.Node(st.NodeOptions{Name: "tainted", InstanceType: st.SyntheticTypes(4)[3], Zone: zoneA, Taints: taints(st.Taint("dedicated", "db", noSched)),
				Pods: boundWeb(2)})), podList(spreadPods(2, zoneKey, 1, dns))),
			want: []check{allScheduled(), noneInZone(webLabels, zoneA), podZoneCounts(webLabels, 1, 1)},
		},
		{
			name: "nodeAffinityPolicy Honor: zones outside the pod's node affinity are not domains",
			in:   input(podList(honor)),
			want: []check{allScheduled(), podZoneCounts(webLabels, 2, 2), noneInZone(webLabels, zoneA)},
		},
		{
			name: "capacity-type spread puts one pod on spot and one on on-demand",
			in:   input(spotAndOnDemand("default"), podList(spreadPods(2, ctKey, 1, dns))),
			want: []check{allScheduled(), claims(2), custom(func(t *testing.T, p *plan) {
				got := map[string]int{}
				for _, nc := range p.res.NodeClaims {
					got[nc.CapacityType] += len(nc.Pods)
				}
				if got[spot] != 1 || got[onDemand] != 1 {
					t.Errorf("pods per capacity type %v, want 1 and 1", got)
				}
			})},
		},
		{
			name: "ScheduleAnyway zonal spread in a single-zone pool",
			in:   input(pools(pool("zone-a", 0, req(ctKey, opIn, onDemand), req(zoneKey, opIn, zoneA))), podList(spreadPods(3, zoneKey, 1, anyway))),
			want: []check{allScheduled(), podZoneCounts(webLabels, 3), claims(1)},
		},
	}
}
