package fleet

import (
	"bufio"
	"bytes"
	"encoding/base64"
	"io"
	"mime"
	"mime/multipart"
	"net/mail"
	"reflect"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/nodewright/nodewright/shared/apis"
)

// parsedPart is a user data part read back.
type parsedPart struct {
	contentType string
	content     string
}

// readUserData decodes base64 user data and splits its MIME parts.
func readUserData(t *testing.T, b64 string) []parsedPart {
	t.Helper()
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		t.Fatalf("user data is not base64: %v", err)
	}
	if bytes.Contains(raw, []byte("\r")) {
		t.Error("user data has CR characters")
	}
	msg, err := mail.ReadMessage(bufio.NewReader(bytes.NewReader(raw)))
	if err != nil {
		t.Fatalf("user data is not MIME: %v\n%s", err, raw)
	}
	mt, params, err := mime.ParseMediaType(msg.Header.Get("Content-Type"))
	if err != nil || mt != "multipart/mixed" {
		t.Fatalf("content type %q (%v), want multipart/mixed", mt, err)
	}
	mr := multipart.NewReader(msg.Body, params["boundary"])
	var out []parsedPart
	for {
		p, err := mr.NextPart()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("multipart: %v", err)
		}
		b, _ := io.ReadAll(p)
		out = append(out, parsedPart{p.Header.Get("Content-Type"), string(b)})
	}
}

// parsedNodeConfig is the NodeConfig as nodeadm reads it.
type parsedNodeConfig struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Spec       struct {
		Cluster struct {
			Name                 string `json:"name"`
			APIServerEndpoint    string `json:"apiServerEndpoint"`
			CertificateAuthority []byte `json:"certificateAuthority"`
			CIDR                 string `json:"cidr"`
		} `json:"cluster"`
		Kubelet struct {
			Config map[string]any `json:"config"`
			Flags  []string       `json:"flags"`
		} `json:"kubelet"`
		Instance struct {
			LocalStorage struct {
				Strategy string `json:"strategy"`
			} `json:"localStorage"`
		} `json:"instance"`
	} `json:"spec"`
}

func TestAL2023UserData(t *testing.T) {
	raid := apis.InstanceStorePolicyRAID0
	settings := NodeSettings{
		Labels:              map[string]string{"team": "platform", "karpenter.sh/nodepool": "default"},
		Taints:              []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}, {Key: "example.com/startup", Effect: corev1.TaintEffectNoExecute}},
		Kubelet:             &apis.KubeletConfiguration{MaxPods: aws.Int32(58), ClusterDNS: []string{"10.96.0.10"}},
		InstanceStorePolicy: &raid,
	}
	shell := "#!/bin/bash\necho hello\n"
	userNodeConfig := "apiVersion: node.eks.aws/v1alpha1\nkind: NodeConfig\nspec:\n  kubelet:\n    config:\n      maxPods: 10\n"
	mimeDoc := "MIME-Version: 1.0\nContent-Type: multipart/mixed; boundary=\"BOUNDARY\"\n\n--BOUNDARY\nContent-Type: text/x-shellscript\n\necho one\n--BOUNDARY\nContent-Type: application/node.eks.aws\n\n" + userNodeConfig + "--BOUNDARY--\n"
	tests := []struct {
		name      string
		custom    *string
		wantTypes []string
	}{
		{"no user data", nil, []string{contentTypeNodeConfig}},
		{"shell script", aws.String(shell), []string{contentTypeShell, contentTypeNodeConfig}},
		{"NodeConfig", aws.String(userNodeConfig), []string{contentTypeNodeConfig, contentTypeNodeConfig}},
		{"MIME document", aws.String(mimeDoc), []string{"text/x-shellscript", contentTypeNodeConfig, contentTypeNodeConfig}},
		{"content with the default boundary", aws.String("#!/bin/sh\necho --//\n"), []string{contentTypeShell, contentTypeNodeConfig}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ud, err := AL2023UserData(testCluster, tt.custom, settings)
			if err != nil {
				t.Fatal(err)
			}
			again, _ := AL2023UserData(testCluster, tt.custom, settings)
			if again != ud {
				t.Error("user data differs between two calls with the same input")
			}
			parts := readUserData(t, ud)
			var types []string
			for _, p := range parts {
				types = append(types, p.contentType)
			}
			if !reflect.DeepEqual(types, tt.wantTypes) {
				t.Fatalf("parts %v, want %v (the user's first, ours last)", types, tt.wantTypes)
			}
			var nc parsedNodeConfig
			if err := yaml.UnmarshalStrict([]byte(parts[len(parts)-1].content), &nc); err != nil {
				t.Fatalf("our NodeConfig: %v\n%s", err, parts[len(parts)-1].content)
			}
			checkNodeConfig(t, nc)
			if tt.custom != nil && strings.HasPrefix(*tt.custom, "#!") && parts[0].content != *tt.custom {
				t.Errorf("user's script changed: %q", parts[0].content)
			}
		})
	}
}

func checkNodeConfig(t *testing.T, nc parsedNodeConfig) {
	t.Helper()
	c := nc.Spec.Cluster
	if nc.APIVersion != "node.eks.aws/v1alpha1" || nc.Kind != "NodeConfig" || c.Name != testCluster.Name ||
		c.APIServerEndpoint != testCluster.Endpoint || !bytes.Equal(c.CertificateAuthority, testCluster.CertificateAuthority) || c.CIDR != "10.96.0.0/16" {
		t.Errorf("cluster details %+v", nc)
	}
	wantFlags := []string{
		"--node-labels=karpenter.sh/nodepool=default,team=platform",
		"--register-with-taints=dedicated=gpu:NoSchedule,example.com/startup:NoExecute",
	}
	if !reflect.DeepEqual(nc.Spec.Kubelet.Flags, wantFlags) {
		t.Errorf("flags %q, want %q", nc.Spec.Kubelet.Flags, wantFlags)
	}
	if nc.Spec.Kubelet.Config["maxPods"] != float64(58) || !reflect.DeepEqual(nc.Spec.Kubelet.Config["clusterDNS"], []any{"10.96.0.10"}) {
		t.Errorf("kubelet config %v, want maxPods 58 and clusterDNS", nc.Spec.Kubelet.Config)
	}
	if nc.Spec.Instance.LocalStorage.Strategy != "RAID0" {
		t.Errorf("instance store strategy %q, want RAID0", nc.Spec.Instance.LocalStorage.Strategy)
	}
}

func TestAL2023UserDataRejectsBrokenMIME(t *testing.T) {
	_, err := AL2023UserData(testCluster, aws.String("MIME-Version: 1.0\nContent-Type: text/plain\n\nhi\n"), NodeSettings{})
	if err == nil || !strings.Contains(err.Error(), "spec.userData") {
		t.Errorf("err = %v, want a spec.userData error", err)
	}
}

func TestCustomUserData(t *testing.T) {
	if got := CustomUserData(nil); got != "" {
		t.Errorf("nil: %q", got)
	}
	got := CustomUserData(aws.String("#!/bin/sh\necho hi\n"))
	if b, _ := base64.StdEncoding.DecodeString(got); string(b) != "#!/bin/sh\necho hi\n" {
		t.Errorf("custom user data %q", b)
	}
}

func TestNodeLabels(t *testing.T) {
	claim := map[string]string{
		"team":                             "platform",
		"node.kubernetes.io/role":          "batch",
		"kubelet.kubernetes.io/x":          "y",
		"example.kubernetes.io/forbidden":  "x",
		"kubernetes.io/arch":               "amd64",
		"node.kubernetes.io/instance-type": "m5.large",
		"topology.kubernetes.io/zone":      "us-east-1a",
		"karpenter.sh/capacity-type":       "spot",
		"karpenter.k8s.aws/instance-size":  "large",
		"node-restriction.kubernetes.io/a": "b",
		// Aliases the plan carries beside their stable names: the kubelet
		// and the cloud controller set both on the node.
		"beta.kubernetes.io/arch":                  "amd64",
		"beta.kubernetes.io/os":                    "linux",
		"beta.kubernetes.io/instance-type":         "m5.large",
		"failure-domain.beta.kubernetes.io/zone":   "us-east-1a",
		"failure-domain.beta.kubernetes.io/region": "us-east-1",
		"capacity.spread.4-1":                      "2",
	}
	got := nodeLabels(claim, "default", "default")
	want := map[string]string{
		"team": "platform", "node.kubernetes.io/role": "batch", "kubelet.kubernetes.io/x": "y", "capacity.spread.4-1": "2",
		"karpenter.sh/nodepool": "default", "karpenter.k8s.aws/ec2nodeclass": "default",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("nodeLabels = %v\nwant %v", got, want)
	}
}
