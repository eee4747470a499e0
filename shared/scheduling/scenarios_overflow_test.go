package scheduling_test

import (
	"math"
	"testing"

	"github.com/nodewright/nodewright/shared/scheduling"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
)

// overflowScenarios: amounts too large to count. resource.Quantity's
// MilliValue wraps past int64 (cpu "9223372036854776" is about -9.2e18
// millicores), which used to put such a pod on the smallest type and drop
// the lower bound; and a limit of that size closed its pool.
func overflowScenarios() []scenario {
	return []scenario{
		{
			name: "a cpu request too large to count is unschedulable at once with the request as written",
			in: input(pods(pod(po{Name: "huge", CPU: "9223372036854776"}),
				pod(po{Name: "web", CPU: "500m", Memory: "256Mi"}))),
			want: []check{claims(1), fromPool("web", "default"), unschedulableCount(1),
				unschedulable("huge", "requests 9223372036854776 cpu", "more than any existing node or instance type of any NodePool offers", "fake-it-")},
		},
		{
			name: "a memory request of int64's maximum is unschedulable and leaves the bound alone",
			in:   input(types(st.SyntheticTypes(20)...), podList(append(podsN(3, po{Name: "web", CPU: "1", Memory: "1Gi"}), pod(po{Name: "hog", Memory: "9223372036854775807"})))),
			want: []check{claims(1), unschedulable("hog", "requests 9223372036854775807 memory"), unschedulableCount(1, "more than"),
				sameBoundAs(input(types(st.SyntheticTypes(20)...), podList(podsN(3, po{Name: "web", CPU: "1", Memory: "1Gi"}))))},
		},
		{
			name: "many pods too large to count do not overflow when grouped",
			in:   input(podList(podsN(5000, po{Name: "huge", CPU: "9223372036854776"}))),
			want: []check{claims(0), unschedulableCount(5000, "more than any existing node or instance type of any NodePool offers")},
		},
		{
			name: "a negative request is unschedulable, not room for others",
			in:   input(pods(pod(po{Name: "minus", CPU: "-1E"}), pod(po{Name: "web", CPU: "1"}))),
			want: []check{claims(1), unschedulable("minus", "it requests -1E cpu, a negative amount"), unschedulableCount(1)},
		},
		{
			name: "a NodePool limit too large to count never binds",
			in: input(pools(poolWith(st.NodePoolOptions{Requirements: reqs(req(ctKey, opIn, onDemand)),
				Limits: res{"cpu": "9223372036854776", "memory": "9223372036854775807"}})),
				podList(podsN(3, po{Name: "worker", CPU: "1500m"}))),
			want: []check{allScheduled(), claims(1)},
		},
	}
}

// sameBoundAs: the plan's lower bound is the one of other (the same pods
// without the ones too large to count, which used to pull it down).
func sameBoundAs(other scheduling.Input) check {
	return func(t *testing.T, p *plan) {
		r, err := scheduling.Solve(other)
		if err != nil {
			t.Fatal(err)
		}
		want := r.LowerBoundPricePerHour
		if want <= 0 || math.Abs(p.res.LowerBoundPricePerHour-want) > 1e-9 {
			t.Errorf("lower bound %v, want %v (the same pods without the one too large to count)", p.res.LowerBoundPricePerHour, want)
		}
	}
}
