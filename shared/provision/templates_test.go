package provision

import (
	"context"
	"reflect"
	"testing"
	"time"

	testingclock "k8s.io/utils/clock/testing"

	corev1 "k8s.io/api/core/v1"
)

// The sweep collects launch templates, keeping those a record's stored
// launch names (a re-drive sends them again).
func TestSweepCollectsTemplatesKeepingTheRecordsOnes(t *testing.T) {
	clock := testingclock.NewFakeClock(t0)
	pod := unschedulableAt("web-0", t0.Add(-time.Minute), t0.Add(-time.Minute))
	r, fl, _, _ := testReconciler(t, clock, func(time.Time) (*View, error) { return &View{Pods: []*corev1.Pod{pod}}, nil })
	cf := &collectingFleet{fakeFleet: fl}
	r.Fleet = cf
	ctx := context.Background()
	if _, err := r.Round(ctx, testLease(clock)); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Sweep(ctx); err != nil {
		t.Fatal(err)
	}
	if want := []map[string]bool{{"lt-default": true}}; !reflect.DeepEqual(cf.keeps, want) {
		t.Errorf("collections kept %v, want %v (the launched record's template)", cf.keeps, want)
	}
}
