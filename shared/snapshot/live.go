package snapshot

import (
	"fmt"
	"maps"
	"slices"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/podstate"
	"github.com/nodewright/nodewright/shared/scheduling"
)

// Cluster is a live cluster as its API server lists it, with the NodePools
// and EC2NodeClasses of the configuration (Nodewright keeps them out of the
// cluster).
type Cluster struct {
	Pods        []corev1.Pod
	Nodes       []corev1.Node
	DaemonSets  []appsv1.DaemonSet
	NodePools   []*apis.NodePool
	NodeClasses []*apis.EC2NodeClass
}

// FromCluster builds the snapshot of a live cluster. Unlike Read, which
// checks files people wrote, it takes what the API server has already
// validated and skips what a moment's race makes inconsistent (a pod bound
// to a node that is gone is left out, with a warning). A pod is pending when
// kube-scheduler has tried it and found no node (PodScheduled False,
// Unschedulable) and is not waiting for a preemption (no nominated node), as
// Karpenter decides which pods to provision for; pods of DaemonSets and
// static pods never are. Pods that are finished or being deleted count
// nowhere.
func FromCluster(c Cluster) *Snapshot {
	s := &Snapshot{}
	nodes := map[string]*scheduling.Node{}
	for i := range c.Nodes {
		n := c.Nodes[i].DeepCopy()
		if len(n.Status.Allocatable) == 0 {
			n.Status.Allocatable = n.Status.Capacity
		}
		if len(n.Status.Allocatable) == 0 {
			s.Warnings = append(s.Warnings, fmt.Sprintf("node %s reports no capacity yet: left out", n.Name))
			continue
		}
		nodes[n.Name] = &scheduling.Node{Node: n}
	}
	gone := map[string]int{}
	for i := range c.Pods {
		p := &c.Pods[i]
		switch {
		case !podstate.Active(p):
		case p.Spec.NodeName != "":
			if n, ok := nodes[p.Spec.NodeName]; ok {
				n.Pods = append(n.Pods, p.DeepCopy())
			} else {
				gone[p.Spec.NodeName]++
			}
		case podstate.Provisionable(p):
			s.Pending = append(s.Pending, p.DeepCopy())
		}
	}
	for _, name := range slices.Sorted(maps.Keys(gone)) {
		s.Warnings = append(s.Warnings, fmt.Sprintf("%d pods bound to node %s, which is not listed: left out", gone[name], name))
	}
	for _, n := range nodes {
		sortPods(n.Pods)
		s.Nodes = append(s.Nodes, n)
	}
	sort.Slice(s.Nodes, func(i, j int) bool { return s.Nodes[i].Node.Name < s.Nodes[j].Node.Name })
	sortPods(s.Pending)
	for i := range c.DaemonSets {
		s.DaemonSets = append(s.DaemonSets, c.DaemonSets[i].DeepCopy())
	}
	sort.Slice(s.DaemonSets, func(i, j int) bool {
		return less(s.DaemonSets[i].Namespace, s.DaemonSets[i].Name, s.DaemonSets[j].Namespace, s.DaemonSets[j].Name)
	})
	s.NodePools = append(s.NodePools, c.NodePools...)
	sort.SliceStable(s.NodePools, func(i, j int) bool { return s.NodePools[i].Name < s.NodePools[j].Name })
	s.NodeClasses = append(s.NodeClasses, c.NodeClasses...)
	sort.SliceStable(s.NodeClasses, func(i, j int) bool { return s.NodeClasses[i].Name < s.NodeClasses[j].Name })
	return s
}
