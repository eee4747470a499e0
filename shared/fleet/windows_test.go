package fleet

import (
	"context"
	"encoding/base64"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/nodewright/nodewright/shared/apis"
)

func decodeWindows(t *testing.T, b64 string) string {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatalf("user data is not base64: %v", err)
	}
	return string(raw)
}

func TestWindowsUserData(t *testing.T) {
	ca := base64.StdEncoding.EncodeToString(testCluster.CertificateAuthority)
	labels := map[string]string{"team": "platform", "karpenter.sh/nodepool": "default"}
	call := "& $EKSBootstrapScriptFile -EKSClusterName 'my-production-cluster' -APIServerEndpoint 'https://127.0.0.1:6443' -Base64ClusterCA '" + ca + "'"
	own := "Write-Host 'my own setup'"
	tagged := "<powershell>\n" + own + "\n</powershell>"
	tests := []struct {
		name   string
		custom *string
		s      NodeSettings
		want   []string // lines, in order
		absent []string
	}{
		{name: "labels, taints and every kubelet setting", s: NodeSettings{Labels: labels, Taints: nodeTaints, Kubelet: fullKubelet()},
			want: []string{
				"<powershell>",
				`[string]$EKSBootstrapScriptFile = "$env:ProgramFiles\Amazon\EKS\Start-EKSBootstrap.ps1"`,
				call + " -KubeletExtraArgs '" + wantExtraArgs + "' -DNSClusterIP '10.96.0.10'",
				"</powershell>",
			}},
		{name: "nothing set: the cluster only", s: NodeSettings{}, want: []string{"<powershell>", call, "</powershell>"},
			absent: []string{"-KubeletExtraArgs", "-DNSClusterIP"}},
		{name: "the user's PowerShell runs first", custom: &own, s: NodeSettings{Labels: labels},
			want: []string{"<powershell>", own, call + ` -KubeletExtraArgs '--node-labels="karpenter.sh/nodepool=default,team=platform"'`, "</powershell>"}},
		{name: "the user's own tags are not doubled", custom: &tagged, s: NodeSettings{},
			want: []string{"<powershell>", own, call, "</powershell>"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b64 := WindowsUserData(testCluster, tt.custom, tt.s)
			got := strings.Split(strings.TrimSuffix(decodeWindows(t, b64), "\n"), "\n")
			var kept []string
			for _, l := range got {
				if !strings.HasPrefix(l, "[string]") || strings.Contains(strings.Join(tt.want, "\n"), "[string]") {
					kept = append(kept, l)
				}
			}
			if !reflect.DeepEqual(kept, tt.want) {
				t.Errorf("lines\n%s\nwant\n%s", strings.Join(kept, "\n"), strings.Join(tt.want, "\n"))
			}
			for _, s := range tt.absent {
				if strings.Contains(strings.Join(got, "\n"), s) {
					t.Errorf("user data has %q", s)
				}
			}
			if WindowsUserData(testCluster, tt.custom, tt.s) != b64 {
				t.Error("user data differs between two calls")
			}
		})
	}
}

func TestPSQuote(t *testing.T) {
	if got, want := psQuote("it's"), `'it''s'`; got != want {
		t.Errorf("psQuote = %s, want %s", got, want)
	}
}

func TestWindowsParameters(t *testing.T) {
	for family, year := range map[string]string{"windows2019": "2019", "windows2022": "2022", "windows2025": "2025"} {
		params, err := aliasParameters(family, "1.35", "latest")
		if err != nil {
			t.Fatal(err)
		}
		want := []aliasParameter{{Name: "/aws/service/ami-windows-latest/Windows_Server-" + year + "-English-Core-EKS_Optimized-1.35/image_id", Arch: "amd64"}}
		if !reflect.DeepEqual(params, want) {
			t.Errorf("%s: %+v, want %+v", family, params, want)
		}
		if _, err := aliasParameters(family, "1.35", "v20250101"); err == nil || !strings.Contains(err.Error(), family+"@latest") {
			t.Errorf("%s@v20250101: err %v, want one naming %s@latest", family, err, family)
		}
	}
	if got := apis.WindowsBuild(apis.AMIFamilyWindows2022); got != "10.0.20348" {
		t.Errorf("WindowsBuild(Windows2022) = %q", got)
	}
	if got := apis.WindowsBuild(apis.AMIFamilyAL2023); got != "" {
		t.Errorf("WindowsBuild(AL2023) = %q, want none", got)
	}
}

// TestLaunchWindows launches a class with alias windows2022@latest: the
// x86 types (GPU included) boot the one Windows image, the Graviton type
// has none, and the template carries the PowerShell user data and the
// 50 GiB root volume.
func TestLaunchWindows(t *testing.T) {
	f := newFixture(t)
	nc := defaultNodeClass()
	nc.Spec.AMISelectorTerms = []apis.AMISelectorTerm{{Alias: "windows2022@latest"}}
	nc.Spec.BlockDeviceMappings = nil
	if _, err := f.l.Launch(context.Background(), Request{Name: "default-abcde", NodeClass: nc,
		Claim: claim([]string{"g5.xlarge", "c5.large"}, []string{"us-east-1c"}, "on-demand")}); err != nil {
		t.Fatal(err)
	}
	if len(f.ec2.createLT) != 1 {
		t.Fatalf("%d launch templates, want 1 (one image)", len(f.ec2.createLT))
	}
	d := f.ec2.createLT[0].LaunchTemplateData
	if got := aws.ToString(d.ImageId); got != "ami-win2022" {
		t.Errorf("image %s, want ami-win2022", got)
	}
	if ud := decodeWindows(t, aws.ToString(d.UserData)); !strings.HasPrefix(ud, "<powershell>\n") || !strings.Contains(ud, "-EKSClusterName 'my-production-cluster'") ||
		!strings.Contains(ud, "team=platform") {
		t.Errorf("user data\n%s", ud)
	}
	var devices []string
	for _, b := range d.BlockDeviceMappings {
		devices = append(devices, fmt.Sprintf("%s=%s/%d", aws.ToString(b.DeviceName), b.Ebs.VolumeType, aws.ToInt32(b.Ebs.VolumeSize)))
	}
	if want := []string{"/dev/sda1=gp3/50"}; !reflect.DeepEqual(devices, want) {
		t.Errorf("block devices %v, want %v", devices, want)
	}
	if _, err := f.l.Launch(context.Background(), Request{Name: "default-fghij", NodeClass: nc,
		Claim: claim([]string{"m7g.large"}, []string{"us-east-1c"}, "on-demand")}); err == nil || !strings.Contains(err.Error(), "no arm64") {
		t.Errorf("a Graviton claim on Windows: err %v, want no arm64 AMI", err)
	}
}
