package provision

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/state"
)

// A launch whose invocation died after CreateFleet, and whose re-drives
// EC2 keeps answering IdempotentParameterMismatch (the AMI or subnet
// choice changed since), is not stuck: the first call's instance is found
// by its NodeClaim tag and adopted, or terminated, no record launching
// without an instance outlives the registration timeout by more than one
// sweep, and the pod keeps getting capacity. Provision rounds and sweeps
// run every ten minutes for five hours.
func TestRedriveThatKeepsFailingDoesNotLeaveTheLaunchStuck(t *testing.T) {
	clock := testingclock.NewFakeClock(t0)
	pod := unschedulableAt("web-0", t0.Add(-time.Minute), t0.Add(-time.Minute))
	r, fl, _, _ := testReconciler(t, clock, func(time.Time) (*View, error) { return &View{Pods: []*corev1.Pod{pod}}, nil })
	tokens := map[string]bool{}
	fl.launch = func(p *fleet.Plan, _ int) ([]*fleet.Instance, error) {
		if tokens[p.Token] {
			return nil, apiError("IdempotentParameterMismatch")
		}
		tokens[p.Token] = true
		return fl.instances(p, p.Count), nil
	}
	crashed := false
	r.AfterCreateFleet = func(string) error {
		if crashed {
			return nil
		}
		crashed = true
		return errors.New("invocation killed")
	}
	ctx := context.Background()
	if _, err := r.Round(ctx, testLease(clock)); err == nil {
		t.Fatal("the first round did not die after CreateFleet")
	}
	first := "i-00001"
	if !fl.Running(first) {
		t.Fatalf("the first call's instance is not running: %+v", fl.running)
	}
	const sweepEvery = 10 * time.Minute
	served := map[string]bool{} // running instances seen serving the pod
	for range 30 {
		clock.Step(sweepEvery)
		if _, err := r.Round(ctx, testLease(clock)); err != nil {
			t.Fatalf("round at %s: %v", clock.Now().Sub(t0), err)
		}
		if _, err := r.Sweep(ctx); err != nil {
			t.Fatalf("sweep at %s: %v", clock.Now().Sub(t0), err)
		}
		recs, err := r.Store.NodeClaims(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, rec := range recs {
			if slices.Contains(rec.Claim.Pods, "default/web-0") && rec.InstanceID != "" && fl.Running(rec.InstanceID) {
				served[rec.InstanceID] = true
			}
			if rec.Phase == state.Launching && rec.InstanceID == "" && clock.Now().Sub(rec.CreatedAt) > r.Options.RegistrationTimeout+sweepEvery {
				t.Fatalf("after %s record %s is still launching with no instance (created %s ago; %d CreateFleet calls)",
					clock.Now().Sub(t0), rec.Name, clock.Now().Sub(rec.CreatedAt), len(fl.Calls()))
			}
		}
	}
	recs, err := r.Store.NodeClaims(ctx)
	if err != nil {
		t.Fatal(err)
	}
	claimed := map[string]bool{}
	for _, rec := range recs {
		claimed[rec.InstanceID] = true
	}
	if fl.Running(first) && !claimed[first] {
		t.Errorf("the first call's instance %s still runs with no record (terminated: %v)", first, fl.terminated)
	}
	// No Node ever registers here: each instance is terminated at the
	// registration timeout and the pod gets another.
	if len(served) < 2 {
		t.Errorf("in 5 h the pod was served by %v, want new capacity after each registration timeout", served)
	}
}

// A re-drive whose EC2NodeClass was deleted since cannot complete the
// launch: the first call's instance, found by its tag, is terminated and
// the record removed at once (the pods are solved for again).
func TestRedriveOfADeletedClassTerminatesTheInstance(t *testing.T) {
	clock := testingclock.NewFakeClock(t0)
	pod := unschedulableAt("web-0", t0.Add(-time.Minute), t0.Add(-time.Minute))
	r, fl, _, _ := testReconciler(t, clock, func(time.Time) (*View, error) { return &View{Pods: []*corev1.Pod{pod}}, nil })
	r.AfterCreateFleet = func(string) error { return errors.New("invocation killed") }
	ctx := context.Background()
	if _, err := r.Round(ctx, testLease(clock)); err == nil {
		t.Fatal("the first round did not die after CreateFleet")
	}
	r.AfterCreateFleet = nil
	r.NodeClasses = nil
	clock.Step(time.Minute)
	if _, err := r.Round(ctx, testLease(clock)); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(fl.terminated, []string{"i-00001"}) || fl.Running("i-00001") {
		t.Errorf("terminated %v, want the first call's instance i-00001", fl.terminated)
	}
	recs, err := r.Store.NodeClaims(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 0 {
		t.Errorf("records %+v, want the launch's removed", recs)
	}
}
