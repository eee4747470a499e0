package nodebridge

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"maps"
	"mime"
	"mime/multipart"
	"net/mail"
	"slices"
	"strconv"
	"strings"

	"github.com/pelletier/go-toml/v2"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// KubeletSettings is what the node's user data tells the kubelet about
// registration: labels, taints and a pod limit.
type KubeletSettings struct {
	Labels  map[string]string
	Taints  []corev1.Taint
	MaxPods int32 // 0 = not set
	// OS is the node's operating system, as its kubelet reports it
	// (kubernetes.io/os): windows for a Windows image's user data, else
	// linux.
	OS string
}

// Operating systems a node's user data tells apart.
const (
	OSLinux   = "linux"
	OSWindows = "windows"
)

// nodeConfig is the part of nodeadm's NodeConfig (node.eks.aws/v1alpha1)
// that decides how the node registers.
type nodeConfig struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Spec       struct {
		Kubelet struct {
			Flags  []string `json:"flags"`
			Config struct {
				MaxPods            int32          `json:"maxPods"`
				RegisterWithTaints []corev1.Taint `json:"registerWithTaints"`
			} `json:"config"`
		} `json:"kubelet"`
	} `json:"spec"`
}

const nodeConfigMediaType = "application/node.eks.aws"

// ParseUserData reads a node's user data as its image does: Bottlerocket's
// TOML settings ([settings.kubernetes] node-labels, node-taints, max-pods);
// Windows's PowerShell or AL2's bootstrap.sh shell part, whose call to the
// image's bootstrap passes the kubelet's flags (--node-labels,
// --register-with-taints, --max-pods); else AL2023's as nodeadm does: a
// MIME multi-part document whose application/node.eks.aws parts are
// NodeConfig YAML (or a bare NodeConfig), merged in order. The user data may
// be base64 (as EC2 returns it). Other shell scripts are ignored.
func ParseUserData(data []byte) (KubeletSettings, error) {
	data = maybeBase64(data)
	ks := KubeletSettings{Labels: map[string]string{}, OS: OSLinux}
	if len(bytes.TrimSpace(data)) == 0 {
		return ks, nil
	}
	if br, ok := bottlerocketDoc(data); ok {
		out, err := br.settings()
		out.OS = OSLinux
		return out, err
	}
	flags, windows, ok, err := bootstrapArgs(data)
	if err != nil {
		return ks, err
	}
	if windows {
		ks.OS = OSWindows
	}
	if ok {
		for _, fl := range flags {
			if err := ks.flag(fl); err != nil {
				return ks, fmt.Errorf("user data: bootstrap: %w", err)
			}
		}
		return ks, nil
	}
	docs, err := nodeConfigDocs(data)
	if err != nil {
		return ks, err
	}
	for i, d := range docs {
		if err := ks.merge(d); err != nil {
			return ks, fmt.Errorf("user data: NodeConfig %d: %w", i+1, err)
		}
	}
	return ks, nil
}

// bottlerocketUserData is the part of Bottlerocket's settings that decides
// how the node registers.
type bottlerocketUserData struct {
	Settings struct {
		Kubernetes struct {
			NodeLabels map[string]string   `toml:"node-labels"`
			NodeTaints map[string][]string `toml:"node-taints"`
			MaxPods    int32               `toml:"max-pods"`
		} `toml:"kubernetes"`
	} `toml:"settings"`
}

// bottlerocketDoc reads data as Bottlerocket's TOML user data: a document
// with a [settings.kubernetes] table (AL2023's MIME and YAML are not TOML).
func bottlerocketDoc(data []byte) (bottlerocketUserData, bool) {
	var raw map[string]any
	if toml.Unmarshal(data, &raw) != nil {
		return bottlerocketUserData{}, false
	}
	settings, _ := raw["settings"].(map[string]any)
	if _, ok := settings["kubernetes"].(map[string]any); !ok {
		return bottlerocketUserData{}, false
	}
	var br bottlerocketUserData
	if toml.Unmarshal(data, &br) != nil {
		return bottlerocketUserData{}, false
	}
	return br, true
}

// settings are the node's labels, taints (each key's "value:Effect"
// entries, keys sorted) and pod limit.
func (br bottlerocketUserData) settings() (KubeletSettings, error) {
	k := br.Settings.Kubernetes
	ks := KubeletSettings{Labels: map[string]string{}, MaxPods: k.MaxPods}
	maps.Copy(ks.Labels, k.NodeLabels)
	for _, key := range slices.Sorted(maps.Keys(k.NodeTaints)) {
		for _, ve := range k.NodeTaints[key] {
			value, effect, ok := strings.Cut(ve, ":")
			if !ok {
				return ks, fmt.Errorf("user data: settings.kubernetes.node-taints.%s: %q is not value:Effect", key, ve)
			}
			spec := key + ":" + effect
			if value != "" {
				spec = key + "=" + value + ":" + effect
			}
			t, err := parseTaint(spec)
			if err != nil {
				return ks, fmt.Errorf("user data: settings.kubernetes.node-taints: %w", err)
			}
			ks.Taints = append(ks.Taints, t)
		}
	}
	return ks, nil
}

func maybeBase64(data []byte) []byte {
	s := strings.TrimSpace(string(data))
	if dec, err := base64.StdEncoding.DecodeString(s); err == nil && len(dec) > 0 {
		return dec
	}
	return data
}

// nodeConfigDocs returns the NodeConfig YAML documents in the user data.
func nodeConfigDocs(data []byte) ([][]byte, error) {
	msg, err := mail.ReadMessage(bufio.NewReader(bytes.NewReader(data)))
	if err != nil || msg.Header.Get("Content-Type") == "" {
		// Not MIME: nodeadm accepts a bare NodeConfig document.
		if isNodeConfig(data) {
			return [][]byte{data}, nil
		}
		return nil, nil
	}
	mt, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil {
		return nil, fmt.Errorf("user data: content type: %w", err)
	}
	if !strings.HasPrefix(mt, "multipart/") {
		body, err := io.ReadAll(msg.Body)
		if err != nil {
			return nil, fmt.Errorf("user data: %w", err)
		}
		if mt == nodeConfigMediaType {
			return [][]byte{body}, nil
		}
		return nil, nil
	}
	return multipartNodeConfigs(msg.Body, params["boundary"])
}

func multipartNodeConfigs(body io.Reader, boundary string) ([][]byte, error) {
	if boundary == "" {
		return nil, errors.New("user data: multipart without boundary")
	}
	mr := multipart.NewReader(body, boundary)
	var docs [][]byte
	for {
		part, err := mr.NextPart()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("user data: multipart: %w", err)
		}
		mt, _, _ := mime.ParseMediaType(part.Header.Get("Content-Type"))
		b, err := io.ReadAll(part)
		if err != nil {
			return nil, fmt.Errorf("user data: multipart: %w", err)
		}
		if mt == nodeConfigMediaType {
			docs = append(docs, b)
		}
	}
}

func isNodeConfig(data []byte) bool {
	var nc nodeConfig
	return yaml.Unmarshal(data, &nc) == nil && nc.Kind == "NodeConfig"
}

func (ks *KubeletSettings) merge(doc []byte) error {
	var nc nodeConfig
	if err := yaml.Unmarshal(doc, &nc); err != nil {
		return err
	}
	if nc.Kind != "NodeConfig" || !strings.HasPrefix(nc.APIVersion, "node.eks.aws/") {
		return fmt.Errorf("apiVersion %q kind %q: want node.eks.aws/* NodeConfig", nc.APIVersion, nc.Kind)
	}
	if nc.Spec.Kubelet.Config.MaxPods > 0 {
		ks.MaxPods = nc.Spec.Kubelet.Config.MaxPods
	}
	ks.Taints = append(ks.Taints, nc.Spec.Kubelet.Config.RegisterWithTaints...)
	for _, fl := range nc.Spec.Kubelet.Flags {
		if err := ks.flag(fl); err != nil {
			return err
		}
	}
	return nil
}

// flag applies one kubelet flag: --node-labels, --register-with-taints and
// --max-pods.
func (ks *KubeletSettings) flag(fl string) error {
	name, val, _ := strings.Cut(strings.TrimLeft(fl, "-"), "=")
	switch name {
	case "max-pods":
		n, err := strconv.ParseInt(val, 10, 32)
		if err != nil || n <= 0 {
			return fmt.Errorf("--max-pods: %q is not a positive number", val)
		}
		ks.MaxPods = int32(n)
	case "node-labels":
		for _, kv := range splitList(val) {
			k, v, ok := strings.Cut(kv, "=")
			if !ok || k == "" {
				return fmt.Errorf("--node-labels: %q is not key=value", kv)
			}
			ks.Labels[k] = v
		}
	case "register-with-taints":
		for _, t := range splitList(val) {
			taint, err := parseTaint(t)
			if err != nil {
				return fmt.Errorf("--register-with-taints: %w", err)
			}
			ks.Taints = append(ks.Taints, taint)
		}
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// parseTaint reads key[=value]:Effect as the kubelet does.
func parseTaint(s string) (corev1.Taint, error) {
	kv, effect, ok := strings.Cut(s, ":")
	if !ok {
		return corev1.Taint{}, fmt.Errorf("taint %q: missing :Effect", s)
	}
	switch e := corev1.TaintEffect(effect); e {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
	default:
		return corev1.Taint{}, fmt.Errorf("taint %q: effect %q is not NoSchedule, PreferNoSchedule or NoExecute", s, effect)
	}
	k, v, _ := strings.Cut(kv, "=")
	if k == "" {
		return corev1.Taint{}, fmt.Errorf("taint %q: empty key", s)
	}
	return corev1.Taint{Key: k, Value: v, Effect: corev1.TaintEffect(effect)}, nil
}
