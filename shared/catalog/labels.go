package catalog

import (
	"strconv"

	"github.com/nodewright/nodewright/shared/apis"
)

// acceleratorManufacturer maps accelerator names to their makers.
var acceleratorManufacturer = map[string]string{
	"inferentia": "aws", "inferentia2": "aws", "trainium": "aws", "trainium2": "aws", "qualcomm-ai100": "qualcomm",
}

// Labels returns the well-known labels every node of the type carries, named as
// Karpenter names them: kubernetes.io/arch and os, node.kubernetes.io/instance-type
// and the karpenter.k8s.aws/instance-* labels. Labels whose value is unknown
// are left out. Zone and capacity type depend on the offering, not the type.
func (it *InstanceType) Labels() map[string]string {
	l := map[string]string{
		apis.LabelArch:                   it.Arch,
		apis.LabelOS:                     it.OS,
		apis.LabelInstanceType:           it.Name,
		apis.LabelInstanceCategory:       it.Category,
		apis.LabelInstanceFamily:         it.Family,
		apis.LabelInstanceGeneration:     strconv.Itoa(it.Generation),
		apis.LabelInstanceSize:           it.Size,
		apis.LabelInstanceCPU:            strconv.Itoa(it.VCPU),
		apis.LabelInstanceMemory:         strconv.FormatInt(it.MemoryMiB, 10),
		apis.LabelInstanceCapabilityFlex: strconv.FormatBool(it.Flex),
		// Nodewright launches shared-tenancy instances only.
		apis.LabelInstanceTenancy: "default",
	}
	set := func(key, v string) {
		if v != "" {
			l[key] = v
		}
	}
	positive := func(key string, v int64) {
		if v > 0 {
			l[key] = strconv.FormatInt(v, 10)
		}
	}
	set(apis.LabelInstanceCPUManufacturer, it.CPUManufacturer)
	set(apis.LabelInstanceHypervisor, it.Hypervisor)
	set(apis.LabelInstanceEncryptionInTransit, it.EncryptionInTransit)
	positive(apis.LabelInstanceNetworkBandwidth, int64(it.NetworkBandwidthMbps))
	positive(apis.LabelInstanceEBSBandwidth, int64(it.EBSBandwidthMbps))
	positive(apis.LabelInstanceLocalNVME, int64(it.LocalNVMeGiB))
	if it.GPU.Name != "" {
		l[apis.LabelInstanceGPUName] = it.GPU.Name
		l[apis.LabelInstanceGPUManufacturer] = it.GPU.Manufacturer
		l[apis.LabelInstanceGPUCount] = strconv.Itoa(it.GPU.Count)
		positive(apis.LabelInstanceGPUMemory, it.GPU.MemoryMiB)
	}
	if it.Accelerator.Name != "" {
		l[apis.LabelInstanceAcceleratorName] = it.Accelerator.Name
		set(apis.LabelInstanceAcceleratorManufacturer, acceleratorManufacturer[it.Accelerator.Name])
		l[apis.LabelInstanceAcceleratorCount] = strconv.Itoa(it.Accelerator.Count)
	}
	return l
}

// Exotic says whether the type carries hardware most pods don't need (GPUs,
// accelerators, bare metal) and so is chosen only when pods ask for it or
// nothing else fits.
func (it *InstanceType) Exotic() bool {
	return it.GPU.Name != "" || it.Accelerator.Name != "" || it.BareMetal
}
