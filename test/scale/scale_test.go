package scale

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

var (
	sizesFlag  = flag.String("sizes", "2,10,30,100", "cluster sizes, percentages of 5,000 nodes and 150,000 pods (BenchmarkScale)")
	passesFlag = flag.String("passes", "", "run only these passes of BenchmarkScale, a comma list of sweep, consolidation, interruption, burst (empty: all); the figures of the passes left out are not written")
	rebuild    = flag.Bool("rebuild", false, "build the snapshots again even if the cache has them")
)

// run builds (unless cached) and restores each size and measures its
// passes, logging progress to stderr.
func run(t testing.TB, ctx context.Context, sizes []Size, o Options) *Figures {
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	cache := CacheDir()
	figs := &Figures{Version: Version, Machine: Machine()}
	for _, s := range sizes {
		if _, ok := Cached(cache, s); !ok || *rebuild {
			log.Info("building", "size", s.Name(), "nodes", s.Nodes, "pods", s.Pods, "cache", cache)
			if _, err := Build(ctx, s, cache, log); err != nil {
				t.Fatal(err)
			}
		}
		r, err := Restore(ctx, cache, s, log)
		if err != nil {
			t.Fatal(err)
		}
		f, err := Measure(ctx, r, log, o)
		if cerr := r.LC.Close(); err == nil && cerr != nil {
			err = cerr
		}
		if err != nil {
			t.Fatal(err)
		}
		figs.Sizes = append(figs.Sizes, f)
	}
	return figs
}

// BenchmarkScale is `make bench-scale`: every size of -sizes, its table
// and plot written into docs/benchmarks.md and docs/scale.svg, the
// figures into testdata/figures.json.
func BenchmarkScale(b *testing.B) {
	sizes, err := ParseSizes(*sizesFlag)
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Hour)
	defer cancel()
	start := time.Now()
	only, err := parsePasses(*passesFlag)
	if err != nil {
		b.Fatal(err)
	}
	figs := run(b, ctx, sizes, Options{Interruption: true, Only: only})
	if only != nil {
		// Some passes only: their figures are logged, the figures and
		// pages keep the whole runs'.
		fmt.Fprintf(os.Stderr, "bench-scale: passes %s of %d sizes in %s; figures not written\n", *passesFlag, len(sizes), time.Since(start).Round(time.Second))
		return
	}
	// The sizes not run this time keep their figures (same builder
	// version and machine only).
	var old Figures
	path := filepath.Join("testdata", "figures.json")
	if readJSON(path, &old) == nil && old.Version == Version && old.Machine == figs.Machine {
		figs.Merge(&old)
	}
	if err := writeJSON(path, figs); err != nil {
		b.Fatal(err)
	}
	docs := filepath.Join("..", "..", "docs")
	if err := os.WriteFile(filepath.Join(docs, "scale.svg"), figs.SVG(), 0o644); err != nil {
		b.Fatal(err)
	}
	page := filepath.Join(docs, "benchmarks.md")
	doc, err := os.ReadFile(page)
	if err != nil {
		b.Fatal(err)
	}
	body := "`make bench-scale` (test/scale) builds the cluster on the local cloud at each size, restores it from its snapshot and measures each function's pass. Figures: test/scale/testdata/figures.json.\n\n![Cost of each pass against cluster size](scale.svg)\n\n" + figs.Markdown()
	if err := os.WriteFile(page, []byte(splice(string(doc), body)), 0o644); err != nil {
		b.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "bench-scale: %d sizes in %s; docs/benchmarks.md, docs/scale.svg and test/scale/testdata/figures.json written\n", len(sizes), time.Since(start).Round(time.Second))
}

// parsePasses is the -passes flag's groups (nil: every pass).
func parsePasses(s string) (map[string]bool, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	only := map[string]bool{}
	for _, g := range strings.Split(s, ",") {
		g = strings.TrimSpace(g)
		switch g {
		case "sweep", "consolidation", "interruption", "burst":
			only[g] = true
		default:
			return nil, fmt.Errorf("-passes: %q is not a pass group (sweep, consolidation, interruption, burst)", g)
		}
	}
	return only, nil
}

// TestScaleSmoke is the smoke run `make test` plays: 1% and 2% of the
// cluster (built fresh unless cached), the provision and consolidation
// passes (a burst of 300 pods), and the growth between the two sizes: what a warm sweep asks
// the API server and reads from DynamoDB does not grow with the cluster
// (it grows with changes, and nothing changed), nor do the burst's
// CreateFleet calls, and each pass's peak heap grows at most linearly.
func TestScaleSmoke(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	figs := run(t, ctx, []Size{SizeOf(1), SizeOf(2)}, Options{Burst: 300})
	small, large := figs.Sizes[0], figs.Sizes[1]
	growth := float64(large.Size.Nodes) / float64(small.Size.Nodes)
	for _, tc := range []struct {
		pass, what string
		of         func(Pass) float64
		most       float64 // the ratio large/small may be at most
		slack      float64 // absolute slack (noise at these sizes)
	}{
		{"provision sweep warm", "Kubernetes requests", func(p Pass) float64 { return float64(p.KubeRequests) }, 1.5, 5},
		{"provision sweep warm", "DynamoDB read units", func(p Pass) float64 { return p.ReadUnits }, 1.5, 2},
		{"provision burst warm", "CreateFleet calls", func(p Pass) float64 { return p.Extra["createFleetCalls"] }, 1.5, 2},
		{"provision sweep cold", "peak heap MiB", func(p Pass) float64 { return p.PeakHeapMiB }, growth * 1.5, 16},
		{"provision sweep warm", "peak heap MiB", func(p Pass) float64 { return p.PeakHeapMiB }, growth * 1.5, 16},
		{"provision burst warm", "peak heap MiB", func(p Pass) float64 { return p.PeakHeapMiB }, growth * 1.5, 16},
		{"consolidation tick cold", "peak heap MiB", func(p Pass) float64 { return p.PeakHeapMiB }, growth * 1.5, 16},
	} {
		a, b := find(t, small, tc.pass), find(t, large, tc.pass)
		x, y := tc.of(a), tc.of(b)
		t.Logf("%s %s: %.1f at %d nodes, %.1f at %d nodes", tc.pass, tc.what, x, small.Size.Nodes, y, large.Size.Nodes)
		if y > x*tc.most+tc.slack {
			t.Errorf("%s: %s grew from %.1f (%d nodes) to %.1f (%d nodes): more than %.2fx (+%.0f)", tc.pass, tc.what, x, small.Size.Nodes, y, large.Size.Nodes, tc.most, tc.slack)
		}
	}
	for _, s := range figs.Sizes {
		burst := find(t, s, "provision burst warm")
		if burst.Extra["createFleetCalls"] < 1 || burst.Extra["podsTimed"] < 1 {
			t.Errorf("%s: the burst launched nothing: %v", s.Size.Name(), burst.Extra)
		}
	}
}

func find(t *testing.T, s *SizeFigures, key string) Pass {
	t.Helper()
	for _, p := range s.Passes {
		if p.Key() == key {
			return p
		}
	}
	t.Fatalf("%s: no pass %q", s.Size.Name(), key)
	return Pass{}
}
