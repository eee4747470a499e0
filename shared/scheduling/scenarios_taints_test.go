package scheduling_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
)

// taintedPool is the default on-demand pool with one taint.
func taintedPool(t corev1.Taint) opt {
	return pools(poolWith(st.NodePoolOptions{Requirements: reqs(req(ctKey, opIn, onDemand)), Taints: taints(t)}))
}

func tolerating(name string, ts ...corev1.Toleration) *corev1.Pod {
	return pod(po{Name: name, CPU: "100m", Tolerations: ts})
}

func taintScenarios() []scenario {
	gpuTaint := st.Taint("dedicated", "gpu", noSched)
	return []scenario{
		{
			name: "a pod that tolerates nothing never lands on a tainted pool",
			in:   input(taintedPool(gpuTaint), pods(tolerating("plain"))),
			want: []check{claims(0), unschedulable("plain", "taint", "dedicated")},
		},
		{
			name: "toleration Equal with key, value and effect",
			in:   input(taintedPool(gpuTaint), pods(tolerating("equal", st.Toleration("dedicated", corev1.TolerationOpEqual, "gpu", noSched)))),
			want: []check{claims(1), allScheduled()},
		},
		{
			name: "toleration Equal with the wrong value",
			in:   input(taintedPool(gpuTaint), pods(tolerating("wrong-value", st.Toleration("dedicated", corev1.TolerationOpEqual, "cpu", noSched)))),
			want: []check{claims(0), unschedulable("wrong-value", "taint")},
		},
		{
			name: "toleration Exists with the effect",
			in:   input(taintedPool(gpuTaint), pods(tolerating("exists-effect", st.Toleration("dedicated", corev1.TolerationOpExists, "", noSched)))),
			want: []check{claims(1), allScheduled()},
		},
		{
			name: "toleration Exists without an effect",
			in:   input(taintedPool(gpuTaint), pods(tolerating("exists-any", st.Toleration("dedicated", corev1.TolerationOpExists, "", "")))),
			want: []check{claims(1), allScheduled()},
		},
		{
			name: "wildcard toleration",
			in:   input(taintedPool(gpuTaint), pods(tolerating("wildcard", st.Toleration("", corev1.TolerationOpExists, "", "")))),
			want: []check{claims(1), allScheduled()},
		},
		{
			name: "a toleration for another effect does not tolerate NoSchedule",
			in:   input(taintedPool(gpuTaint), pods(tolerating("no-execute", st.Toleration("dedicated", corev1.TolerationOpExists, "", noExec)))),
			want: []check{claims(0), unschedulable("no-execute", "taint")},
		},
		{
			name: "a toleration of another key does not help",
			in:   input(taintedPool(gpuTaint), pods(tolerating("other-key", st.Toleration("spot", corev1.TolerationOpExists, "", "")))),
			want: []check{claims(0), unschedulable("other-key", "taint")},
		},
		{
			name: "NoExecute pool taint needs a toleration too",
			in: input(taintedPool(st.Taint("batch", "true", noExec)),
				pods(tolerating("plain"), tolerating("tolerant", st.Toleration("batch", corev1.TolerationOpEqual, "true", noExec)))),
			want: []check{claims(1), unschedulable("plain", "taint"), fromPool("tolerant", "default")},
		},
		{
			name: "startup taints need no toleration and go on the claim",
			in: input(pools(poolWith(st.NodePoolOptions{Requirements: reqs(req(ctKey, opIn, onDemand)), StartupTaints: taints(st.Taint("node.cilium.io/agent-not-ready", "true", noSched))})),
				pods(tolerating("plain"))),
			want: []check{claims(1), allScheduled(), custom(func(t *testing.T, p *plan) {
				nc, ok := p.claim(t, "plain")
				if ok && (len(nc.StartupTaints) != 1 || nc.StartupTaints[0].Key != "node.cilium.io/agent-not-ready") {
					t.Errorf("startup taints %v", nc.StartupTaints)
				}
			})},
		},
		{
			name: "a PreferNoSchedule pool is used when it is the only one",
			in:   input(taintedPool(st.Taint("soft", "true", preferNo)), pods(tolerating("plain"))),
			want: []check{claims(1), allScheduled()},
		},
		{
			name: "a PreferNoSchedule pool is avoided when another pool fits",
			in: input(pools(poolWith(st.NodePoolOptions{Name: "soft", Weight: 10, Requirements: reqs(req(ctKey, opIn, onDemand)), Taints: taints(st.Taint("soft", "true", preferNo))}),
				pool("plain", 1, req(ctKey, opIn, onDemand))),
				pods(tolerating("plain-pod"))),
			want: []check{claims(1), fromPool("plain-pod", "plain")},
		},
		{
			name: "the claim carries the pool's taints",
			in:   input(taintedPool(gpuTaint), pods(tolerating("ok", st.Toleration("dedicated", corev1.TolerationOpExists, "", "")))),
			want: []check{custom(func(t *testing.T, p *plan) {
				nc, ok := p.claim(t, "ok")
				if ok && (len(nc.Taints) != 1 || nc.Taints[0] != gpuTaint) {
					t.Errorf("claim taints %v, want [%v]", nc.Taints, gpuTaint)
				}
			})},
		},
		{
			name: "an existing node's NoSchedule taint keeps pods off it",
			in: input(nodes(st.Node(st.NodeOptions{Name: "tainted", InstanceType: st.SyntheticTypes(4)[3], Zone: zoneA, Taints: taints(st.Taint("dedicated", "db", noSched))})),
				pods(tolerating("plain"))),
			want: []check{claims(1), notOnNode("plain", "tainted")},
		},
		{
			name: "an existing node's taint that the pod tolerates is no obstacle",
			in: input(nodes(st.Node(st.NodeOptions{Name: "tainted", InstanceType: st.SyntheticTypes(4)[3], Zone: zoneA, Taints: taints(st.Taint("dedicated", "db", noSched))})),
				pods(tolerating("db", st.Toleration("dedicated", corev1.TolerationOpEqual, "db", noSched)))),
			want: []check{claims(0), onNode("db", "tainted")},
		},
		{
			name: "a cordoned existing node is not used",
			in:   input(nodes(st.Node(st.NodeOptions{Name: "cordoned", InstanceType: st.SyntheticTypes(4)[3], Zone: zoneA, Unschedulable: true})), pods(tolerating("plain"))),
			want: []check{claims(1), notOnNode("plain", "cordoned")},
		},
	}
}
