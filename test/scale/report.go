package scale

import (
	"bytes"
	"fmt"
	"math"
	"os"
	"runtime"
	"sort"
	"strings"
)

// Figures are a run's figures, for testdata/figures.json and the docs.
type Figures struct {
	Version int            `json:"version"`
	Machine string         `json:"machine"`
	Sizes   []*SizeFigures `json:"sizes"`
	// Note qualifies the figures (a column not measured, say).
	Note string `json:"note,omitempty"`
}

// Merge adds old's sizes that f has not measured, in order of size.
func (f *Figures) Merge(old *Figures) {
	have := map[Size]bool{}
	for _, s := range f.Sizes {
		have[s.Size] = true
	}
	for _, s := range old.Sizes {
		if !have[s.Size] {
			f.Sizes = append(f.Sizes, s)
		}
	}
	sort.SliceStable(f.Sizes, func(i, j int) bool { return f.Sizes[i].Size.Nodes < f.Sizes[j].Size.Nodes })
}

// Machine describes this machine (cores, memory, Go).
func Machine() string {
	mem := ""
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb int64
		if _, err := fmt.Sscanf(string(b), "MemTotal: %d kB", &kb); err == nil {
			mem = fmt.Sprintf(", %d GB", (kb+(1<<19))>>20)
		}
	}
	return fmt.Sprintf("%d cores%s, %s %s/%s, shared with other sessions", runtime.NumCPU(), mem, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// Markdown is a table per size.
func (f *Figures) Markdown() string {
	var b strings.Builder
	if f.Note != "" {
		fmt.Fprintf(&b, "**Note:** %s\n\n", f.Note)
	}
	fmt.Fprintf(&b, "Machine: %s. Builder version %d. Passes run in order on the restored cluster, each on what the one before left; cold is a new container (new set-up, empty caches), warm the next invocation. Heap is the test process's Go heap above its live heap before the pass (the functions, plus the in-process AWS front); CPU the process's CPU time; Kubernetes requests and MiB are the functions' clients' only; DynamoDB units are computed from item sizes by the AWS front.\n\n", f.Machine, f.Version)
	for _, s := range f.Sizes {
		fmt.Fprintf(&b, "### %s: %d nodes, %d pods\n\n", s.Size.Name(), s.Size.Nodes, s.Size.Pods)
		fmt.Fprintf(&b, "Build %.0f s (pods into etcd %.0f/s; through the API server %.0f/s with 16 protobuf clients; records %.0f/s; instances %.0f/s); snapshot %.0f MiB; restore %.1f s.\n\n",
			s.BuildSeconds, s.BuildPodsPerSecond, s.APIPodsPerSecond, s.RecordsPerSecond, s.InstancesPerSecond, s.SnapshotMiB, s.RestoreSeconds)
		b.WriteString("| pass | wall s | CPU s | peak heap MiB | kube requests | kube MiB | DynamoDB RCU | DynamoDB WCU | other |\n")
		b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---|\n")
		for _, p := range s.Passes {
			fmt.Fprintf(&b, "| %s | %.2f | %.2f | %.0f | %d | %.1f | %.1f | %.1f | %s |\n", p.Key(), p.WallS, p.CPUS, p.PeakHeapMiB, p.KubeRequests, p.KubeMiB, p.ReadUnits, p.WriteUnits, extra(p.Extra))
		}
		b.WriteString("\n")
	}
	return b.String()
}

func extra(m map[string]float64) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		parts = append(parts, fmt.Sprintf("%s %s", k, strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.2f", m[k]), "0"), ".")))
	}
	return strings.Join(parts, ", ")
}

// costs are the plotted costs.
var costs = []struct {
	name string
	of   func(Pass) float64
}{
	{"wall s", func(p Pass) float64 { return p.WallS }},
	{"CPU s", func(p Pass) float64 { return p.CPUS }},
	{"peak heap MiB", func(p Pass) float64 { return p.PeakHeapMiB }},
	{"kube requests", func(p Pass) float64 { return float64(p.KubeRequests) }},
	{"kube MiB", func(p Pass) float64 { return p.KubeMiB }},
	{"DynamoDB RCU", func(p Pass) float64 { return p.ReadUnits }},
	{"DynamoDB WCU", func(p Pass) float64 { return p.WriteUnits }},
}

var palette = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"}

// SVG plots each cost against cluster size (nodes), log-log, a panel per
// cost, a line per pass.
func (f *Figures) SVG() []byte {
	const pw, ph, cols = 360, 240, 2
	rows := (len(costs) + cols - 1) / cols
	var keys []string
	seen := map[string]bool{}
	for _, s := range f.Sizes {
		for _, p := range s.Passes {
			if !seen[p.Key()] {
				seen[p.Key()] = true
				keys = append(keys, p.Key())
			}
		}
	}
	legendH := 18 * ((len(keys) + 1) / 2)
	W, H := pw*cols, ph*rows+legendH+30
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n", W, H, W, H)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", W, H)
	fmt.Fprintf(&b, `<text x="8" y="16" font-size="13">Cost of each pass against cluster size (nodes; 30 pods a node), log-log</text>`+"\n")
	for ci, c := range costs {
		x0, y0 := float64(ci%cols*pw)+50, float64(ci/cols*ph)+30
		w, h := float64(pw)-70, float64(ph)-60
		var xs, ys []float64
		for _, s := range f.Sizes {
			for _, p := range s.Passes {
				if v := c.of(p); v > 0 {
					xs, ys = append(xs, float64(s.Size.Nodes)), append(ys, v)
				}
			}
		}
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" font-weight="bold">%s</text>`+"\n", x0, y0+8, c.name)
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="%.0f" height="%.0f" fill="none" stroke="#999"/>`+"\n", x0, y0+14, w, h)
		if len(xs) == 0 {
			continue
		}
		xl, xh := decades(xs)
		yl, yh := decades(ys)
		px := func(v float64) float64 { return x0 + w*(math.Log10(v)-xl)/(xh-xl) }
		py := func(v float64) float64 { return y0 + 14 + h - h*(math.Log10(v)-yl)/(yh-yl) }
		for d := xl; d <= xh; d++ {
			fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle" fill="#555">%s</text>`+"\n", px(math.Pow(10, d)), y0+h+26, tick(d))
		}
		for d := yl; d <= yh; d++ {
			fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="end" fill="#555">%s</text>`+"\n", x0-4, py(math.Pow(10, d))+4, tick(d))
		}
		for ki, k := range keys {
			var pts []string
			for _, s := range f.Sizes {
				for _, p := range s.Passes {
					if p.Key() == k && c.of(p) > 0 {
						pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(float64(s.Size.Nodes)), py(c.of(p))))
					}
				}
			}
			col := palette[ki%len(palette)]
			dash := ""
			if ki >= len(palette) {
				dash = ` stroke-dasharray="4 3"`
			}
			if len(pts) > 1 {
				fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="1.5"%s/>`+"\n", strings.Join(pts, " "), col, dash)
			}
			for _, pt := range pts {
				xy := strings.Split(pt, ",")
				fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="2.5" fill="%s"/>`+"\n", xy[0], xy[1], col)
			}
		}
	}
	for ki, k := range keys {
		x, y := 10+(ki%2)*(W/2), ph*rows+30+18*(ki/2)
		col := palette[ki%len(palette)]
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/><text x="%d" y="%d">%s</text>`+"\n", x, y, x+20, y, col, x+26, y+4, k)
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// decades is the range of whole decades around the values.
func decades(v []float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, x := range v {
		lo, hi = math.Min(lo, math.Log10(x)), math.Max(hi, math.Log10(x))
	}
	lo, hi = math.Floor(lo), math.Ceil(hi)
	if hi <= lo {
		hi = lo + 1
	}
	return lo, hi
}

func tick(d float64) string {
	if d >= 0 && d <= 5 {
		return fmt.Sprintf("%g", math.Pow(10, d))
	}
	return fmt.Sprintf("1e%g", d)
}

// Markers delimit the benchmark's section of docs/benchmarks.md.
const (
	beginMarker = "<!-- bench-scale:begin -->"
	endMarker   = "<!-- bench-scale:end -->"
)

// splice puts body between the markers of doc (a "## Scale" section with
// them is added at the end if there are none).
func splice(doc, body string) string {
	i, j := strings.Index(doc, beginMarker), strings.Index(doc, endMarker)
	if i < 0 || j < i {
		doc = strings.TrimRight(doc, "\n") + "\n\n## Scale\n\n" + beginMarker + "\n" + endMarker + "\n"
		i, j = strings.Index(doc, beginMarker), strings.Index(doc, endMarker)
	}
	return doc[:i+len(beginMarker)] + "\n" + body + doc[j:]
}
