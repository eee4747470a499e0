package fleet

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"mime"
	"mime/multipart"
	"net/mail"
	"net/textproto"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/nodewright/nodewright/shared/apis"
)

// MIME content types of AL2023 user data parts.
const (
	contentTypeNodeConfig = "application/node.eks.aws"
	contentTypeShell      = `text/x-shellscript; charset="us-ascii"`
	nodeConfigAPIVersion  = "node.eks.aws/v1alpha1"
	defaultBoundary       = "//"
)

// NodeSettings are what a node registers with: labels and taints passed to
// the kubelet, and the EC2NodeClass's kubelet settings and instance store
// policy.
type NodeSettings struct {
	Labels              map[string]string
	Taints              []corev1.Taint
	Kubelet             *apis.KubeletConfiguration
	InstanceStorePolicy *apis.InstanceStorePolicy
}

// nodeConfig is nodeadm's NodeConfig (node.eks.aws/v1alpha1), the fields
// Nodewright sets.
type nodeConfig struct {
	APIVersion string         `json:"apiVersion"`
	Kind       string         `json:"kind"`
	Spec       nodeConfigSpec `json:"spec"`
}

type nodeConfigSpec struct {
	Cluster  clusterDetails  `json:"cluster"`
	Kubelet  kubeletOptions  `json:"kubelet"`
	Instance *instanceConfig `json:"instance,omitempty"`
}

type clusterDetails struct {
	Name                 string `json:"name"`
	APIServerEndpoint    string `json:"apiServerEndpoint"`
	CertificateAuthority []byte `json:"certificateAuthority"`
	CIDR                 string `json:"cidr,omitempty"`
}

type kubeletOptions struct {
	Config map[string]json.RawMessage `json:"config,omitempty"`
	Flags  []string                   `json:"flags,omitempty"`
}

type instanceConfig struct {
	LocalStorage struct {
		Strategy string `json:"strategy"`
	} `json:"localStorage"`
}

// userDataPart is one part of a MIME multi-part user data document.
type userDataPart struct {
	ContentType string
	Content     string
}

// AL2023UserData is the user data of an AL2023 node, base64-encoded as
// launch templates carry it: a MIME multi-part document with the parts of
// the EC2NodeClass's own spec.userData first (a MIME document's parts, a
// NodeConfig or a shell script) and Nodewright's NodeConfig last, so that
// nodeadm, which merges NodeConfigs in order, applies the cluster, labels,
// taints and kubelet settings the plan relies on over anything the user set.
func AL2023UserData(c Cluster, custom *string, s NodeSettings) (string, error) {
	own, err := nodeConfigYAML(c, s)
	if err != nil {
		return "", err
	}
	parts, err := customParts(custom)
	if err != nil {
		return "", fmt.Errorf("spec.userData: %w", err)
	}
	parts = append(parts, userDataPart{ContentType: contentTypeNodeConfig, Content: own})
	doc, err := mimeDocument(parts)
	if err != nil {
		return "", err
	}
	return base64.StdEncoding.EncodeToString(doc), nil
}

// CustomUserData is the user data of a Custom AMI family node: the
// EC2NodeClass's spec.userData as it is, base64-encoded ("" when unset).
func CustomUserData(custom *string) string {
	if custom == nil || *custom == "" {
		return ""
	}
	return base64.StdEncoding.EncodeToString([]byte(*custom))
}

func nodeConfigYAML(c Cluster, s NodeSettings) (string, error) {
	cfg, err := kubeletConfig(s)
	if err != nil {
		return "", err
	}
	nc := nodeConfig{APIVersion: nodeConfigAPIVersion, Kind: "NodeConfig", Spec: nodeConfigSpec{
		Cluster: clusterDetails{Name: c.Name, APIServerEndpoint: c.Endpoint, CertificateAuthority: c.CertificateAuthority, CIDR: c.ServiceCIDR},
		Kubelet: kubeletOptions{Config: cfg, Flags: kubeletFlags(s)},
	}}
	if s.InstanceStorePolicy != nil && *s.InstanceStorePolicy == apis.InstanceStorePolicyRAID0 {
		nc.Spec.Instance = &instanceConfig{}
		nc.Spec.Instance.LocalStorage.Strategy = string(apis.InstanceStorePolicyRAID0)
	}
	b, err := yaml.Marshal(nc)
	if err != nil {
		return "", fmt.Errorf("node config: %w", err)
	}
	return "# Nodewright NodeConfig\n" + string(b), nil
}

// kubeletConfig is the EC2NodeClass's kubelet settings as the kubelet's
// configuration fields (Karpenter's field names are the kubelet's).
func kubeletConfig(s NodeSettings) (map[string]json.RawMessage, error) {
	if s.Kubelet == nil {
		return nil, nil
	}
	b, err := json.Marshal(s.Kubelet)
	if err != nil {
		return nil, fmt.Errorf("kubelet settings: %w", err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("kubelet settings: %w", err)
	}
	if len(m) == 0 {
		return nil, nil
	}
	return m, nil
}

// kubeletFlags are --node-labels (sorted by key) and --register-with-taints
// (in the given order), unquoted, as nodeadm passes flags to the kubelet.
func kubeletFlags(s NodeSettings) []string {
	var flags []string
	if len(s.Labels) > 0 {
		keys := slices.Sorted(maps.Keys(s.Labels))
		kv := make([]string, 0, len(keys))
		for _, k := range keys {
			kv = append(kv, k+"="+s.Labels[k])
		}
		flags = append(flags, "--node-labels="+strings.Join(kv, ","))
	}
	if len(s.Taints) > 0 {
		ts := make([]string, 0, len(s.Taints))
		for _, t := range s.Taints {
			ts = append(ts, taintFlag(t))
		}
		flags = append(flags, "--register-with-taints="+strings.Join(ts, ","))
	}
	return flags
}

func taintFlag(t corev1.Taint) string {
	if t.Value == "" {
		return t.Key + ":" + string(t.Effect)
	}
	return t.Key + "=" + t.Value + ":" + string(t.Effect)
}

// customParts splits the EC2NodeClass's user data into parts: the parts of a
// MIME multi-part document, else one NodeConfig part when it is YAML, else
// one shell script part.
func customParts(custom *string) ([]userDataPart, error) {
	if custom == nil || strings.TrimSpace(*custom) == "" {
		return nil, nil
	}
	ud := *custom
	trimmed := strings.TrimSpace(ud)
	if strings.HasPrefix(trimmed, "MIME-Version:") || strings.HasPrefix(trimmed, "Content-Type:") {
		return mimeParts(trimmed)
	}
	var m map[string]any
	if yaml.Unmarshal([]byte(ud), &m) == nil && len(m) > 0 {
		return []userDataPart{{ContentType: contentTypeNodeConfig, Content: ud}}, nil
	}
	return []userDataPart{{ContentType: contentTypeShell, Content: ud}}, nil
}

func mimeParts(doc string) ([]userDataPart, error) {
	msg, err := mail.ReadMessage(strings.NewReader(doc + "\n"))
	if err != nil {
		return nil, fmt.Errorf("MIME document: %w", err)
	}
	mt, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil {
		return nil, fmt.Errorf("MIME document: Content-Type: %w", err)
	}
	if !strings.HasPrefix(mt, "multipart/") || params["boundary"] == "" {
		return nil, fmt.Errorf("MIME document: Content-Type %q: want multipart with a boundary", mt)
	}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	var out []userDataPart
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("MIME document: %w", err)
		}
		b, err := io.ReadAll(p)
		if err != nil {
			return nil, fmt.Errorf("MIME document: %w", err)
		}
		out = append(out, userDataPart{ContentType: p.Header.Get("Content-Type"), Content: string(b)})
	}
}

// mimeDocument writes the parts as a multipart/mixed document with LF line
// ends. The boundary is "//" unless a part contains it, then one derived
// from the parts' content (still deterministic).
func mimeDocument(parts []userDataPart) ([]byte, error) {
	boundary := defaultBoundary
	for _, p := range parts {
		if strings.Contains(p.Content, "--"+defaultBoundary) {
			h := sha256.New()
			for _, q := range parts {
				h.Write([]byte(q.ContentType + "\x00" + q.Content + "\x00"))
			}
			boundary = "nodewright-" + hex.EncodeToString(h.Sum(nil))[:24]
			break
		}
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=%q\n\n", boundary)
	w := multipart.NewWriter(&buf)
	if err := w.SetBoundary(boundary); err != nil {
		return nil, fmt.Errorf("user data: %w", err)
	}
	for _, p := range parts {
		pw, err := w.CreatePart(textproto.MIMEHeader{"Content-Type": {p.ContentType}})
		if err != nil {
			return nil, fmt.Errorf("user data: %w", err)
		}
		if _, err := io.WriteString(pw, p.Content); err != nil {
			return nil, fmt.Errorf("user data: %w", err)
		}
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("user data: %w", err)
	}
	return bytes.ReplaceAll(buf.Bytes(), []byte("\r\n"), []byte("\n")), nil
}
