package scheduling

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestCoverLPOptimum: on covering programs with two rows, whose optimum uses
// one column or two (found by trying them all), the simplex's certified
// duals reach the optimum, its primal solution covers every row at that
// price, and the duals are feasible (no column worth more than its price).
func TestCoverLPOptimum(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for trial := range 300 {
		n := 1 + rng.IntN(40)
		lp := &coverLP{b: []float64{1 + rng.Float64()*1e5, 1 + rng.Float64()*1e11}}
		for range n {
			lp.a = append(lp.a, []float64{float64(rng.IntN(64000)), float64(rng.IntN(1 << 37))})
			lp.price = append(lp.price, 0.001+rng.Float64()*5)
		}
		want := bruteForce2(lp)
		x, y := lp.solve()
		got := lp.value(y)
		if math.IsInf(want, 1) {
			continue // a row nothing covers: the duals need only be feasible
		}
		if math.Abs(got-want) > 1e-6*want {
			t.Errorf("trial %d: dual value %v, optimum %v", trial, got, want)
		}
		primal := 0.0
		for j := range x {
			primal += x[j] * lp.price[j]
		}
		for i := range lp.b {
			held := 0.0
			for j := range x {
				held += x[j] * lp.a[j][i]
			}
			if held < lp.b[i]*(1-1e-6) {
				t.Errorf("trial %d: row %d covered %v of %v", trial, i, held, lp.b[i])
			}
		}
		if math.Abs(primal-want) > 1e-6*want {
			t.Errorf("trial %d: primal %v, optimum %v", trial, primal, want)
		}
	}
}

// TestCoverLPDualsAreFeasible: whatever the program (rows nothing covers,
// columns of zeros, wildly scaled rows), the certified duals are
// non-negative and no column is worth more than its price, so b·y bounds
// every cover.
func TestCoverLPDualsAreFeasible(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for trial := range 300 {
		m, n := 1+rng.IntN(10), 1+rng.IntN(50)
		lp := &coverLP{}
		for range m {
			lp.b = append(lp.b, math.Pow(10, float64(rng.IntN(12)))*(0.5+rng.Float64()))
		}
		for range n {
			a := make([]float64, m)
			for i := range a {
				if rng.IntN(3) == 0 {
					a[i] = float64(rng.IntN(1000)) * math.Pow(10, float64(rng.IntN(9)))
				}
			}
			lp.a = append(lp.a, a)
			lp.price = append(lp.price, 0.001+rng.Float64())
		}
		_, y := lp.solve()
		for i, v := range y {
			if v < 0 || math.IsNaN(v) {
				t.Fatalf("trial %d: dual %d is %v", trial, i, v)
			}
		}
		for j, a := range lp.a {
			worth := 0.0
			for i, c := range a {
				worth += c * y[i]
			}
			if worth > lp.price[j]*(1+1e-9) {
				t.Errorf("trial %d: column %d worth %v, price %v", trial, j, worth, lp.price[j])
			}
		}
	}
}

// bruteForce2 is the optimum of a two-row covering program: one column
// alone, or two columns meeting both rows exactly.
func bruteForce2(lp *coverLP) float64 {
	best := math.Inf(1)
	ratio := func(need, have float64) float64 {
		if have <= 0 {
			return math.Inf(1)
		}
		return need / have
	}
	for j, a := range lp.a {
		best = min(best, lp.price[j]*max(ratio(lp.b[0], a[0]), ratio(lp.b[1], a[1])))
	}
	for i := range lp.a {
		for j := i + 1; j < len(lp.a); j++ {
			s, u := lp.a[i], lp.a[j]
			det := s[0]*u[1] - u[0]*s[1]
			if det == 0 {
				continue
			}
			xs := (lp.b[0]*u[1] - u[0]*lp.b[1]) / det
			xu := (s[0]*lp.b[1] - lp.b[0]*s[1]) / det
			if xs >= 0 && xu >= 0 {
				best = min(best, xs*lp.price[i]+xu*lp.price[j])
			}
		}
	}
	return best
}
