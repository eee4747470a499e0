// Package gen turns the team's instance-type CSV (and, where it knows more,
// AWS's DescribeInstanceTypes data as moto ships it) into the table the
// catalog embeds. It runs at `make generate`; its output is committed so a
// build needs neither input.
package gen

import (
	"bytes"
	"compress/gzip"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Row is one instance type as the catalog stores it. Field names match
// catalog.InstanceType.
type Row struct {
	Name, Family, Category string
	Generation             int
	Size, Arch, OS         string
	VCPU                   int
	MemoryMiB              int64
	GPUCount               int
	GPUName                string
	GPUManufacturer        string
	GPUMemoryMiB           int64
	AcceleratorCount       int
	AcceleratorName        string
	LocalNVMeGiB           int
	NetworkBandwidthMbps   int
	EBSBandwidthMbps       int
	CPUManufacturer        string
	Hypervisor             string
	BareMetal              bool
	Flex                   bool
	ENIs                   int
	IPv4PerENI             int
	EFA                    int
	EncryptionInTransit    string // "true", "false" or "" when unknown
	OnDemandPrice          float64
}

// Describe is what gen needs of AWS's DescribeInstanceTypes data for a type.
type Describe struct {
	NetworkInfo struct {
		DefaultNetworkCardIndex      int
		MaximumNetworkInterfaces     int
		Ipv4AddressesPerInterface    int
		EncryptionInTransitSupported *bool
		NetworkCards                 []struct {
			NetworkCardIndex         int
			MaximumNetworkInterfaces int
		}
	}
}

// ReadDescribe reads moto's instance_types.json(.gz): a map from type name to
// its DescribeInstanceTypes entry.
func ReadDescribe(path string) (map[string]Describe, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open describe data: %w", err)
	}
	defer f.Close()
	var r io.Reader = f
	if strings.HasSuffix(path, ".gz") {
		gz, err := gzip.NewReader(f)
		if err != nil {
			return nil, fmt.Errorf("gunzip %s: %w", path, err)
		}
		defer gz.Close()
		r = gz
	}
	out := map[string]Describe{}
	if err := json.NewDecoder(r).Decode(&out); err != nil {
		return nil, fmt.Errorf("decode %s: %w", path, err)
	}
	return out, nil
}

// ReadCSV parses ec2-instance-types.csv and merges the network facts of
// describe (may be nil): ENIs of the default network card (what limits pods
// with the VPC CNI) and encryption-in-transit support.
func ReadCSV(r io.Reader, describe map[string]Describe) ([]Row, error) {
	recs, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("read csv: %w", err)
	}
	if len(recs) < 2 {
		return nil, fmt.Errorf("read csv: no rows")
	}
	col := map[string]int{}
	for i, h := range recs[0] {
		col[h] = i
	}
	for _, need := range []string{"name", "family", "category", "generation", "size", "arch", "os", "vcpu", "memory_mib", "enis", "ipv4_per_eni", "od_price_usd_hr_us_east_1"} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("read csv: missing column %q", need)
		}
	}
	rows := make([]Row, 0, len(recs)-1)
	for i, rec := range recs[1:] {
		p := parser{rec: rec, col: col}
		row := p.row()
		if p.err != nil {
			return nil, fmt.Errorf("csv line %d (%s): %w", i+2, rec[col["name"]], p.err)
		}
		if d, ok := describe[row.Name]; ok {
			mergeDescribe(&row, d)
		}
		rows = append(rows, row)
	}
	sort.Slice(rows, func(i, j int) bool { return rows[i].Name < rows[j].Name })
	return rows, nil
}

func mergeDescribe(row *Row, d Describe) {
	ni := d.NetworkInfo
	enis := ni.MaximumNetworkInterfaces
	for _, c := range ni.NetworkCards {
		if c.NetworkCardIndex == ni.DefaultNetworkCardIndex {
			enis = c.MaximumNetworkInterfaces
		}
	}
	if enis > 0 && ni.Ipv4AddressesPerInterface > 0 {
		row.ENIs, row.IPv4PerENI = enis, ni.Ipv4AddressesPerInterface
	}
	if ni.EncryptionInTransitSupported != nil {
		row.EncryptionInTransit = strconv.FormatBool(*ni.EncryptionInTransitSupported)
	}
}

type parser struct {
	rec []string
	col map[string]int
	err error
}

func (p *parser) str(name string) string {
	i, ok := p.col[name]
	if !ok || i >= len(p.rec) {
		return ""
	}
	return strings.TrimSpace(p.rec[i])
}

func (p *parser) int(name string) int64 {
	s := p.str(name)
	if s == "" || p.err != nil {
		return 0
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		p.err = fmt.Errorf("column %s: %w", name, err)
	}
	return v
}

func (p *parser) float(name string) float64 {
	s := p.str(name)
	if s == "" || p.err != nil {
		return 0
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		p.err = fmt.Errorf("column %s: %w", name, err)
	}
	return v
}

func (p *parser) row() Row {
	return Row{
		Name: p.str("name"), Family: p.str("family"), Category: p.str("category"),
		Generation: int(p.int("generation")), Size: p.str("size"), Arch: p.str("arch"), OS: p.str("os"),
		VCPU: int(p.int("vcpu")), MemoryMiB: p.int("memory_mib"),
		GPUCount: int(p.int("gpu_count")), GPUName: p.str("gpu_name"),
		GPUManufacturer: p.str("gpu_manufacturer"), GPUMemoryMiB: p.int("gpu_memory_mib"),
		AcceleratorCount: int(p.int("accelerator_count")), AcceleratorName: p.str("accelerator_name"),
		LocalNVMeGiB: int(p.int("local_nvme_gib")), NetworkBandwidthMbps: int(p.int("network_bandwidth_mbps")),
		EBSBandwidthMbps: int(p.int("ebs_bandwidth_mbps")), CPUManufacturer: p.str("cpu_manufacturer"),
		Hypervisor: p.str("hypervisor"), BareMetal: p.str("bare_metal") == "true", Flex: p.str("flex") == "true",
		ENIs: int(p.int("enis")), IPv4PerENI: int(p.int("ipv4_per_eni")), EFA: int(p.int("alloc_efa")),
		OnDemandPrice: p.float("od_price_usd_hr_us_east_1"),
	}
}

// Columns are the embedded table's columns, in Row's order.
var Columns = []string{
	"name", "family", "category", "generation", "size", "arch", "os", "vcpu", "memory_mib",
	"gpu_count", "gpu_name", "gpu_manufacturer", "gpu_memory_mib", "accelerator_count", "accelerator_name",
	"local_nvme_gib", "network_bandwidth_mbps", "ebs_bandwidth_mbps", "cpu_manufacturer", "hypervisor",
	"bare_metal", "flex", "enis", "ipv4_per_eni", "efa", "encryption_in_transit", "on_demand_price",
}

// Render writes the embedded catalog's table: comment lines (#), a header
// of Columns, then one tab-separated line per type. The catalog embeds it
// gzipped (Compress): a Go composite literal of the same rows costs 0.4 MB
// of every function's binary, the compressed table 40 KB.
func Render(rows []Row, sources string) ([]byte, error) {
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Code generated by shared/catalog/internal/gen; DO NOT EDIT.\n# Sources: %s\n", sources)
	b.WriteString(strings.Join(Columns, "\t") + "\n")
	for _, r := range rows {
		fields := []string{
			r.Name, r.Family, r.Category, strconv.Itoa(r.Generation), r.Size, r.Arch, r.OS, strconv.Itoa(r.VCPU), strconv.FormatInt(r.MemoryMiB, 10),
			strconv.Itoa(r.GPUCount), r.GPUName, r.GPUManufacturer, strconv.FormatInt(r.GPUMemoryMiB, 10), strconv.Itoa(r.AcceleratorCount), r.AcceleratorName,
			strconv.Itoa(r.LocalNVMeGiB), strconv.Itoa(r.NetworkBandwidthMbps), strconv.Itoa(r.EBSBandwidthMbps), r.CPUManufacturer, r.Hypervisor,
			strconv.FormatBool(r.BareMetal), strconv.FormatBool(r.Flex), strconv.Itoa(r.ENIs), strconv.Itoa(r.IPv4PerENI), strconv.Itoa(r.EFA),
			r.EncryptionInTransit, strconv.FormatFloat(r.OnDemandPrice, 'f', -1, 64),
		}
		for _, f := range fields {
			if strings.ContainsAny(f, "\t\n") {
				return nil, fmt.Errorf("type %s: a value holds a tab or newline: %q", r.Name, f)
			}
		}
		b.WriteString(strings.Join(fields, "\t") + "\n")
	}
	return b.Bytes(), nil
}

// Compress gzips the table for embedding (no name or time in the header).
func Compress(table []byte) ([]byte, error) {
	var b bytes.Buffer
	w, err := gzip.NewWriterLevel(&b, gzip.BestCompression)
	if err != nil {
		return nil, err
	}
	if _, err := w.Write(table); err != nil {
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// MotoDescribePath finds the DescribeInstanceTypes data that the installed moto
// ships (moto/ec2/resources/instance_types.json.gz), through the python3 that
// runs moto_server.
func MotoDescribePath() (string, error) {
	out, err := exec.Command("python3", "-c", "import moto, os; print(os.path.dirname(moto.__file__))").Output()
	if err != nil {
		return "", fmt.Errorf("find moto (python3 -c 'import moto'): %w", err)
	}
	p := filepath.Join(strings.TrimSpace(string(out)), "ec2", "resources", "instance_types.json.gz")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("moto describe data: %w", err)
	}
	return p, nil
}

// Generate reads both inputs and renders the catalog's table.
func Generate(csvPath, describePath string) ([]byte, error) {
	describe, err := ReadDescribe(describePath)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(csvPath)
	if err != nil {
		return nil, fmt.Errorf("open csv: %w", err)
	}
	defer f.Close()
	rows, err := ReadCSV(f, describe)
	if err != nil {
		return nil, err
	}
	return Render(rows, "shared/data/ec2-instance-types.csv; network cards and encryption in transit from AWS DescribeInstanceTypes data as moto ships it")
}
