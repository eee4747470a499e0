// Package schedtest builds the inputs of scheduling tests and benchmarks: a
// synthetic instance catalog with its spot prices, terse builders for pods,
// nodes, NodePools and DaemonSets, and the diverse benchmark workload. It
// exists so that scenario tests, benchmarks and other packages' tests describe
// a cluster in a few lines, the same way everywhere.
package schedtest

import (
	"fmt"
	"hash/fnv"
	"math"
	"strconv"

	"github.com/nodewright/nodewright/shared/catalog"
)

// Prices of the synthetic catalog's on-demand offerings, per hour.
const (
	SyntheticPricePerVCPU = 0.025
	SyntheticPricePerGiB  = 0.001
)

// SyntheticTypes returns n synthetic instance types, the way Karpenter's fake
// cloud provider builds them for its scheduling benchmark: type i
// (fake-it-<i>) has i+1 vCPUs, 2(i+1) GiB of memory and room for 10(i+1) pods
// (one ENI with 10(i+1)-1 addresses, so the VPC CNI formula gives 10(i+1)); it
// is amd64 Linux, category c, family "fake", size "<i+1>x", and costs 0.025
// per vCPU plus 0.001 per GiB per hour on demand. Allocatable comes from the
// catalog's overhead model like any real type's.
func SyntheticTypes(n int) []*catalog.InstanceType {
	out := make([]*catalog.InstanceType, n)
	for i := range out {
		cpu := i + 1
		out[i] = Type(TypeOptions{
			Name:      fmt.Sprintf("fake-it-%d", i),
			VCPU:      cpu,
			MemoryMiB: int64(2*cpu) * 1024,
			Pods:      10 * cpu,
			Family:    "fake",
			Size:      strconv.Itoa(cpu) + "x",
		})
	}
	return out
}

// TypeOptions describes a synthetic instance type; zero fields take the
// defaults documented on each.
type TypeOptions struct {
	Name      string
	VCPU      int   // default 1
	MemoryMiB int64 // default 2GiB per vCPU
	// Pods is the type's pod limit (via one ENI; at least 2); default 10 per vCPU.
	Pods int
	// Arch is amd64 (default) or arm64.
	Arch     string
	Category string // default "c"
	Family   string // default "fake"
	Size     string // default "<vcpu>x"
	// Generation defaults to 1.
	Generation int
	// Price is the on-demand price per hour; default 0.025 per vCPU + 0.001
	// per GiB. A negative price gives a type without on-demand offerings.
	Price float64
	// GPUs are NVIDIA GPUs (nvidia.com/gpu) named GPUName (default "t4").
	GPUs    int
	GPUName string
	// Neuron is Inferentia2 devices (aws.amazon.com/neuron).
	Neuron int
	EFA    int
}

// Type builds one synthetic instance type.
func Type(o TypeOptions) *catalog.InstanceType {
	if o.VCPU == 0 {
		o.VCPU = 1
	}
	if o.MemoryMiB == 0 {
		o.MemoryMiB = int64(o.VCPU) * 2048
	}
	if o.Pods == 0 {
		o.Pods = 10 * o.VCPU
	}
	o.Pods = max(o.Pods, 2)
	if o.Arch == "" {
		o.Arch = "amd64"
	}
	if o.Category == "" {
		o.Category = "c"
	}
	if o.Family == "" {
		o.Family = "fake"
	}
	if o.Size == "" {
		o.Size = strconv.Itoa(o.VCPU) + "x"
	}
	if o.Generation == 0 {
		o.Generation = 1
	}
	switch {
	case o.Price == 0:
		o.Price = roundPrice(SyntheticPricePerVCPU*float64(o.VCPU) + SyntheticPricePerGiB*float64(o.MemoryMiB)/1024)
	case o.Price < 0:
		o.Price = 0
	}
	if o.Name == "" {
		o.Name = fmt.Sprintf("%s.%s", o.Family, o.Size)
	}
	it := &catalog.InstanceType{
		Name: o.Name, Family: o.Family, Category: o.Category, Generation: o.Generation, Size: o.Size,
		Arch: o.Arch, OS: "linux", VCPU: o.VCPU, MemoryMiB: o.MemoryMiB,
		CPUManufacturer: "intel", Hypervisor: "nitro", EncryptionInTransit: "true",
		// The VPC CNI formula ENIs x (IPv4PerENI - 1) + 2 gives o.Pods.
		ENIs: 1, IPv4PerENI: o.Pods - 1,
		EFA: o.EFA, OnDemandPrice: o.Price,
	}
	if o.Arch == "arm64" {
		it.CPUManufacturer = "aws"
	}
	if o.GPUs > 0 {
		name := o.GPUName
		if name == "" {
			name = "t4"
		}
		it.GPU = catalog.GPU{Count: o.GPUs, Name: name, Manufacturer: "nvidia", MemoryMiB: 16384}
	}
	if o.Neuron > 0 {
		it.Accelerator = catalog.Accelerator{Count: o.Neuron, Name: "inferentia2"}
	}
	return it
}

// SpotPricer is the synthetic catalog's spot market: 0.7 times the on-demand
// price, a little cheaper or dearer by zone (between 0.68 and 0.72 times).
type SpotPricer struct {
	onDemand map[string]float64
	// Factor overrides the spot/on-demand ratio of a type (all zones).
	factor map[string]float64
}

// SyntheticSpot returns the spot prices of the given types.
func SyntheticSpot(types []*catalog.InstanceType) *SpotPricer {
	sp := &SpotPricer{onDemand: make(map[string]float64, len(types)), factor: map[string]float64{}}
	for _, it := range types {
		sp.onDemand[it.Name] = it.OnDemandPrice
	}
	return sp
}

// WithFactor returns a copy whose spot price of typeName is factor times its
// on-demand price in every zone (for example 1.2: dearer than on-demand).
func (s *SpotPricer) WithFactor(typeName string, factor float64) *SpotPricer {
	c := &SpotPricer{onDemand: s.onDemand, factor: map[string]float64{}}
	for k, v := range s.factor {
		c.factor[k] = v
	}
	c.factor[typeName] = factor
	return c
}

// SpotPrice implements catalog.SpotPricer.
func (s *SpotPricer) SpotPrice(instanceType, zone string) (float64, bool) {
	od, ok := s.onDemand[instanceType]
	if !ok || od <= 0 {
		return 0, false
	}
	if f, ok := s.factor[instanceType]; ok {
		return roundPrice(od * f), true
	}
	return roundPrice(od * ZoneSpotFactor(zone)), true
}

// ZoneSpotFactor is the synthetic spot/on-demand ratio in a zone: 0.7 plus
// or minus up to 0.02, fixed per zone name.
func ZoneSpotFactor(zone string) float64 {
	h := fnv.New32a()
	h.Write([]byte(zone))
	return 0.68 + 0.01*float64(h.Sum32()%5)
}

// roundPrice keeps prices to a millionth of a dollar, as EC2 quotes them.
func roundPrice(p float64) float64 {
	return math.Round(p*1e6) / 1e6
}

// Zones returns the three zones tests use: us-east-1a, us-east-1b, us-east-1c.
func Zones() []string { return []string{"us-east-1a", "us-east-1b", "us-east-1c"} }
