package fleet

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/apis"
)

// launchView is everything a launch of one c5.large for the EC2NodeClass
// sends to AWS, as text: the image and SSM queries, each launch template
// (its user data decoded) and the fleet request.
func launchView(t *testing.T, nc *apis.EC2NodeClass) string {
	t.Helper()
	f := newFixture(t)
	_, err := f.l.Launch(context.Background(), Request{Name: "default-abcde", NodeClass: nc,
		Claim: claim([]string{"c5.large"}, []string{"us-east-1a"}, "on-demand")})
	var b strings.Builder
	write := func(label string, v any) {
		j, jerr := json.Marshal(v)
		if jerr != nil {
			t.Fatal(jerr)
		}
		b.WriteString(label + ": " + string(j) + "\n")
	}
	write("images", f.ec2.imageCalls)
	write("ssm", f.ssm.calls)
	for _, lt := range f.ec2.createLT {
		data := *lt.LaunchTemplateData
		ud, derr := base64.StdEncoding.DecodeString(aws.ToString(data.UserData))
		if derr != nil {
			t.Fatal(derr)
		}
		data.UserData = nil
		write("template", data)
		write("template tags", lt.TagSpecifications)
		b.WriteString("user data:\n" + string(ud) + "\n")
	}
	write("fleet", f.ec2.fleets)
	if err != nil {
		b.WriteString("error: " + err.Error() + "\n")
	}
	return b.String()
}

// Each EC2NodeClass field Nodewright honours (apis.SupportTable names this
// test for them) changes what a launch sends to AWS: the case sets the
// field on the users' example class and finds its value in the launch
// template, the user data, the fleet request or the AMI queries, which
// differ from the launch without it.
func TestNodeClassFieldsShapeTheLaunch(t *testing.T) {
	size := resource.MustParse("200Gi")
	ebs := func(nc *apis.EC2NodeClass) *apis.BlockDevice { return nc.Spec.BlockDeviceMappings[0].EBS }
	kubelet := func(nc *apis.EC2NodeClass) *apis.KubeletConfiguration {
		if nc.Spec.Kubelet == nil {
			nc.Spec.Kubelet = &apis.KubeletConfiguration{}
		}
		return nc.Spec.Kubelet
	}
	metadata := func(nc *apis.EC2NodeClass) *apis.MetadataOptions { return nc.Spec.MetadataOptions }
	customImage := func(nc *apis.EC2NodeClass) {
		nc.Spec.AMISelectorTerms = []apis.AMISelectorTerm{{ID: "ami-x86-new"}}
		nc.Spec.AMIFamily = aws.String(apis.AMIFamilyCustom)
	}
	tests := []struct {
		path   string
		before func(*apis.EC2NodeClass) // applied to both launches
		set    func(*apis.EC2NodeClass)
		want   []string
		absent string
	}{
		{"spec.amiFamily=AL2023", customImage, func(nc *apis.EC2NodeClass) { nc.Spec.AMIFamily = aws.String(apis.AMIFamilyAL2023) },
			[]string{"kind: NodeConfig", "name: my-production-cluster"}, ""},
		{"spec.amiFamily=Custom", nil, func(nc *apis.EC2NodeClass) {
			nc.Spec.AMIFamily = aws.String(apis.AMIFamilyCustom)
			nc.Spec.UserData = aws.String("#!/bin/sh\necho my-own-bootstrap\n")
		}, []string{"user data:\n#!/bin/sh\necho my-own-bootstrap"}, "NodeConfig"},
		{"spec.amiFamily=Bottlerocket", customImage, func(nc *apis.EC2NodeClass) { nc.Spec.AMIFamily = aws.String(apis.AMIFamilyBottlerocket) },
			[]string{"[settings.kubernetes]", "cluster-name = 'my-production-cluster'", "team = 'platform'"}, "NodeConfig"},
		{"spec.amiSelectorTerms[].alias=bottlerocket", customImage, func(nc *apis.EC2NodeClass) {
			nc.Spec.AMISelectorTerms, nc.Spec.AMIFamily = []apis.AMISelectorTerm{{Alias: "bottlerocket@latest"}}, nil
		}, []string{"/aws/service/bottlerocket/aws-k8s-1.35/x86_64/latest/image_id", `"ImageId":"ami-br-x86"`, "[settings.kubernetes]"}, "NodeConfig"},
		{"spec.amiFamily=AL2", customImage, func(nc *apis.EC2NodeClass) { nc.Spec.AMIFamily = aws.String(apis.AMIFamilyAL2) },
			[]string{"/etc/eks/bootstrap.sh 'my-production-cluster'", `--node-labels="`}, "NodeConfig"},
		{"spec.amiSelectorTerms[].alias=al2", customImage, func(nc *apis.EC2NodeClass) {
			nc.Spec.AMISelectorTerms, nc.Spec.AMIFamily = []apis.AMISelectorTerm{{Alias: "al2@latest"}}, nil
		}, []string{"/aws/service/eks/optimized-ami/1.35/amazon-linux-2/recommended/image_id", `"ImageId":"ami-al2-x86"`, "/etc/eks/bootstrap.sh"}, "NodeConfig"},
		{"spec.amiFamily=Windows2019", customImage, func(nc *apis.EC2NodeClass) { nc.Spec.AMIFamily = aws.String(apis.AMIFamilyWindows2019) },
			[]string{"<powershell>", "-EKSClusterName 'my-production-cluster'"}, "NodeConfig"},
		{"spec.amiFamily=Windows2022", customImage, func(nc *apis.EC2NodeClass) { nc.Spec.AMIFamily = aws.String(apis.AMIFamilyWindows2022) },
			[]string{"<powershell>", "-EKSClusterName 'my-production-cluster'"}, "NodeConfig"},
		{"spec.amiFamily=Windows2025", customImage, func(nc *apis.EC2NodeClass) { nc.Spec.AMIFamily = aws.String(apis.AMIFamilyWindows2025) },
			[]string{"<powershell>", "-EKSClusterName 'my-production-cluster'"}, "NodeConfig"},
		{"spec.amiSelectorTerms[].alias=windows2019", customImage, func(nc *apis.EC2NodeClass) {
			nc.Spec.AMISelectorTerms, nc.Spec.AMIFamily = []apis.AMISelectorTerm{{Alias: "windows2019@latest"}}, nil
		}, []string{"/aws/service/ami-windows-latest/Windows_Server-2019-English-Core-EKS_Optimized-1.35/image_id", `"ImageId":"ami-win2019"`, "<powershell>"}, "NodeConfig"},
		{"spec.amiSelectorTerms[].alias=windows2022", customImage, func(nc *apis.EC2NodeClass) {
			nc.Spec.AMISelectorTerms, nc.Spec.AMIFamily = []apis.AMISelectorTerm{{Alias: "windows2022@latest"}}, nil
		}, []string{"/aws/service/ami-windows-latest/Windows_Server-2022-English-Core-EKS_Optimized-1.35/image_id", `"ImageId":"ami-win2022"`, "<powershell>"}, "NodeConfig"},
		{"spec.amiSelectorTerms[].alias=windows2025", customImage, func(nc *apis.EC2NodeClass) {
			nc.Spec.AMISelectorTerms, nc.Spec.AMIFamily = []apis.AMISelectorTerm{{Alias: "windows2025@latest"}}, nil
		}, []string{"/aws/service/ami-windows-latest/Windows_Server-2025-English-Core-EKS_Optimized-1.35/image_id", `"ImageId":"ami-win2025"`, "<powershell>"}, "NodeConfig"},
		{"spec.amiSelectorTerms[].alias=al2023", customImage, func(nc *apis.EC2NodeClass) {
			nc.Spec.AMISelectorTerms, nc.Spec.AMIFamily = []apis.AMISelectorTerm{{Alias: "al2023@latest"}}, nil
		}, []string{"/aws/service/eks/optimized-ami/1.35/amazon-linux-2023/x86_64/standard/recommended/image_id", "kind: NodeConfig"}, ""},
		{"spec.amiSelectorTerms[].id", nil, customImage, []string{`"ImageIds":["ami-x86-new"]`, `"ImageId":"ami-x86-new"`}, ""},
		{"spec.amiSelectorTerms[].name", nil, func(nc *apis.EC2NodeClass) {
			nc.Spec.AMISelectorTerms = []apis.AMISelectorTerm{{Name: "custom-*"}}
			nc.Spec.AMIFamily = aws.String(apis.AMIFamilyAL2023)
		}, []string{`"Name":"name","Values":["custom-*"]`}, ""},
		{"spec.associatePublicIPAddress", nil, func(nc *apis.EC2NodeClass) { nc.Spec.AssociatePublicIPAddress = aws.Bool(true) },
			[]string{`"AssociatePublicIpAddress":true`}, ""},
		{"spec.blockDeviceMappings[].deviceName", nil, func(nc *apis.EC2NodeClass) { nc.Spec.BlockDeviceMappings[0].DeviceName = aws.String("/dev/xvdz") },
			[]string{`"DeviceName":"/dev/xvdz"`}, ""},
		{"spec.blockDeviceMappings[].ebs.deleteOnTermination", nil, func(nc *apis.EC2NodeClass) { ebs(nc).DeleteOnTermination = aws.Bool(false) },
			[]string{`"DeleteOnTermination":false`}, ""},
		{"spec.blockDeviceMappings[].ebs.encrypted", nil, func(nc *apis.EC2NodeClass) { ebs(nc).Encrypted = aws.Bool(false) },
			[]string{`"Encrypted":false`}, ""},
		{"spec.blockDeviceMappings[].ebs.iops", nil, func(nc *apis.EC2NodeClass) { ebs(nc).IOPS = aws.Int64(4321) },
			[]string{`"Iops":4321`}, ""},
		{"spec.blockDeviceMappings[].ebs.kmsKeyID", nil, func(nc *apis.EC2NodeClass) { ebs(nc).KMSKeyID = aws.String("alias/nodes") },
			[]string{`"KmsKeyId":"alias/nodes"`}, ""},
		{"spec.blockDeviceMappings[].ebs.snapshotID", nil, func(nc *apis.EC2NodeClass) { ebs(nc).SnapshotID = aws.String("snap-0123") },
			[]string{`"SnapshotId":"snap-0123"`}, ""},
		{"spec.blockDeviceMappings[].ebs.throughput", nil, func(nc *apis.EC2NodeClass) { ebs(nc).Throughput = aws.Int64(321) },
			[]string{`"Throughput":321`}, ""},
		{"spec.blockDeviceMappings[].ebs.volumeInitializationRate", func(nc *apis.EC2NodeClass) { ebs(nc).SnapshotID = aws.String("snap-0123") },
			func(nc *apis.EC2NodeClass) { ebs(nc).VolumeInitializationRate = aws.Int32(222) }, []string{`"VolumeInitializationRate":222`}, ""},
		{"spec.blockDeviceMappings[].ebs.volumeSize", nil, func(nc *apis.EC2NodeClass) { ebs(nc).VolumeSize = &size },
			[]string{`"VolumeSize":200`}, ""},
		{"spec.blockDeviceMappings[].ebs.volumeType", nil, func(nc *apis.EC2NodeClass) { ebs(nc).VolumeType = aws.String("io2") },
			[]string{`"VolumeType":"io2"`}, ""},
		{"spec.context", nil, func(nc *apis.EC2NodeClass) { nc.Spec.Context = aws.String("ctx-0123") },
			[]string{`"Context":"ctx-0123"`}, ""},
		{"spec.detailedMonitoring", nil, func(nc *apis.EC2NodeClass) { nc.Spec.DetailedMonitoring = aws.Bool(true) },
			[]string{`"Monitoring":{"Enabled":true}`}, ""},
		{"spec.instanceStorePolicy", nil, func(nc *apis.EC2NodeClass) {
			raid := apis.InstanceStorePolicyRAID0
			nc.Spec.InstanceStorePolicy = &raid
		}, []string{"strategy: RAID0"}, ""},
		{"spec.kubelet.clusterDNS", nil, func(nc *apis.EC2NodeClass) { kubelet(nc).ClusterDNS = []string{"10.96.0.53"} },
			[]string{"clusterDNS:", "- 10.96.0.53"}, ""},
		{"spec.kubelet.cpuCFSQuota", nil, func(nc *apis.EC2NodeClass) { kubelet(nc).CPUCFSQuota = aws.Bool(false) },
			[]string{"cpuCFSQuota: false"}, ""},
		{"spec.kubelet.evictionHard", nil, func(nc *apis.EC2NodeClass) { kubelet(nc).EvictionHard = map[string]string{"memory.available": "7%"} },
			[]string{"evictionHard:", "memory.available: 7%"}, ""},
		{"spec.kubelet.evictionMaxPodGracePeriod", nil, func(nc *apis.EC2NodeClass) { kubelet(nc).EvictionMaxPodGracePeriod = aws.Int32(77) },
			[]string{"evictionMaxPodGracePeriod: 77"}, ""},
		{"spec.kubelet.evictionSoft", nil, func(nc *apis.EC2NodeClass) { kubelet(nc).EvictionSoft = map[string]string{"nodefs.available": "17%"} },
			[]string{"evictionSoft:", "nodefs.available: 17%"}, ""},
		{"spec.kubelet.evictionSoftGracePeriod", nil, func(nc *apis.EC2NodeClass) {
			kubelet(nc).EvictionSoftGracePeriod = map[string]metav1.Duration{"nodefs.available": {Duration: 3 * 60e9}}
		}, []string{"evictionSoftGracePeriod:", "nodefs.available: 3m0s"}, ""},
		{"spec.kubelet.imageGCHighThresholdPercent", nil, func(nc *apis.EC2NodeClass) { kubelet(nc).ImageGCHighThresholdPercent = aws.Int32(81) },
			[]string{"imageGCHighThresholdPercent: 81"}, ""},
		{"spec.kubelet.imageGCLowThresholdPercent", nil, func(nc *apis.EC2NodeClass) { kubelet(nc).ImageGCLowThresholdPercent = aws.Int32(61) },
			[]string{"imageGCLowThresholdPercent: 61"}, ""},
		{"spec.kubelet.kubeReserved", nil, func(nc *apis.EC2NodeClass) { kubelet(nc).KubeReserved = map[string]string{"cpu": "333m"} },
			[]string{"kubeReserved:", "cpu: 333m"}, ""},
		{"spec.kubelet.maxPods", nil, func(nc *apis.EC2NodeClass) { kubelet(nc).MaxPods = aws.Int32(42) },
			[]string{"maxPods: 42"}, ""},
		{"spec.kubelet.podsPerCore", nil, func(nc *apis.EC2NodeClass) { kubelet(nc).PodsPerCore = aws.Int32(7) },
			[]string{"podsPerCore: 7"}, ""},
		{"spec.kubelet.systemReserved", nil, func(nc *apis.EC2NodeClass) { kubelet(nc).SystemReserved = map[string]string{"memory": "444Mi"} },
			[]string{"systemReserved:", "memory: 444Mi"}, ""},
		{"spec.metadataOptions.httpEndpoint", nil, func(nc *apis.EC2NodeClass) { metadata(nc).HTTPEndpoint = aws.String("disabled") },
			[]string{`"HttpEndpoint":"disabled"`}, ""},
		{"spec.metadataOptions.httpProtocolIPv6", nil, func(nc *apis.EC2NodeClass) { metadata(nc).HTTPProtocolIPv6 = aws.String("enabled") },
			[]string{`"HttpProtocolIpv6":"enabled"`}, ""},
		{"spec.metadataOptions.httpPutResponseHopLimit", nil, func(nc *apis.EC2NodeClass) { metadata(nc).HTTPPutResponseHopLimit = aws.Int64(5) },
			[]string{`"HttpPutResponseHopLimit":5`}, ""},
		{"spec.metadataOptions.httpTokens", nil, func(nc *apis.EC2NodeClass) { metadata(nc).HTTPTokens = aws.String("optional") },
			[]string{`"HttpTokens":"optional"`}, ""},
		{"spec.tags", nil, func(nc *apis.EC2NodeClass) { nc.Spec.Tags["cost-center"] = "cc-4242" },
			[]string{`"Key":"cost-center","Value":"cc-4242"`}, ""},
		{"spec.userData", nil, func(nc *apis.EC2NodeClass) { nc.Spec.UserData = aws.String("#!/bin/sh\necho hello-from-the-class\n") },
			[]string{"echo hello-from-the-class"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			nc := defaultNodeClass()
			if tt.before != nil {
				tt.before(nc)
			}
			base := launchView(t, nc)
			tt.set(nc)
			got := launchView(t, nc)
			if strings.Contains(got, "error: ") {
				t.Fatalf("the launch failed:\n%s", got)
			}
			if got == base {
				t.Fatalf("the launch does not change with %s:\n%s", tt.path, got)
			}
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("the launch lacks %q:\n%s", w, got)
				}
				if strings.Contains(base, w) {
					t.Errorf("the launch without %s has %q already", tt.path, w)
				}
			}
			if tt.absent != "" && strings.Contains(got, tt.absent) {
				t.Errorf("the launch still has %q:\n%s", tt.absent, got)
			}
		})
	}
}
