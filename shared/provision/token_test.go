package provision

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/fleet"
)

// The ClientToken is unique per cluster and per launch: two clusters whose
// NodeClaims take the same names never share one.
func TestClientTokenIsUniquePerClusterAndLaunch(t *testing.T) {
	tokenOf := func(cluster string) string {
		clock := testingclock.NewFakeClock(t0)
		pod := unschedulableAt("web-0", t0.Add(-time.Minute), t0.Add(-time.Minute))
		r, fl, _, _ := testReconciler(t, clock, func(time.Time) (*View, error) { return &View{Pods: []*corev1.Pod{pod}}, nil })
		r.Cluster = cluster
		if _, err := r.Round(context.Background(), testLease(clock)); err != nil {
			t.Fatal(err)
		}
		calls := fl.Calls()
		if len(calls) != 1 {
			t.Fatalf("%d fleet calls, want 1", len(calls))
		}
		return calls[0].Token
	}
	a, b := tokenOf("cluster-a"), tokenOf("cluster-b")
	if a == b || a == "default-00001" {
		t.Errorf("tokens %q and %q: want one per cluster and launch, not the NodeClaim's name", a, b)
	}
}

// The fleet's request (token and inputs) is in the records before
// CreateFleet is called, and a re-drive after the invocation died sends
// it again unchanged, even when the EC2NodeClass's resolution changed
// since (another AMI, another subnet).
func TestRedriveSendsTheStoredRequest(t *testing.T) {
	clock := testingclock.NewFakeClock(t0)
	pod := unschedulableAt("web-0", t0.Add(-time.Minute), t0.Add(-time.Minute))
	r, fl, _, _ := testReconciler(t, clock, func(time.Time) (*View, error) { return &View{Pods: []*corev1.Pod{pod}}, nil })
	ctx := context.Background()
	fl.launch = func(p *fleet.Plan, call int) ([]*fleet.Instance, error) {
		recs, err := r.Store.NodeClaims(ctx)
		if err != nil || len(recs) != 1 {
			t.Fatalf("records %v, %v before CreateFleet: want the launch's", recs, err)
		}
		var stored fleet.Plan
		if err := json.Unmarshal(recs[0].Launch, &stored); err != nil || !reflect.DeepEqual(&stored, p) {
			t.Errorf("call %d: stored request %+v (%v), want the one sent %+v", call, stored, err, p)
		}
		return fl.instances(p, p.Count), nil
	}
	r.AfterCreateFleet = func(string) error { return errors.New("invocation killed") }
	if _, err := r.Round(ctx, testLease(clock)); err == nil {
		t.Fatal("the first round did not die after CreateFleet")
	}
	r.AfterCreateFleet = nil
	// (The fake resolves another AMI at each Prepare: a request planned
	// again would differ.)
	clock.Step(time.Minute)
	rep, err := r.Round(ctx, testLease(clock))
	if err != nil {
		t.Fatal(err)
	}
	calls := fl.Calls()
	if len(calls) != 2 || !reflect.DeepEqual(calls[0], calls[1]) {
		t.Fatalf("fleet calls %+v: want the first request sent again", calls)
	}
	if len(rep.Recovered) != 1 {
		t.Errorf("recovered %v, want the launch's NodeClaim", rep.Recovered)
	}
}
