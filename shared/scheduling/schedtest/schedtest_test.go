package schedtest

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodewright/nodewright/shared/apis"
)

func TestSyntheticTypes(t *testing.T) {
	types := SyntheticTypes(400)
	if len(types) != 400 {
		t.Fatalf("got %d types", len(types))
	}
	seen := map[string]bool{}
	for i, it := range types {
		n := int64(i + 1)
		if seen[it.Name] {
			t.Fatalf("duplicate name %s", it.Name)
		}
		seen[it.Name] = true
		capacity := it.Capacity()
		if got := capacity.Pods().Value(); got != 10*n {
			t.Errorf("%s: pods %d, want %d", it.Name, got, 10*n)
		}
		if got := capacity.Cpu().MilliValue(); got != 1000*n {
			t.Errorf("%s: cpu %dm, want %d", it.Name, got, 1000*n)
		}
		if it.MemoryMiB != 2048*n {
			t.Errorf("%s: memory %d MiB, want %d", it.Name, it.MemoryMiB, 2048*n)
		}
		want := 0.025*float64(n) + 0.001*float64(2*n)
		if d := it.OnDemandPrice - want; d > 1e-9 || d < -1e-9 {
			t.Errorf("%s: price %v, want %v", it.Name, it.OnDemandPrice, want)
		}
		if it.Arch != "amd64" || it.OS != "linux" || it.Exotic() {
			t.Errorf("%s: arch %s os %s exotic %v", it.Name, it.Arch, it.OS, it.Exotic())
		}
		alloc := it.Allocatable(nil)
		if alloc.Cpu().Cmp(*capacity.Cpu()) >= 0 || alloc.Memory().Cmp(*capacity.Memory()) >= 0 {
			t.Errorf("%s: allocatable %v not below capacity %v", it.Name, alloc, capacity)
		}
	}
	if types[0].Name != "fake-it-0" || types[399].Name != "fake-it-399" {
		t.Errorf("names %s .. %s", types[0].Name, types[399].Name)
	}
	l := types[3].Labels()
	for k, v := range map[string]string{apis.LabelInstanceCPU: "4", apis.LabelInstanceFamily: "fake", apis.LabelInstanceSize: "4x", apis.LabelInstanceCategory: "c", apis.LabelArch: "amd64"} {
		if l[k] != v {
			t.Errorf("label %s = %q, want %q", k, l[k], v)
		}
	}
}

func TestTypeOptions(t *testing.T) {
	it := Type(TypeOptions{Name: "five", VCPU: 2, MemoryMiB: 4096, Pods: 5, Arch: "arm64", GPUs: 1, EFA: 2, Neuron: 1})
	c := it.Capacity()
	if c.Pods().Value() != 5 {
		t.Errorf("pods %v", c.Pods())
	}
	for name, want := range map[corev1.ResourceName]int64{apis.ResourceNVIDIAGPU: 1, apis.ResourceEFA: 2, apis.ResourceAWSNeuron: 1} {
		q := c[name]
		if q.Value() != want {
			t.Errorf("%s = %v, want %d", name, q.String(), want)
		}
	}
	if !it.Exotic() || it.Arch != "arm64" {
		t.Errorf("exotic %v arch %s", it.Exotic(), it.Arch)
	}
	if Type(TypeOptions{Price: -1}).OnDemandPrice != 0 {
		t.Error("negative price should give no on-demand price")
	}
}

func TestSyntheticSpot(t *testing.T) {
	types := SyntheticTypes(3)
	sp := SyntheticSpot(types)
	prices := map[float64]bool{}
	for _, z := range Zones() {
		p, ok := sp.SpotPrice(types[2].Name, z)
		if !ok {
			t.Fatalf("no spot price in %s", z)
		}
		ratio := p / types[2].OnDemandPrice
		if ratio < 0.679 || ratio > 0.721 {
			t.Errorf("%s: spot/on-demand %v outside 0.68..0.72", z, ratio)
		}
		prices[p] = true
	}
	if len(prices) < 2 {
		t.Errorf("spot prices do not vary by zone: %v", prices)
	}
	if _, ok := sp.SpotPrice("m5.large", "us-east-1a"); ok {
		t.Error("price for a type outside the synthetic catalog")
	}
	dear := sp.WithFactor(types[0].Name, 1.5)
	if p, _ := dear.SpotPrice(types[0].Name, "us-east-1a"); p <= types[0].OnDemandPrice {
		t.Errorf("WithFactor 1.5 gave %v, on-demand %v", p, types[0].OnDemandPrice)
	}
	if p, _ := sp.SpotPrice(types[0].Name, "us-east-1a"); p >= types[0].OnDemandPrice {
		t.Error("WithFactor changed the original pricer")
	}
}

func TestDiversePods(t *testing.T) {
	pods := DiversePods(1003, 42)
	if len(pods) != 1003 {
		t.Fatalf("got %d pods", len(pods))
	}
	counts := map[string]int{}
	cpus, mems := map[string]bool{}, map[string]bool{}
	names := map[string]bool{}
	for _, p := range pods {
		names[p.Name] = true
		counts[kindOf(t, p)]++
		req := p.Spec.Containers[0].Resources.Requests
		cpus[req.Cpu().String()] = true
		mems[req.Memory().String()] = true
	}
	want := map[string]int{"plain": 203, "zone-spread": 200, "host-spread": 200, "zone-affinity": 200, "host-anti": 200}
	if !reflect.DeepEqual(counts, want) {
		t.Errorf("kinds %v, want %v", counts, want)
	}
	if len(names) != len(pods) {
		t.Errorf("pod names not unique")
	}
	if len(cpus) != 5 || len(mems) != 6 {
		t.Errorf("cpu values %v, memory values %v", cpus, mems)
	}
	again := DiversePods(1003, 42)
	if !reflect.DeepEqual(pods, again) {
		t.Error("same seed gave different pods")
	}
	other := DiversePods(1003, 7)
	if reflect.DeepEqual(pods, other) {
		t.Error("different seeds gave the same pods")
	}
}

func kindOf(t *testing.T, p *corev1.Pod) string {
	t.Helper()
	switch {
	case len(p.Spec.TopologySpreadConstraints) == 1:
		c := p.Spec.TopologySpreadConstraints[0]
		if c.MaxSkew != 1 || c.WhenUnsatisfiable != corev1.DoNotSchedule || c.LabelSelector.MatchLabels[LabelDiverse] != p.Labels[LabelDiverse] {
			t.Fatalf("%s: spread %+v does not select its own label", p.Name, c)
		}
		if c.TopologyKey == corev1.LabelTopologyZone {
			return "zone-spread"
		}
		return "host-spread"
	case p.Spec.Affinity != nil && p.Spec.Affinity.PodAffinity != nil:
		term := p.Spec.Affinity.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0]
		if term.TopologyKey != corev1.LabelTopologyZone || term.LabelSelector.MatchLabels[LabelDiverseAffinity] != p.Labels[LabelDiverseAffinity] {
			t.Fatalf("%s: affinity %+v is not zonal self-affinity", p.Name, term)
		}
		return "zone-affinity"
	case p.Spec.Affinity != nil && p.Spec.Affinity.PodAntiAffinity != nil:
		term := p.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[0]
		if term.TopologyKey != corev1.LabelHostname || term.LabelSelector.MatchLabels[LabelDiverseAnti] != ValueDiverseAnti {
			t.Fatalf("%s: anti-affinity %+v", p.Name, term)
		}
		return "host-anti"
	default:
		return "plain"
	}
}

func TestPodBuilder(t *testing.T) {
	p := Pod(PodOptions{
		Name: "web", CPU: "500m", Memory: "1Gi", Requests: Resources{"nvidia.com/gpu": "1"},
		InitContainers: []Container{{CPU: "2"}}, Sidecars: []Container{{CPU: "100m", Memory: "64Mi"}},
		Overhead: Resources{"cpu": "50m"}, HostPorts: []int32{8080},
		NodeRequirements: []corev1.NodeSelectorRequirement{Req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "arm64")},
		NodeTerms:        [][]corev1.NodeSelectorRequirement{{Req(corev1.LabelArchStable, corev1.NodeSelectorOpIn, "amd64")}},
		Owner:            "ReplicaSet/web-1",
	})
	if p.Namespace != "default" || p.Status.Phase != corev1.PodPending {
		t.Errorf("namespace %q phase %q", p.Namespace, p.Status.Phase)
	}
	if got := p.Spec.Containers[0].Resources.Requests[apis.ResourceNVIDIAGPU]; got.Cmp(resource.MustParse("1")) != 0 {
		t.Errorf("gpu request %v", got.String())
	}
	if len(p.Spec.InitContainers) != 2 || p.Spec.InitContainers[1].RestartPolicy == nil {
		t.Errorf("init containers %+v", p.Spec.InitContainers)
	}
	if terms := p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms; len(terms) != 2 {
		t.Errorf("terms %+v", terms)
	}
	if p.Spec.Containers[0].Ports[0].HostPort != 8080 || p.OwnerReferences[0].Kind != "ReplicaSet" {
		t.Errorf("ports %+v owners %+v", p.Spec.Containers[0].Ports, p.OwnerReferences)
	}
	if Pod(PodOptions{Name: "plain"}).Spec.Affinity != nil {
		t.Error("plain pod has an affinity")
	}
	ps := Pods(3, PodOptions{Name: "x", Labels: map[string]string{"a": "b"}})
	ps[0].Labels["a"] = "changed"
	if ps[1].Name != "x-1" || ps[1].Labels["a"] != "b" {
		t.Errorf("Pods shares labels or misnames: %s %v", ps[1].Name, ps[1].Labels)
	}
}

func TestNodeBuilder(t *testing.T) {
	types := SyntheticTypes(4)
	pod := Pod(PodOptions{Name: "bound", CPU: "1"})
	n := Node(NodeOptions{Name: "n1", InstanceType: types[3], Zone: "us-east-1b", CapacityType: "spot", NodePool: "default", Pods: []*corev1.Pod{pod}, InFlight: true})
	if !n.InFlight || pod.Spec.NodeName != "n1" || pod.Status.Phase != corev1.PodRunning {
		t.Errorf("inflight %v nodeName %q phase %q", n.InFlight, pod.Spec.NodeName, pod.Status.Phase)
	}
	l := n.Node.Labels
	if l[corev1.LabelHostname] != "n1" || l[corev1.LabelTopologyZone] != "us-east-1b" || l[apis.LabelCapacityType] != "spot" ||
		l[apis.LabelNodePool] != "default" || l[corev1.LabelInstanceTypeStable] != types[3].Name {
		t.Errorf("labels %v", l)
	}
	if n.Node.Status.Allocatable.Cpu().MilliValue() >= 4000 || n.Node.Status.Allocatable.Pods().Value() != 40 {
		t.Errorf("allocatable %v", n.Node.Status.Allocatable)
	}
	m := Node(NodeOptions{Name: "n2", Allocatable: Resources{"cpu": "2", "memory": "4Gi", "pods": "10"}})
	if m.Node.Status.Allocatable.Cpu().MilliValue() != 2000 {
		t.Errorf("allocatable %v", m.Node.Status.Allocatable)
	}
}

func TestNodePoolAndDaemonSetBuilders(t *testing.T) {
	np := NodePool(NodePoolOptions{Weight: 5, Limits: Resources{"cpu": "10"},
		Requirements: []apis.NodeSelectorRequirementWithMinValues{PoolReqMin(3, apis.LabelInstanceFamily, corev1.NodeSelectorOpExists)}})
	if np.Name != "default" || *np.Spec.Weight != 5 || np.Spec.Template.Spec.NodeClassRef.Name != "default" {
		t.Errorf("nodepool %+v", np)
	}
	if *np.Spec.Template.Spec.Requirements[0].MinValues != 3 {
		t.Error("minValues lost")
	}
	if q := np.Spec.Limits[corev1.ResourceCPU]; q.Value() != 10 {
		t.Errorf("limits %v", np.Spec.Limits)
	}
	if NodePool(NodePoolOptions{}).Spec.Weight != nil {
		t.Error("zero weight should be unset")
	}
	ds := DaemonSet(DaemonSetOptions{Name: "agent", CPU: "100m", NodeSelector: map[string]string{"a": "b"}})
	if ds.Namespace != "kube-system" || ds.Spec.Template.Spec.Containers[0].Resources.Requests.Cpu().MilliValue() != 100 ||
		ds.Spec.Template.Spec.NodeSelector["a"] != "b" {
		t.Errorf("daemonset %+v", ds.Spec.Template.Spec)
	}
	if nc := NodeClass("gpu"); nc.Name != "gpu" || len(nc.Spec.SubnetSelectorTerms) != 1 {
		t.Errorf("node class %+v", nc)
	}
}
