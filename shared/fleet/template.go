package fleet

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/names"
)

// Default root volume of AL2023 nodes when the EC2NodeClass has no block
// device mappings (Karpenter's default).
const (
	defaultRootDevice   = "/dev/xvda"
	defaultRootVolumeGi = 20
)

// maxTemplateName is EC2's limit on a launch template's name.
const maxTemplateName = 128

// templateSpec is everything a launch template is made of.
type templateSpec struct {
	Cluster         Cluster
	NodePool        string
	NodeClass       *apis.EC2NodeClass
	AMI             AMI
	SecurityGroups  []string
	InstanceProfile string
	UserData        string // base64
	Networking      templateNetworking
	// CPUCredits is the credit mode of the template's burstable types, as
	// priced (catalog.CreditMode); "" when none is burstable.
	CPUCredits string
	// Reservation is the capacity reservation the template launches into
	// (nil: none).
	Reservation *Reservation
}

// nodeLabels are the labels a node passes to its kubelet: the claim's
// (NodePool template labels and single-valued requirements) with the
// NodePool and EC2NodeClass names, less the labels the instance itself
// determines (type, zone, architecture, capacity type: the kubelet and the
// cloud provider set those) and those the kubelet may not set on itself.
func nodeLabels(claimLabels map[string]string, nodePool, nodeClass string) map[string]string {
	out := map[string]string{}
	for k, v := range claimLabels {
		if !instanceDetermined(k) && kubeletMaySet(k) {
			out[k] = v
		}
	}
	out[apis.LabelNodePool] = nodePool
	if nodeClass != "" {
		out[apis.LabelEC2NodeClass] = nodeClass
	}
	return out
}

// instanceDetermined reports whether the launched instance decides the
// label's value (which of the claim's types, zones and capacity types EC2
// picked), so the user data must not state it. The kubelet and the cloud
// controller set these labels, the deprecated aliases too
// (apis.NormalizedLabels), so the node carries both names.
func instanceDetermined(key string) bool {
	switch apis.NormalizeLabel(key) {
	case apis.LabelArch, apis.LabelOS, apis.LabelInstanceType, apis.LabelZone, apis.LabelRegion, apis.LabelZoneID,
		apis.LabelCapacityType, apis.LabelHostname, apis.LabelWindowsBuild:
		return true
	}
	return strings.HasPrefix(key, apis.AWSGroup+"/instance-")
}

// kubeletMaySet reports whether the NodeRestriction admission plugin lets a
// kubelet set the label on its own Node: in the kubernetes.io and k8s.io
// domains only node.kubernetes.io/ and kubelet.kubernetes.io/ labels (and
// the well-known ones the kubelet sets itself).
func kubeletMaySet(key string) bool {
	domain, _, ok := strings.Cut(key, "/")
	if !ok {
		return true
	}
	restricted := func(d string) bool { return domain == d || strings.HasSuffix(domain, "."+d) }
	if !restricted("kubernetes.io") && !restricted("k8s.io") {
		return true
	}
	return restricted("node.kubernetes.io") || restricted("kubelet.kubernetes.io")
}

// resourceTags are the tags on everything a launch creates: the
// EC2NodeClass's tags, then the ones the stack's IAM policy requires in the
// request (cluster ownership, EKS cluster name, NodePool) and the
// EC2NodeClass's name, which the user cannot override.
func resourceTags(cluster, nodePool string, nc *apis.EC2NodeClass) map[string]string {
	tags := map[string]string{}
	if nc != nil {
		for k, v := range nc.Spec.Tags {
			tags[k] = v
		}
		tags[names.TagKeyEC2NodeClass] = nc.Name
	}
	tags[names.TagKeyCluster(cluster)] = names.TagValueOwned
	tags[names.TagKeyEKSClusterName] = cluster
	tags[names.TagKeyNodePool] = nodePool
	return tags
}

// ec2Tags turns a tag map into EC2 tags sorted by key.
func ec2Tags(m map[string]string) []ec2types.Tag {
	keys := slices.Sorted(maps.Keys(m))
	out := make([]ec2types.Tag, 0, len(keys))
	for _, k := range keys {
		out = append(out, ec2types.Tag{Key: aws.String(k), Value: aws.String(m[k])})
	}
	return out
}

// launchTemplateInput is the CreateLaunchTemplate call for spec. Its name is
// nodewright-<cluster>-<hash of the content>, so equal content reuses one
// template and any change makes a new one.
func launchTemplateInput(s templateSpec) (*ec2.CreateLaunchTemplateInput, error) {
	nc := s.NodeClass
	tags := ec2Tags(resourceTags(s.Cluster.Name, s.NodePool, nc))
	data := &ec2types.RequestLaunchTemplateData{
		ImageId:             aws.String(s.AMI.ID),
		UserData:            optional(s.UserData),
		IamInstanceProfile:  &ec2types.LaunchTemplateIamInstanceProfileSpecificationRequest{Name: aws.String(s.InstanceProfile)},
		MetadataOptions:     metadataOptions(nc.Spec.MetadataOptions),
		BlockDeviceMappings: blockDeviceMappings(nc.Spec.BlockDeviceMappings, nc.AMIFamily()),
		Monitoring:          &ec2types.LaunchTemplatesMonitoringRequest{Enabled: aws.Bool(aws.ToBool(nc.Spec.DetailedMonitoring))},
		TagSpecifications: []ec2types.LaunchTemplateTagSpecificationRequest{
			{ResourceType: ec2types.ResourceTypeNetworkInterface, Tags: tags},
		},
	}
	applyNetworking(data, nc, s.SecurityGroups, s.Networking)
	if s.CPUCredits != "" {
		// Pinned, so that the account's default credit mode cannot differ
		// from the one the plan priced.
		data.CreditSpecification = &ec2types.CreditSpecificationRequest{CpuCredits: aws.String(s.CPUCredits)}
	}
	if nc.Spec.EnclaveOptions != nil && nc.Spec.EnclaveOptions.Enabled != nil {
		data.EnclaveOptions = &ec2types.LaunchTemplateEnclaveOptionsRequest{Enabled: nc.Spec.EnclaveOptions.Enabled}
	}
	reservationSpec(data, s.Reservation)
	name, err := templateName(s.Cluster.Name, data, tags)
	if err != nil {
		return nil, err
	}
	return &ec2.CreateLaunchTemplateInput{
		LaunchTemplateName: aws.String(name),
		LaunchTemplateData: data,
		TagSpecifications:  []ec2types.TagSpecification{{ResourceType: ec2types.ResourceTypeLaunchTemplate, Tags: tags}},
	}, nil
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return aws.String(s)
}

// templateName hashes the template's content (data and tags).
func templateName(cluster string, data *ec2types.RequestLaunchTemplateData, tags []ec2types.Tag) (string, error) {
	b, err := json.Marshal(struct {
		Data *ec2types.RequestLaunchTemplateData
		Tags []ec2types.Tag
	}{data, tags})
	if err != nil {
		return "", fmt.Errorf("launch template name: %w", err)
	}
	sum := sha256.Sum256(b)
	hash := hex.EncodeToString(sum[:])[:16]
	return templatePrefix(cluster) + "-" + hash, nil
}

// templatePrefix is how the names of a cluster's launch templates begin
// (cut so that the hash fits EC2's limit).
func templatePrefix(cluster string) string {
	prefix := "nodewright-" + cluster
	if max := maxTemplateName - 16 - 1; len(prefix) > max {
		prefix = prefix[:max]
	}
	return prefix
}

// metadataOptions is the instance metadata service exposure: the
// EC2NodeClass's, with Karpenter's defaults (IMDSv2 required, hop limit 1)
// for whatever it leaves out.
func metadataOptions(m *apis.MetadataOptions) *ec2types.LaunchTemplateInstanceMetadataOptionsRequest {
	if m == nil {
		m = &apis.MetadataOptions{}
	}
	or := func(p *string, def string) string {
		if p == nil || *p == "" {
			return def
		}
		return *p
	}
	hops := apis.DefaultHTTPPutResponseHopLimit
	if m.HTTPPutResponseHopLimit != nil {
		hops = *m.HTTPPutResponseHopLimit
	}
	return &ec2types.LaunchTemplateInstanceMetadataOptionsRequest{
		HttpEndpoint:            ec2types.LaunchTemplateInstanceMetadataEndpointState(or(m.HTTPEndpoint, apis.DefaultHTTPEndpoint)),
		HttpProtocolIpv6:        ec2types.LaunchTemplateInstanceMetadataProtocolIpv6(or(m.HTTPProtocolIPv6, apis.DefaultHTTPProtocolIPv6)),
		HttpPutResponseHopLimit: aws.Int32(int32(hops)),
		HttpTokens:              ec2types.LaunchTemplateHttpTokensState(or(m.HTTPTokens, apis.DefaultHTTPTokens)),
	}
}

// blockDeviceMappings are the EC2NodeClass's volumes, or its AMI family's
// encrypted gp3 defaults when it names none (a 20 GiB root; Bottlerocket's
// OS and data volumes; Windows's 50 GiB root).
func blockDeviceMappings(bdms []*apis.BlockDeviceMapping, family string) []ec2types.LaunchTemplateBlockDeviceMappingRequest {
	if len(bdms) == 0 {
		gp3 := func(device string, gi int32) ec2types.LaunchTemplateBlockDeviceMappingRequest {
			return ec2types.LaunchTemplateBlockDeviceMappingRequest{DeviceName: aws.String(device), Ebs: &ec2types.LaunchTemplateEbsBlockDeviceRequest{
				VolumeSize: aws.Int32(gi), VolumeType: ec2types.VolumeTypeGp3, Encrypted: aws.Bool(true), DeleteOnTermination: aws.Bool(true),
			}}
		}
		switch {
		case family == apis.AMIFamilyBottlerocket:
			return []ec2types.LaunchTemplateBlockDeviceMappingRequest{
				gp3(bottlerocketOSDevice, bottlerocketOSVolumeGi), gp3(bottlerocketDataDevice, bottlerocketDataVolumeGi)}
		case apis.IsWindowsFamily(family):
			return []ec2types.LaunchTemplateBlockDeviceMappingRequest{gp3(windowsRootDevice, windowsRootVolumeGi)}
		}
		return []ec2types.LaunchTemplateBlockDeviceMappingRequest{gp3(defaultRootDevice, defaultRootVolumeGi)}
	}
	out := make([]ec2types.LaunchTemplateBlockDeviceMappingRequest, 0, len(bdms))
	for _, b := range bdms {
		if b == nil {
			continue
		}
		m := ec2types.LaunchTemplateBlockDeviceMappingRequest{DeviceName: b.DeviceName}
		if e := b.EBS; e != nil {
			m.Ebs = &ec2types.LaunchTemplateEbsBlockDeviceRequest{
				DeleteOnTermination: e.DeleteOnTermination, Encrypted: e.Encrypted, KmsKeyId: e.KMSKeyID,
				SnapshotId: e.SnapshotID, Iops: int32Of(e.IOPS), Throughput: int32Of(e.Throughput),
				VolumeInitializationRate: e.VolumeInitializationRate,
			}
			if e.VolumeType != nil {
				m.Ebs.VolumeType = ec2types.VolumeType(*e.VolumeType)
			}
			if e.VolumeSize != nil {
				m.Ebs.VolumeSize = aws.Int32(gibCeil(e.VolumeSize.Value()))
			}
		}
		out = append(out, m)
	}
	return out
}

func int32Of(p *int64) *int32 {
	if p == nil {
		return nil
	}
	return aws.Int32(int32(*p))
}

// gibCeil is bytes in GiB (EBS sizes volumes in GiB), rounded up.
func gibCeil(bytes int64) int32 {
	const gi = 1 << 30
	return int32((bytes + gi - 1) / gi)
}
