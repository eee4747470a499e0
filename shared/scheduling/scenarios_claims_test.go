package scheduling_test

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/refdata"
	"github.com/nodewright/nodewright/shared/scheduling"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
	"github.com/nodewright/nodewright/shared/snapshot"
)

// gpuTraining is the shared example nodepool-gpu-training.yaml (its pool
// and its ml-training-job pod) on the real catalog, with the EC2NodeClass
// it names.
func gpuTraining() scheduling.Input {
	path, err := refdata.Example("nodepool-gpu-training.yaml")
	if err != nil {
		panic(err)
	}
	s, err := snapshot.ReadFiles(path)
	if err != nil {
		panic(fmt.Sprintf("the GPU training example does not load: %v", err))
	}
	in := input(realCatalog())
	in.Pods, in.NodePools = s.Pending, s.NodePools
	in.NodeClasses = []*apis.EC2NodeClass{st.NodeClass("gpu-class")}
	return in
}

// withKubelet is the default node class with kubelet settings.
func withKubelet(k *apis.KubeletConfiguration) opt {
	nc := st.NodeClass("default")
	nc.Spec.Kubelet = k
	return nodeClasses(nc)
}

// claimOf runs f on the pod's NodeClaim.
func claimOf(pod string, f func(t *testing.T, nc scheduling.NodeClaim)) check {
	return func(t *testing.T, p *plan) {
		if nc, ok := p.claim(t, pod); ok {
			f(t, nc)
		}
	}
}

// catalogType is a type of the embedded catalog by name.
func catalogType(name string) *catalog.InstanceType {
	it, ok := catalog.Default().Get(name)
	if !ok {
		panic(name + " is not in the catalog")
	}
	return it
}

func quantityIs(t *testing.T, rl corev1.ResourceList, name corev1.ResourceName, want string) {
	t.Helper()
	q, ok := rl[name]
	if !ok || q.Cmp(resource.MustParse(want)) != 0 {
		t.Errorf("%s = %s, want %s (requests %v)", name, q.String(), want, rl)
	}
}

func claimScenarios() []scenario {
	maxPods := int32(3)
	bigRoot := st.NodeClass("default")
	size := resource.MustParse("200Gi")
	dev := "/dev/xvda"
	bigRoot.Spec.BlockDeviceMappings = []*apis.BlockDeviceMapping{{DeviceName: &dev, EBS: &apis.BlockDevice{VolumeSize: &size}}}
	raid0 := st.NodeClass("default")
	policy := apis.InstanceStorePolicyRAID0
	raid0.Spec.InstanceStorePolicy = &policy
	// m5d.large has 75 GB of instance store; m5.large has none and is cheaper.
	nvme := types(catalogType("m5.large"), catalogType("m5d.large"))
	scratch := pod(po{Name: "scratch", CPU: "100m", Requests: res{"ephemeral-storage": "50Gi"}})
	return []scenario{
		{
			name: "the GPU pod of the gpu-training example lands on a 1-GPU g-family type",
			in:   gpuTraining(),
			want: []check{claims(1), fromPool("ml-training-job", "gpu-training"), firstTypeIs("ml-training-job", "a 1-GPU g-family type", func(it *catalog.InstanceType) bool {
				return strings.HasPrefix(it.Family, "g") && it.GPU.Count == 1
			}), oracleFirst("ml-training-job", true)},
		},
		{
			name: "no pods, no plan",
			in:   input(),
			want: []check{claims(0), price(0), unschedulableCount(0), custom(func(t *testing.T, p *plan) {
				if p.res.LowerBoundPricePerHour != 0 || len(p.res.ExistingNodes) != 0 {
					t.Errorf("result %+v", p.res)
				}
			})},
		},
		{
			name: "a claim's requests include its daemonsets",
			in: input(daemonSets(st.DaemonSet(st.DaemonSetOptions{Name: "agent", CPU: "100m", Memory: "100Mi"})),
				pods(pod(po{Name: "web", CPU: "500m", Memory: "256Mi"}))),
			want: []check{claimOf("web", func(t *testing.T, nc scheduling.NodeClaim) {
				quantityIs(t, nc.Requests, corev1.ResourceCPU, "600m")
				quantityIs(t, nc.Requests, corev1.ResourceMemory, "356Mi")
			})},
		},
		{
			name: "a claim's labels come from the template and single-valued requirements",
			in: input(pools(poolWith(st.NodePoolOptions{Requirements: reqs(req(ctKey, opIn, onDemand)), Labels: labels("team", "a")})),
				pods(pod(po{Name: "web", CPU: "100m", NodeSelector: labels(zoneKey, zoneB)}))),
			want: []check{claimOf("web", func(t *testing.T, nc scheduling.NodeClaim) {
				if nc.Labels["team"] != "a" || nc.Labels[zoneKey] != zoneB || nc.Labels[ctKey] != onDemand || nc.Labels[poolKey] != "default" {
					t.Errorf("labels %v", nc.Labels)
				}
			})},
		},
		{
			name: "a claim's requirements carry the narrowed zone and capacity type",
			in:   input(spotAndOnDemand("default"), pods(pod(po{Name: "web", CPU: "100m", NodeSelector: labels(zoneKey, zoneC)}))),
			want: []check{claimOf("web", func(t *testing.T, nc scheduling.NodeClaim) {
				found := false
				for _, r := range nc.Requirements {
					if r.Key == zoneKey {
						found = true
						if r.Operator != corev1.NodeSelectorOpIn || fmt.Sprint(r.Values) != fmt.Sprint([]string{zoneC}) {
							t.Errorf("zone requirement %+v", r)
						}
					}
				}
				if !found {
					t.Errorf("requirements %+v lack %s", nc.Requirements, zoneKey)
				}
			})},
		},
		{
			name: "a claim names its node class",
			in:   input(pods(pod(po{Name: "web", CPU: "100m"}))),
			want: []check{claimOf("web", func(t *testing.T, nc scheduling.NodeClaim) {
				if nc.NodeClass != "default" {
					t.Errorf("node class %q", nc.NodeClass)
				}
			})},
		},
		{
			name: "kubelet maxPods of the EC2NodeClass caps pods per node",
			in:   input(withKubelet(&apis.KubeletConfiguration{MaxPods: &maxPods}), podList(podsN(4, po{Name: "tiny", CPU: "10m"}))),
			want: []check{claims(2), allScheduled()},
		},
		{
			name: "kubelet systemReserved of the EC2NodeClass shrinks allocatable",
			in:   input(withKubelet(&apis.KubeletConfiguration{SystemReserved: map[string]string{"cpu": "500m"}}), pods(pod(po{Name: "web", CPU: "500m"}))),
			want: []check{claims(1), firstType("web", "fake-it-1")},
		},
		{
			name: "ephemeral storage beyond the root volume is unschedulable",
			in:   input(pods(pod(po{Name: "scratch", CPU: "100m", Requests: res{"ephemeral-storage": "100Gi"}}))),
			want: []check{claims(0), unschedulable("scratch", "ephemeral-storage")},
		},
		{
			name: "ephemeral storage fits a bigger root volume of the EC2NodeClass",
			in:   input(nodeClasses(bigRoot), pods(pod(po{Name: "scratch", CPU: "100m", Requests: res{"ephemeral-storage": "100Gi"}}))),
			want: []check{claims(1), allScheduled()},
		},
		{
			mirrors: []string{"aws/instancetype:984"},
			name:    "K: instanceStorePolicy RAID0 counts the instance store: storage beyond the root volume lands on an NVMe type",
			in:      input(nvme, nodeClasses(raid0), pods(scratch)),
			want:    []check{claims(1), firstType("scratch", "m5d.large")},
		},
		{
			mirrors: []string{"aws/instancetype:974"},
			name:    "K: without instanceStorePolicy the instance store is not ephemeral storage",
			in:      input(nvme, pods(scratch)),
			want:    []check{claims(0), unschedulable("scratch", "ephemeral-storage")},
		},
	}
}
