package catalog

import (
	"math"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/quantity"
)

// Defaults of the node overhead model, as Karpenter applies them for AL2023.
const (
	DefaultVMMemoryOverheadPercent = 0.075
	DefaultRootVolumeGiB           = 20
	// WindowsRootVolumeGiB is Windows nodes' default root volume.
	WindowsRootVolumeGiB = 50
	// DefaultMaxPods is the pod limit when ENI limits are unknown or the AMI
	// family does not use them.
	DefaultMaxPods = 110
	// armReservedMiB is memory that Graviton kernels reserve (CMA) and the OS
	// never sees.
	armReservedMiB = 64
	mi             = 1 << 20
	gi             = 1 << 30
	gb             = 1000 * 1000 * 1000
)

// Amounts is a node's resources as plain integers.
type Amounts struct {
	MilliCPU       int64
	MemoryBytes    int64
	EphemeralBytes int64
	Pods           int64
	NvidiaGPU      int64
	AMDGPU         int64
	Neuron         int64 // aws.amazon.com/neuron devices
	NeuronCore     int64 // aws.amazon.com/neuroncore
	EFA            int64
}

// ResourceList converts the amounts to Kubernetes quantities, leaving out
// extended resources the type lacks.
func (a Amounts) ResourceList() corev1.ResourceList {
	rl := corev1.ResourceList{
		corev1.ResourceCPU:              *resource.NewMilliQuantity(a.MilliCPU, resource.DecimalSI),
		corev1.ResourceMemory:           *resource.NewQuantity(a.MemoryBytes, resource.BinarySI),
		corev1.ResourceEphemeralStorage: *resource.NewQuantity(a.EphemeralBytes, resource.BinarySI),
		corev1.ResourcePods:             *resource.NewQuantity(a.Pods, resource.DecimalSI),
	}
	for name, v := range map[corev1.ResourceName]int64{
		apis.ResourceNVIDIAGPU: a.NvidiaGPU, apis.ResourceAMDGPU: a.AMDGPU,
		apis.ResourceAWSNeuron: a.Neuron, apis.ResourceAWSNeuronCore: a.NeuronCore, apis.ResourceEFA: a.EFA,
	} {
		if v > 0 {
			rl[name] = *resource.NewQuantity(v, resource.DecimalSI)
		}
	}
	return rl
}

// NodeSettings are the parts of an EC2NodeClass (and of Nodewright's own
// settings) that change what a node of a type offers to pods.
type NodeSettings struct {
	Kubelet *apis.KubeletConfiguration
	// RootVolumeBytes is the kubelet's root volume (ephemeral-storage
	// capacity); 0 means the AMI family's default of 20Gi.
	RootVolumeBytes int64
	// AMIFamily (AL2023, AL2, Bottlerocket, Custom, Windows2019, Windows2022,
	// Windows2025);
	// "" means AL2023.
	AMIFamily string
	// VMMemoryOverheadPercent is the share of memory the hypervisor and
	// kernel take before the kubelet counts it; 0 means 7.5%.
	VMMemoryOverheadPercent float64
	// ReservedENIs are network interfaces kept out of the pod limit.
	ReservedENIs int
	// InstanceStoreRAID0 is instanceStorePolicy RAID0: the kubelet and
	// containerd live on a RAID-0 of the type's instance store, which is then
	// the node's ephemeral storage on types that have one.
	InstanceStoreRAID0 bool
	// Network is the class's networking fields (network.go).
	Network NetworkSettings
}

// SettingsFor reads the settings of an EC2NodeClass (nil gives defaults).
func SettingsFor(nc *apis.EC2NodeClass) NodeSettings {
	if nc == nil {
		return NodeSettings{}
	}
	s := NodeSettings{Kubelet: nc.Spec.Kubelet, AMIFamily: nc.AMIFamily(),
		InstanceStoreRAID0: nc.Spec.InstanceStorePolicy != nil && *nc.Spec.InstanceStorePolicy == apis.InstanceStorePolicyRAID0}
	s.Network = networkSettingsFor(nc)
	if bdm := rootVolume(nc.Spec.BlockDeviceMappings, s.AMIFamily); bdm != nil && bdm.EBS != nil && bdm.EBS.VolumeSize != nil {
		s.RootVolumeBytes = bdm.EBS.VolumeSize.Value()
	}
	return s
}

// rootVolume is the mapping marked rootVolume, else the AMI family's root
// device (/dev/xvda for AL2/AL2023, /dev/xvdb for Bottlerocket's data volume,
// /dev/sda1 for Windows).
func rootVolume(bdms []*apis.BlockDeviceMapping, family string) *apis.BlockDeviceMapping {
	for _, b := range bdms {
		if b != nil && b.RootVolume {
			return b
		}
	}
	dev := "/dev/xvda"
	switch {
	case strings.EqualFold(family, apis.AMIFamilyBottlerocket):
		dev = "/dev/xvdb"
	case apis.IsWindowsFamily(family):
		dev = "/dev/sda1"
	}
	for _, b := range bdms {
		if b != nil && b.DeviceName != nil && *b.DeviceName == dev {
			return b
		}
	}
	return nil
}

// Capacity is what a node of the type reports as capacity under default
// settings.
func (it *InstanceType) Capacity() corev1.ResourceList {
	c, _ := it.Compute(NodeSettings{})
	return c.ResourceList()
}

// Allocatable is what pods can request on a node of the type under the given
// kubelet settings (nil: defaults).
func (it *InstanceType) Allocatable(kubelet *apis.KubeletConfiguration) corev1.ResourceList {
	_, a := it.Compute(NodeSettings{Kubelet: kubelet})
	return a.ResourceList()
}

// Compute returns the capacity and allocatable of a node of the type: capacity
// memory is the type's memory less what Graviton kernels reserve and the VM
// overhead; allocatable subtracts kube-reserved (a CPU ladder, 11Mi per pod +
// 255Mi, 1Gi disk), system-reserved and the hard or soft eviction threshold,
// whichever is larger, with EC2NodeClass kubelet overrides for each.
func (it *InstanceType) Compute(s NodeSettings) (capacity, allocatable Amounts) {
	capacity = Amounts{
		MilliCPU:       int64(it.VCPU) * 1000,
		MemoryBytes:    it.memoryCapacityMiB(s) * mi,
		EphemeralBytes: s.RootVolumeBytes,
		Pods:           it.maxPods(s),
		NvidiaGPU:      it.gpus("nvidia"),
		AMDGPU:         it.gpus("amd"),
		Neuron:         it.neuronDevices(),
		NeuronCore:     it.neuronDevices() * neuronCoresPerDevice[it.Accelerator.Name],
		EFA:            it.efa(s),
	}
	if capacity.EphemeralBytes == 0 {
		capacity.EphemeralBytes = DefaultRootVolumeGiB * gi
		if apis.IsWindowsFamily(s.AMIFamily) {
			capacity.EphemeralBytes = WindowsRootVolumeGiB * gi
		}
	}
	if s.InstanceStoreRAID0 && it.LocalNVMeGiB > 0 {
		// The catalog's figure is AWS's TotalSizeInGB (decimal gigabytes),
		// counted as Karpenter counts it.
		capacity.EphemeralBytes = int64(it.LocalNVMeGiB) * gb
	}
	allocatable = capacity
	k := s.Kubelet
	if k == nil {
		k = &apis.KubeletConfiguration{}
	}
	kubeCPU, kubeMem, kubeDisk := kubeReserved(it.VCPU, capacity.Pods)
	allocatable.MilliCPU -= reserved(k.KubeReserved, "cpu", kubeCPU, true) + reserved(k.SystemReserved, "cpu", 0, true)
	allocatable.MemoryBytes -= reserved(k.KubeReserved, "memory", kubeMem, false) + reserved(k.SystemReserved, "memory", 0, false) +
		evictionThreshold(k, "memory.available", capacity.MemoryBytes, 100*mi)
	allocatable.EphemeralBytes -= reserved(k.KubeReserved, "ephemeral-storage", kubeDisk, false) + reserved(k.SystemReserved, "ephemeral-storage", 0, false) +
		evictionThreshold(k, "nodefs.available", capacity.EphemeralBytes, capacity.EphemeralBytes/10)
	allocatable.MilliCPU = max(allocatable.MilliCPU, 0)
	allocatable.MemoryBytes = max(allocatable.MemoryBytes, 0)
	allocatable.EphemeralBytes = max(allocatable.EphemeralBytes, 0)
	return capacity, allocatable
}

func (it *InstanceType) memoryCapacityMiB(s NodeSettings) int64 {
	m := it.MemoryMiB
	if it.Arch == "arm64" {
		m -= armReservedMiB
	}
	pct := s.VMMemoryOverheadPercent
	if pct == 0 {
		pct = DefaultVMMemoryOverheadPercent
	}
	return m - int64(math.Ceil(float64(m)*pct))
}

// maxPods is kubelet maxPods when set, else the VPC CNI's ENI limit
// (ENIs x (IPv4 per ENI - 1) + 2) for AMI families that use it, capped by
// podsPerCore x vCPUs where the family honours podsPerCore.
func (it *InstanceType) maxPods(s NodeSettings) int64 {
	family := strings.ToLower(s.AMIFamily)
	var n int64 = DefaultMaxPods
	switch {
	case s.Kubelet != nil && s.Kubelet.MaxPods != nil:
		n = int64(*s.Kubelet.MaxPods)
	case strings.HasPrefix(family, "windows"):
		n = DefaultMaxPods
	case it.ENIs > 0 && it.IPv4PerENI > 0:
		enis := max(it.ENIs-s.ReservedENIs-s.Network.efaOnly(true), 0) // an EFA-only interface takes an ENI and no IP
		n = int64(enis*(it.IPv4PerENI-1) + 2)
	}
	if s.Kubelet != nil && s.Kubelet.PodsPerCore != nil && *s.Kubelet.PodsPerCore > 0 && family != "bottlerocket" {
		n = min(n, int64(*s.Kubelet.PodsPerCore)*int64(it.VCPU))
	}
	return max(n, 0)
}

func (it *InstanceType) gpus(manufacturer string) int64 {
	if it.GPU.Manufacturer != manufacturer {
		return 0
	}
	return int64(it.GPU.Count)
}

// neuronCoresPerDevice is the NeuronCores of one device of each generation.
var neuronCoresPerDevice = map[string]int64{"inferentia": 4, "inferentia2": 2, "trainium": 2, "trainium2": 8}

func (it *InstanceType) neuronDevices() int64 {
	if _, ok := neuronCoresPerDevice[it.Accelerator.Name]; !ok {
		return 0
	}
	return int64(it.Accelerator.Count)
}

// kubeReserved is the default kube-reserved: CPU by the ladder 6% of the first
// core, 1% of the second, 0.5% of the third and fourth, 0.25% of the rest
// (each step rounded down to a millicore); memory 11Mi per pod + 255Mi; 1Gi of
// disk.
func kubeReserved(vcpu int, pods int64) (milliCPU, memBytes, diskBytes int64) {
	cpu := int64(vcpu) * 1000
	for _, step := range []struct {
		from, to int64
		share    float64
	}{{0, 1000, 0.06}, {1000, 2000, 0.01}, {2000, 4000, 0.005}, {4000, math.MaxInt64, 0.0025}} {
		if cpu <= step.from {
			break
		}
		milliCPU += int64(float64(min(cpu, step.to)-step.from) * step.share)
	}
	return milliCPU, (11*pods + 255) * mi, gi
}

// reserved is the user's reservation for a resource when given (an invalid
// quantity counts as the default; validation reports it), else def.
func reserved(m map[string]string, key string, def int64, milli bool) int64 {
	v, ok := m[key]
	if !ok {
		return def
	}
	q, err := resource.ParseQuantity(v)
	if err != nil {
		return def
	}
	// Out-of-range amounts (validation refuses them) saturate rather than
	// wrap, so they can only shrink a node.
	if milli {
		return quantity.Clamped(corev1.ResourceCPU, q)
	}
	return quantity.Clamped(corev1.ResourceName(key), q)
}

// evictionThreshold is the larger of the hard and soft thresholds for signal,
// each an absolute quantity or a percentage of capacity; def when neither is set.
// A hard threshold of 100% disables hard eviction for the signal (nothing is
// reserved for it); a soft one of 100% is ignored.
func evictionThreshold(k *apis.KubeletConfiguration, signal string, capacity, def int64) int64 {
	hard, hardSet := threshold(k.EvictionHard, signal, capacity)
	soft, softSet := threshold(k.EvictionSoft, signal, capacity)
	if hardSet && hard >= capacity {
		hard = 0
	}
	if softSet && soft >= capacity {
		soft, softSet = 0, false
	}
	switch {
	case hardSet && softSet:
		return max(hard, soft)
	case hardSet:
		return hard
	case softSet:
		return soft
	default:
		return def
	}
}

func threshold(m map[string]string, signal string, capacity int64) (int64, bool) {
	v, ok := m[signal]
	if !ok {
		return 0, false
	}
	if p, found := strings.CutSuffix(v, "%"); found {
		q, err := resource.ParseQuantity(p)
		if err != nil {
			return 0, false
		}
		return int64(math.Ceil(float64(capacity) * q.AsApproximateFloat64() / 100)), true
	}
	q, err := resource.ParseQuantity(v)
	if err != nil {
		return 0, false
	}
	return quantity.Clamped(corev1.ResourceName(signal), q), true
}
