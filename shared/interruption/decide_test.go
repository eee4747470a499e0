package interruption

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/shared/trigger"
)

func TestDecide(t *testing.T) {
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	spotRec := &state.NodeClaim{Name: "default-aaaaa", CapacityType: apis.CapacityTypeSpot}
	odRec := &state.NodeClaim{Name: "default-bbbbb", CapacityType: apis.CapacityTypeOnDemand}
	reservedRec := &state.NodeClaim{Name: "default-ccccc", CapacityType: apis.CapacityTypeReserved}
	plain := &apis.NodePool{}
	proactive := &apis.NodePool{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{AnnotationRebalance: RebalanceReplace}}}
	warn := now.Add(-10 * time.Second)
	cases := []struct {
		name     string
		in       trigger.Interruption
		rec      *state.NodeClaim
		pool     *apis.NodePool
		act      bool
		deadline time.Time
		mark     bool
		note     string
	}{
		{"spot warning", trigger.Interruption{Kind: trigger.KindSpotInterruption, Deadline: warn.Add(trigger.SpotNotice)}, spotRec, plain, true, warn.Add(2 * time.Minute), true, ""},
		{"spot warning on an on-demand record marks nothing", trigger.Interruption{Kind: trigger.KindSpotInterruption, Deadline: warn.Add(trigger.SpotNotice)}, odRec, plain, true, warn.Add(2 * time.Minute), false, ""},
		{"capacity reservation", trigger.Interruption{Kind: trigger.KindCapacityReservationInterruption, Deadline: warn.Add(trigger.SpotNotice)}, odRec, plain, true, warn.Add(2 * time.Minute), false, ""},
		{"capacity reservation of a reserved node marks its offering", trigger.Interruption{Kind: trigger.KindCapacityReservationInterruption, Deadline: warn.Add(trigger.SpotNotice)}, reservedRec, plain, true, warn.Add(2 * time.Minute), true, ""},
		{"scheduled change", trigger.Interruption{Kind: trigger.KindScheduledChange, Deadline: now.Add(48 * time.Hour)}, odRec, plain, true, now.Add(48 * time.Hour), false, ""},
		{"stopping", trigger.Interruption{Kind: trigger.KindStateChange, State: "stopping"}, odRec, plain, true, now, false, ""},
		{"stopped", trigger.Interruption{Kind: trigger.KindStateChange, State: "stopped"}, odRec, plain, true, now, false, ""},
		{"shutting-down", trigger.Interruption{Kind: trigger.KindStateChange, State: "shutting-down"}, odRec, plain, true, now, false, ""},
		{"terminated", trigger.Interruption{Kind: trigger.KindStateChange, State: "terminated"}, odRec, plain, true, now, false, ""},
		{"running", trigger.Interruption{Kind: trigger.KindStateChange, State: "running"}, odRec, plain, false, time.Time{}, false, "running"},
		{"pending", trigger.Interruption{Kind: trigger.KindStateChange, State: "pending"}, odRec, plain, false, time.Time{}, false, "pending"},
		{"rebalance recorded", trigger.Interruption{Kind: trigger.KindRebalanceRecommendation}, spotRec, plain, false, time.Time{}, false, AnnotationRebalance},
		{"rebalance on a pool that is gone", trigger.Interruption{Kind: trigger.KindRebalanceRecommendation}, spotRec, nil, false, time.Time{}, false, "recorded"},
		{"rebalance replaced when the pool asks", trigger.Interruption{Kind: trigger.KindRebalanceRecommendation}, spotRec, proactive, true, time.Time{}, false, ""},
		{"unknown", trigger.Interruption{Kind: trigger.KindUnknown}, spotRec, plain, false, time.Time{}, false, "unknown"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := Decide(tc.in, tc.rec, tc.pool, now)
			if d.Act != tc.act || !d.Deadline.Equal(tc.deadline) || d.MarkUnavailable != tc.mark || !strings.Contains(d.Note, tc.note) {
				t.Errorf("decision %+v, want act %v deadline %v mark %v note ~%q", d, tc.act, tc.deadline, tc.mark, tc.note)
			}
		})
	}
}
