package disruption

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/scheduling"
)

// summariseBound: simulations hand the solver the nodes' bound pods
// summarised (scheduling.Summarise) rather than in full. Only the tests
// that compare the two turn it off.
var summariseBound = true

// runBound is every node's bound pods summarised once a run, for every pod
// a simulation of the run may place: the waiting pods and every node's
// moving pods (a summary serves a solve of any of the pods it was made
// for, with the same plan as the pods in full).
type runBound struct {
	byNode map[*nodeInfo]*scheduling.Bound
	// placeable are the pods the summaries serve (by identity, as the
	// solver checks them).
	placeable map[*corev1.Pod]bool
}

// boundFor is the run's summaries if they serve a simulation of pods, nil
// if not (a pod moved by an earlier command of the run is a copy they were
// not made for: the simulation then summarises its nodes itself,
// summarised).
func (v *view) boundFor(pods []*corev1.Pod) *runBound {
	if !summariseBound {
		return nil
	}
	if v.bound == nil {
		v.bound = v.summariseRun()
	}
	for _, p := range pods {
		if !v.bound.placeable[p] {
			return nil
		}
	}
	return v.bound
}

// of is n's bound pods (n.pods) summarised (nil: none, or b is nil).
func (b *runBound) of(n *nodeInfo) *scheduling.Bound {
	if b == nil {
		return nil
	}
	return b.byNode[n]
}

// summariseRun summarises every node's bound pods for every pod the run's
// simulations may place.
func (v *view) summariseRun() *runBound {
	b := &runBound{byNode: map[*nodeInfo]*scheduling.Bound{}, placeable: map[*corev1.Pod]bool{}}
	pending := append([]*corev1.Pod(nil), v.waiting...)
	for _, n := range v.nodes {
		pending = append(pending, n.moving...)
	}
	for _, p := range pending {
		b.placeable[p] = true
	}
	var nodes []*scheduling.Node
	var infos []*nodeInfo
	for _, n := range v.nodes {
		if len(n.pods) > 0 {
			nodes = append(nodes, &scheduling.Node{Node: n.schedNode(), Pods: n.pods})
			infos = append(infos, n)
		}
	}
	for i, sn := range scheduling.Summarise(nodes, pending) {
		b.byNode[infos[i]] = sn.Bound
	}
	return b
}

// summarised is the nodes of a simulation with the pods bound to them
// summarised for the pods it places (scheduling.Summarise: the same plan,
// byte for byte), those the run's summaries do not hold (boundOf) once for
// this simulation. Every solver a simulation runs (a portfolio of sizing
// policies, group orders and seeded plans) would otherwise read every
// bound pod of every node given in full: in a simulation of pods with
// spread or pod (anti-)affinity, and of nodes whose pods repel others.
// Nodes given as their free room alone have no pods and are left as they
// are.
func summarised(nodes []*scheduling.Node, pods []*corev1.Pod) []*scheduling.Node {
	for _, n := range nodes {
		if len(n.Pods) > 0 && n.Bound == nil {
			return scheduling.Summarise(nodes, pods)
		}
	}
	return nodes
}
