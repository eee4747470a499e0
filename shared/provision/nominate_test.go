package provision

import (
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/scheduling"
	"github.com/nodewright/nodewright/shared/state"
)

func TestNominate(t *testing.T) {
	inFlight := func(name, typ string) *scheduling.Node {
		r := record(name, state.Launched, "i-"+name)
		r.InstanceType = typ
		n, err := InFlightNode(r, cat, nil)
		if err != nil {
			t.Fatal(err)
		}
		return &scheduling.Node{Node: n, InFlight: true}
	}
	claimed := func(name string, pods ...string) *state.NodeClaim {
		r := record(name, state.Launched, "i-"+name)
		r.Claim.Pods = pods
		return r
	}
	for _, tc := range []struct {
		name    string
		pods    []*corev1.Pod
		nodes   []*scheduling.Node
		records []*state.NodeClaim
		placed  map[string]string
		want    []string            // pods left to solve
		on      map[string][]string // in-flight node -> pods put on it
	}{
		{name: "no records", pods: []*corev1.Pod{pending("a", "1")}, nodes: []*scheduling.Node{inFlight("nc-1", "m6g.large")},
			want: []string{"default/a"}},
		{name: "pods launched for stay on their NodeClaim", pods: []*corev1.Pod{pending("a", "500m"), pending("b", "500m"), pending("c", "500m")},
			nodes: []*scheduling.Node{inFlight("nc-1", "m6g.large")}, records: []*state.NodeClaim{claimed("nc-1", "default/a", "default/b")},
			want: []string{"default/c"}, on: map[string][]string{"nc-1": {"default/a", "default/b"}}},
		// m6g.large has under 2 cpu allocatable: the third 1-cpu pod does
		// not fit beside two, and is solved again.
		{name: "only what fits", pods: []*corev1.Pod{pending("a", "1"), pending("b", "1"), pending("c", "1")},
			nodes: []*scheduling.Node{inFlight("nc-1", "m6g.large")}, records: []*state.NodeClaim{claimed("nc-1", "default/a", "default/b", "default/c")},
			want: []string{"default/b", "default/c"}, on: map[string][]string{"nc-1": {"default/a"}}},
		{name: "pods an earlier solve put in an in-flight NodeClaim's room stay there", pods: []*corev1.Pod{pending("a", "500m"), pending("b", "500m")},
			nodes: []*scheduling.Node{inFlight("nc-1", "m6g.large")}, records: []*state.NodeClaim{claimed("nc-1", "default/a")},
			placed: map[string]string{"default/b": "nc-1", "default/c": "nc-9"}, want: nil, on: map[string][]string{"nc-1": {"default/a", "default/b"}}},
		{name: "a registered NodeClaim (no in-flight node) nominates nothing", pods: []*corev1.Pod{pending("a", "1")},
			records: []*state.NodeClaim{claimed("nc-2", "default/a")}, want: []string{"default/a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := scheduling.Input{Pods: tc.pods, Nodes: tc.nodes}
			n, to := nominate(&in, tc.records, &placements{on: tc.placed})
			if got := podKeys(in.Pods); !slices.Equal(got, tc.want) {
				t.Errorf("left to solve %v, want %v", got, tc.want)
			}
			total := 0
			for _, node := range in.Nodes {
				got := podKeys(node.Pods)
				total += len(got)
				if !slices.Equal(got, tc.on[node.Node.Name]) {
					t.Errorf("on %s: %v, want %v", node.Node.Name, got, tc.on[node.Node.Name])
				}
				for _, p := range node.Pods {
					if p.Spec.NodeName != node.Node.Name {
						t.Errorf("pod %s on %s is bound to %q", p.Name, node.Node.Name, p.Spec.NodeName)
					}
				}
			}
			if n != total {
				t.Errorf("nominated %d, %d put on nodes", n, total)
			}
			if want := slices.Sorted(maps.Keys(tc.on)); !slices.Equal(to, want) {
				t.Errorf("nominated to %v, want %v", to, want)
			}
			for _, p := range tc.pods {
				if p.Spec.NodeName != "" {
					t.Errorf("the input pod %s was changed", p.Name)
				}
			}
		})
	}
}
