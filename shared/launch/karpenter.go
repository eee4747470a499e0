package launch

import (
	"strconv"

	"github.com/nodewright/nodewright/shared/fleet"
	"github.com/nodewright/nodewright/shared/metrics"
	"github.com/nodewright/nodewright/shared/state"
)

// reasonProvisioning is the launch reason of NodeClaims for pending pods
// (the others replace a node being taken out).
const reasonProvisioning = "provisioning"

// karpenterCreated publishes Karpenter's counter of created NodeClaims for
// a launched record: reason provisioned, or replacement.
func (l *Launcher) karpenterCreated(rec *state.NodeClaim) {
	reason := metrics.ReasonProvisioned
	if rec.Reason != "" && rec.Reason != reasonProvisioning {
		reason = "replacement"
	}
	_ = l.Metrics.Emit(metrics.KarpenterNodeClaimsCreated, 1, metrics.Dims{
		metrics.LabelReason: reason, metrics.LabelNodePool: rec.NodePool,
		metrics.LabelMinValuesRelaxed: strconv.FormatBool(rec.Claim.MinValuesRelaxed),
	})
}

// karpenterLaunchFailed publishes Karpenter's counter of cloud provider
// errors for n NodeClaims a CreateFleet call failed to launch.
func (l *Launcher) karpenterLaunchFailed(err error, n int) {
	kind := metrics.ErrorUnknown
	if len(fleet.UnavailableOfferings(err)) > 0 {
		kind = metrics.ErrorInsufficientCapacity
	}
	_ = l.Metrics.Emit(metrics.KarpenterCloudProviderErrors, float64(n), metrics.Dims{
		metrics.LabelController: metrics.ControllerNodeClaimLifecycle, metrics.LabelMethod: "Create",
		metrics.LabelProvider: metrics.ProviderAWS, metrics.LabelError: kind,
	})
}
