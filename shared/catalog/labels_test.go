package catalog

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func corev1ResourceName(s string) corev1.ResourceName { return corev1.ResourceName(s) }

func TestLabels(t *testing.T) {
	tests := []struct {
		typ  string
		want map[string]string
	}{
		{"m5.large", map[string]string{
			"kubernetes.io/arch": "amd64", "kubernetes.io/os": "linux", "node.kubernetes.io/instance-type": "m5.large",
			"karpenter.k8s.aws/instance-category": "m", "karpenter.k8s.aws/instance-family": "m5",
			"karpenter.k8s.aws/instance-generation": "5", "karpenter.k8s.aws/instance-size": "large",
			"karpenter.k8s.aws/instance-cpu": "2", "karpenter.k8s.aws/instance-memory": "8192",
			"karpenter.k8s.aws/instance-cpu-manufacturer": "intel", "karpenter.k8s.aws/instance-hypervisor": "nitro",
			"karpenter.k8s.aws/instance-network-bandwidth": "750", "karpenter.k8s.aws/instance-ebs-bandwidth": "4750",
			"karpenter.k8s.aws/instance-encryption-in-transit-supported": "false",
			"karpenter.k8s.aws/instance-capability-flex":                 "false",
			"karpenter.k8s.aws/instance-tenancy":                         "default",
		}},
	}
	for _, tt := range tests {
		got := mustGet(t, tt.typ).Labels()
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("%s labels:\n got %v\nwant %v", tt.typ, got, tt.want)
		}
	}
}

func TestLabelsOfAccelerators(t *testing.T) {
	tests := []struct {
		typ  string
		want map[string]string // subset
		none []string          // keys that must be absent
	}{
		{"g5.xlarge", map[string]string{"karpenter.k8s.aws/instance-gpu-name": "a10g", "karpenter.k8s.aws/instance-gpu-manufacturer": "nvidia",
			"karpenter.k8s.aws/instance-gpu-count": "1", "karpenter.k8s.aws/instance-gpu-memory": "22888", "karpenter.k8s.aws/instance-local-nvme": "250"},
			[]string{"karpenter.k8s.aws/instance-accelerator-name"}},
		{"inf2.xlarge", map[string]string{"karpenter.k8s.aws/instance-accelerator-name": "inferentia2",
			"karpenter.k8s.aws/instance-accelerator-manufacturer": "aws", "karpenter.k8s.aws/instance-accelerator-count": "1"},
			[]string{"karpenter.k8s.aws/instance-gpu-name", "karpenter.k8s.aws/instance-gpu-count"}},
		{"c5.metal", map[string]string{"karpenter.k8s.aws/instance-size": "metal"}, []string{"karpenter.k8s.aws/instance-hypervisor"}},
		{"m7g.medium", map[string]string{"kubernetes.io/arch": "arm64", "karpenter.k8s.aws/instance-cpu-manufacturer": "aws"}, nil},
	}
	for _, tt := range tests {
		got := mustGet(t, tt.typ).Labels()
		for k, v := range tt.want {
			if got[k] != v {
				t.Errorf("%s: %s = %q, want %q", tt.typ, k, got[k], v)
			}
		}
		for _, k := range tt.none {
			if v, ok := got[k]; ok {
				t.Errorf("%s: %s = %q, want absent", tt.typ, k, v)
			}
		}
	}
	if !mustGet(t, "g5.xlarge").Exotic() || !mustGet(t, "c5.metal").Exotic() || mustGet(t, "m5.large").Exotic() {
		t.Error("Exotic() wrong for g5.xlarge, c5.metal or m5.large")
	}
}

type fakeSpot map[string]float64

func (f fakeSpot) SpotPrice(typ, zone string) (float64, bool) {
	p, ok := f[typ+"/"+zone]
	return p, ok
}

func TestOfferings(t *testing.T) {
	m5 := mustGet(t, "m5.large")
	got := m5.Offerings([]string{"us-east-1a", "us-east-1b"}, fakeSpot{"m5.large/us-east-1b": 0.04})
	want := []Offering{
		{Zone: "us-east-1a", CapacityType: "on-demand", Price: 0.096, Available: true},
		{Zone: "us-east-1b", CapacityType: "on-demand", Price: 0.096, Available: true},
		{Zone: "us-east-1b", CapacityType: "spot", Price: 0.04, Available: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("offerings:\n got %+v\nwant %+v", got, want)
	}
	// p5e.48xlarge has no published on-demand price: no on-demand offering.
	if got := mustGet(t, "p5e.48xlarge").Offerings([]string{"us-east-1a"}, nil); len(got) != 0 {
		t.Fatalf("p5e.48xlarge offerings = %+v, want none", got)
	}
}
