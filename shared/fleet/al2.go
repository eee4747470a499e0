package fleet

import (
	"encoding/base64"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"

	"github.com/nodewright/nodewright/shared/apis"
)

// eksBootstrapScript is where the EKS-optimized AL2 AMI keeps its bootstrap.
const eksBootstrapScript = "/etc/eks/bootstrap.sh"

// AL2UserData is the user data of an Amazon Linux 2 node, base64-encoded as
// launch templates carry it: a MIME multi-part document with the parts of
// the EC2NodeClass's own spec.userData first (a MIME document's parts, else
// the whole of it as one shell script) and a shell script last that runs the
// AMI's bootstrap.sh with the cluster, the node's labels and taints and the
// class's kubelet settings, as Karpenter writes it: cloud-init runs the
// parts in order, so the user's script prepares the node and Nodewright's
// joins it to the cluster.
func AL2UserData(c Cluster, custom *string, s NodeSettings) (string, error) {
	var parts []userDataPart
	if custom != nil && strings.TrimSpace(*custom) != "" {
		if isMIME(*custom) {
			p, err := mimeParts(strings.TrimSpace(*custom))
			if err != nil {
				return "", fmt.Errorf("spec.userData: %w", err)
			}
			parts = p
		} else {
			parts = []userDataPart{{ContentType: contentTypeShell, Content: *custom}}
		}
	}
	parts = append(parts, userDataPart{ContentType: contentTypeShell, Content: al2Bootstrap(c, s)})
	doc, err := mimeDocument(parts)
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(doc), nil
}

// isMIME reports whether user data is a MIME document (it begins with one
// of the headers cloud-init looks for).
func isMIME(ud string) bool {
	t := strings.TrimSpace(ud)
	return strings.HasPrefix(t, "MIME-Version:") || strings.HasPrefix(t, "Content-Type:")
}

// al2Bootstrap is the shell script that joins an AL2 node: bootstrap.sh's
// options take their values as separate words (bootstrap.sh does not read
// --option=value), the kubelet's flags go in one --kubelet-extra-args word.
func al2Bootstrap(c Cluster, s NodeSettings) string {
	var b strings.Builder
	b.WriteString("#!/bin/bash -xe\n")
	b.WriteString("exec > >(tee /var/log/user-data.log | logger -t user-data -s 2>/dev/console) 2>&1\n")
	fmt.Fprintf(&b, "%s %s --apiserver-endpoint %s --b64-cluster-ca %s", eksBootstrapScript,
		shellQuote(c.Name), shellQuote(c.Endpoint), shellQuote(base64.StdEncoding.EncodeToString(c.CertificateAuthority)))
	opt := func(name, value string) { fmt.Fprintf(&b, " \\\n  %s %s", name, value) }
	if k := s.Kubelet; k != nil && len(k.ClusterDNS) > 0 {
		if ip := net.ParseIP(k.ClusterDNS[0]); ip != nil && ip.To4() == nil {
			opt("--ip-family", "ipv6")
		}
		opt("--dns-cluster-ip", shellQuote(k.ClusterDNS[0]))
	}
	if s.Kubelet != nil && s.Kubelet.MaxPods != nil {
		// bootstrap.sh would otherwise set its own ENI-based limit.
		opt("--use-max-pods", "false")
	}
	if args := kubeletExtraArgs(s); len(args) > 0 {
		opt("--kubelet-extra-args", shellQuote(strings.Join(args, " ")))
	}
	if s.InstanceStorePolicy != nil && *s.InstanceStorePolicy == apis.InstanceStorePolicyRAID0 {
		opt("--local-disks", "raid0")
	}
	b.WriteString("\n")
	return b.String()
}

// kubeletExtraArgs are the kubelet flags that carry a node's labels, taints
// and its EC2NodeClass's kubelet settings on the images whose bootstrap
// takes flags (AL2's bootstrap.sh, Windows's Start-EKSBootstrap.ps1), in a
// fixed order with maps sorted by key, so equal settings give equal user
// data. Lists of pairs are double-quoted, as Karpenter writes them.
func kubeletExtraArgs(s NodeSettings) []string {
	var args []string
	pairs := func(flag string, m map[string]string, sep string) {
		if len(m) == 0 {
			return
		}
		kv := make([]string, 0, len(m))
		for _, k := range slices.Sorted(maps.Keys(m)) {
			kv = append(kv, k+sep+m[k])
		}
		args = append(args, fmt.Sprintf("%s=%q", flag, strings.Join(kv, ",")))
	}
	pairs("--node-labels", s.Labels, "=")
	if len(s.Taints) > 0 {
		ts := make([]string, 0, len(s.Taints))
		for _, t := range s.Taints {
			ts = append(ts, taintFlag(t))
		}
		args = append(args, fmt.Sprintf("--register-with-taints=%q", strings.Join(ts, ",")))
	}
	k := s.Kubelet
	if k == nil {
		return args
	}
	number := func(flag string, v *int32) {
		if v != nil {
			args = append(args, fmt.Sprintf("%s=%d", flag, *v))
		}
	}
	number("--max-pods", k.MaxPods)
	number("--pods-per-core", k.PodsPerCore)
	pairs("--system-reserved", k.SystemReserved, "=")
	pairs("--kube-reserved", k.KubeReserved, "=")
	pairs("--eviction-hard", k.EvictionHard, "<")
	pairs("--eviction-soft", k.EvictionSoft, "<")
	if len(k.EvictionSoftGracePeriod) > 0 {
		grace := make(map[string]string, len(k.EvictionSoftGracePeriod))
		for signal, d := range k.EvictionSoftGracePeriod {
			grace[signal] = d.Duration.String()
		}
		pairs("--eviction-soft-grace-period", grace, "=")
	}
	number("--eviction-max-pod-grace-period", k.EvictionMaxPodGracePeriod)
	number("--image-gc-high-threshold", k.ImageGCHighThresholdPercent)
	number("--image-gc-low-threshold", k.ImageGCLowThresholdPercent)
	if k.CPUCFSQuota != nil {
		args = append(args, fmt.Sprintf("--cpu-cfs-quota=%t", *k.CPUCFSQuota))
	}
	return args
}

// shellQuote is s as one single-quoted POSIX shell word.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
