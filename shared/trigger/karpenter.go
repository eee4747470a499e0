package trigger

// KarpenterMessageType is the message_type Karpenter's AWS provider gives
// an interruption message of this kind (and, for a state change, this
// instance state): the label of karpenter_interruption_received_messages_total
// and the reason of karpenter_nodeclaims_disrupted_total.
func KarpenterMessageType(kind Kind, state string) string {
	switch kind {
	case KindSpotInterruption:
		return "spot_interrupted"
	case KindRebalanceRecommendation:
		return "rebalance_recommendation"
	case KindScheduledChange:
		return "scheduled_change"
	case KindCapacityReservationInterruption:
		return "capacity_reservation_interrupted"
	case KindStateChange:
		switch state {
		case StateStopping, StateStopped:
			return "instance_stopped"
		case StateShuttingDown, StateTerminated:
			return "instance_terminated"
		}
	}
	return "no_op"
}
