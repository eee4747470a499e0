package catalog

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/nodewright/nodewright/shared/catalog/internal/gen"
	"github.com/nodewright/nodewright/shared/refdata"
)

func TestGeneratedCatalogIsUpToDate(t *testing.T) {
	csvPath, err := refdata.InstanceTypesCSV()
	if err != nil {
		t.Fatal(err)
	}
	describe, err := gen.MotoDescribePath()
	if err != nil {
		t.Fatalf("the generator's second input (moto's DescribeInstanceTypes data) is missing: %v", err)
	}
	want, err := gen.Generate(csvPath, describe)
	if err != nil {
		t.Fatal(err)
	}
	gz, err := os.ReadFile("zz_generated_types.tsv.gz")
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("zz_generated_types.tsv.gz is stale: run `make generate` and commit the result")
	}
	if strings.Join(gen.Columns, ",") != strings.Join(columns, ",") {
		t.Fatalf("the generator writes columns %v, the catalog reads %v", gen.Columns, columns)
	}
}

func TestDefaultCatalogHasEveryType(t *testing.T) {
	c := Default()
	if c.Len() != 1363 {
		t.Fatalf("catalog has %d types, want 1363", c.Len())
	}
	arch := map[string]int{}
	for i, it := range c.Types() {
		arch[it.Arch]++
		if i > 0 && c.Types()[i-1].Name >= it.Name {
			t.Fatalf("types not sorted by name at %s", it.Name)
		}
	}
	if arch["amd64"] != 967 || arch["arm64"] != 396 {
		t.Fatalf("arch counts %v, want 967 amd64 and 396 arm64", arch)
	}
	m5, ok := c.Get("m5.large")
	if !ok || m5.VCPU != 2 || m5.MemoryMiB != 8192 || m5.OnDemandPrice != 0.096 || m5.Family != "m5" || m5.Generation != 5 {
		t.Fatalf("m5.large = %+v", m5)
	}
	if _, ok := c.Get("m5.huge"); ok {
		t.Fatal("unknown type found")
	}
}

// reference is one CSV row's allocatable, as Karpenter computes it.
type reference struct {
	name                   string
	milliCPU, memMiB, pods int64
}

func readReference(t *testing.T) []reference {
	t.Helper()
	rows, err := refdata.InstanceRows()
	if err != nil {
		t.Fatal(err)
	}
	var out []reference
	for _, r := range rows {
		cpu := resource.MustParse(r["alloc_cpu"])
		mem := resource.MustParse(r["alloc_memory"])
		pods := resource.MustParse(r["alloc_pods"])
		out = append(out, reference{r["name"], cpu.MilliValue(), mem.Value() >> 20, pods.Value()})
	}
	return out
}

func TestAllocatableMatchesKarpenterReference(t *testing.T) {
	// Karpenter's AWS provider instancetype suite (v1.14.1): "shouldn't
	// report more resources than are actually available on instances".
	_ = "aws/instancetype:1987"
	refs := readReference(t)
	type miss struct {
		name  string
		worst float64
		line  string
	}
	var misses []miss
	for _, ref := range refs {
		it, ok := Default().Get(ref.name)
		if !ok {
			t.Fatalf("%s missing from the catalog", ref.name)
		}
		_, a := it.Compute(NodeSettings{})
		got := [3]int64{a.MilliCPU, a.MemoryBytes >> 20, a.Pods}
		want := [3]int64{ref.milliCPU, ref.memMiB, ref.pods}
		worst := 0.0
		for i := range got {
			worst = math.Max(worst, math.Abs(float64(got[i]-want[i]))/float64(want[i]))
		}
		if worst > 0.02 {
			misses = append(misses, miss{ref.name, worst, fmt.Sprintf("%s: cpu %dm/%dm memory %dMi/%dMi pods %d/%d (ours/reference)",
				ref.name, got[0], want[0], got[1], want[1], got[2], want[2])})
		}
	}
	share := 1 - float64(len(misses))/float64(len(refs))
	t.Logf("allocatable within 2%% of the reference for %d of %d types (%.1f%%)", len(refs)-len(misses), len(refs), 100*share)
	if share < 0.95 {
		sort.Slice(misses, func(i, j int) bool { return misses[i].worst > misses[j].worst })
		for _, m := range misses[:min(20, len(misses))] {
			t.Log(m.line)
		}
		t.Fatalf("only %.1f%% of types within 2%%, want at least 95%%", 100*share)
	}
}

// BenchmarkDecodeEmbedded is the catalog's one-time cost in a new
// container: gunzip and parse the embedded table.
func BenchmarkDecodeEmbedded(b *testing.B) {
	for range b.N {
		if _, err := decodeTypes(generatedTable); err != nil {
			b.Fatal(err)
		}
	}
}

func TestParseTableErrors(t *testing.T) {
	header := strings.Join(columns, "\t")
	row := func(mutate func([]string)) string {
		f := []string{"m5.large", "m5", "m", "5", "large", "amd64", "linux", "2", "8192", "0", "", "", "0", "0", "", "0", "750", "650", "intel", "nitro", "false", "false", "3", "10", "0", "true", "0.096"}
		if mutate != nil {
			mutate(f)
		}
		return strings.Join(f, "\t")
	}
	for _, tc := range []struct{ name, text, err string }{
		{"no header", "# only a comment\n", "no header"},
		{"wrong header", "name\tfamily\n", "line 1: header"},
		{"short line", header + "\nm5.large\tm5\n", "line 2: 2 fields"},
		{"bad number", header + "\n" + row(func(f []string) { f[7] = "two" }) + "\n", "line 2 (m5.large): column vcpu"},
		{"bad bool", header + "\n" + row(func(f []string) { f[20] = "maybe" }) + "\n", "column bare_metal"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseTable(tc.text)
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error %v, want %q", err, tc.err)
			}
		})
	}
	got, err := parseTable("# c\n" + header + "\n" + row(nil) + "\n")
	if err != nil || len(got) != 1 || got[0].Name != "m5.large" || got[0].VCPU != 2 || got[0].OnDemandPrice != 0.096 || got[0].GPU.Count != 0 {
		t.Fatalf("parsed %+v, %v", got, err)
	}
}
