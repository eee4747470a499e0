package catalog

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodewright/nodewright/shared/apis"
)

func ptr[T any](v T) *T { return &v }

func TestComputeWithNodeSettings(t *testing.T) {
	m5 := mustGet(t, "m5.large") // 2 vCPU, 8192Mi, 3 ENIs x 10 IPv4 -> 29 pods
	// Capacity memory: 8192 - ceil(8192*0.075) = 7577Mi.
	// karpenter names the Its of Karpenter's AWS provider instancetype
	// suite_test.go (v1.14.1) a case mirrors, "aws/instancetype:<line>".
	tests := []struct {
		name      string
		settings  NodeSettings
		want      Amounts // allocatable; zero fields are not checked
		karpenter []string
	}{
		{"defaults", NodeSettings{}, Amounts{MilliCPU: 1930, MemoryBytes: (7577 - 11*29 - 255 - 100) * mi, Pods: 29, EphemeralBytes: 17 * gi},
			[]string{"aws/instancetype:1111", "aws/instancetype:1165", "aws/instancetype:1323", "aws/instancetype:1488", "aws/instancetype:1617", "aws/instancetype:997", "aws/instancetype:2543"}},
		{"maxPods", NodeSettings{Kubelet: &apis.KubeletConfiguration{MaxPods: ptr(int32(110))}},
			Amounts{Pods: 110, MemoryBytes: (7577 - 11*110 - 255 - 100) * mi}, []string{"aws/instancetype:1664", "aws/instancetype:1732", "aws/instancetype:1739", "aws/instancetype:1809"}},
		{"podsPerCore caps the ENI limit", NodeSettings{Kubelet: &apis.KubeletConfiguration{PodsPerCore: ptr(int32(4))}}, Amounts{Pods: 8}, []string{"aws/instancetype:1854"}},
		{"podsPerCore and maxPods: the smaller", NodeSettings{Kubelet: &apis.KubeletConfiguration{PodsPerCore: ptr(int32(4)), MaxPods: ptr(int32(6))}}, Amounts{Pods: 6}, []string{"aws/instancetype:1881"}},
		{"podsPerCore 0 is the default density", NodeSettings{Kubelet: &apis.KubeletConfiguration{PodsPerCore: ptr(int32(0))}}, Amounts{Pods: 29}, []string{"aws/instancetype:1938"}},
		{"podsPerCore ignored by Bottlerocket", NodeSettings{AMIFamily: "Bottlerocket", Kubelet: &apis.KubeletConfiguration{PodsPerCore: ptr(int32(4))}}, Amounts{Pods: 29}, []string{"aws/instancetype:1909"}},
		{"windows uses 110 pods", NodeSettings{AMIFamily: "Windows2022"}, Amounts{Pods: 110}, []string{"aws/instancetype:1022"}},
		{"reserved ENIs", NodeSettings{ReservedENIs: 1}, Amounts{Pods: 20}, []string{"aws/instancetype:1816"}},
		{"kubeReserved overrides", NodeSettings{Kubelet: &apis.KubeletConfiguration{KubeReserved: map[string]string{"cpu": "200m", "memory": "1Gi", "ephemeral-storage": "3Gi"}}},
			Amounts{MilliCPU: 1800, MemoryBytes: (7577 - 1024 - 100) * mi, EphemeralBytes: 15 * gi}, []string{"aws/instancetype:1188"}},
		{"systemReserved adds", NodeSettings{Kubelet: &apis.KubeletConfiguration{SystemReserved: map[string]string{"cpu": "100m", "memory": "100Mi"}}},
			Amounts{MilliCPU: 1830, MemoryBytes: (7577 - 11*29 - 255 - 100 - 100) * mi}, []string{"aws/instancetype:1134"}},
		{"evictionHard quantity", NodeSettings{Kubelet: &apis.KubeletConfiguration{EvictionHard: map[string]string{"memory.available": "500Mi"}}},
			Amounts{MemoryBytes: (7577 - 11*29 - 255 - 500) * mi}, []string{"aws/instancetype:1230"}},
		{"evictionHard percentage", NodeSettings{Kubelet: &apis.KubeletConfiguration{EvictionHard: map[string]string{"memory.available": "10%", "nodefs.available": "20%"}}},
			Amounts{MemoryBytes: 7577*mi - (11*29+255)*mi - (7577*mi+9)/10, EphemeralBytes: 15 * gi}, []string{"aws/instancetype:1261"}},
		{"evictionHard 100% disables hard eviction", NodeSettings{Kubelet: &apis.KubeletConfiguration{EvictionHard: map[string]string{"memory.available": "100%"}}},
			Amounts{MemoryBytes: (7577 - 11*29 - 255) * mi}, []string{"aws/instancetype:1292"}},
		{"evictionSoft 100% is ignored", NodeSettings{Kubelet: &apis.KubeletConfiguration{EvictionSoft: map[string]string{"memory.available": "100%"}}},
			Amounts{MemoryBytes: (7577 - 11*29 - 255 - 100) * mi}, []string{"aws/instancetype:1421"}},
		// Nodewright reserves the larger of the hard and soft thresholds,
		// where Karpenter reserves the hard one only (docs/karpenter-parity.md).
		{"evictionSoft alone is reserved", NodeSettings{Kubelet: &apis.KubeletConfiguration{EvictionSoft: map[string]string{"memory.available": "500Mi"}}},
			Amounts{MemoryBytes: (7577 - 11*29 - 255 - 500) * mi}, []string{"aws/instancetype:1356"}},
		{"evictionSoft larger than hard wins", NodeSettings{Kubelet: &apis.KubeletConfiguration{
			EvictionHard: map[string]string{"memory.available": "100Mi"}, EvictionSoft: map[string]string{"memory.available": "500Mi"}}},
			Amounts{MemoryBytes: (7577 - 11*29 - 255 - 500) * mi}, []string{"aws/instancetype:1387", "aws/instancetype:1511", "aws/instancetype:1546", "aws/instancetype:1581"}},
		{"root volume", NodeSettings{RootVolumeBytes: 100 * gi}, Amounts{EphemeralBytes: 100*gi - gi - 10*gi}, nil},
		{"VM overhead", NodeSettings{VMMemoryOverheadPercent: 0.1}, Amounts{MemoryBytes: (8192 - 820 - 11*29 - 255 - 100) * mi}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, got := m5.Compute(tt.settings)
			check := func(field string, got, want int64) {
				if want != 0 && got != want {
					t.Errorf("%s = %d, want %d", field, got, want)
				}
			}
			check("cpu", got.MilliCPU, tt.want.MilliCPU)
			check("memory", got.MemoryBytes, tt.want.MemoryBytes)
			check("ephemeral", got.EphemeralBytes, tt.want.EphemeralBytes)
			check("pods", got.Pods, tt.want.Pods)
		})
	}
}

// TestEphemeralStorageInstanceStore: under instanceStorePolicy RAID0 a type's
// instance store (AWS's TotalSizeInGB, decimal gigabytes) is the node's
// ephemeral storage, whatever the root volume; types without one keep the root
// volume, as Karpenter's ephemeralStorage does.
func TestEphemeralStorageInstanceStore(t *testing.T) {
	const gb = 1000 * 1000 * 1000
	tests := []struct {
		name     string
		typ      string
		settings NodeSettings
		want     int64 // capacity
	}{
		{"RAID0 on an NVMe type", "m5d.large", NodeSettings{InstanceStoreRAID0: true}, 75 * gb},
		{"RAID0 beats a bigger root volume", "m5d.large", NodeSettings{InstanceStoreRAID0: true, RootVolumeBytes: 200 * gi}, 75 * gb},
		{"RAID0 on a big store", "i3.large", NodeSettings{InstanceStoreRAID0: true}, 475 * gb},
		{"no policy: the root volume", "m5d.large", NodeSettings{}, 20 * gi},
		{"no policy: a set root volume", "m5d.large", NodeSettings{RootVolumeBytes: 100 * gi}, 100 * gi},
		{"RAID0 on a type without instance store: the root volume", "m5.large", NodeSettings{InstanceStoreRAID0: true, RootVolumeBytes: 60 * gi}, 60 * gi},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			capacity, alloc := mustGet(t, tt.typ).Compute(tt.settings)
			if capacity.EphemeralBytes != tt.want {
				t.Errorf("ephemeral capacity = %d, want %d", capacity.EphemeralBytes, tt.want)
			}
			if want := tt.want - gi - tt.want/10; alloc.EphemeralBytes != want {
				t.Errorf("ephemeral allocatable = %d, want %d", alloc.EphemeralBytes, want)
			}
		})
	}
}

func TestSettingsForNodeClass(t *testing.T) {
	nc := &apis.EC2NodeClass{Spec: apis.EC2NodeClassSpec{
		AMISelectorTerms: []apis.AMISelectorTerm{{Alias: "bottlerocket@latest"}},
		BlockDeviceMappings: []*apis.BlockDeviceMapping{
			{DeviceName: ptr("/dev/xvda"), EBS: &apis.BlockDevice{VolumeSize: ptr(resource.MustParse("4Gi"))}},
			{DeviceName: ptr("/dev/xvdb"), EBS: &apis.BlockDevice{VolumeSize: ptr(resource.MustParse("80Gi"))}},
		},
		Kubelet: &apis.KubeletConfiguration{MaxPods: ptr(int32(50))},
	}}
	s := SettingsFor(nc)
	if s.AMIFamily != "Bottlerocket" || s.RootVolumeBytes != 80*gi || s.Kubelet.MaxPods == nil {
		t.Fatalf("settings = %+v, want Bottlerocket with the 80Gi data volume", s)
	}
	nc.Spec.BlockDeviceMappings[0].RootVolume = true
	if s := SettingsFor(nc); s.RootVolumeBytes != 4*gi {
		t.Fatalf("rootVolume flag ignored: %d", s.RootVolumeBytes)
	}
	if s.InstanceStoreRAID0 {
		t.Fatalf("no instanceStorePolicy gives RAID0")
	}
	policy := apis.InstanceStorePolicyRAID0
	nc.Spec.InstanceStorePolicy = &policy
	if s := SettingsFor(nc); !s.InstanceStoreRAID0 {
		t.Fatalf("instanceStorePolicy RAID0 ignored: %+v", s)
	}
	if s := SettingsFor(nil); s.RootVolumeBytes != 0 || s.Kubelet != nil {
		t.Fatalf("nil node class gives %+v", s)
	}
}

func TestExtendedResources(t *testing.T) {
	tests := []struct {
		typ  string
		want Amounts
	}{
		{"p5.48xlarge", Amounts{NvidiaGPU: 8, EFA: 32}},
		{"g5.xlarge", Amounts{NvidiaGPU: 1}},
		{"g4ad.8xlarge", Amounts{AMDGPU: 2}},
		{"inf1.6xlarge", Amounts{Neuron: 4, NeuronCore: 16}},
		{"trn1.32xlarge", Amounts{Neuron: 16, NeuronCore: 32, EFA: 8}},
		{"g6f.large", Amounts{}}, // a fractional GPU is no nvidia.com/gpu
		{"m5.large", Amounts{}},
	}
	for _, tt := range tests {
		it := mustGet(t, tt.typ)
		c, a := it.Compute(NodeSettings{})
		for _, am := range []Amounts{c, a} {
			got := Amounts{NvidiaGPU: am.NvidiaGPU, AMDGPU: am.AMDGPU, Neuron: am.Neuron, NeuronCore: am.NeuronCore, EFA: am.EFA}
			if got != tt.want {
				t.Errorf("%s extended = %+v, want %+v", tt.typ, got, tt.want)
			}
		}
		rl := a.ResourceList()
		if q, ok := rl[apis.ResourceNVIDIAGPU]; ok != (tt.want.NvidiaGPU > 0) || (ok && q.Value() != tt.want.NvidiaGPU) {
			t.Errorf("%s resource list nvidia.com/gpu = %v (present %v)", tt.typ, q.String(), ok)
		}
	}
}

func TestResourceListOfDefaults(t *testing.T) {
	rl := mustGet(t, "m5.large").Allocatable(nil)
	for name, want := range map[string]string{"cpu": "1930m", "memory": "6903Mi", "pods": "29", "ephemeral-storage": "17Gi"} {
		got := rl[corev1ResourceName(name)]
		if got.Cmp(resource.MustParse(want)) != 0 {
			t.Errorf("allocatable %s = %s, want %s", name, got.String(), want)
		}
	}
	if len(rl) != 4 {
		t.Errorf("allocatable has %d resources, want 4: %v", len(rl), rl)
	}
	if c := mustGet(t, "m5.large").Capacity(); c.Cpu().MilliValue() != 2000 || c.Memory().Value() != 7577*mi {
		t.Errorf("capacity = %v", c)
	}
}

func mustGet(t *testing.T, name string) *InstanceType {
	t.Helper()
	it, ok := Default().Get(name)
	if !ok {
		t.Fatalf("%s not in catalog", name)
	}
	return it
}

// Reservations too large to count (validation refuses them; unvalidated
// input must still not wrap) leave nothing allocatable rather than a node of
// exabytes: MilliValue of "9223372036854776" is negative.
func TestAbsurdReservationsDoNotWrap(t *testing.T) {
	m5 := mustGet(t, "m5.large")
	for _, k := range []*apis.KubeletConfiguration{
		{KubeReserved: map[string]string{"cpu": "9223372036854776", "memory": "9223372036854776"}},
		{SystemReserved: map[string]string{"cpu": "9223372036854776"}, KubeReserved: map[string]string{"cpu": "9223372036854776"}},
		{EvictionHard: map[string]string{"memory.available": "9223372036854775807", "nodefs.available": "1e18"}},
	} {
		capacity, alloc := m5.Compute(NodeSettings{Kubelet: k})
		if alloc.MilliCPU > capacity.MilliCPU || alloc.MemoryBytes > capacity.MemoryBytes || alloc.EphemeralBytes > capacity.EphemeralBytes {
			t.Errorf("%+v: allocatable %+v exceeds capacity %+v", k, alloc, capacity)
		}
		if alloc.MilliCPU > 0 && (k.KubeReserved["cpu"] != "" || k.SystemReserved["cpu"] != "") {
			t.Errorf("%+v: %d millicores allocatable", k, alloc.MilliCPU)
		}
	}
}

// TestWindowsRootVolume: a Windows node's ephemeral storage is its
// /dev/sda1 root, 50Gi when the class names no volumes (Karpenter's
// default), and its pod limit is the kubelet's 110, not the ENI limit.
func TestWindowsRootVolume(t *testing.T) {
	nc := &apis.EC2NodeClass{Spec: apis.EC2NodeClassSpec{AMISelectorTerms: []apis.AMISelectorTerm{{Alias: "windows2022@latest"}}}}
	it, _ := Default().Get("m5.large")
	c, _ := it.Compute(SettingsFor(nc))
	if c.EphemeralBytes != 50*gi || c.Pods != DefaultMaxPods {
		t.Errorf("default Windows node: ephemeral %d, pods %d; want 50Gi and %d", c.EphemeralBytes, c.Pods, DefaultMaxPods)
	}
	nc.Spec.BlockDeviceMappings = []*apis.BlockDeviceMapping{{DeviceName: ptr("/dev/sda1"), EBS: &apis.BlockDevice{VolumeSize: ptr(resource.MustParse("80Gi"))}}}
	if s := SettingsFor(nc); s.RootVolumeBytes != 80*gi {
		t.Errorf("/dev/sda1 of 80Gi gives a root of %d", s.RootVolumeBytes)
	}
}
