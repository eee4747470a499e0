package scheduling_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/scheduling"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
)

// solveBoth solves in as it is and with its nodes' pods summarised for its
// pending pods, and fails unless both give the same plan (or the same
// error). It returns the plan.
func solveBoth(t *testing.T, in scheduling.Input) *scheduling.Result {
	t.Helper()
	full, errFull := scheduling.Solve(in)
	summarised := in
	summarised.Nodes = scheduling.Summarise(in.Nodes, in.Pods)
	short, errShort := scheduling.Solve(summarised)
	if fmt.Sprint(errFull) != fmt.Sprint(errShort) {
		t.Fatalf("full solve error %v, summarised %v", errFull, errShort)
	}
	if errFull != nil {
		return nil
	}
	if a, b := resultJSON(t, full), resultJSON(t, short); !bytes.Equal(a, b) {
		t.Fatalf("summarised bound pods give another plan:\nfull:       %s\nsummarised: %s", a, b)
	}
	return full
}

// boundNode is a node of the 4th synthetic type in zone with pods bound.
func boundNode(name, zone string, pods ...*corev1.Pod) *scheduling.Node {
	return st.Node(st.NodeOptions{Name: name, InstanceType: st.SyntheticTypes(4)[3], Zone: zone, CapacityType: onDemand, NodePool: "default", Pods: pods})
}

// withHash is o with the pod-template-hash label.
func withHash(o po, hash string) po {
	l := map[string]string{"pod-template-hash": hash}
	for k, v := range o.Labels {
		l[k] = v
	}
	o.Labels = l
	return o
}

// TestSummarisedPlans solves clusters whose bound and pending pods spread,
// attract and repel each other, with the bound pods read in full and
// summarised (Summarise): the plans must be the same bytes.
func TestSummarisedPlans(t *testing.T) {
	web := labels("app", "web")
	api := labels("app", "api")
	zoneSpread := po{Name: "web", CPU: "500m", Labels: web, Spread: []corev1.TopologySpreadConstraint{st.Spread(zoneKey, 1, dns, web)}}
	hostAnti := po{Name: "api", CPU: "1", Labels: api, AntiAffinity: []corev1.PodAffinityTerm{st.Term(hostKey, api)}}
	guard := po{Name: "guard", CPU: "100m", Labels: labels("app", "guard"), AntiAffinity: []corev1.PodAffinityTerm{st.Term(zoneKey, web)}}
	lonely := po{Name: "lonely", CPU: "100m", Labels: labels("app", "lonely"), AntiAffinity: []corev1.PodAffinityTerm{st.Term(zoneKey, labels("app", "nobody"))}}
	hashed := func(o po, hash string) po {
		o = withHash(o, hash)
		o.Spread = []corev1.TopologySpreadConstraint{st.Spread(zoneKey, 1, dns, web)}
		o.Spread[0].MatchLabelKeys = []string{"pod-template-hash"}
		return o
	}
	named := func(o po, name string) *corev1.Pod { o.Name = name; return pod(o) }
	inNS := func(o po, ns string) po { o.Namespace = ns; return o }
	finished := named(zoneSpread, "web-done")
	finished.Status.Phase = corev1.PodSucceeded
	deleting := named(hostAnti, "api-going")
	deleting.DeletionTimestamp = &metav1.Time{}
	ds := st.DaemonSet(st.DaemonSetOptions{Name: "agent", CPU: "100m", Memory: "64Mi", HostPorts: []int32{9100}})
	dsPod := func(node, cpu string) *corev1.Pod {
		return st.DaemonPod(ds, po{Name: "agent-" + node, NodeName: node, CPU: cpu, Memory: "64Mi", HostPorts: []int32{9100}})
	}
	allNamespaces := st.Term(zoneKey, labels("app", "db"))
	allNamespaces.NamespaceSelector = &metav1.LabelSelector{}
	otherNS := st.Term(hostKey, labels("app", "db"))
	otherNS.Namespaces = []string{"data"}
	for _, tc := range []struct {
		name string
		in   scheduling.Input
	}{
		{"zonal spread scaled up over skewed bound pods", input(
			nodes(boundNode("a1", zoneA, named(zoneSpread, "web-a1"), named(zoneSpread, "web-a2"), named(zoneSpread, "web-a3")),
				boundNode("b1", zoneB, named(zoneSpread, "web-b1")), boundNode("c1", zoneC)),
			podList(podsN(7, zoneSpread)))},
		{"hostname anti-affinity keeps off the nodes running the app", input(
			nodes(boundNode("n1", zoneA, named(hostAnti, "api-1")), boundNode("n2", zoneB, named(hostAnti, "api-2")), boundNode("n3", zoneC)),
			podList(podsN(4, hostAnti)))},
		{"bound pods' anti-affinity repels pending pods by zone", input(
			nodes(boundNode("g1", zoneA, named(guard, "guard-1"), named(lonely, "lonely-1")), boundNode("g2", zoneB, named(lonely, "lonely-2")), boundNode("g3", zoneC)),
			podList(podsN(5, po{Name: "web", CPU: "250m", Labels: web})))},
		{"a label only a bound pod's selector reads splits the pending pods", input(
			nodes(boundNode("f1", zoneA, named(po{Name: "fence", CPU: "100m", AntiAffinity: []corev1.PodAffinityTerm{st.Term(zoneKey, labels("tier", "front"))}}, "fence-0"))),
			podList(podsN(3, po{Name: "back", CPU: "100m", Labels: labels("tier", "back")}), podsN(3, po{Name: "front", CPU: "100m", Labels: labels("tier", "front")})))},
		{"zonal affinity to a bound app", input(
			nodes(boundNode("d1", zoneB, named(po{Name: "db", CPU: "1", Labels: labels("app", "db")}, "db-0")), boundNode("d2", zoneA)),
			podList(podsN(3, po{Name: "cache", CPU: "500m", Labels: labels("app", "cache"), Affinity: []corev1.PodAffinityTerm{st.Term(zoneKey, labels("app", "db"))}})))},
		{"spread with matchLabelKeys counts its own revision", input(
			nodes(boundNode("r1", zoneA, named(hashed(zoneSpread, "old"), "web-old-1"), named(hashed(zoneSpread, "new"), "web-new-1")),
				boundNode("r2", zoneB, named(hashed(zoneSpread, "old"), "web-old-2"))),
			podList(podsN(4, hashed(zoneSpread, "new"))))},
		{"terms over other and all namespaces", input(
			nodes(boundNode("x1", zoneA, named(inNS(po{Name: "db", CPU: "1", Labels: labels("app", "db")}, "data"), "db-0")), boundNode("x2", zoneB)),
			podList(podsN(2, po{Name: "near", CPU: "250m", Labels: labels("app", "near"), Affinity: []corev1.PodAffinityTerm{allNamespaces}}),
				podsN(2, po{Name: "apart", CPU: "250m", Labels: labels("app", "apart"), AntiAffinity: []corev1.PodAffinityTerm{otherNS}})))},
		{"daemons, host ports, finished and deleting pods", input(
			daemonSets(ds),
			nodes(boundNode("h1", zoneA, dsPod("h1", "300m"), named(po{Name: "proxy", CPU: "100m", HostPorts: []int32{8080}}, "proxy-1"), finished, deleting),
				boundNode("h2", zoneB, dsPod("h2", "200m"))),
			podList(podsN(3, po{Name: "proxy", CPU: "100m", HostPorts: []int32{8080}}), podsN(4, hostAnti), podsN(4, zoneSpread)))},
		{"a daemon pod bound takes the pod slot its DaemonSet reserves", input(
			daemonSets(ds),
			nodes(st.Node(st.NodeOptions{Name: "t1", Zone: zoneA, NodePool: "default", CapacityType: onDemand,
				Allocatable: res{"cpu": "8", "memory": "32Gi", "pods": "4"},
				Pods:        []*corev1.Pod{dsPod("t1", "100m"), named(po{Name: "w", CPU: "100m"}, "w-0")}})),
			podList(podsN(3, po{Name: "small", CPU: "100m"})))},
		{"extended resources on bound pods", input(
			nodes(st.Node(st.NodeOptions{Name: "e1", Zone: zoneA, NodePool: "default", CapacityType: onDemand,
				Allocatable: res{"cpu": "8", "memory": "32Gi", "pods": "110", "example.com/foo": "4"},
				Pods:        []*corev1.Pod{named(po{Name: "foo", CPU: "1", Requests: res{"example.com/foo": "3"}}, "foo-0")}})),
			podList(podsN(2, po{Name: "foo", CPU: "1", Requests: res{"example.com/foo": "1"}})))},
		{"preferred anti-affinity and hostname spread", input(
			nodes(boundNode("p1", zoneA, named(hostAnti, "api-1")), boundNode("p2", zoneB)),
			podList(podsN(3, po{Name: "soft", CPU: "500m", Labels: api, PreferredAntiAffinity: []corev1.WeightedPodAffinityTerm{st.Weighted(50, st.Term(hostKey, api))}}),
				podsN(3, po{Name: "even", CPU: "500m", Labels: web, Spread: []corev1.TopologySpreadConstraint{st.Spread(hostKey, 1, dns, web)}})))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := solveBoth(t, tc.in)
			if r == nil {
				t.Fatal("no plan")
			}
			checkInvariants(t, tc.in, r)
		})
	}
}

// TestSummarisedScenarios solves every scenario with existing nodes again
// with their pods summarised: the plan (or the error) must be the same.
func TestSummarisedScenarios(t *testing.T) {
	n := 0
	for _, group := range [][]scenario{
		resourceScenarios(), selectionScenarios(), taintScenarios(), poolScenarios(),
		offeringScenarios(), existingScenarios(), topologyScenarios(), affinityScenarios(), claimScenarios(),
		limitScenarios(), daemonScenarios(), minValuesScenarios(), domainScenarios(), startupScenarios(), aliasScenarios(), reasonScenarios(),
		schedulingParity(), topologyParity(), affinityParity(), selectionParity(), provisioningParity(), awsParity(), volumeParity(),
		overflowScenarios(), imageScenarios(),
	} {
		for _, sc := range group {
			bound := false
			for _, nd := range sc.in.Nodes {
				bound = bound || (nd != nil && len(nd.Pods) > 0)
			}
			if !bound {
				continue
			}
			n++
			t.Run(sc.name, func(t *testing.T) { solveBoth(t, sc.in) })
		}
	}
	if n < 20 {
		t.Fatalf("%d scenarios with bound pods, want at least 20", n)
	}
}

// TestSummariseLeavesInput: Summarise copies the nodes it summarises, keeps
// their pods, and returns the others as they are.
func TestSummariseLeavesInput(t *testing.T) {
	empty := boundNode("empty", zoneA)
	busy := boundNode("busy", zoneB, pod(po{Name: "a", CPU: "1"}), pod(po{Name: "b", CPU: "1"}))
	out := scheduling.Summarise([]*scheduling.Node{empty, busy, nil}, nil)
	if out[0] != empty || out[2] != nil {
		t.Error("a node without pods (or nil) is not returned as it is")
	}
	if out[1] == busy || busy.Bound != nil {
		t.Error("Summarise changed the node it was given")
	}
	if got := out[1].Bound.Summarised(); got != 2 || len(out[1].Pods) != 2 {
		t.Errorf("summarised %d of %d pods, want 2 of 2", got, len(out[1].Pods))
	}
}

// TestSummaryForOtherPods: a solve of pods the nodes were not summarised
// for is refused (the summary has no counts for their selectors).
func TestSummaryForOtherPods(t *testing.T) {
	web := labels("app", "web")
	spread := po{Name: "web", CPU: "500m", Labels: web, Spread: []corev1.TopologySpreadConstraint{st.Spread(zoneKey, 1, dns, web)}}
	in := input(nodes(boundNode("a1", zoneA, pod(po{Name: "old", CPU: "1", Labels: web}))), podList(podsN(2, spread)))
	in.Nodes = scheduling.Summarise(in.Nodes, in.Pods[:1])
	_, err := scheduling.Solve(in)
	if err == nil || !strings.Contains(err.Error(), "summarised for other pending pods") {
		t.Fatalf("Solve: error %v, want one saying the pods were summarised for others", err)
	}
}
