package scheduling_test

import (
	"testing"

	"github.com/nodewright/nodewright/shared/fieldjson"
	"github.com/nodewright/nodewright/shared/scheduling"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
)

// FuzzSolveQuantities solves pods and a NodePool limit of any quantity the
// loaders admit (screened text): the plan must keep every invariant (each
// pod placed once, on a type that holds it, with a reason when it is not),
// whatever the amounts; the seeds are the values that used to wrap.
func FuzzSolveQuantities(f *testing.F) {
	for _, seed := range []struct {
		cpu, memory, limit string
		n                  uint8
	}{
		{"500m", "256Mi", "1000", 3},
		{"9223372036854776", "1Gi", "1000", 2},       // cpu wraps to about -9.2e18 millicores in MilliValue
		{"1", "9223372036854775807", "1000", 2},      // int64's maximum
		{"1", "1Gi", "9223372036854776", 4},          // a limit that wrapped negative
		{"4503599627370", "4Pi", "4503599627371", 1}, // around quantity.Max
		{"1e18", "1e18", "1e18", 1},                  // the largest exponent the screen admits
		{"-9223372036854776", "-1Gi", "-9223372036854776", 1},
	} {
		f.Add(seed.cpu, seed.memory, seed.limit, seed.n)
	}
	f.Fuzz(func(t *testing.T, cpu, memory, limit string, n uint8) {
		for _, s := range []string{cpu, memory, limit} {
			if _, err := fieldjson.ParseQuantity(s); err != nil {
				return // the loaders refuse it before a solve
			}
		}
		in := input(types(st.SyntheticTypes(20)...),
			pools(poolWith(st.NodePoolOptions{Requirements: reqs(req(ctKey, opIn, onDemand)), Limits: res{"cpu": limit}})),
			podList(podsN(int(n%8)+1, po{Name: "p", CPU: cpu, Memory: memory})))
		r, err := scheduling.Solve(in)
		if err != nil {
			t.Fatalf("Solve: %v", err)
		}
		checkInvariants(t, in, r)
	})
}
