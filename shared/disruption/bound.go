package disruption

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/scheduling"
)

// summariseBound: simulations hand the solver the nodes' bound pods
// summarised (scheduling.Summarise) rather than in full. Only the tests
// that compare the two turn it off.
var summariseBound = true

// summarised is the nodes of a simulation with the pods bound to them
// summarised once for the pods it places (scheduling.Summarise: the same
// plan, byte for byte). Every solver a simulation runs (a portfolio of
// sizing policies, group orders and seeded plans) would otherwise read
// every bound pod of every node given in full: a simulation of pods with
// spread or pod (anti-)affinity, and nodes whose pods repel others. Nodes
// given as their free room alone have no pods and are left as they are.
func summarised(nodes []*scheduling.Node, pods []*corev1.Pod) []*scheduling.Node {
	for _, n := range nodes {
		if len(n.Pods) > 0 && n.Bound == nil {
			return scheduling.Summarise(nodes, pods)
		}
	}
	return nodes
}
