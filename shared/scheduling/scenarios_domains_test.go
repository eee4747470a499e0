package scheduling_test

import (
	"fmt"
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/catalog"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
)

// keyCounts: the scheduled pods matching sel are spread over the values of
// key in these numbers (sorted, any value); every NodeClaim holding one
// carries a single value of key.
func keyCounts(key string, sel map[string]string, counts ...int) check {
	return func(t *testing.T, p *plan) {
		per := p.valueCounts(t, key, sel)
		var got []int
		for _, n := range per {
			got = append(got, n)
		}
		sort.Ints(got)
		want := append([]int(nil), counts...)
		sort.Ints(want)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("pods per %s %v (%v), want %v:%s", key, got, per, want, summary(p.res))
		}
	}
}

func (p *plan) valueCounts(t *testing.T, key string, sel map[string]string) map[string]int {
	t.Helper()
	matches := func(pod string) bool {
		for _, x := range p.in.Pods {
			if x.Namespace+"/"+x.Name == pod {
				for k, v := range sel {
					if x.Labels[k] != v {
						return false
					}
				}
				return true
			}
		}
		return false
	}
	out := map[string]int{}
	for _, nc := range p.res.NodeClaims {
		for _, pod := range nc.Pods {
			if !matches(pod) {
				continue
			}
			v, ok := nc.Labels[key]
			if !ok {
				t.Errorf("NodeClaim of %s has no %s label (labels %v)", pod, key, nc.Labels)
				continue
			}
			out[v]++
		}
	}
	for pod, node := range p.nodeOf {
		if matches(pod) {
			for _, n := range p.in.Nodes {
				if n.Node.Name == node {
					out[n.Node.Labels[key]]++
				}
			}
		}
	}
	return out
}

func armAndAmd() opt {
	var ts []*catalog.InstanceType
	for i := 1; i <= 8; i *= 2 {
		ts = append(ts, st.Type(st.TypeOptions{Name: fmt.Sprintf("amd.%dx", i), VCPU: i}),
			st.Type(st.TypeOptions{Name: fmt.Sprintf("arm.%dx", i), VCPU: i, Arch: "arm64", Family: "arm"}))
	}
	return types(ts...)
}

// domainScenarios: a spread constraint's domains come from the values every
// NodePool's requirements and types allow for its key (any key, not only
// zone, hostname and capacity type) and from existing nodes.
func domainScenarios() []scenario {
	const spreadKey = "capacity.spread.4-1"
	return []scenario{
		{
			// Karpenter topology:981: "should balance pods across NodePool requirements"
			mirrors: []string{"topology:981"},
			name:    "a spread over a custom key balances pods across the values two pools define",
			in: input(pools(
				pool("spot", 0, req(ctKey, opIn, spot), req(spreadKey, opIn, "2", "3", "4", "5")),
				pool("on-demand", 0, req(ctKey, opIn, onDemand), req(spreadKey, opIn, "1"))),
				podList(spreadPods(20, spreadKey, 1, dns))),
			want: []check{allScheduled(), keyCounts(spreadKey, webLabels, 4, 4, 4, 4, 4), keyCounts(ctKey, webLabels, 4, 16)},
		},
		{
			name: "a spread over a pool's custom label values pins each NodeClaim to one value",
			in:   input(pools(pool("default", 0, req(ctKey, opIn, onDemand), req("team", opIn, "a", "b", "c"))), podList(spreadPods(6, "team", 1, dns))),
			want: []check{allScheduled(), keyCounts("team", webLabels, 2, 2, 2)},
		},
		{
			name: "pods spread across pools whose template labels differ",
			in: input(pools(
				poolWith(st.NodePoolOptions{Name: "blue", Requirements: reqs(req(ctKey, opIn, onDemand)), Labels: labels("color", "blue")}),
				poolWith(st.NodePoolOptions{Name: "green", Requirements: reqs(req(ctKey, opIn, onDemand)), Labels: labels("color", "green")})),
				podList(spreadPods(4, "color", 1, dns))),
			want: []check{allScheduled(), keyCounts("color", webLabels, 2, 2)},
		},
		{
			name: "a spread over architecture uses both architectures a pool allows",
			in:   input(armAndAmd(), pools(pool("default", 0, req(ctKey, opIn, onDemand))), podList(spreadPods(4, archKey, 1, dns))),
			want: []check{allScheduled(), keyCounts(archKey, webLabels, 2, 2)},
		},
		{
			// Karpenter topology:895: "should balance pods across arch (no constraints)"
			mirrors: []string{"topology:895"},
			name:    "a spread over architecture counts an existing node's architecture as a domain",
			in: input(armAndAmd(), pools(pool("default", 0, req(ctKey, opIn, onDemand), req(archKey, opIn, "arm64"))),
				nodes(st.Node(st.NodeOptions{Name: "amd-1", Zone: zoneA, Labels: labels(archKey, "amd64"), Allocatable: res{"cpu": "1", "memory": "4Gi", "pods": "1"},
					Pods: []*corev1.Pod{pod(po{Name: "old-web", Labels: webLabels})}})),
				podList(podsN(5, po{Name: "web", CPU: "2", Labels: webLabels, Spread: []corev1.TopologySpreadConstraint{st.Spread(archKey, 1, dns, webLabels)}}))),
			want: []check{keyCounts(archKey, webLabels, 2), unschedulableCount(3, "topology spread", archKey)},
		},
		{
			name: "an existing node's value of a custom key is a domain too",
			in: input(pools(pool("default", 0, req(ctKey, opIn, onDemand), req("team", opIn, "a", "b"))),
				nodes(st.Node(st.NodeOptions{Name: "team-c", Zone: zoneA, Labels: labels("team", "c"), Allocatable: res{"cpu": "1", "memory": "4Gi", "pods": "10"}})),
				podList(spreadPods(3, "team", 1, dns))),
			want: []check{allScheduled(), onNode("web-0", "team-c"), keyCounts("team", webLabels, 1, 1, 1)},
		},
		{
			name: "self affinity on a custom key puts every pod in one value",
			in: input(pools(pool("default", 0, req(ctKey, opIn, onDemand), req("rack", opIn, "r1", "r2"))),
				podList(podsN(3, po{Name: "web", CPU: "1", Labels: webLabels, Affinity: []corev1.PodAffinityTerm{st.Term("rack", webLabels)}}))),
			want: []check{allScheduled(), keyCounts("rack", webLabels, 3)},
		},
		{
			name: "anti-affinity on a custom key puts one pod in each value",
			in: input(pools(pool("default", 0, req(ctKey, opIn, onDemand), req("rack", opIn, "r1", "r2"))),
				podList(podsN(3, po{Name: "web", CPU: "100m", Labels: webLabels, AntiAffinity: []corev1.PodAffinityTerm{st.Term("rack", webLabels)}}))),
			want: []check{keyCounts("rack", webLabels, 1, 1), unschedulableCount(1, "NodePool default", "anti-affinity", "rack")},
		},
		{
			name: "a spread over a key no pool gives values is unschedulable and says why",
			in:   input(podList(spreadPods(2, "team", 1, dns))),
			want: []check{claims(0), unschedulableCount(2, "NodePool default", "topology spread", "team")},
		},
	}
}
