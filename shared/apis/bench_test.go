package apis

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func benchInput(b *testing.B) []byte {
	b.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "full.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	return data
}

// BenchmarkParse reads full.yaml: a NodePool and an EC2NodeClass with every
// field set (split, YAML to JSON, strict decode, default, validate).
func BenchmarkParse(b *testing.B) {
	data := benchInput(b)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Parse(data, "full.yaml"); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkValidate(b *testing.B) {
	c, err := Parse(benchInput(b), "full.yaml")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if c.NodePools[0].Validate() != nil || c.NodeClasses[0].Validate() != nil {
			b.Fatal("invalid")
		}
	}
}

func BenchmarkHash(b *testing.B) {
	c, err := Parse(benchInput(b), "full.yaml")
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = c.NodePools[0].Hash()
		_ = c.NodeClasses[0].Hash()
	}
}

// BenchmarkAllowedDisruptions evaluates full.yaml's three budgets (two with
// cron schedules) for one reason.
func BenchmarkAllowedDisruptions(b *testing.B) {
	c, err := Parse(benchInput(b), "full.yaml")
	if err != nil {
		b.Fatal(err)
	}
	np := c.NodePools[0]
	now := time.Date(2025, 3, 3, 10, 0, 0, 0, time.UTC)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := np.AllowedDisruptions(now, 100, DisruptionReasonDrifted); err != nil {
			b.Fatal(err)
		}
	}
}
