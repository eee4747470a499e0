package cost

import (
	"fmt"
	"sort"

	"github.com/nodewright/nodewright/shared/catalog"
)

// ControllerSizing is a Karpenter controller deployment: its replicas and
// each one's requests.
type ControllerSizing struct {
	Name      string
	Replicas  int
	MilliCPU  int64
	MemoryMiB int64
	Source    string
}

// Karpenter's own figures (aws/karpenter-provider-aws v1.14.1, the version
// go.mod pins): the chart runs 2 replicas, each on its own node (a
// required anti-affinity on kubernetes.io/hostname) and never on a node
// Karpenter manages (a required node affinity: karpenter.sh/nodepool does
// not exist), so the two need nodes of their own, from a managed node
// group or Fargate.
var (
	// KarpenterChart is the requests the chart's values.yaml suggests
	// (commented out: resources are empty by default), the ones Karpenter's
	// getting-started guide and Makefile install with.
	KarpenterChart = ControllerSizing{Name: "chart suggestion", Replicas: 2, MilliCPU: 1000, MemoryMiB: 1024,
		Source: "charts/karpenter/values.yaml (controller.resources, commented) and Makefile, v1.14.1"}
	// KarpenterScaleTests is what Karpenter's own E2E suites, its scale
	// suite among them, give the controller (requests equal to limits): the
	// project's figure for large clusters. It is a floor at 150,000 pods,
	// which Karpenter's informers cache whole.
	KarpenterScaleTests = ControllerSizing{Name: "Karpenter's E2E and scale suites", Replicas: 2, MilliCPU: 5000, MemoryMiB: 3072,
		Source: "test/hack/e2e_scripts/install_karpenter.sh (controller.resources requests = limits), v1.14.1"}
)

// NodeOverhead is what every node runs besides the controller: EKS's
// DaemonSets' requests.
type NodeOverhead struct {
	MilliCPU  int64
	MemoryMiB int64
}

// EKSDaemonSets are the requests of the DaemonSets an EKS node group runs
// by default: aws-node (VPC CNI, 25m CPU) and kube-proxy (100m CPU); neither
// requests memory.
var EKSDaemonSets = NodeOverhead{MilliCPU: 125}

// Footprint is the controller's nodes and their price.
type Footprint struct {
	Sizing       ControllerSizing
	InstanceType string
	Nodes        int
	HourlyUSD    float64 // all nodes
	MonthlyUSD   float64 // 730 hours
}

const hoursPerMonth = 730

// ControllerFootprint is the cheapest on-demand way to run the controller:
// one node per replica, of the cheapest type (then by name) whose
// allocatable under default kubelet settings holds a replica's requests
// and the DaemonSets'. GPU, accelerator and bare-metal types are left out,
// and so are burstable types, whose baseline does not sustain a controller
// using what it requests.
func ControllerFootprint(s ControllerSizing, overhead NodeOverhead, types []*catalog.InstanceType) (Footprint, error) {
	if s.Replicas <= 0 || s.MilliCPU <= 0 || s.MemoryMiB <= 0 {
		return Footprint{}, fmt.Errorf("controller sizing %q: replicas and requests must be positive", s.Name)
	}
	cpu, mem := s.MilliCPU+overhead.MilliCPU, s.MemoryMiB+overhead.MemoryMiB
	var fits []*catalog.InstanceType
	for _, it := range types {
		if it.OnDemandPrice <= 0 || it.Exotic() {
			continue
		}
		if _, burst := it.Burstable(); burst {
			continue
		}
		a := it.Allocatable(nil)
		if a.Cpu().MilliValue() >= cpu && a.Memory().Value() >= mem<<20 {
			fits = append(fits, it)
		}
	}
	if len(fits) == 0 {
		return Footprint{}, fmt.Errorf("controller sizing %q: no on-demand type fits %dm CPU and %d MiB", s.Name, cpu, mem)
	}
	sort.Slice(fits, func(i, j int) bool {
		if fits[i].OnDemandPrice != fits[j].OnDemandPrice {
			return fits[i].OnDemandPrice < fits[j].OnDemandPrice
		}
		return fits[i].Name < fits[j].Name
	})
	best := fits[0]
	hourly := float64(s.Replicas) * best.OnDemandPrice
	return Footprint{Sizing: s, InstanceType: best.Name, Nodes: s.Replicas, HourlyUSD: hourly, MonthlyUSD: hourly * hoursPerMonth}, nil
}
