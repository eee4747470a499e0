package fleet

import (
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/nodewright/nodewright/shared/apis"
)

// windowsRelease is one Windows Server release Karpenter launches, by its
// year.
type windowsRelease struct {
	Year string
}

// windowsReleases are the Windows alias families' releases. Only Server
// Core images are published EKS-optimized, and only as latest.
var windowsReleases = map[string]windowsRelease{
	"windows2019": {Year: "2019"},
	"windows2022": {Year: "2022"},
	"windows2025": {Year: "2025"},
}

// Windows user data is a PowerShell block that runs the EKS-optimized
// image's bootstrap script.
const (
	powershellOpen  = "<powershell>"
	powershellClose = "</powershell>"
	// windowsBootstrapScript is where the image keeps its bootstrap.
	windowsBootstrapScript = `$env:ProgramFiles\Amazon\EKS\Start-EKSBootstrap.ps1`
	// Windows's default root volume (Karpenter's): Windows needs more
	// room than Linux.
	windowsRootDevice   = "/dev/sda1"
	windowsRootVolumeGi = 50
)

// WindowsParameters is the public SSM parameter that names the
// EKS-optimized Windows Server Core AMI of release w for Kubernetes minor
// version k8s:
// /aws/service/ami-windows-latest/Windows_Server-<year>-English-Core-EKS_Optimized-<k8s>/image_id,
// as Karpenter reads it. Windows images are x86_64 only, and one image
// boots every type (GPU drivers included); AWS publishes no pinned
// releases, so the version must be latest.
func WindowsParameters(w windowsRelease, k8s, version string) ([]aliasParameter, error) {
	if version != apis.AliasVersionLatest {
		return nil, fmt.Errorf("alias windows%s@%s: Windows images are published as latest only; use windows%s@latest", w.Year, version, w.Year)
	}
	return []aliasParameter{{
		Name: fmt.Sprintf("/aws/service/ami-windows-latest/Windows_Server-%s-English-Core-EKS_Optimized-%s/image_id", w.Year, k8s),
		Arch: "amd64",
	}}, nil
}

// WindowsUserData is the user data of a Windows node, base64-encoded as
// launch templates carry it: one PowerShell block that runs the
// EC2NodeClass's own spec.userData first (PowerShell, with or without its
// own <powershell> tags) and then the image's Start-EKSBootstrap.ps1 with
// the cluster, the node's labels and taints and the class's kubelet
// settings, as Karpenter writes it. Windows has no instance store policy.
func WindowsUserData(c Cluster, custom *string, s NodeSettings) string {
	var b strings.Builder
	b.WriteString(powershellOpen + "\n")
	if custom != nil && strings.TrimSpace(*custom) != "" {
		own := strings.TrimSpace(*custom)
		own = strings.TrimSpace(strings.TrimSuffix(strings.TrimPrefix(own, powershellOpen), powershellClose))
		b.WriteString(own + "\n")
	}
	fmt.Fprintf(&b, "[string]$EKSBootstrapScriptFile = \"%s\"\n", windowsBootstrapScript)
	fmt.Fprintf(&b, "& $EKSBootstrapScriptFile -EKSClusterName %s -APIServerEndpoint %s -Base64ClusterCA %s",
		psQuote(c.Name), psQuote(c.Endpoint), psQuote(base64.StdEncoding.EncodeToString(c.CertificateAuthority)))
	if args := kubeletExtraArgs(s); len(args) > 0 {
		fmt.Fprintf(&b, " -KubeletExtraArgs %s", psQuote(strings.Join(args, " ")))
	}
	if k := s.Kubelet; k != nil && len(k.ClusterDNS) > 0 {
		fmt.Fprintf(&b, " -DNSClusterIP %s", psQuote(k.ClusterDNS[0]))
	}
	b.WriteString("\n" + powershellClose + "\n")
	return base64.StdEncoding.EncodeToString([]byte(b.String()))
}

// psQuote is s as one single-quoted PowerShell string.
func psQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}
