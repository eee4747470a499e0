package orchestration

import (
	"maps"
	"slices"
	"strings"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/disruption"
	"github.com/nodewright/nodewright/shared/metrics"
	"github.com/nodewright/nodewright/shared/state"
)

// karpenterDecision counts a finished consolidation action as Karpenter
// counts a voluntary disruption decision.
func (e *Executor) karpenterDecision(a *state.Action) {
	decision := "delete"
	if len(a.Replacements) > 0 {
		decision = "replace"
	}
	_ = e.Metrics.Emit(metrics.KarpenterVoluntaryDisruptionDecisions, 1, metrics.Dims{
		metrics.LabelDecision: decision, metrics.LabelReason: strings.ToLower(orNone(a.Reason)),
		metrics.LabelConsolidationType: ConsolidationType(disruption.Method(a.Method)),
	})
}

// karpenterRepair counts a repair started as Karpenter counts a NodeClaim
// disrupted for being unhealthy: by the condition it repairs, the NodePool,
// the capacity type and the image.
func (e *Executor) karpenterRepair(cmd disruption.Command, cands []*state.NodeClaim) {
	for _, r := range cands {
		_ = e.Metrics.Emit(metrics.KarpenterNodeClaimsUnhealthyDisrupted, 1, metrics.Dims{
			metrics.LabelCondition: orUnknown(string(cmd.Condition)), metrics.LabelNodePool: orUnknown(r.NodePool),
			metrics.LabelCapacityType: orUnknown(r.CapacityType), metrics.LabelImageID: orUnknown(r.ImageID),
		})
	}
}

// ConsolidationType is Karpenter's consolidation_type of a method: empty,
// single or multi; none (Karpenter's empty value) for drift and expiration.
func ConsolidationType(m disruption.Method) string {
	switch m {
	case disruption.MethodEmptiness:
		return "empty"
	case disruption.MethodSingleNode:
		return "single"
	case disruption.MethodMultiNode:
		return "multi"
	}
	return metrics.ConsolidationTypeNone
}

// karpenterBudgets publishes, per NodePool and reason, how many more nodes
// its budgets let be disrupted, as a run found them.
func (e *Executor) karpenterBudgets(allowed map[string]map[apis.DisruptionReason]int) {
	for _, pool := range slices.Sorted(maps.Keys(allowed)) {
		for _, reason := range slices.Sorted(maps.Keys(allowed[pool])) {
			_ = e.Metrics.Emit(metrics.KarpenterNodePoolsAllowedDisruptions, float64(allowed[pool][reason]),
				metrics.Dims{metrics.LabelNodePool: pool, metrics.LabelReason: string(reason)})
		}
	}
}

func orNone(s string) string {
	if s == "" {
		return metrics.ConsolidationTypeNone
	}
	return s
}

// orUnknown is a label value: CloudWatch refuses an empty one.
func orUnknown(s string) string {
	if s == "" {
		return metrics.ErrorUnknown
	}
	return s
}
