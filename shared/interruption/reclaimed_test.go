package interruption

import (
	"reflect"
	"testing"
	"time"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/state"
	"github.com/nodewright/nodewright/shared/trigger"
)

// The replacement of a spot node never lands on the node's own offering
// when EC2 reclaims it or warns it is at elevated risk (a rebalance
// recommendation: the spot warning often follows within minutes). Found
// by the fault suite (test/faults, chaos seed 252, invariant 9): a
// rebalance's replacement, planned before the spot warning marked the
// offering unavailable, launched on the offering being reclaimed.
func TestReplacementsAvoidTheOfferingAtRisk(t *testing.T) {
	spot := &state.NodeClaim{Name: "default-abcde", InstanceType: "c6a.2xlarge", Zone: "us-east-1c", CapacityType: apis.CapacityTypeSpot}
	onDemand := &state.NodeClaim{Name: "default-fghij", InstanceType: "c6a.2xlarge", Zone: "us-east-1c", CapacityType: apis.CapacityTypeOnDemand}
	pool := &apis.NodePool{}
	pool.Annotations = map[string]string{AnnotationRebalance: RebalanceReplace}
	now := time.Date(2026, 11, 27, 10, 0, 0, 0, time.UTC)
	off := func(kind trigger.Kind) []state.Offering {
		return []state.Offering{{InstanceType: "c6a.2xlarge", Zone: "us-east-1c", CapacityType: apis.CapacityTypeSpot, Code: string(kind)}}
	}
	for _, tc := range []struct {
		name string
		kind trigger.Kind
		rec  *state.NodeClaim
		want []state.Offering
	}{
		{"spot interruption", trigger.KindSpotInterruption, spot, off(trigger.KindSpotInterruption)},
		{"rebalance recommendation", trigger.KindRebalanceRecommendation, spot, off(trigger.KindRebalanceRecommendation)},
		{"on-demand scheduled change", trigger.KindScheduledChange, onDemand, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			in := trigger.Interruption{Kind: tc.kind, Deadline: now.Add(2 * time.Minute)}
			d := Decide(in, tc.rec, pool, now)
			if got := reclaimed(tc.kind, d, tc.rec); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("avoided %v, want %v", got, tc.want)
			}
			if tc.kind == trigger.KindRebalanceRecommendation && d.MarkUnavailable {
				t.Errorf("a rebalance recommendation marks the offering unavailable: only a reclaim does")
			}
		})
	}
}
