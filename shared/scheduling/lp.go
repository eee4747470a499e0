package scheduling

import "math"

// coverLP is a covering linear program: minimise Σ price[j]·x[j] subject to
// Σ a[j][i]·x[j] ≥ b[i] for every row i, x ≥ 0, with every price positive
// and every b positive. The lower bound solves it for its dual prices y (one
// per row), and only uses them after certifying them: weak duality makes
// b·y a valid bound for every y ≥ 0 with a[j]·y ≤ price[j] for every column,
// so rounding or an iteration cap can only loosen the bound, never make it
// wrong.
type coverLP struct {
	a     [][]float64 // per column, one coefficient per row
	price []float64
	b     []float64
}

// lpMaxIterations caps the simplex's pivots.
const lpMaxIterations = 2000

// solve runs a revised simplex (explicit basis inverse, Dantzig pricing with
// Bland's rule after degenerate pivots, big-M artificial start) and returns
// the primal solution x and certified dual prices y.
func (lp *coverLP) solve() (x, y []float64) {
	m, n := len(lp.b), len(lp.a)
	if m == 0 || n == 0 {
		return make([]float64, n), make([]float64, m)
	}
	// Rows are in millicores, bytes and pods: scale each to a demand of 1
	// so that the pivots' tolerances mean the same everywhere.
	a := make([][]float64, n)
	for j := range a {
		a[j] = make([]float64, m)
		for i, v := range lp.a[j] {
			a[j][i] = v / lp.b[i]
		}
	}
	bigM := 1.0
	for _, p := range lp.price {
		bigM = max(bigM, p)
	}
	bigM *= 1e4
	// Columns: n structural, m surplus (−e_i, cost 0), m artificial (+e_i, cost bigM).
	cost := func(j int) float64 {
		switch {
		case j < n:
			return lp.price[j]
		case j < n+m:
			return 0
		}
		return bigM
	}
	// col writes B⁻¹·A_j into u.
	binv := make([][]float64, m)
	for i := range binv {
		binv[i] = make([]float64, m)
		binv[i][i] = 1
	}
	basis := make([]int, m)
	inBasis := make([]bool, n+2*m)
	xb := make([]float64, m)
	for i := range basis {
		basis[i] = n + m + i
		inBasis[basis[i]] = true
		xb[i] = 1
	}
	u := make([]float64, m)
	col := func(j int) {
		clear(u)
		switch {
		case j < n:
			for i := 0; i < m; i++ {
				var s float64
				for k, v := range a[j] {
					s += binv[i][k] * v
				}
				u[i] = s
			}
		case j < n+m:
			for i := 0; i < m; i++ {
				u[i] = -binv[i][j-n]
			}
		default:
			for i := 0; i < m; i++ {
				u[i] = binv[i][j-n-m]
			}
		}
	}
	duals := make([]float64, m)
	computeDuals := func() {
		clear(duals)
		for r, j := range basis {
			c := cost(j)
			if c == 0 {
				continue
			}
			for k := 0; k < m; k++ {
				duals[k] += c * binv[r][k]
			}
		}
	}
	const eps = 1e-9
	degenerate := 0
	for iter := 0; iter < lpMaxIterations; iter++ {
		computeDuals()
		bland := degenerate > 20
		enter, best := -1, -eps
		for j := 0; j < n+2*m; j++ {
			if inBasis[j] {
				continue
			}
			var d float64
			switch {
			case j < n:
				d = lp.price[j]
				for k, v := range a[j] {
					d -= duals[k] * v
				}
				d /= lp.price[j] // relative reduced cost: prices vary by orders
			case j < n+m:
				d = duals[j-n]
			default:
				continue // an artificial never re-enters
			}
			if d < best {
				enter, best = j, d
				if bland {
					break
				}
			}
		}
		if enter < 0 {
			break
		}
		col(enter)
		leave, ratio := -1, math.Inf(1)
		for i := 0; i < m; i++ {
			if u[i] > eps {
				r := xb[i] / u[i]
				if r < ratio-eps || (r <= ratio+eps && leave >= 0 && basis[i] < basis[leave]) {
					leave, ratio = i, r
				}
			}
		}
		if leave < 0 {
			break // unbounded: cannot happen with positive prices
		}
		if ratio <= eps {
			degenerate++
		} else {
			degenerate = 0
		}
		// Pivot on u[leave].
		pv := u[leave]
		for k := 0; k < m; k++ {
			binv[leave][k] /= pv
		}
		xb[leave] /= pv
		for i := 0; i < m; i++ {
			if i == leave || u[i] == 0 {
				continue
			}
			f := u[i]
			for k := 0; k < m; k++ {
				binv[i][k] -= f * binv[leave][k]
			}
			xb[i] -= f * xb[leave]
		}
		inBasis[basis[leave]] = false
		basis[leave] = enter
		inBasis[enter] = true
	}
	computeDuals()
	for i := range duals {
		duals[i] /= lp.b[i]
	}
	x = make([]float64, n)
	for r, j := range basis {
		if j < n {
			x[j] = max(xb[r], 0)
		}
	}
	return x, lp.certify(duals)
}

// certify turns approximate dual prices into feasible ones: negative prices
// become 0, rows no column covers get 0, and y is scaled down until no
// column's resources are worth more than its price.
func (lp *coverLP) certify(duals []float64) []float64 {
	m := len(lp.b)
	y := make([]float64, m)
	covered := make([]bool, m)
	for _, a := range lp.a {
		for i, v := range a {
			if v > 0 {
				covered[i] = true
			}
		}
	}
	for i := range y {
		if covered[i] && duals[i] > 0 && !math.IsInf(duals[i], 0) && !math.IsNaN(duals[i]) {
			y[i] = duals[i]
		}
	}
	worst := 1.0
	for j, a := range lp.a {
		var v float64
		for i, c := range a {
			v += c * y[i]
		}
		worst = max(worst, v/lp.price[j])
	}
	if worst > 1 {
		for i := range y {
			y[i] /= worst * (1 + 1e-12)
		}
	}
	return y
}

// value is b·y, the bound certified duals give.
func (lp *coverLP) value(y []float64) float64 {
	var v float64
	for i, b := range lp.b {
		v += b * y[i]
	}
	return v
}
