package scheduling_test

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
)

func term(key string, l map[string]string) []corev1.PodAffinityTerm {
	return []corev1.PodAffinityTerm{st.Term(key, l)}
}

func affinityScenarios() []scenario {
	dbLabels := labels("app", "db")
	allNamespaces := st.Term(hostKey, webLabels)
	allNamespaces.NamespaceSelector = &metav1.LabelSelector{}
	return []scenario{
		{
			name: "hostname anti-affinity: one pod per node",
			in:   input(podList(podsN(3, po{Name: "web", CPU: "100m", Labels: webLabels, AntiAffinity: term(hostKey, webLabels)}))),
			want: []check{claims(3), separate("web-0", "web-1", "web-2"), allScheduled()},
		},
		{
			name: "zonal anti-affinity: one pod per zone, the fourth unschedulable",
			in:   input(podList(podsN(4, po{Name: "web", CPU: "100m", Labels: webLabels, AntiAffinity: term(zoneKey, webLabels)}))),
			want: []check{unschedulableCount(1), podZoneCounts(webLabels, 1, 1, 1)},
		},
		{
			name: "hostname anti-affinity to a running pod",
			in: input(nodes(node4("n1", zoneA, pod(po{Name: "old-web", CPU: "100m", Labels: webLabels}))),
				podList(podsN(2, po{Name: "web", CPU: "100m", Labels: webLabels, AntiAffinity: term(hostKey, webLabels)}))),
			want: []check{claims(2), notOnNode("web-0", "n1"), notOnNode("web-1", "n1")},
		},
		{
			name: "pod affinity to a running pod's node",
			in:   input(nodes(node4("n1", zoneA, pod(po{Name: "db", CPU: "100m", Labels: dbLabels}))), pods(pod(po{Name: "web", CPU: "1", Affinity: term(hostKey, dbLabels)}))),
			want: []check{claims(0), onNode("web", "n1")},
		},
		{
			name: "pod affinity to a running pod's zone",
			in: input(nodes(smallNode("full", zoneB, "1", false, pod(po{Name: "db", CPU: "1", Labels: dbLabels}))),
				pods(pod(po{Name: "web", CPU: "1", Affinity: term(zoneKey, dbLabels)}))),
			want: []check{claims(1), claimZones("web", zoneB)},
		},
		{
			name: "inverse zonal anti-affinity of a running pod",
			in: input(nodes(smallNode("full", zoneA, "1", false, pod(po{Name: "guard", CPU: "1", Labels: dbLabels, AntiAffinity: term(zoneKey, webLabels)}))),
				pods(pod(po{Name: "web", CPU: "100m", Labels: webLabels}))),
			want: []check{claims(1), notInZone("web", zoneA)},
		},
		{
			name: "inverse hostname anti-affinity of a running pod",
			in: input(nodes(node4("n1", zoneA, pod(po{Name: "guard", CPU: "100m", Labels: dbLabels, AntiAffinity: term(hostKey, webLabels)}))),
				pods(pod(po{Name: "web", CPU: "100m", Labels: webLabels}))),
			want: []check{claims(1), notOnNode("web", "n1")},
		},
		{
			name: "zonal self-affinity keeps a group in one zone",
			in:   input(podList(podsN(5, po{Name: "cluster", CPU: "1", Labels: labels("app", "cluster"), Affinity: term(zoneKey, labels("app", "cluster"))}))),
			want: []check{allScheduled(), sameZone("cluster-0", "cluster-1", "cluster-2", "cluster-3", "cluster-4")},
		},
		{
			name: "hostname self-affinity keeps a group on one node",
			in:   input(podList(podsN(3, po{Name: "trio", CPU: "500m", Labels: labels("app", "trio"), Affinity: term(hostKey, labels("app", "trio"))}))),
			want: []check{claims(1), sameNode("trio-0", "trio-1", "trio-2")},
		},
		{
			name: "pod affinity between pending pods",
			in: input(pods(pod(po{Name: "web", CPU: "500m", Affinity: term(hostKey, labels("app", "cache"))}),
				pod(po{Name: "cache", CPU: "500m", Labels: labels("app", "cache")}))),
			want: []check{allScheduled(), sameNode("web", "cache")},
		},
		{
			name: "required pod affinity to pods that do not exist is unschedulable",
			in:   input(pods(pod(po{Name: "web", CPU: "100m", Affinity: term(hostKey, labels("app", "ghost"))}))),
			want: []check{claims(0), unschedulable("web", "affinity")},
		},
		{
			name: "preferred pod affinity to pods that do not exist is relaxed",
			in:   input(pods(pod(po{Name: "web", CPU: "100m", PreferredAffinity: []corev1.WeightedPodAffinityTerm{st.Weighted(100, st.Term(hostKey, labels("app", "ghost")))}}))),
			want: []check{claims(1), allScheduled()},
		},
		{
			name: "preferred pod affinity is honoured",
			in: input(nodes(node4("n1", zoneA, pod(po{Name: "db", CPU: "100m", Labels: dbLabels}))),
				pods(pod(po{Name: "web", CPU: "100m", PreferredAffinity: []corev1.WeightedPodAffinityTerm{st.Weighted(100, st.Term(hostKey, dbLabels))}}))),
			want: []check{claims(0), onNode("web", "n1")},
		},
		{
			name: "preferred anti-affinity is honoured",
			in: input(podList(podsN(2, po{Name: "web", CPU: "100m", Labels: webLabels,
				PreferredAntiAffinity: []corev1.WeightedPodAffinityTerm{st.Weighted(100, st.Term(hostKey, webLabels))}}))),
			want: []check{claims(2), separate("web-0", "web-1")},
		},
		{
			name: "preferred anti-affinity is relaxed at the pool's limit",
			in: input(pools(poolWith(st.NodePoolOptions{Requirements: reqs(req(ctKey, opIn, onDemand)), Limits: res{"cpu": "1"}})),
				podList(podsN(2, po{Name: "web", CPU: "100m", Labels: webLabels,
					PreferredAntiAffinity: []corev1.WeightedPodAffinityTerm{st.Weighted(100, st.Term(hostKey, webLabels))}}))),
			want: []check{claims(1), allScheduled(), sameNode("web-0", "web-1")},
		},
		{
			name: "anti-affinity terms match pods of their own namespace only",
			in: input(nodes(node4("n1", zoneA, pod(po{Name: "web", Namespace: "other", CPU: "100m", Labels: webLabels}))),
				pods(pod(po{Name: "web", CPU: "100m", Labels: webLabels, AntiAffinity: term(hostKey, webLabels)}))),
			want: []check{claims(0), onNode("web", "n1")},
		},
		{
			name: "an empty namespaceSelector matches every namespace",
			in: input(nodes(node4("n1", zoneA, pod(po{Name: "web", Namespace: "other", CPU: "100m", Labels: webLabels}))),
				pods(pod(po{Name: "web", CPU: "100m", Labels: webLabels, AntiAffinity: []corev1.PodAffinityTerm{allNamespaces}}))),
			want: []check{claims(1), notOnNode("web", "n1")},
		},
		{
			// Karpenter relaxes preferred pod affinity before preferred node
			// affinity: the pod keeps its zone preference.
			name: "preferred pod affinity is relaxed before preferred node affinity",
			in: input(nodes(smallNode("full", zoneA, "1", false, pod(po{Name: "db", CPU: "1", Labels: dbLabels}))),
				pods(pod(po{Name: "web", CPU: "100m",
					PreferredAffinity: []corev1.WeightedPodAffinityTerm{st.Weighted(100, st.Term(zoneKey, dbLabels))},
					NodePreferences:   []corev1.PreferredSchedulingTerm{st.Preference(1, nsr(zoneKey, opIn, zoneC))}}))),
			want: []check{claims(1), claimZones("web", zoneC)},
		},
		{
			name: "preferred anti-affinity is relaxed before preferred node affinity",
			in: input(nodes(smallNode("full", zoneC, "1", false, pod(po{Name: "db", CPU: "1", Labels: dbLabels}))),
				pods(pod(po{Name: "web", CPU: "100m",
					PreferredAntiAffinity: []corev1.WeightedPodAffinityTerm{st.Weighted(100, st.Term(zoneKey, dbLabels))},
					NodePreferences:       []corev1.PreferredSchedulingTerm{st.Preference(1, nsr(zoneKey, opIn, zoneC))}}))),
			want: []check{claims(1), claimZones("web", zoneC)},
		},
		{
			// Preferred node affinity goes before ScheduleAnyway spreads: the
			// first pod gets its preferred zone, the others keep the spread.
			name: "preferred node affinity is relaxed before a ScheduleAnyway spread",
			in: input(podList(podsN(3, po{Name: "web", CPU: "100m", Labels: webLabels,
				Spread:          []corev1.TopologySpreadConstraint{st.Spread(zoneKey, 1, anyway, webLabels)},
				NodePreferences: []corev1.PreferredSchedulingTerm{st.Preference(100, nsr(zoneKey, opIn, zoneA))}}))),
			want: []check{allScheduled(), podZoneCounts(webLabels, 1, 1, 1)},
		},
		{
			name: "two pods with one host port go to separate nodes",
			in:   input(podList(podsN(2, po{Name: "proxy", CPU: "100m", HostPorts: []int32{8080}}))),
			want: []check{claims(2), separate("proxy-0", "proxy-1")},
		},
		{
			name: "pods with different host ports share a node",
			in:   input(pods(pod(po{Name: "a", CPU: "100m", HostPorts: []int32{8080}}), pod(po{Name: "b", CPU: "100m", HostPorts: []int32{9090}}))),
			want: []check{claims(1), sameNode("a", "b")},
		},
		{
			name: "a host port in use on an existing node",
			in:   input(nodes(node4("n1", zoneA, pod(po{Name: "old-proxy", CPU: "100m", HostPorts: []int32{8080}}))), pods(pod(po{Name: "proxy", CPU: "100m", HostPorts: []int32{8080}}))),
			want: []check{claims(1), notOnNode("proxy", "n1")},
		},
		{
			// Karpenter provisioning:956: "should account for daemonset hostports"
			mirrors: []string{"provisioning:956"},
			name:    "a daemonset's host port keeps a pod off new nodes it runs on",
			in: input(daemonSets(st.DaemonSet(st.DaemonSetOptions{Name: "node-exporter", CPU: "10m", HostPorts: []int32{9100}})),
				pods(pod(po{Name: "exporter", CPU: "100m", HostPorts: []int32{9100}}))),
			want: []check{claims(0), unschedulable("exporter", "port")},
		},
	}
}
