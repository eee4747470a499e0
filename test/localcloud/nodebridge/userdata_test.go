package nodebridge

import (
	"encoding/base64"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/fleet"
)

const mimeUserData = `MIME-Version: 1.0
Content-Type: multipart/mixed; boundary="BOUNDARY"

--BOUNDARY
Content-Type: text/x-shellscript; charset="us-ascii"

#!/bin/bash
echo "--node-labels=ignored=true"

--BOUNDARY
Content-Type: application/node.eks.aws

apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  cluster:
    name: c1
  kubelet:
    config:
      maxPods: 110
      registerWithTaints:
      - key: karpenter.sh/unregistered
        effect: NoExecute
    flags:
    - --node-labels=karpenter.sh/nodepool=default,team=blue
    - --register-with-taints=dedicated=gpu:NoSchedule,spot:PreferNoSchedule

--BOUNDARY
Content-Type: application/node.eks.aws

apiVersion: node.eks.aws/v1alpha1
kind: NodeConfig
spec:
  kubelet:
    flags:
    - --node-labels=team=red,extra=1

--BOUNDARY--
`

const bottlerocketTOML = `[settings.kubernetes]
cluster-name = 'c1'
max-pods = 58

[settings.kubernetes.node-labels]
'karpenter.sh/nodepool' = 'default'
team = 'blue'

[settings.kubernetes.node-taints]
'karpenter.sh/unregistered' = [':NoExecute']
dedicated = ['gpu:NoSchedule', 'gpu:NoExecute']

[settings.host-containers.admin]
enabled = true
`

func TestParseUserData(t *testing.T) {
	wantMIME := KubeletSettings{
		Labels: map[string]string{"karpenter.sh/nodepool": "default", "team": "red", "extra": "1"},
		Taints: []corev1.Taint{
			{Key: "karpenter.sh/unregistered", Effect: corev1.TaintEffectNoExecute},
			{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule},
			{Key: "spot", Effect: corev1.TaintEffectPreferNoSchedule},
		},
		MaxPods: 110,
	}
	bare := "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    flags: [\"--node-labels=a=b\"]\n"
	tests := []struct {
		name    string
		in      string
		want    KubeletSettings
		wantErr string
	}{
		{name: "MIME multi-part, NodeConfigs merged in order", in: mimeUserData, want: wantMIME},
		{name: "base64 as EC2 returns it", in: base64.StdEncoding.EncodeToString([]byte(mimeUserData)), want: wantMIME},
		{name: "bare NodeConfig", in: bare, want: KubeletSettings{Labels: map[string]string{"a": "b"}}},
		{name: "empty", in: "", want: KubeletSettings{Labels: map[string]string{}}},
		{name: "shell script only", in: "#!/bin/bash\necho hi\n", want: KubeletSettings{Labels: map[string]string{}}},
		{name: "bad taint effect", in: strings.Replace(bare, "--node-labels=a=b", "--register-with-taints=a=b:Sometimes", 1), wantErr: "effect"},
		{name: "label without value", in: strings.Replace(bare, "a=b", "novalue", 1), wantErr: "key=value"},
		{name: "Bottlerocket TOML", in: bottlerocketTOML, want: KubeletSettings{
			Labels: map[string]string{"karpenter.sh/nodepool": "default", "team": "blue"},
			Taints: []corev1.Taint{
				{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule},
				{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoExecute},
				{Key: "karpenter.sh/unregistered", Effect: corev1.TaintEffectNoExecute},
			},
			MaxPods: 58,
		}},
		{name: "Bottlerocket TOML as EC2 returns it", in: base64.StdEncoding.EncodeToString([]byte("[settings.kubernetes]\nnode-labels = { a = 'b' }\n")),
			want: KubeletSettings{Labels: map[string]string{"a": "b"}}},
		{name: "Bottlerocket taint without an effect", in: "[settings.kubernetes.node-taints]\nx = ['y']\n", wantErr: "value:Effect"},
		{name: "Bottlerocket taint with a bad effect", in: "[settings.kubernetes.node-taints]\nx = ['y:Sometimes']\n", wantErr: "effect"},
		{name: "wrong kind in a NodeConfig part", in: strings.Replace(mimeUserData, "kind: NodeConfig\nspec:\n  kubelet:\n    flags:\n    - --node-labels=team=red", "kind: Other\nspec:\n  kubelet:\n    flags:\n    - --node-labels=team=red", 1), wantErr: "NodeConfig 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseUserData([]byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to mention %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.want.OS == "" {
				tt.want.OS = OSLinux
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestNodeName(t *testing.T) {
	for _, tt := range []struct{ dns, ip, want string }{
		{"ip-10-0-1-23.ec2.internal", "10.0.1.23", "ip-10-0-1-23.ec2.internal"},
		{"", "10.0.2.7", "ip-10-0-2-7.ec2.internal"},
		{"", "", ""},
	} {
		if got := NodeName(tt.dns, tt.ip); got != tt.want {
			t.Errorf("NodeName(%q, %q) = %q, want %q", tt.dns, tt.ip, got, tt.want)
		}
	}
}

func TestZoneID(t *testing.T) {
	for zone, want := range map[string]string{"us-east-1a": "use1-az1", "eu-west-2c": "euw2-az3", "x": ""} {
		if got := zoneID(zone); got != want {
			t.Errorf("zoneID(%q) = %q, want %q", zone, got, want)
		}
	}
}

// FuzzParseUserData: any user data gives settings or an error, never a panic.
func FuzzParseUserData(f *testing.F) {
	f.Add([]byte(mimeUserData))
	f.Add([]byte(bottlerocketTOML))
	f.Add([]byte("apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec: {kubelet: {flags: [--register-with-taints=a:NoSchedule]}}\n"))
	f.Add([]byte("Content-Type: multipart/mixed; boundary=x\n\n--x\nContent-Type: application/node.eks.aws\n\nkind: NodeConfig\n--x--"))
	f.Fuzz(func(t *testing.T, data []byte) {
		ks, err := ParseUserData(data)
		if err == nil && ks.Labels == nil {
			t.Error("nil labels without an error")
		}
	})
}

// TestParsesTheLaunchersUserData: the user data shared/fleet writes for a
// node (the user's own NodeConfig first, Nodewright's last) registers the
// node with the plan's labels, taints and pod limit.
func TestParsesTheLaunchersUserData(t *testing.T) {
	custom := "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    config:\n      maxPods: 10\n    flags:\n    - --node-labels=team=overridden,extra=yes\n"
	maxPods := int32(42)
	ud, err := fleet.AL2023UserData(fleet.Cluster{Name: "c1", Endpoint: "https://127.0.0.1:6443", CertificateAuthority: []byte("ca"), ServiceCIDR: "10.96.0.0/16"},
		&custom, fleet.NodeSettings{
			Labels:  map[string]string{"karpenter.sh/nodepool": "default", "team": "platform"},
			Taints:  []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}, {Key: "startup", Effect: corev1.TaintEffectNoExecute}},
			Kubelet: &apis.KubeletConfiguration{MaxPods: &maxPods},
		})
	if err != nil {
		t.Fatal(err)
	}
	ks, err := ParseUserData([]byte(ud))
	if err != nil {
		t.Fatal(err)
	}
	wantLabels := map[string]string{"karpenter.sh/nodepool": "default", "team": "platform", "extra": "yes"}
	wantTaints := []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}, {Key: "startup", Effect: corev1.TaintEffectNoExecute}}
	if !reflect.DeepEqual(ks.Labels, wantLabels) || !reflect.DeepEqual(ks.Taints, wantTaints) || ks.MaxPods != 42 {
		t.Errorf("settings %+v\nwant labels %v taints %v maxPods 42", ks, wantLabels, wantTaints)
	}
}

// TestParsesTheLaunchersBottlerocketUserData: the TOML shared/fleet writes
// for a Bottlerocket node (merged into the user's own) registers the node
// with the plan's labels, taints and pod limit.
func TestParsesTheLaunchersBottlerocketUserData(t *testing.T) {
	custom := "[settings.kubernetes]\nmax-pods = 10\n[settings.kubernetes.node-labels]\nteam = 'overridden'\nextra = 'yes'\n"
	maxPods := int32(42)
	ud, err := fleet.BottlerocketUserData(fleet.Cluster{Name: "c1", Endpoint: "https://127.0.0.1:6443", CertificateAuthority: []byte("ca")},
		&custom, fleet.NodeSettings{
			Labels:  map[string]string{"karpenter.sh/nodepool": "default", "team": "platform"},
			Taints:  []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}, {Key: "startup", Effect: corev1.TaintEffectNoExecute}},
			Kubelet: &apis.KubeletConfiguration{MaxPods: &maxPods},
		})
	if err != nil {
		t.Fatal(err)
	}
	ks, err := ParseUserData([]byte(ud))
	if err != nil {
		t.Fatal(err)
	}
	wantLabels := map[string]string{"karpenter.sh/nodepool": "default", "team": "platform", "extra": "yes"}
	wantTaints := []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}, {Key: "startup", Effect: corev1.TaintEffectNoExecute}}
	if !reflect.DeepEqual(ks.Labels, wantLabels) || !reflect.DeepEqual(ks.Taints, wantTaints) || ks.MaxPods != 42 {
		t.Errorf("settings %+v\nwant labels %v taints %v maxPods 42", ks, wantLabels, wantTaints)
	}
}

// TestParsesTheLaunchersAL2UserData: the MIME document shared/fleet writes
// for an AL2 node (the user's script first, the bootstrap.sh call last)
// registers the node with the plan's labels, taints and pod limit, and the
// user's script does not count.
func TestParsesTheLaunchersAL2UserData(t *testing.T) {
	custom := "#!/bin/bash\necho '/etc/eks/bootstrap.sh' is called by Nodewright's part\n"
	maxPods := int32(42)
	ud, err := fleet.AL2UserData(fleet.Cluster{Name: "c1", Endpoint: "https://127.0.0.1:6443", CertificateAuthority: []byte("ca")},
		&custom, fleet.NodeSettings{
			Labels:  map[string]string{"karpenter.sh/nodepool": "default", "team": "platform"},
			Taints:  []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}, {Key: "startup", Effect: corev1.TaintEffectNoExecute}},
			Kubelet: &apis.KubeletConfiguration{MaxPods: &maxPods, EvictionHard: map[string]string{"memory.available": "5%"}},
		})
	if err != nil {
		t.Fatal(err)
	}
	ks, err := ParseUserData([]byte(ud))
	if err != nil {
		t.Fatal(err)
	}
	want := KubeletSettings{
		Labels:  map[string]string{"karpenter.sh/nodepool": "default", "team": "platform"},
		Taints:  []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}, {Key: "startup", Effect: corev1.TaintEffectNoExecute}},
		MaxPods: 42, OS: OSLinux,
	}
	if !reflect.DeepEqual(ks, want) {
		t.Errorf("settings %+v\nwant %+v", ks, want)
	}
}

func TestShellWords(t *testing.T) {
	got := shellWords(`/etc/eks/bootstrap.sh 'c 1' --b64 'it'\''s' plain\ word`)
	if want := []string{"/etc/eks/bootstrap.sh", "c 1", "--b64", "it's", "plain word"}; !reflect.DeepEqual(got, want) {
		t.Errorf("shellWords = %q, want %q", got, want)
	}
	got = powershellWords(`& $F -EKSClusterName 'c''1' -KubeletExtraArgs '--a="b" --c=d'`)
	if want := []string{"&", "$F", "-EKSClusterName", "c'1", "-KubeletExtraArgs", `--a="b" --c=d`}; !reflect.DeepEqual(got, want) {
		t.Errorf("powershellWords = %q, want %q", got, want)
	}
}

// TestParsesTheLaunchersWindowsUserData: the PowerShell shared/fleet writes
// for a Windows node (the user's own lines first) registers a Windows node
// with the plan's labels, taints and pod limit.
func TestParsesTheLaunchersWindowsUserData(t *testing.T) {
	custom := "<powershell>\nWrite-Host '& $x -EKSClusterName fake'\n</powershell>"
	maxPods := int32(42)
	ud := fleet.WindowsUserData(fleet.Cluster{Name: "c1", Endpoint: "https://127.0.0.1:6443", CertificateAuthority: []byte("ca")},
		&custom, fleet.NodeSettings{
			Labels:  map[string]string{"karpenter.sh/nodepool": "windows", "team": "platform"},
			Taints:  []corev1.Taint{{Key: "os", Value: "windows", Effect: corev1.TaintEffectNoSchedule}},
			Kubelet: &apis.KubeletConfiguration{MaxPods: &maxPods, ClusterDNS: []string{"10.96.0.10"}},
		})
	ks, err := ParseUserData([]byte(ud))
	if err != nil {
		t.Fatal(err)
	}
	want := KubeletSettings{
		Labels:  map[string]string{"karpenter.sh/nodepool": "windows", "team": "platform"},
		Taints:  []corev1.Taint{{Key: "os", Value: "windows", Effect: corev1.TaintEffectNoSchedule}},
		MaxPods: 42, OS: OSWindows,
	}
	if !reflect.DeepEqual(ks, want) {
		t.Errorf("settings %+v\nwant %+v", ks, want)
	}
}
