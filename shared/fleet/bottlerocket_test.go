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
	"github.com/pelletier/go-toml/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/apis"
)

// decodeTOML reads base64 Bottlerocket user data back.
func decodeTOML(t *testing.T, b64 string) (string, map[string]any) {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatalf("user data is not base64: %v", err)
	}
	doc := map[string]any{}
	if err := toml.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("user data is not TOML: %v\n%s", err, raw)
	}
	return string(raw), doc
}

// at is the value at a dotted path of TOML tables (keys may hold dots when
// quoted: give them as separate elements).
func at(doc map[string]any, path ...string) any {
	var cur any = doc
	for _, p := range path {
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[p]
	}
	return cur
}

func TestBottlerocketUserData(t *testing.T) {
	raid0 := apis.InstanceStorePolicyRAID0
	classSettings := NodeSettings{
		Labels: map[string]string{"team": "platform", "karpenter.sh/nodepool": "default"},
		Taints: []corev1.Taint{
			{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule},
			{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoExecute},
			{Key: "karpenter.sh/unregistered", Effect: corev1.TaintEffectNoExecute},
		},
		Kubelet: &apis.KubeletConfiguration{
			ClusterDNS: []string{"10.96.0.10"}, MaxPods: aws.Int32(50),
			SystemReserved: map[string]string{"cpu": "100m"}, KubeReserved: map[string]string{"memory": "1Gi"},
			EvictionHard: map[string]string{"memory.available": "5%"}, EvictionSoft: map[string]string{"memory.available": "10%"},
			EvictionSoftGracePeriod:     map[string]metav1.Duration{"memory.available": {Duration: 90 * time.Second}},
			EvictionMaxPodGracePeriod:   aws.Int32(60),
			ImageGCHighThresholdPercent: aws.Int32(85), ImageGCLowThresholdPercent: aws.Int32(80), CPUCFSQuota: aws.Bool(false),
		},
	}
	userTOML := `[settings.kubernetes]
cluster-name = "someone-else"
api-server = "https://elsewhere"
max-pods = 10
eviction-hard = { "nodefs.available" = "15%" }
node-taints = { user = ["x:NoSchedule"] }

[settings.kubernetes.node-labels]
team = "user"
env = "prod"

[settings.host-containers.admin]
enabled = true
`
	ca := base64.StdEncoding.EncodeToString(testCluster.CertificateAuthority)
	tests := []struct {
		name   string
		custom *string
		s      NodeSettings
		want   map[string]any // dotted path -> value
		absent []string
	}{
		{name: "the class's labels, taints and kubelet settings", s: classSettings, want: map[string]any{
			"settings.kubernetes.cluster-name":                                "my-production-cluster",
			"settings.kubernetes.api-server":                                  "https://127.0.0.1:6443",
			"settings.kubernetes.cluster-certificate":                         ca,
			"settings.kubernetes.cluster-dns-ip":                              "10.96.0.10",
			"settings.kubernetes.max-pods":                                    int64(50),
			"settings.kubernetes.node-labels.team":                            "platform",
			"settings.kubernetes.node-labels.karpenter.sh/nodepool":           "default",
			"settings.kubernetes.node-taints.dedicated":                       []any{"gpu:NoSchedule", "gpu:NoExecute"},
			"settings.kubernetes.node-taints.karpenter.sh/unregistered":       []any{":NoExecute"},
			"settings.kubernetes.system-reserved.cpu":                         "100m",
			"settings.kubernetes.kube-reserved.memory":                        "1Gi",
			"settings.kubernetes.eviction-hard.memory.available":              "5%",
			"settings.kubernetes.eviction-soft.memory.available":              "10%",
			"settings.kubernetes.eviction-soft-grace-period.memory.available": "1m30s",
			"settings.kubernetes.eviction-max-pod-grace-period":               int64(60),
			"settings.kubernetes.image-gc-high-threshold-percent":             "85",
			"settings.kubernetes.image-gc-low-threshold-percent":              "80",
			"settings.kubernetes.cpu-cfs-quota-enforced":                      false,
		}, absent: []string{"settings.bootstrap-commands"}},
		{name: "merged into the user's TOML: the cluster and taints forced, labels merged, kubelet settings the class sets win",
			custom: &userTOML, s: NodeSettings{Labels: map[string]string{"team": "platform"}, Kubelet: &apis.KubeletConfiguration{MaxPods: aws.Int32(50)}},
			want: map[string]any{
				"settings.kubernetes.cluster-name":                   "my-production-cluster",
				"settings.kubernetes.api-server":                     "https://127.0.0.1:6443",
				"settings.kubernetes.max-pods":                       int64(50),
				"settings.kubernetes.node-labels.team":               "platform",
				"settings.kubernetes.node-labels.env":                "prod",
				"settings.kubernetes.eviction-hard.nodefs.available": "15%",
				"settings.host-containers.admin.enabled":             true,
			}, absent: []string{"settings.kubernetes.node-taints"}},
		{name: "the user's max-pods stays when the class sets none", custom: &userTOML, s: NodeSettings{},
			want: map[string]any{"settings.kubernetes.max-pods": int64(10), "settings.kubernetes.node-labels.team": "user"}},
		{name: "RAID0 mounts the instance store", s: NodeSettings{InstanceStorePolicy: &raid0}, want: map[string]any{
			"settings.bootstrap-commands.000-mount-instance-storage.commands": []any{
				[]any{"apiclient", "ephemeral-storage", "init"},
				[]any{"apiclient", "ephemeral-storage", "bind", "--dirs", "/var/lib/containerd", "/var/lib/kubelet", "/var/log/pods"}},
			"settings.bootstrap-commands.000-mount-instance-storage.essential": true,
			"settings.bootstrap-commands.000-mount-instance-storage.mode":      "always",
		}, absent: []string{"settings.kubernetes.node-labels", "settings.kubernetes.max-pods"}},
	}
	// Keys under node-labels, node-taints and the kubelet maps hold dots:
	// split a path after those tables' names.
	split := func(path string) []string {
		for _, tbl := range []string{"node-labels.", "node-taints.", "system-reserved.", "kube-reserved.", "eviction-hard.",
			"eviction-soft.", "eviction-soft-grace-period.", "000-mount-instance-storage."} {
			if before, key, ok := strings.Cut(path, tbl); ok {
				return append(strings.Split(before+strings.TrimSuffix(tbl, "."), "."), key)
			}
		}
		return strings.Split(path, ".")
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b64, err := BottlerocketUserData(testCluster, tt.custom, tt.s)
			if err != nil {
				t.Fatal(err)
			}
			raw, doc := decodeTOML(t, b64)
			for path, want := range tt.want {
				if got := at(doc, split(path)...); !reflect.DeepEqual(got, want) {
					t.Errorf("%s = %#v, want %#v\n%s", path, got, want, raw)
				}
			}
			for _, path := range tt.absent {
				if got := at(doc, split(path)...); got != nil {
					t.Errorf("%s = %#v, want it absent\n%s", path, got, raw)
				}
			}
			again, _ := BottlerocketUserData(testCluster, tt.custom, tt.s)
			if again != b64 {
				t.Error("user data differs between two calls")
			}
		})
	}
}

// TestBottlerocketUserDataLines pins the document's text: Bottlerocket reads
// its settings tables by these names.
func TestBottlerocketUserDataLines(t *testing.T) {
	b64, err := BottlerocketUserData(testCluster, nil, NodeSettings{
		Labels: map[string]string{"team": "platform"},
		Taints: []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}},
	})
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := decodeTOML(t, b64)
	for _, line := range []string{
		"[settings.kubernetes]",
		"cluster-name = 'my-production-cluster'",
		"api-server = 'https://127.0.0.1:6443'",
		"[settings.kubernetes.node-labels]",
		"team = 'platform'",
		"[settings.kubernetes.node-taints]",
		"dedicated = ['gpu:NoSchedule']",
	} {
		if !strings.Contains(raw, line+"\n") {
			t.Errorf("no line %q in\n%s", line, raw)
		}
	}
}

func TestBottlerocketUserDataRefusesBadTOML(t *testing.T) {
	for _, custom := range []string{"settings = [", "settings = 'flat'", "[settings]\nkubernetes = 3\n", "[settings.kubernetes]\nnode-labels = 'x'\n"} {
		if _, err := BottlerocketUserData(testCluster, &custom, NodeSettings{}); err == nil || !strings.Contains(err.Error(), "spec.userData") {
			t.Errorf("user data %q: err %v, want a spec.userData error", custom, err)
		}
	}
}

func TestBottlerocketParameters(t *testing.T) {
	want := func(version string) []aliasParameter {
		return []aliasParameter{
			{Name: "/aws/service/bottlerocket/aws-k8s-1.35/x86_64/" + version + "/image_id", Arch: "amd64", Variant: VariantStandard},
			{Name: "/aws/service/bottlerocket/aws-k8s-1.35/x86_64/" + version + "/image_id", Arch: "amd64", Variant: VariantNeuron},
			{Name: "/aws/service/bottlerocket/aws-k8s-1.35-nvidia/x86_64/" + version + "/image_id", Arch: "amd64", Variant: VariantNvidia},
			{Name: "/aws/service/bottlerocket/aws-k8s-1.35/arm64/" + version + "/image_id", Arch: "arm64", Variant: VariantStandard},
			{Name: "/aws/service/bottlerocket/aws-k8s-1.35-nvidia/arm64/" + version + "/image_id", Arch: "arm64", Variant: VariantNvidia},
		}
	}
	for _, tt := range []struct{ version, path string }{{"latest", "latest"}, {"v1.46.0", "1.46.0"}, {"1.46.0", "1.46.0"}} {
		if got := BottlerocketParameters("1.35", tt.version); !reflect.DeepEqual(got, want(tt.path)) {
			t.Errorf("%s: %+v, want %+v", tt.version, got, want(tt.path))
		}
	}
	if _, err := aliasParameters("ubuntu", "1.35", "latest"); err == nil {
		t.Error("ubuntu alias resolved")
	}
}

// TestLaunchBottlerocket launches a class with alias bottlerocket@latest: the
// GPU type boots the nvidia image, every template carries the TOML user data
// and Bottlerocket's two default volumes.
func TestLaunchBottlerocket(t *testing.T) {
	f := newFixture(t)
	nc := defaultNodeClass()
	nc.Spec.AMISelectorTerms = []apis.AMISelectorTerm{{Alias: "bottlerocket@latest"}}
	nc.Spec.BlockDeviceMappings = nil
	if _, err := f.l.Launch(context.Background(), Request{Name: "default-abcde", NodeClass: nc,
		Claim: claim([]string{"g5.xlarge", "c5.large", "m7g.large"}, []string{"us-east-1c"}, "on-demand")}); err != nil {
		t.Fatal(err)
	}
	var images []string
	for _, lt := range f.ec2.createLT {
		d := lt.LaunchTemplateData
		images = append(images, aws.ToString(d.ImageId))
		_, doc := decodeTOML(t, aws.ToString(d.UserData))
		if got := at(doc, "settings", "kubernetes", "cluster-name"); got != "my-production-cluster" {
			t.Errorf("%s: cluster-name %v", aws.ToString(d.ImageId), got)
		}
		if got := at(doc, "settings", "kubernetes", "node-labels", "team"); got != "platform" {
			t.Errorf("%s: node label team %v", aws.ToString(d.ImageId), got)
		}
		var devices []string
		for _, b := range d.BlockDeviceMappings {
			devices = append(devices, fmt.Sprintf("%s=%s/%d", aws.ToString(b.DeviceName), b.Ebs.VolumeType, aws.ToInt32(b.Ebs.VolumeSize)))
		}
		if want := []string{"/dev/xvda=gp3/4", "/dev/xvdb=gp3/20"}; !reflect.DeepEqual(devices, want) {
			t.Errorf("block devices %v, want %v", devices, want)
		}
	}
	if want := []string{"ami-br-gpu-x86", "ami-br-x86", "ami-br-arm"}; !reflect.DeepEqual(images, want) {
		t.Errorf("templates for images %v, want %v", images, want)
	}
}
