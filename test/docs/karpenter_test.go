package docs

import (
	"strings"
	"testing"

	"github.com/nodewright/nodewright/shared/metrics"
)

// The reference's table of Karpenter's metrics names every metric of the
// pinned list (metrics.Karpenter) and nothing else, and says of each what
// the code says: its kind, the dimensions Nodewright publishes ("-" for a
// metric not emitted) and, for a name that means nothing without a
// controller, that it does not.
func TestReferenceKarpenterMetrics(t *testing.T) {
	const rel, heading = "docs/reference/metrics.md", "Karpenter's metrics"
	byName := map[string]metrics.KarpenterMetric{}
	var code []string
	for _, k := range metrics.Karpenter() {
		byName[k.Name] = k
		code = append(code, k.Name)
	}
	compare(t, "Karpenter metric", rel, code, keysUnder(t, rel, heading))
	p := readPage(t, rel)
	start, end, _ := p.section(heading)
	for i := start; i < end; i++ {
		cells := strings.Split(strings.Trim(strings.TrimSpace(p.lines[i]), "|"), "|")
		if p.code[i] || len(cells) != 5 {
			continue
		}
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		k, ok := byName[strings.Trim(cells[0], "`")]
		if !ok {
			continue
		}
		if cells[1] != string(k.Kind) {
			t.Errorf("%s: %s is a %s, the page says %s", rel, k.Name, k.Kind, cells[1])
		}
		dims := "-"
		if k.Emitted() {
			dims = strings.Join(k.Dimensions(), ", ")
			if dims == "" {
				dims = "(ClusterName only)"
			}
		}
		if cells[3] != dims {
			t.Errorf("%s: %s is published with dimensions %q, the page says %q", rel, k.Name, dims, cells[3])
		}
		const none = "no meaning without a controller"
		if strings.HasPrefix(k.Nodewright, none) != strings.HasPrefix(cells[4], none) {
			t.Errorf("%s: %s: the code says %q, the page %q", rel, k.Name, k.Nodewright, cells[4])
		}
	}
}
