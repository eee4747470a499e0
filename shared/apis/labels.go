package apis

import corev1 "k8s.io/api/core/v1"

// API groups and versions of the two kinds.
const (
	KarpenterGroup         = "karpenter.sh"
	AWSGroup               = "karpenter.k8s.aws"
	Version                = "v1"
	NodePoolKind           = "NodePool"
	EC2NodeClassKind       = "EC2NodeClass"
	NodePoolAPIVersion     = KarpenterGroup + "/" + Version
	EC2NodeClassAPIVersion = AWSGroup + "/" + Version
)

// Well-known Kubernetes labels.
const (
	LabelArch         = corev1.LabelArchStable         // kubernetes.io/arch
	LabelOS           = corev1.LabelOSStable           // kubernetes.io/os
	LabelInstanceType = corev1.LabelInstanceTypeStable // node.kubernetes.io/instance-type
	LabelZone         = corev1.LabelTopologyZone       // topology.kubernetes.io/zone
	LabelRegion       = corev1.LabelTopologyRegion     // topology.kubernetes.io/region
	LabelHostname     = corev1.LabelHostname           // kubernetes.io/hostname
	LabelWindowsBuild = corev1.LabelWindowsBuild       // node.kubernetes.io/windows-build
	LabelZoneID       = "topology.k8s.aws/zone-id"
)

// Karpenter's labels, annotations and taints (karpenter.sh).
const (
	LabelNodePool          = KarpenterGroup + "/nodepool"
	LabelCapacityType      = KarpenterGroup + "/capacity-type"
	LabelInitialized       = KarpenterGroup + "/initialized"
	LabelRegistered        = KarpenterGroup + "/registered"
	LabelNodeClaim         = KarpenterGroup + "/nodeclaim"
	AnnotationDoNotDisrupt = KarpenterGroup + "/do-not-disrupt"
	TaintKeyDisrupted      = KarpenterGroup + "/disrupted"
	TaintKeyUnregistered   = KarpenterGroup + "/unregistered"
	// FinalizerTermination is on every Node Nodewright launches: deleting
	// the Node drains it and terminates its instance before it goes.
	FinalizerTermination = KarpenterGroup + "/termination"

	CapacityTypeSpot     = "spot"
	CapacityTypeOnDemand = "on-demand"
	CapacityTypeReserved = "reserved"
)

// The AWS provider's instance labels (karpenter.k8s.aws).
const (
	LabelEC2NodeClass                     = AWSGroup + "/ec2nodeclass"
	LabelInstanceHypervisor               = AWSGroup + "/instance-hypervisor"
	LabelInstanceEncryptionInTransit      = AWSGroup + "/instance-encryption-in-transit-supported"
	LabelInstanceCategory                 = AWSGroup + "/instance-category"
	LabelInstanceFamily                   = AWSGroup + "/instance-family"
	LabelInstanceGeneration               = AWSGroup + "/instance-generation"
	LabelInstanceLocalNVME                = AWSGroup + "/instance-local-nvme"
	LabelInstanceSize                     = AWSGroup + "/instance-size"
	LabelInstanceCPU                      = AWSGroup + "/instance-cpu"
	LabelInstanceCPUManufacturer          = AWSGroup + "/instance-cpu-manufacturer"
	LabelInstanceCPUSustainedClockSpeed   = AWSGroup + "/instance-cpu-sustained-clock-speed-mhz"
	LabelInstanceMemory                   = AWSGroup + "/instance-memory"
	LabelInstanceEBSBandwidth             = AWSGroup + "/instance-ebs-bandwidth"
	LabelInstanceNetworkBandwidth         = AWSGroup + "/instance-network-bandwidth"
	LabelInstanceGPUName                  = AWSGroup + "/instance-gpu-name"
	LabelInstanceGPUManufacturer          = AWSGroup + "/instance-gpu-manufacturer"
	LabelInstanceGPUCount                 = AWSGroup + "/instance-gpu-count"
	LabelInstanceGPUMemory                = AWSGroup + "/instance-gpu-memory"
	LabelInstanceAcceleratorName          = AWSGroup + "/instance-accelerator-name"
	LabelInstanceAcceleratorManufacturer  = AWSGroup + "/instance-accelerator-manufacturer"
	LabelInstanceAcceleratorCount         = AWSGroup + "/instance-accelerator-count"
	LabelInstanceCapabilityFlex           = AWSGroup + "/instance-capability-flex"
	LabelCapacityReservationID            = AWSGroup + "/capacity-reservation-id"
	LabelCapacityReservationType          = AWSGroup + "/capacity-reservation-type"
	LabelCapacityReservationInterruptible = AWSGroup + "/capacity-reservation-interruptible"
	LabelInstanceTenancy                  = AWSGroup + "/instance-tenancy"
	LabelPlacementGroupID                 = AWSGroup + "/placement-group-id"
	LabelPlacementGroupPartition          = AWSGroup + "/placement-group-partition"
)

// EC2 tags that Nodewright puts on the instances it launches; users may not
// set them in an EC2NodeClass.
const (
	TagKeyNodePool       = LabelNodePool     // karpenter.sh/nodepool
	TagKeyNodeClaim      = LabelNodeClaim    // karpenter.sh/nodeclaim
	TagKeyEC2NodeClass   = LabelEC2NodeClass // karpenter.k8s.aws/ec2nodeclass
	TagKeyEKSClusterName = "eks:eks-cluster-name"
	TagKeyClusterPrefix  = "kubernetes.io/cluster"
)

// Extended resources that instance types advertise.
const (
	ResourceNVIDIAGPU     corev1.ResourceName = "nvidia.com/gpu"
	ResourceAMDGPU        corev1.ResourceName = "amd.com/gpu"
	ResourceAWSNeuron     corev1.ResourceName = "aws.amazon.com/neuron"
	ResourceAWSNeuronCore corev1.ResourceName = "aws.amazon.com/neuroncore"
	ResourceHabanaGaudi   corev1.ResourceName = "habana.ai/gaudi"
	ResourceEFA           corev1.ResourceName = "vpc.amazonaws.com/efa"
	ResourcePodENI        corev1.ResourceName = "vpc.amazonaws.com/pod-eni"
)

// NormalizedLabels maps the deprecated aliases of well-known labels to the
// labels they mean, as Karpenter normalizes them: a selector, affinity term,
// spread key or requirement on an alias is one on the stable label, and
// nodes carry both (the kubelet and the cloud controller set them).
var NormalizedLabels = map[string]string{
	corev1.LabelFailureDomainBetaZone:   LabelZone,
	corev1.LabelFailureDomainBetaRegion: LabelRegion,
	"beta.kubernetes.io/arch":           LabelArch,
	"beta.kubernetes.io/os":             LabelOS,
	corev1.LabelInstanceType:            LabelInstanceType,
}

// LabelAliases maps each stable label that has a deprecated alias to it.
var LabelAliases = func() map[string]string {
	out := make(map[string]string, len(NormalizedLabels))
	for alias, stable := range NormalizedLabels {
		out[stable] = alias
	}
	return out
}()

// NormalizeLabel is the label key means: its stable name when it is a
// deprecated alias, else key.
func NormalizeLabel(key string) string {
	if stable, ok := NormalizedLabels[key]; ok {
		return stable
	}
	return key
}

// WellKnownLabels are the label keys a NodePool requirement or a pod's node
// selector may constrain and that Nodewright can satisfy by choosing an instance
// type or offering (or sets on the node it launches).
var WellKnownLabels = map[string]bool{
	LabelArch: true, LabelOS: true, LabelInstanceType: true, LabelZone: true, LabelRegion: true,
	LabelWindowsBuild: true, LabelZoneID: true,
	LabelNodePool: true, LabelCapacityType: true,
	LabelEC2NodeClass: true, LabelInstanceHypervisor: true, LabelInstanceEncryptionInTransit: true,
	LabelInstanceCategory: true, LabelInstanceFamily: true, LabelInstanceGeneration: true,
	LabelInstanceLocalNVME: true, LabelInstanceSize: true, LabelInstanceCPU: true,
	LabelInstanceCPUManufacturer: true, LabelInstanceCPUSustainedClockSpeed: true,
	LabelInstanceMemory: true, LabelInstanceEBSBandwidth: true, LabelInstanceNetworkBandwidth: true,
	LabelInstanceGPUName: true, LabelInstanceGPUManufacturer: true, LabelInstanceGPUCount: true,
	LabelInstanceGPUMemory: true, LabelInstanceAcceleratorName: true,
	LabelInstanceAcceleratorManufacturer: true, LabelInstanceAcceleratorCount: true,
	LabelInstanceCapabilityFlex: true, LabelCapacityReservationID: true, LabelInstanceTenancy: true,
}

// DisruptedTaint is the taint a node gets when Nodewright takes it out
// (interruption, consolidation, deletion): karpenter.sh/disrupted:NoSchedule,
// as Karpenter sets it, so no new pod lands there while it drains.
func DisruptedTaint() corev1.Taint {
	return corev1.Taint{Key: TaintKeyDisrupted, Effect: corev1.TaintEffectNoSchedule}
}
