package scheduling_test

import (
	"slices"
	"testing"

	"github.com/nodewright/nodewright/shared/scheduling"
)

// TestNoCompatibleInstanceTypes: a NodePool whose own requirements leave
// no instance type with an available offering is named in the result
// (Karpenter's NoCompatibleInstanceTypes event goes on it); a pool that
// has types, even if a pod's selector excludes them all, is not.
func TestNoCompatibleInstanceTypes(t *testing.T) {
	tests := []struct {
		name string
		in   scheduling.Input
		want []string
	}{
		{name: "an architecture none of the catalog's types has",
			in:   input(pools(pool("arm", 0, req(archKey, opIn, arm64)), pool("default", 0)), pods(pod(po{Name: "web", CPU: "1"}))),
			want: []string{"arm"}},
		{name: "every offering refused",
			in: input(pools(pool("default", 0)), pods(pod(po{Name: "web", CPU: "1"})),
				unavailable(func(string, string, string) bool { return true })),
			want: []string{"default"}},
		{name: "a pod's selector excludes the pool's types: the pool is not at fault",
			in: input(pods(pod(po{Name: "web", NodeSelector: labels(archKey, arm64)})))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := scheduling.Solve(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(r.NoCompatibleInstanceTypes, tc.want) {
				t.Errorf("NoCompatibleInstanceTypes %v, want %v", r.NoCompatibleInstanceTypes, tc.want)
			}
		})
	}
}
