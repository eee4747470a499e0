package apis

import (
	"fmt"
	"math"
	"strconv"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// AnnotationNodeCostPerHour on a NodePool is what each of its nodes costs
// beyond its instance, volumes and address, in USD per hour: licences,
// per-node agents. The solver, consolidation, `plan` and the lower bound
// add it to every candidate node of the pool (shared/nodecost).
const AnnotationNodeCostPerHour = "nodewright.io/node-cost-per-hour"

// MaxNodeCostPerHour bounds the annotation: a per-node cost above it is
// taken for a typo (a monthly figure, cents).
const MaxNodeCostPerHour = 1000.0

// NodeCostPerHour is the pool's own per-node cost (0 when it sets none),
// or an error naming the annotation's path and what to write instead.
func (np *NodePool) NodeCostPerHour() (float64, error) {
	v := &validator{}
	c := nodeCostPerHour(v, field.NewPath("metadata", "annotations"), np.Annotations)
	if len(v.errs) > 0 {
		return 0, fmt.Errorf("NodePool %s: %w", np.Name, v.errs)
	}
	return c, nil
}

func nodeCostPerHour(v *validator, path *field.Path, annotations map[string]string) float64 {
	s, ok := annotations[AnnotationNodeCostPerHour]
	if !ok {
		return 0
	}
	c, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(c) || c < 0 || c > MaxNodeCostPerHour {
		v.add(path.Key(AnnotationNodeCostPerHour), "%q is not a cost per node in USD per hour from 0 to %g, such as \"0.02\" (no currency sign; a monthly figure divided by 730)", s, MaxNodeCostPerHour)
		return 0
	}
	return c
}
