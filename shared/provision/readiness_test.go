package provision

import (
	"context"
	"strings"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
)

// brokenPool is a copy of pool, weight 100, named name, whose nodeClassRef
// names class.
func brokenPool(pool *apis.NodePool, name, class string) *apis.NodePool {
	b := *pool
	b.Name = name
	w := int32(100)
	b.Spec.Weight = &w
	ref := *pool.Spec.Template.Spec.NodeClassRef
	ref.Name = class
	b.Spec.Template.Spec.NodeClassRef = &ref
	return &b
}

// Defect 9: a NodePool of weight 100 whose EC2NodeClass does not exist
// next to a valid pool of weight 10. Every round planned on the broken
// pool, its launch failed ("NodePool's EC2NodeClass is not configured")
// and ten pods stayed pending. The broken pool is left out of the solve;
// the valid pool takes the pods.
func TestBrokenNodePoolDoesNotStopProvisioning(t *testing.T) {
	clock := testingclock.NewFakeClock(t0)
	var pods []*corev1.Pod
	for i := range 10 {
		pods = append(pods, unschedulableAt("web-"+string(rune('a'+i)), t0.Add(-time.Minute), t0.Add(-time.Minute)))
	}
	r, fl, _, _ := testReconciler(t, clock, func(time.Time) (*View, error) { return &View{Pods: pods}, nil })
	r.NodePools = append(r.NodePools, brokenPool(r.NodePools[0], "broken", "missing"))
	rep, err := r.Round(context.Background(), testLease(clock))
	if err != nil {
		t.Fatal(err)
	}
	if rep.Plan == nil {
		t.Fatal("no plan: want the ten pods planned on the valid pool")
	}
	for _, c := range rep.Plan.NodeClaims {
		if c.NodePool != "default" {
			t.Errorf("planned NodeClaim on pool %s (class %s): want only the valid pool default", c.NodePool, c.NodeClass)
		}
	}
	covered := map[string]bool{}
	for _, call := range fl.Calls() {
		if call.Claim.NodePool != "default" {
			t.Errorf("launched on pool %s: want only default", call.Claim.NodePool)
		}
		for _, p := range call.Claim.Pods {
			covered[p] = true
		}
	}
	if len(covered) != len(pods) {
		t.Errorf("launches cover %d pods, want all %d (launches: %d, plan: %s)", len(covered), len(pods), len(fl.Calls()), planPools(rep))
	}
}

func planPools(rep *Report) string {
	var out []string
	if rep.Plan != nil {
		for _, c := range rep.Plan.NodeClaims {
			out = append(out, c.NodePool+"/"+c.NodeClass)
		}
	}
	return strings.Join(out, ", ")
}
