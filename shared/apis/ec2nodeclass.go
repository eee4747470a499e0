package apis

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EC2NodeClass is Karpenter's karpenter.k8s.aws/v1 EC2NodeClass: how the EC2
// instances of a NodePool are launched (AMI, subnets, security groups, role,
// disks, kubelet settings, metadata options).
type EC2NodeClass struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   EC2NodeClassSpec   `json:"spec"`
	Status EC2NodeClassStatus `json:"status,omitempty"`
}

// EC2NodeClassSpec is the user's part of an EC2NodeClass.
type EC2NodeClassSpec struct {
	SubnetSelectorTerms              []SubnetSelectorTerm              `json:"subnetSelectorTerms"`
	SecurityGroupSelectorTerms       []SecurityGroupSelectorTerm       `json:"securityGroupSelectorTerms"`
	CapacityReservationSelectorTerms []CapacityReservationSelectorTerm `json:"capacityReservationSelectorTerms,omitempty"`
	PlacementGroupSelector           *PlacementGroupSelector           `json:"placementGroupSelector,omitempty"`
	AssociatePublicIPAddress         *bool                             `json:"associatePublicIPAddress,omitempty"`
	IPPrefixCount                    *int32                            `json:"ipPrefixCount,omitempty"`
	AMISelectorTerms                 []AMISelectorTerm                 `json:"amiSelectorTerms"`
	AMIFamily                        *string                           `json:"amiFamily,omitempty"`
	UserData                         *string                           `json:"userData,omitempty"`
	Role                             string                            `json:"role,omitempty"`
	InstanceProfile                  *string                           `json:"instanceProfile,omitempty"`
	Tags                             map[string]string                 `json:"tags,omitempty"`
	Kubelet                          *KubeletConfiguration             `json:"kubelet,omitempty"`
	BlockDeviceMappings              []*BlockDeviceMapping             `json:"blockDeviceMappings,omitempty"`
	InstanceStorePolicy              *InstanceStorePolicy              `json:"instanceStorePolicy,omitempty"`
	NetworkInterfaces                []*NetworkInterface               `json:"networkInterfaces,omitempty"`
	DetailedMonitoring               *bool                             `json:"detailedMonitoring,omitempty"`
	MetadataOptions                  *MetadataOptions                  `json:"metadataOptions,omitempty"`
	ConnectionTracking               *ConnectionTracking               `json:"connectionTracking,omitempty"`
	CPUOptions                       *CPUOptions                       `json:"cpuOptions,omitempty"`
	EnclaveOptions                   *EnclaveOptions                   `json:"enclaveOptions,omitempty"`
	Context                          *string                           `json:"context,omitempty"`
}

// SubnetSelectorTerm selects subnets by tags or by ID; terms are ORed.
type SubnetSelectorTerm struct {
	Tags map[string]string `json:"tags,omitempty"`
	ID   string            `json:"id,omitempty"`
}

// SecurityGroupSelectorTerm selects security groups by tags, ID or name.
type SecurityGroupSelectorTerm struct {
	Tags map[string]string `json:"tags,omitempty"`
	ID   string            `json:"id,omitempty"`
	Name string            `json:"name,omitempty"`
}

// CapacityReservationSelectorTerm selects capacity reservations.
type CapacityReservationSelectorTerm struct {
	Tags                  map[string]string `json:"tags,omitempty"`
	ID                    string            `json:"id,omitempty"`
	OwnerID               string            `json:"ownerID,omitempty"`
	InstanceMatchCriteria string            `json:"instanceMatchCriteria,omitempty"`
}

// AMISelectorTerm selects AMIs by alias (family@version), ID, name, owner,
// tags or SSM parameter.
type AMISelectorTerm struct {
	Alias        string            `json:"alias,omitempty"`
	Tags         map[string]string `json:"tags,omitempty"`
	ID           string            `json:"id,omitempty"`
	Name         string            `json:"name,omitempty"`
	Owner        string            `json:"owner,omitempty"`
	SSMParameter string            `json:"ssmParameter,omitempty"`
}

// KubeletConfiguration is the subset of kubelet settings Karpenter exposes;
// maxPods, podsPerCore, the reservations and evictionHard change allocatable.
type KubeletConfiguration struct {
	ClusterDNS                  []string                   `json:"clusterDNS,omitempty"`
	MaxPods                     *int32                     `json:"maxPods,omitempty"`
	PodsPerCore                 *int32                     `json:"podsPerCore,omitempty"`
	SystemReserved              map[string]string          `json:"systemReserved,omitempty"`
	KubeReserved                map[string]string          `json:"kubeReserved,omitempty"`
	EvictionHard                map[string]string          `json:"evictionHard,omitempty"`
	EvictionSoft                map[string]string          `json:"evictionSoft,omitempty"`
	EvictionSoftGracePeriod     map[string]metav1.Duration `json:"evictionSoftGracePeriod,omitempty"`
	EvictionMaxPodGracePeriod   *int32                     `json:"evictionMaxPodGracePeriod,omitempty"`
	ImageGCHighThresholdPercent *int32                     `json:"imageGCHighThresholdPercent,omitempty"`
	ImageGCLowThresholdPercent  *int32                     `json:"imageGCLowThresholdPercent,omitempty"`
	CPUCFSQuota                 *bool                      `json:"cpuCFSQuota,omitempty"`
}

// MetadataOptions is the instance metadata service exposure (IMDSv2 by default).
type MetadataOptions struct {
	HTTPEndpoint            *string `json:"httpEndpoint,omitempty"`
	HTTPProtocolIPv6        *string `json:"httpProtocolIPv6,omitempty"`
	HTTPPutResponseHopLimit *int64  `json:"httpPutResponseHopLimit,omitempty"`
	HTTPTokens              *string `json:"httpTokens,omitempty"`
}

// BlockDeviceMapping is one EBS volume of launched instances.
type BlockDeviceMapping struct {
	DeviceName *string      `json:"deviceName,omitempty"`
	EBS        *BlockDevice `json:"ebs,omitempty"`
	RootVolume bool         `json:"rootVolume,omitempty"`
}

// BlockDevice is the EBS part of a block device mapping.
type BlockDevice struct {
	DeleteOnTermination      *bool              `json:"deleteOnTermination,omitempty"`
	Encrypted                *bool              `json:"encrypted,omitempty"`
	IOPS                     *int64             `json:"iops,omitempty"`
	KMSKeyID                 *string            `json:"kmsKeyID,omitempty"`
	SnapshotID               *string            `json:"snapshotID,omitempty"`
	Throughput               *int64             `json:"throughput,omitempty"`
	VolumeInitializationRate *int32             `json:"volumeInitializationRate,omitempty"`
	VolumeSize               *resource.Quantity `json:"volumeSize,omitempty"`
	VolumeType               *string            `json:"volumeType,omitempty"`
}

// EnclaveOptions enables Nitro Enclaves.
type EnclaveOptions struct {
	Enabled *bool `json:"enabled,omitempty"`
}

// InstanceStorePolicy says what to do with local NVMe disks.
type InstanceStorePolicy string

// InstanceStorePolicyRAID0 puts containerd and kubelet state on a RAID-0 of the
// instance's NVMe disks.
const InstanceStorePolicyRAID0 InstanceStorePolicy = "RAID0"

// AMI families (spec.amiFamily and the families of amiSelectorTerms aliases).
const (
	AMIFamilyAL2          = "AL2"
	AMIFamilyAL2023       = "AL2023"
	AMIFamilyBottlerocket = "Bottlerocket"
	AMIFamilyWindows2019  = "Windows2019"
	AMIFamilyWindows2022  = "Windows2022"
	AMIFamilyWindows2025  = "Windows2025"
	AMIFamilyCustom       = "Custom"

	// AliasVersionLatest is the alias version that follows the newest AMI.
	AliasVersionLatest = "latest"
)

// AMIFamilies lists the valid values of spec.amiFamily.
func AMIFamilies() []string {
	return []string{AMIFamilyAL2, AMIFamilyAL2023, AMIFamilyBottlerocket, AMIFamilyCustom, AMIFamilyWindows2019, AMIFamilyWindows2022, AMIFamilyWindows2025}
}

// IsWindowsFamily reports whether family (a spec.amiFamily value) boots
// Windows Server.
func IsWindowsFamily(family string) bool {
	_, ok := windowsBuilds[family]
	return ok
}

// windowsBuilds are the builds Windows Server nodes report in
// node.kubernetes.io/windows-build, by AMI family.
var windowsBuilds = map[string]string{
	AMIFamilyWindows2019: "10.0.17763",
	AMIFamilyWindows2022: "10.0.20348",
	AMIFamilyWindows2025: "10.0.26100",
}

// WindowsBuild is the build a node of a Windows AMI family reports in
// node.kubernetes.io/windows-build ("" for other families).
func WindowsBuild(family string) string { return windowsBuilds[family] }

// Capacity reservation types and states in EC2NodeClass status.
const (
	CapacityReservationTypeDefault       = "default"
	CapacityReservationTypeCapacityBlock = "capacity-block"
	CapacityReservationStateActive       = "active"
	CapacityReservationStateExpiring     = "expiring"
)

// EC2NodeClassStatus is what Karpenter writes back; read so that `kubectl get
// -o yaml` output loads, never trusted for decisions. Unknown status fields are
// ignored rather than rejected.
type EC2NodeClassStatus struct {
	Subnets              []SubnetStatus              `json:"subnets,omitempty"`
	SecurityGroups       []SecurityGroupStatus       `json:"securityGroups,omitempty"`
	CapacityReservations []CapacityReservationStatus `json:"capacityReservations,omitempty"`
	AMIs                 []AMIStatus                 `json:"amis,omitempty"`
	InstanceProfile      string                      `json:"instanceProfile,omitempty"`
	Conditions           []metav1.Condition          `json:"conditions,omitempty"`
}

// SubnetStatus is a resolved subnet.
type SubnetStatus struct {
	ID     string `json:"id"`
	Zone   string `json:"zone"`
	ZoneID string `json:"zoneID,omitempty"`
}

// SecurityGroupStatus is a resolved security group.
type SecurityGroupStatus struct {
	ID   string `json:"id"`
	Name string `json:"name,omitempty"`
}

// CapacityReservationStatus is a resolved capacity reservation.
type CapacityReservationStatus struct {
	AvailabilityZone      string       `json:"availabilityZone"`
	EndTime               *metav1.Time `json:"endTime,omitempty"`
	ID                    string       `json:"id"`
	InstanceMatchCriteria string       `json:"instanceMatchCriteria"`
	InstanceType          string       `json:"instanceType"`
	OwnerID               string       `json:"ownerID"`
	ReservationType       string       `json:"reservationType,omitempty"`
	State                 string       `json:"state,omitempty"`
}

// AMIStatus is a resolved AMI and the requirements it serves.
type AMIStatus struct {
	ID                   string                                       `json:"id"`
	Name                 string                                       `json:"name,omitempty"`
	Requirements         []NodeSelectorRequirementWithMinValuesStatus `json:"requirements"`
	Deprecated           bool                                         `json:"deprecated,omitempty"`
	RootDeviceName       string                                       `json:"rootDeviceName,omitempty"`
	RootDeviceSnapshotID string                                       `json:"rootDeviceSnapshotID,omitempty"`
}

// NodeSelectorRequirementWithMinValuesStatus is the status form of a requirement.
type NodeSelectorRequirementWithMinValuesStatus = NodeSelectorRequirementWithMinValues

// Alias returns the family (as in the alias: "al2023") and version of the
// node class's alias AMI selector term; ok is false when it has none.
func (nc *EC2NodeClass) Alias() (family, version string, ok bool) {
	for _, t := range nc.Spec.AMISelectorTerms {
		if t.Alias != "" {
			return parseAlias(t.Alias)
		}
	}
	return "", "", false
}

// AMIFamily returns the AMI family that decides user data and default block
// devices: spec.amiFamily when set (with an alias it may only be the alias's
// family or Custom), else the family of the alias (al2023@latest gives
// AL2023), else Custom.
func (nc *EC2NodeClass) AMIFamily() string {
	if nc.Spec.AMIFamily != nil && *nc.Spec.AMIFamily != "" {
		return *nc.Spec.AMIFamily
	}
	if family, _, ok := nc.Alias(); ok {
		if f := aliasFamily(family); f != "" {
			return f
		}
	}
	return AMIFamilyCustom
}
