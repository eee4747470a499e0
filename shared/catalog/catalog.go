// Package catalog is the EC2 instance-type catalog: the facts of every type
// (generated from the team's CSV into zz_generated_types.tsv.gz), the capacity and
// allocatable a node of the type gets under an EC2NodeClass's kubelet settings,
// its Karpenter well-known labels, and its offerings (zone x capacity type,
// with a price). The scheduler and the local cloud read types from here.
package catalog

import (
	"fmt"
	"sort"
	"sync"
)

// InstanceType holds the facts of one EC2 instance type.
type InstanceType struct {
	Name       string // m5.large
	Family     string // m5
	Category   string // m
	Generation int    // 5
	Size       string // large
	Arch       string // amd64 or arm64
	OS         string // linux
	VCPU       int
	MemoryMiB  int64
	GPU        GPU
	// Accelerator is a non-GPU accelerator (Inferentia, Trainium, Qualcomm AI100).
	Accelerator          Accelerator
	LocalNVMeGiB         int
	NetworkBandwidthMbps int // 0 when unknown
	EBSBandwidthMbps     int // 0 when unknown
	CPUManufacturer      string
	Hypervisor           string // nitro, xen, or "" (bare metal, unknown)
	BareMetal            bool
	Flex                 bool
	ENIs                 int // network interfaces on the default network card (0 when unknown)
	IPv4PerENI           int
	EFA                  int    // EFA interfaces (vpc.amazonaws.com/efa)
	EncryptionInTransit  string // "true", "false", or "" when unknown
	// OnDemandPrice is USD per hour: in the shipped catalog, us-east-1's
	// (see ShippedPricesRegion, ShippedPricesDate); in a catalog made by
	// Regional, the region's. 0 when not published (no on-demand offering).
	OnDemandPrice float64
	// WindowsLicence is USD per hour a Windows Server node of the type pays
	// on top of OnDemandPrice, on-demand or spot: the region's Windows and
	// Linux on-demand prices' difference (WithWindowsLicences); 0 when not
	// read, and a Windows node is priced with a per-vCPU estimate
	// (nodecost.WindowsLicence).
	WindowsLicence float64 `json:",omitempty"`
	// Zones are the availability zones EC2 offers the type in, sorted; nil
	// when not known (the shipped catalog): then every zone.
	Zones []string
	// PriceOverlaid says a NodeOverlay set or adjusted one of the type's
	// prices (on-demand or spot): EC2's own price order no longer says
	// which type is cheapest, so a fleet launches by the solve's order.
	PriceOverlaid bool
}

// GPU describes a type's GPUs; Count is 0 for types without whole GPUs.
type GPU struct {
	Count        int
	Name         string
	Manufacturer string // nvidia or amd
	MemoryMiB    int64
}

// Accelerator describes a type's non-GPU accelerators.
type Accelerator struct {
	Count int
	Name  string // inferentia, inferentia2, trainium, trainium2, qualcomm-ai100
}

// Catalog is a set of instance types, sorted by name.
type Catalog struct {
	types  []*InstanceType
	byName map[string]*InstanceType
}

// New builds a catalog of the given types (copied, sorted by name). Later
// duplicates of a name replace earlier ones.
func New(types []InstanceType) *Catalog {
	byName := make(map[string]*InstanceType, len(types))
	for i := range types {
		it := types[i]
		byName[it.Name] = &it
	}
	c := &Catalog{byName: byName, types: make([]*InstanceType, 0, len(byName))}
	for _, it := range byName {
		c.types = append(c.types, it)
	}
	sort.Slice(c.types, func(i, j int) bool { return c.types[i].Name < c.types[j].Name })
	return c
}

var defaultCatalog = sync.OnceValue(func() *Catalog {
	types, err := decodeTypes(generatedTable)
	if err != nil {
		// The table is generated and checked by the package's tests; a
		// build that embeds another is broken.
		panic(fmt.Sprintf("catalog: the embedded instance types are unreadable (run make generate): %v", err))
	}
	return New(types)
})

// Default returns the catalog of every type in the embedded data. It is shared
// and must not be modified.
func Default() *Catalog { return defaultCatalog() }

// Get returns the named type.
func (c *Catalog) Get(name string) (*InstanceType, bool) {
	it, ok := c.byName[name]
	return it, ok
}

// Types returns every type, sorted by name. The slice is shared: don't modify it.
func (c *Catalog) Types() []*InstanceType { return c.types }

// Len is the number of types.
func (c *Catalog) Len() int { return len(c.types) }

// Filter returns the types for which keep is true, in name order.
func (c *Catalog) Filter(keep func(*InstanceType) bool) []*InstanceType {
	var out []*InstanceType
	for _, it := range c.types {
		if keep(it) {
			out = append(out, it)
		}
	}
	return out
}
