package provision

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	"github.com/aws/smithy-go"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/launch"
	"github.com/nodewright/nodewright/shared/metrics"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
	"github.com/nodewright/nodewright/shared/state"
)

func apiError(code string) error {
	return &smithy.GenericAPIError{Code: code, Message: code + " (test)"}
}

// bigPods are n pending pods too large to share a node of the production
// pool: one identical NodeClaim each, launched as one group.
func bigPods(n int, at time.Time) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range n {
		p := unschedulableAt(fmt.Sprintf("big-%d", i), at.Add(-time.Minute), at.Add(-time.Minute))
		p.Spec.Containers[0].Resources.Requests = st.Resources{"cpu": "20", "memory": "20Gi"}.List()
		out = append(out, p)
	}
	return out
}

// A partial fleet (EC2 launched two of a group's three instances): the two
// are recorded against the group's first two NodeClaims (the second tagged
// with its own name), the third NodeClaim's record is removed, and the
// round solves again at once and launches the missing capacity under a new
// name (a reused name would be a reused ClientToken).
func TestPartialFleetRecordsWhatLaunchedAndRetriesTheRest(t *testing.T) {
	clock := testingclock.NewFakeClock(t0)
	pods := bigPods(3, t0)
	r, fl, m, _ := testReconciler(t, clock, func(time.Time) (*View, error) { return &View{Pods: pods}, nil })
	ev := &fakeEvents{}
	r.Events = ev
	fl.launch = func(p *fleet.Plan, call int) ([]*fleet.Instance, error) {
		n := p.Count
		if call == 1 {
			n-- // one short
		}
		return fl.instances(p, n), nil
	}
	rep, err := r.Round(context.Background(), testLease(clock))
	if err != nil {
		t.Fatal(err)
	}
	calls := fl.Calls()
	if len(calls) != 2 || calls[0].Count != 3 || calls[1].Count > 1 {
		t.Fatalf("fleet calls %+v: want a group of 3, then one for the missing NodeClaim", calls)
	}
	if calls[0].NodeClaim != "default-00001" || slices.Contains([]string{"default-00001", "default-00002", "default-00003"}, calls[1].NodeClaim) ||
		calls[0].Token == calls[1].Token {
		t.Errorf("fleets %s (%s) then %s (%s): the retry must take a new name and token", calls[0].NodeClaim, calls[0].Token, calls[1].NodeClaim, calls[1].Token)
	}
	if rep.Solves != 2 {
		t.Errorf("%d solves, want 2 (the rest solved again at once)", rep.Solves)
	}
	var short []string
	for _, l := range rep.Launches {
		if l.Error != "" {
			short = append(short, l.NodeClaim+": "+l.Error)
		}
	}
	if len(short) != 1 || !strings.Contains(short[0], "default-00003: "+launch.ErrFewerInstances) {
		t.Errorf("failed launches %v: want default-00003's, fewer instances", short)
	}
	recs, err := r.Store.NodeClaims(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	ids := map[string]bool{}
	covered := map[string]bool{}
	for _, rec := range recs {
		names = append(names, rec.Name)
		if rec.Phase != state.Launched || rec.InstanceID == "" || ids[rec.InstanceID] {
			t.Errorf("record %s: phase %s, instance %q (want launched, each its own)", rec.Name, rec.Phase, rec.InstanceID)
		}
		ids[rec.InstanceID] = true
		for _, p := range rec.Claim.Pods {
			covered[p] = true
		}
	}
	if len(recs) != 3 || slices.Contains(names, "default-00003") {
		t.Errorf("records %v: want the two launched of the group and the retry, not default-00003", names)
	}
	if len(covered) != 3 {
		t.Errorf("pods covered by launched records: %v, want all 3", covered)
	}
	if fl.tagged["i-00002"] != "default-00002" {
		t.Errorf("group member's instance tags %v: want i-00002 tagged default-00002", fl.tagged)
	}
	if got := m.Values(metrics.NodeClaimsLaunched); len(got) != 3 {
		t.Errorf("NodeClaimsLaunched emitted %v, want 3 points", got)
	}
	launchedEvents := 0
	for _, e := range ev.All() {
		if strings.HasPrefix(e, "NodeClaim//") && strings.Contains(e, "Normal Launched: Launched NodeClaim ") {
			launchedEvents++
		}
	}
	if launchedEvents != 3 {
		t.Errorf("%d Launched events, want one per NodeClaim: %v", launchedEvents, ev.All())
	}
}
