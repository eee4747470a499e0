package trigger

import "testing"

func TestKarpenterMessageType(t *testing.T) {
	for _, tc := range []struct {
		kind  Kind
		state string
		want  string
	}{
		{KindSpotInterruption, "", "spot_interrupted"},
		{KindRebalanceRecommendation, "", "rebalance_recommendation"},
		{KindScheduledChange, "", "scheduled_change"},
		{KindCapacityReservationInterruption, "", "capacity_reservation_interrupted"},
		{KindStateChange, StateStopping, "instance_stopped"},
		{KindStateChange, StateStopped, "instance_stopped"},
		{KindStateChange, StateShuttingDown, "instance_terminated"},
		{KindStateChange, StateTerminated, "instance_terminated"},
		{KindStateChange, StateRunning, "no_op"},
		{KindUnknown, "", "no_op"},
	} {
		if got := KarpenterMessageType(tc.kind, tc.state); got != tc.want {
			t.Errorf("KarpenterMessageType(%s, %q) = %s, want %s", tc.kind, tc.state, got, tc.want)
		}
	}
}
