package scheduling

import (
	"math"
	"testing"
)

// TestCoverTable: the cover DP buys the bulk at the lowest price per pod and
// the leftover on the cheapest type that holds it (not another big node), and
// the frontier drops every type another holds as many pods for no more.
func TestCoverTable(t *testing.T) {
	opts := frontier([]packOption{ // in price order, as packOptions gives them
		{t: 0, k: 1, price: 0.068},  // large: one pod
		{t: 1, k: 1, price: 0.0685}, // dominated: as many pods, dearer
		{t: 2, k: 3, price: 0.136},  // xlarge
		{t: 3, k: 2, price: 0.2},    // dominated by the xlarge
		{t: 4, k: 15, price: 0.616}, // 4xlarge: the best price per pod
	})
	if len(opts) != 3 || opts[0].t != 0 || opts[1].t != 2 || opts[2].t != 4 {
		t.Fatalf("frontier %+v, want types 0, 2, 4", opts)
	}
	ct := newCoverTable(opts, 40)
	for _, c := range []struct {
		pods  int
		cost  float64
		first int // type of the first node
	}{
		{1, 0.068, 0},
		{3, 0.136, 2},
		{15, 0.616, 4},
		{16, 0.616 + 0.068, 4},
		{18, 0.616 + 0.136, 4},
		{30, 2 * 0.616, 4},
		{40, 2*0.616 + 3*0.136 + 0.068, 4}, // 10 left: three xlarge and a large, not a third 4xlarge
	} {
		if got := ct.cost[c.pods]; math.Abs(got-c.cost) > 1e-9 {
			t.Errorf("%d pods cost %v, want %v", c.pods, got, c.cost)
		}
		if ct.opts[ct.pick[c.pods]].t != c.first {
			t.Errorf("%d pods: first node type %d, want %d", c.pods, ct.opts[ct.pick[c.pods]].t, c.first)
		}
	}
}
