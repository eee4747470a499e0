package fleet

import (
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/pelletier/go-toml/v2"

	"github.com/nodewright/nodewright/shared/apis"
)

// Bottlerocket's settings that Nodewright writes, under [settings.kubernetes]
// and [settings.bootstrap-commands]. Bottlerocket's user data is one TOML
// document of its API settings.
const (
	brSettings          = "settings"
	brKubernetes        = "kubernetes"
	brBootstrapCommands = "bootstrap-commands"
	// brMountInstanceStorage is the bootstrap command that puts containerd's
	// and the kubelet's state on a RAID-0 of the instance store (the name
	// Karpenter gives it, so a node reads the same under either).
	brMountInstanceStorage = "000-mount-instance-storage"
)

// Bottlerocket's default block devices, as Karpenter lays them out: a small
// OS volume and the data volume that holds containers and the kubelet (the
// node's ephemeral storage).
const (
	bottlerocketOSDevice     = "/dev/xvda"
	bottlerocketOSVolumeGi   = 4
	bottlerocketDataDevice   = "/dev/xvdb"
	bottlerocketDataVolumeGi = 20
)

// BottlerocketUserData is the user data of a Bottlerocket node,
// base64-encoded as launch templates carry it: the EC2NodeClass's own
// spec.userData (a TOML document of Bottlerocket settings) with the
// cluster, the node's labels and taints and the class's kubelet settings set
// in [settings.kubernetes], as Karpenter merges them. The user's other
// settings stay; the cluster (name, API server, certificate) and the taints
// are Nodewright's alone; labels are merged, Nodewright's winning on a clash;
// a kubelet setting the class sets replaces the user's.
func BottlerocketUserData(c Cluster, custom *string, s NodeSettings) (string, error) {
	doc := map[string]any{}
	if custom != nil && strings.TrimSpace(*custom) != "" {
		if err := toml.Unmarshal([]byte(*custom), &doc); err != nil {
			return "", fmt.Errorf("spec.userData: Bottlerocket user data is TOML: %w", err)
		}
	}
	settings, err := table(doc, brSettings, brSettings)
	if err != nil {
		return "", fmt.Errorf("spec.userData: %w", err)
	}
	k8s, err := table(settings, brKubernetes, brSettings+"."+brKubernetes)
	if err != nil {
		return "", fmt.Errorf("spec.userData: %w", err)
	}
	k8s["cluster-name"] = c.Name
	k8s["api-server"] = c.Endpoint
	k8s["cluster-certificate"] = base64.StdEncoding.EncodeToString(c.CertificateAuthority)

	labels, err := table(k8s, "node-labels", "settings.kubernetes.node-labels")
	if err != nil {
		return "", fmt.Errorf("spec.userData: %w", err)
	}
	for k, v := range s.Labels {
		labels[k] = v
	}
	if len(labels) == 0 {
		delete(k8s, "node-labels")
	}
	delete(k8s, "node-taints")
	if len(s.Taints) > 0 {
		taints := map[string]any{}
		for _, t := range s.Taints {
			prev, _ := taints[t.Key].([]string)
			taints[t.Key] = append(prev, t.Value+":"+string(t.Effect))
		}
		k8s["node-taints"] = taints
	}
	bottlerocketKubelet(k8s, s.Kubelet)

	if s.InstanceStorePolicy != nil && *s.InstanceStorePolicy == apis.InstanceStorePolicyRAID0 {
		cmds, err := table(settings, brBootstrapCommands, brSettings+"."+brBootstrapCommands)
		if err != nil {
			return "", fmt.Errorf("spec.userData: %w", err)
		}
		cmds[brMountInstanceStorage] = map[string]any{
			"commands": [][]string{
				{"apiclient", "ephemeral-storage", "init"},
				{"apiclient", "ephemeral-storage", "bind", "--dirs", "/var/lib/containerd", "/var/lib/kubelet", "/var/log/pods"},
			},
			"essential": true,
			"mode":      "always",
		}
	}
	b, err := toml.Marshal(doc)
	if err != nil {
		return "", fmt.Errorf("bottlerocket user data: %w", err)
	}
	return base64.StdEncoding.EncodeToString(b), nil
}

// bottlerocketKubelet sets the EC2NodeClass's kubelet settings under their
// Bottlerocket names. podsPerCore has none: Bottlerocket ignores it, as
// Karpenter does (and the solve does not count it for Bottlerocket).
func bottlerocketKubelet(k8s map[string]any, k *apis.KubeletConfiguration) {
	if k == nil {
		return
	}
	if len(k.ClusterDNS) > 0 {
		k8s["cluster-dns-ip"] = k.ClusterDNS[0]
	}
	if k.MaxPods != nil {
		k8s["max-pods"] = int64(*k.MaxPods)
	}
	for name, m := range map[string]map[string]string{
		"system-reserved": k.SystemReserved, "kube-reserved": k.KubeReserved,
		"eviction-hard": k.EvictionHard, "eviction-soft": k.EvictionSoft,
	} {
		if m != nil {
			k8s[name] = m
		}
	}
	if k.EvictionSoftGracePeriod != nil {
		grace := map[string]string{}
		for signal, d := range k.EvictionSoftGracePeriod {
			grace[signal] = d.Duration.String()
		}
		k8s["eviction-soft-grace-period"] = grace
	}
	if k.EvictionMaxPodGracePeriod != nil {
		k8s["eviction-max-pod-grace-period"] = int64(*k.EvictionMaxPodGracePeriod)
	}
	// Bottlerocket takes the image GC thresholds as strings.
	if k.ImageGCHighThresholdPercent != nil {
		k8s["image-gc-high-threshold-percent"] = fmt.Sprint(*k.ImageGCHighThresholdPercent)
	}
	if k.ImageGCLowThresholdPercent != nil {
		k8s["image-gc-low-threshold-percent"] = fmt.Sprint(*k.ImageGCLowThresholdPercent)
	}
	if k.CPUCFSQuota != nil {
		k8s["cpu-cfs-quota-enforced"] = *k.CPUCFSQuota
	}
}

// table is parent[key] as a TOML table, made when absent; path names it in
// the error when the user's document has something else there.
func table(parent map[string]any, key, path string) (map[string]any, error) {
	v, ok := parent[key]
	if !ok {
		t := map[string]any{}
		parent[key] = t
		return t, nil
	}
	t, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%s is a %T, want a table", path, v)
	}
	return t, nil
}
