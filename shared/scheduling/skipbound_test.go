package scheduling_test

import (
	"bytes"
	"testing"

	"github.com/nodewright/nodewright/shared/scheduling"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
)

// TestSkipLowerBound: a solve with Input.SkipLowerBound plans the same
// bytes as one without, less the lower bound, which it leaves at 0.
func TestSkipLowerBound(t *testing.T) {
	shapes, err := st.Shapes()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range shapes[:min(len(shapes), 12)] {
		t.Run(s.Name, func(t *testing.T) {
			t.Parallel()
			in := s.Input()
			full, err := scheduling.Solve(in)
			if err != nil {
				t.Fatal(err)
			}
			if full.LowerBoundPricePerHour <= 0 {
				t.Fatalf("lower bound %v without the option, want above 0", full.LowerBoundPricePerHour)
			}
			in.SkipLowerBound = true
			skipped, err := scheduling.Solve(in)
			if err != nil {
				t.Fatal(err)
			}
			if skipped.LowerBoundPricePerHour != 0 {
				t.Errorf("lower bound %v with SkipLowerBound, want 0", skipped.LowerBoundPricePerHour)
			}
			skipped.LowerBoundPricePerHour = full.LowerBoundPricePerHour
			if !bytes.Equal(resultJSON(t, full), resultJSON(t, skipped)) {
				t.Errorf("plans differ:\n%s\n%s", resultJSON(t, full), resultJSON(t, skipped))
			}
		})
	}
}
