package configstatus

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/state"
)

var t0 = time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)

func conds(st apis.NodePoolStatus) map[string]string {
	out := map[string]string{}
	for _, c := range st.Conditions {
		out[c.Type] = string(c.Status) + "/" + c.Reason
	}
	return out
}

func TestDesired(t *testing.T) {
	pool := &apis.NodePool{}
	pool.Name, pool.Generation = "default", 3
	cpu := func(s string) corev1.ResourceList {
		return corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(s)}
	}
	records := []*state.NodeClaim{
		{Name: "a", NodePool: "default", Phase: state.Initialized, RegisteredAt: t0, Capacity: cpu("2")},
		{Name: "b", NodePool: "default", Phase: state.Launched, Capacity: cpu("4")},
		{Name: "c", NodePool: "default", Phase: state.Terminating, RegisteredAt: t0, Capacity: cpu("8")},
		{Name: "d", NodePool: "other", Phase: state.Initialized, Capacity: cpu("16")},
	}
	for _, c := range []struct {
		name     string
		records  []*state.NodeClaim
		notReady string
		nodes    int64
		cpu      string
		want     map[string]string
	}{
		{"ready, a node registered", records, "", 2, "6", map[string]string{
			"Ready": "True/Ready", "NodeClassReady": "True/NodeClassReady", "ValidationSucceeded": "True/ValidationSucceeded",
			"NodeRegistrationHealthy": "True/NodeRegistrationHealthy"}},
		{"class broken, nothing yet", nil, "SubnetsNotFound", 0, "0", map[string]string{
			"Ready": "False/UnhealthyDependents", "NodeClassReady": "False/SubnetsNotFound", "ValidationSucceeded": "True/ValidationSucceeded",
			"NodeRegistrationHealthy": "Unknown/AwaitingReconciliation"}},
	} {
		st := Desired(Input{Pool: pool, Records: c.records, NotReady: c.notReady, Message: "no subnet", Now: t0})
		got := conds(st)
		for k, v := range c.want {
			if got[k] != v {
				t.Errorf("%s: %s = %s, want %s", c.name, k, got[k], v)
			}
		}
		if *st.Nodes != c.nodes || st.Resources.Cpu().Cmp(resource.MustParse(c.cpu)) != 0 || st.Resources.Name(ResourceNodes, resource.DecimalSI).Value() != c.nodes {
			t.Errorf("%s: nodes %d, resources %v", c.name, *st.Nodes, st.Resources)
		}
		for _, cd := range st.Conditions {
			if cd.ObservedGeneration != 3 {
				t.Errorf("%s: %s observedGeneration %d, want the pool's 3", c.name, cd.Type, cd.ObservedGeneration)
			}
		}
	}
}

// A status in step is not written again, even an hour on; a changed node
// count is, and unchanged conditions keep their transition times.
func TestChange(t *testing.T) {
	pool := &apis.NodePool{}
	pool.Name = "default"
	recs := []*state.NodeClaim{{Name: "a", NodePool: "default", Phase: state.Initialized, RegisteredAt: t0}}
	first := Desired(Input{Pool: pool, Records: recs, Now: t0})
	if _, changed := Change(first, apis.NodePoolStatus{}); !changed {
		t.Fatal("an empty status is in step")
	}
	later := Desired(Input{Pool: pool, Records: recs, Now: t0.Add(time.Hour)})
	if _, changed := Change(later, first); changed {
		t.Error("the same status an hour later is written again")
	}
	more := Desired(Input{Pool: pool, Records: append(recs, &state.NodeClaim{Name: "b", NodePool: "default", Phase: state.Launched}), Now: t0.Add(time.Hour)})
	out, changed := Change(more, first)
	if !changed || *out.Nodes != 2 {
		t.Fatalf("a second node: changed %v, %+v", changed, out)
	}
	for _, c := range out.Conditions {
		if !c.LastTransitionTime.Equal(&metav1.Time{Time: t0}) {
			t.Errorf("%s moved to %s", c.Type, c.LastTransitionTime)
		}
	}
}
