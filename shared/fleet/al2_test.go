package fleet

import (
	"context"
	"encoding/base64"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/apis"
)

// fullKubelet is an EC2NodeClass kubelet block that sets every field.
func fullKubelet() *apis.KubeletConfiguration {
	return &apis.KubeletConfiguration{
		ClusterDNS: []string{"10.96.0.10"}, MaxPods: aws.Int32(50), PodsPerCore: aws.Int32(8),
		SystemReserved: map[string]string{"memory": "100Mi", "cpu": "100m"}, KubeReserved: map[string]string{"memory": "1Gi"},
		EvictionHard: map[string]string{"nodefs.available": "10%", "memory.available": "5%"}, EvictionSoft: map[string]string{"memory.available": "10%"},
		EvictionSoftGracePeriod:     map[string]metav1.Duration{"memory.available": {Duration: 90 * time.Second}},
		EvictionMaxPodGracePeriod:   aws.Int32(60),
		ImageGCHighThresholdPercent: aws.Int32(85), ImageGCLowThresholdPercent: aws.Int32(80), CPUCFSQuota: aws.Bool(false),
	}
}

// nodeTaints are a NoSchedule and a startup taint with no value.
var nodeTaints = []corev1.Taint{
	{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule},
	{Key: "example.com/starting", Effect: corev1.TaintEffectNoExecute},
}

// wantExtraArgs are fullKubelet's, nodeTaints' and team=platform's kubelet
// flags as bootstrap.sh and Start-EKSBootstrap.ps1 take them.
const wantExtraArgs = `--node-labels="karpenter.sh/nodepool=default,team=platform" ` +
	`--register-with-taints="dedicated=gpu:NoSchedule,example.com/starting:NoExecute" ` +
	`--max-pods=50 --pods-per-core=8 --system-reserved="cpu=100m,memory=100Mi" --kube-reserved="memory=1Gi" ` +
	`--eviction-hard="memory.available<5%,nodefs.available<10%" --eviction-soft="memory.available<10%" ` +
	`--eviction-soft-grace-period="memory.available=1m30s" --eviction-max-pod-grace-period=60 ` +
	`--image-gc-high-threshold=85 --image-gc-low-threshold=80 --cpu-cfs-quota=false`

func TestAL2UserData(t *testing.T) {
	raid0 := apis.InstanceStorePolicyRAID0
	ca := base64.StdEncoding.EncodeToString(testCluster.CertificateAuthority)
	labels := map[string]string{"team": "platform", "karpenter.sh/nodepool": "default"}
	userMIME := "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"BOUNDARY\"\n\n--BOUNDARY\n" +
		"Content-Type: text/cloud-config\n\npackages: [jq]\n--BOUNDARY--\n"
	userScript := "#!/bin/bash\necho my-own-setup\n"
	tests := []struct {
		name   string
		custom *string
		s      NodeSettings
		types  []string // content types of the parts, in order
		script []string // lines of Nodewright's script, in order
		absent []string
	}{
		{name: "labels, taints and every kubelet setting", s: NodeSettings{Labels: labels, Taints: nodeTaints, Kubelet: fullKubelet()},
			types: []string{contentTypeShell},
			script: []string{
				"#!/bin/bash -xe",
				"/etc/eks/bootstrap.sh 'my-production-cluster' --apiserver-endpoint 'https://127.0.0.1:6443' --b64-cluster-ca '" + ca + "' \\",
				"  --dns-cluster-ip '10.96.0.10' \\",
				"  --use-max-pods false \\",
				"  --kubelet-extra-args '" + wantExtraArgs + "'",
			}, absent: []string{"--ip-family", "--local-disks"}},
		{name: "nothing set: the cluster only", s: NodeSettings{}, types: []string{contentTypeShell},
			script: []string{"/etc/eks/bootstrap.sh 'my-production-cluster' --apiserver-endpoint 'https://127.0.0.1:6443' --b64-cluster-ca '" + ca + "'"},
			absent: []string{"--kubelet-extra-args", "--use-max-pods", "--dns-cluster-ip"}},
		{name: "IPv6 cluster DNS", s: NodeSettings{Kubelet: &apis.KubeletConfiguration{ClusterDNS: []string{"fd00::a"}}}, types: []string{contentTypeShell},
			script: []string{"  --ip-family ipv6 \\", "  --dns-cluster-ip 'fd00::a'"}},
		{name: "RAID0 asks bootstrap.sh for a RAID-0 of the instance store", s: NodeSettings{InstanceStorePolicy: &raid0},
			types: []string{contentTypeShell}, script: []string{"  --local-disks raid0"}},
		{name: "the user's script runs first", custom: &userScript, s: NodeSettings{Labels: labels},
			types: []string{contentTypeShell, contentTypeShell}, script: []string{`--kubelet-extra-args '--node-labels="karpenter.sh/nodepool=default,team=platform"'`}},
		{name: "the user's MIME parts come first", custom: &userMIME, s: NodeSettings{},
			types: []string{"text/cloud-config", contentTypeShell}, script: []string{"/etc/eks/bootstrap.sh"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b64, err := AL2UserData(testCluster, tt.custom, tt.s)
			if err != nil {
				t.Fatal(err)
			}
			parts := readUserData(t, b64)
			var types []string
			for _, p := range parts {
				types = append(types, p.contentType)
			}
			if !reflect.DeepEqual(types, tt.types) {
				t.Fatalf("parts %v, want %v", types, tt.types)
			}
			if tt.custom != nil && !isMIME(*tt.custom) && parts[0].content != *tt.custom {
				t.Errorf("first part %q, want the user's script", parts[0].content)
			}
			own := parts[len(parts)-1].content
			rest := own
			for _, line := range tt.script {
				i := strings.Index(rest, line)
				if i < 0 {
					t.Errorf("no line %q (in order) in\n%s", line, own)
					continue
				}
				rest = rest[i+len(line):]
			}
			for _, s := range tt.absent {
				if strings.Contains(own, s) {
					t.Errorf("script has %q:\n%s", s, own)
				}
			}
			if again, _ := AL2UserData(testCluster, tt.custom, tt.s); again != b64 {
				t.Error("user data differs between two calls")
			}
		})
	}
}

func TestShellQuote(t *testing.T) {
	if got, want := shellQuote("it's"), `'it'\''s'`; got != want {
		t.Errorf("shellQuote = %s, want %s", got, want)
	}
}

func TestAL2Parameters(t *testing.T) {
	for _, tt := range []struct {
		version string
		want    []string
	}{
		{"latest", []string{
			"/aws/service/eks/optimized-ami/1.35/amazon-linux-2/recommended/image_id",
			"/aws/service/eks/optimized-ami/1.35/amazon-linux-2-gpu/recommended/image_id",
			"/aws/service/eks/optimized-ami/1.35/amazon-linux-2-gpu/recommended/image_id",
			"/aws/service/eks/optimized-ami/1.35/amazon-linux-2-arm64/recommended/image_id"}},
		{"v20250403", []string{
			"/aws/service/eks/optimized-ami/1.35/amazon-linux-2/amazon-eks-node-1.35-v20250403/image_id",
			"/aws/service/eks/optimized-ami/1.35/amazon-linux-2-gpu/amazon-eks-gpu-node-1.35-v20250403/image_id",
			"/aws/service/eks/optimized-ami/1.35/amazon-linux-2-gpu/amazon-eks-gpu-node-1.35-v20250403/image_id",
			"/aws/service/eks/optimized-ami/1.35/amazon-linux-2-arm64/amazon-eks-arm64-node-1.35-v20250403/image_id"}},
	} {
		params, err := aliasParameters("al2", "1.35", tt.version)
		if err != nil {
			t.Fatal(err)
		}
		var names, kinds []string
		for _, p := range params {
			names = append(names, p.Name)
			kinds = append(kinds, p.Arch+"/"+p.Variant)
		}
		if !reflect.DeepEqual(names, tt.want) {
			t.Errorf("%s: %v, want %v", tt.version, names, tt.want)
		}
		if want := []string{"amd64/standard", "amd64/nvidia", "amd64/neuron", "arm64/standard"}; !reflect.DeepEqual(kinds, want) {
			t.Errorf("%s: variants %v, want %v", tt.version, kinds, want)
		}
	}
}

// TestLaunchAL2 launches a class with alias al2@latest: the GPU type boots
// the GPU image, every template carries the bootstrap.sh user data and
// the 20 GiB gp3 root volume AL2023 has.
func TestLaunchAL2(t *testing.T) {
	f := newFixture(t)
	nc := defaultNodeClass()
	nc.Spec.AMISelectorTerms = []apis.AMISelectorTerm{{Alias: "al2@latest"}}
	nc.Spec.BlockDeviceMappings = nil
	if _, err := f.l.Launch(context.Background(), Request{Name: "default-abcde", NodeClass: nc,
		Claim: claim([]string{"g5.xlarge", "c5.large", "m7g.large"}, []string{"us-east-1c"}, "on-demand")}); err != nil {
		t.Fatal(err)
	}
	var images []string
	for _, lt := range f.ec2.createLT {
		d := lt.LaunchTemplateData
		images = append(images, aws.ToString(d.ImageId))
		parts := readUserData(t, aws.ToString(d.UserData))
		own := parts[len(parts)-1].content
		if !strings.Contains(own, "/etc/eks/bootstrap.sh 'my-production-cluster'") || !strings.Contains(own, "team=platform") {
			t.Errorf("%s: user data\n%s", aws.ToString(d.ImageId), own)
		}
		var devices []string
		for _, b := range d.BlockDeviceMappings {
			devices = append(devices, fmt.Sprintf("%s=%s/%d", aws.ToString(b.DeviceName), b.Ebs.VolumeType, aws.ToInt32(b.Ebs.VolumeSize)))
		}
		if want := []string{"/dev/xvda=gp3/20"}; !reflect.DeepEqual(devices, want) {
			t.Errorf("block devices %v, want %v", devices, want)
		}
	}
	if want := []string{"ami-al2-gpu", "ami-al2-x86", "ami-al2-arm"}; !reflect.DeepEqual(images, want) {
		t.Errorf("templates for images %v, want %v", images, want)
	}
}
