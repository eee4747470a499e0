package catalog

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"fmt"
	"io"
	"strconv"
	"strings"
)

//go:generate go run ./internal/gen/catalog-gen -out zz_generated_types.tsv.gz

// generatedTable is the instance types as the generator writes them from
// the team's CSV: a gzipped tab-separated table (comment lines, a header,
// a line per type), decoded once on first use.
//
//go:embed zz_generated_types.tsv.gz
var generatedTable []byte

// columns are the table's columns, in the order decodeTypes reads them.
var columns = []string{
	"name", "family", "category", "generation", "size", "arch", "os", "vcpu", "memory_mib",
	"gpu_count", "gpu_name", "gpu_manufacturer", "gpu_memory_mib", "accelerator_count", "accelerator_name",
	"local_nvme_gib", "network_bandwidth_mbps", "ebs_bandwidth_mbps", "cpu_manufacturer", "hypervisor",
	"bare_metal", "flex", "enis", "ipv4_per_eni", "efa", "encryption_in_transit", "on_demand_price",
}

// decodeTypes reads the gzipped table.
func decodeTypes(gz []byte) ([]InstanceType, error) {
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		return nil, err
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		return nil, err
	}
	return parseTable(string(raw))
}

// parseTable reads the table's text.
func parseTable(text string) ([]InstanceType, error) {
	var out []InstanceType
	header := false
	for n, line := range strings.Split(strings.TrimSuffix(text, "\n"), "\n") {
		if strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if !header {
			if strings.Join(f, ",") != strings.Join(columns, ",") {
				return nil, fmt.Errorf("line %d: header %q, want %q", n+1, f, columns)
			}
			header = true
			continue
		}
		if len(f) != len(columns) {
			return nil, fmt.Errorf("line %d: %d fields, want %d", n+1, len(f), len(columns))
		}
		p := fieldParser{f: f}
		t := InstanceType{
			Name: f[0], Family: f[1], Category: f[2], Generation: p.int(3), Size: f[4], Arch: f[5], OS: f[6],
			VCPU: p.int(7), MemoryMiB: p.int64(8),
			LocalNVMeGiB: p.int(15), NetworkBandwidthMbps: p.int(16), EBSBandwidthMbps: p.int(17),
			CPUManufacturer: f[18], Hypervisor: f[19], BareMetal: p.bool(20), Flex: p.bool(21),
			ENIs: p.int(22), IPv4PerENI: p.int(23), EFA: p.int(24), EncryptionInTransit: f[25], OnDemandPrice: p.float(26),
		}
		if c, name := p.int(9), f[10]; c > 0 || name != "" {
			t.GPU = GPU{Count: c, Name: name, Manufacturer: f[11], MemoryMiB: p.int64(12)}
		}
		if c, name := p.int(13), f[14]; c > 0 || name != "" {
			t.Accelerator = Accelerator{Count: c, Name: name}
		}
		if p.err != nil {
			return nil, fmt.Errorf("line %d (%s): %w", n+1, f[0], p.err)
		}
		out = append(out, t)
	}
	if !header {
		return nil, fmt.Errorf("no header")
	}
	return out, nil
}

// fieldParser converts a line's fields, keeping the first error.
type fieldParser struct {
	f   []string
	err error
}

func (p *fieldParser) fail(i int, err error) {
	if p.err == nil {
		p.err = fmt.Errorf("column %s: %w", columns[i], err)
	}
}

func (p *fieldParser) int64(i int) int64 {
	v, err := strconv.ParseInt(p.f[i], 10, 64)
	if err != nil {
		p.fail(i, err)
	}
	return v
}

func (p *fieldParser) int(i int) int { return int(p.int64(i)) }

func (p *fieldParser) bool(i int) bool {
	v, err := strconv.ParseBool(p.f[i])
	if err != nil {
		p.fail(i, err)
	}
	return v
}

func (p *fieldParser) float(i int) float64 {
	v, err := strconv.ParseFloat(p.f[i], 64)
	if err != nil {
		p.fail(i, err)
	}
	return v
}
