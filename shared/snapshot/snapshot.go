// Package snapshot reads a cluster snapshot into the input of a scheduling
// solve: the output of `kubectl get pods,nodes,daemonsets,pvc,pv,storageclasses,nodepools,ec2nodeclasses
// -A -o yaml` (a List, in YAML or JSON), users' manifests (multi-document YAML
// with Deployments, StatefulSets, Jobs, bare Pods, NodePools), or several such
// sources together. It exists so that `nodewright plan` and tests turn the
// files people already have into a scheduling.Input, and so that bad input
// is rejected with the file, the object and the field at fault.
//
// What it reads:
//   - Pods (v1): without spec.nodeName they are pending and get planned; with
//     it they run on that Node (which must be in the snapshot). Pods that
//     succeeded, failed or are being deleted are left out, and so are pending
//     pods of DaemonSets and static pods (a node's own daemons, accounted as
//     daemonset overhead, never a reason to launch a node).
//   - Nodes (v1): existing nodes, with their labels, taints and allocatable.
//     A snapshot has no launched-but-unregistered NodeClaims: no node is
//     in flight.
//   - DaemonSets (apps/v1): their pods' requests count on every node they
//     would run on.
//   - Deployments, ReplicaSets, StatefulSets (apps/v1, spec.replicas, default
//     1) and Jobs (batch/v1, spec.parallelism, default 1, capped by
//     completions; none when suspended) become the pods their controllers
//     would create and that the snapshot does not already hold: a workload's
//     pods already in the snapshot (same namespace, matching its selector)
//     count towards its replicas. New pods are named <workload>-<i> with the
//     lowest free i (a StatefulSet's pod i is <name>-<i>, as its controller
//     names it) and carry the labels the controllers add (pod-template-hash,
//     statefulset.kubernetes.io/pod-name, job-name, ...).
//   - NodePools (karpenter.sh/v1) and EC2NodeClasses (karpenter.k8s.aws/v1),
//     through the strict loader of package apis.
//   - PersistentVolumeClaims, PersistentVolumes (v1) and StorageClasses
//     (storage.k8s.io/v1): when the sources hold any, pods' volumes
//     restrict their nodes (scheduling.Volumes: a bound volume's zone, a
//     WaitForFirstConsumer class's allowed zones) and a claim they lack
//     makes a pod unschedulable; a StatefulSet's pods get the claims of its
//     volumeClaimTemplates (<template>-<pod>), created from the template
//     when the sources lack them, as its controller creates them. Without
//     any volume object, pods' volumes restrict nothing.
//
// An empty namespace means "default". Any other kind is an error.
//
// FromCluster builds the same Snapshot from a live cluster's objects (as
// package kube lists them) and the configured NodePools and EC2NodeClasses:
// the provision flow's view of the cluster.
package snapshot

import (
	"fmt"
	"os"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/scheduling"
)

// Source is one input: its name in messages (a path, or "stdin") and its bytes.
type Source struct {
	Name string
	Data []byte
}

// Snapshot is a cluster as read from its sources. Every slice is sorted:
// pods and daemonsets by namespace/name, nodes, NodePools and node classes by
// name.
type Snapshot struct {
	// Pending are the pods to place (unbound, plus the pods of workloads).
	Pending     []*corev1.Pod
	Nodes       []*scheduling.Node
	NodePools   []*apis.NodePool
	NodeClasses []*apis.EC2NodeClass
	// NodeOverlays reprice the catalog for the plan (package overlay).
	NodeOverlays []*apis.NodeOverlay
	DaemonSets   []*appsv1.DaemonSet
	// Volumes are the volume objects read (nil when the sources hold
	// none); claims and volumes sorted by namespace/name, classes by name.
	Volumes *scheduling.Volumes
	// Warnings are problems that do not stop a plan (a NodePool whose
	// EC2NodeClass is not in the snapshot, pending pods and no NodePools).
	Warnings []string
}

// Read reads the sources in order. On bad input it returns Errors listing
// every problem found (and a nil Snapshot).
func Read(sources ...Source) (*Snapshot, error) {
	r := newReader()
	for _, src := range sources {
		r.source(src)
	}
	return r.finish()
}

// ReadFiles reads the named files as sources named by their paths.
func ReadFiles(paths ...string) (*Snapshot, error) {
	sources := make([]Source, 0, len(paths))
	var errs Errors
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			errs = append(errs, fmt.Errorf("read snapshot: %w", err))
			continue
		}
		sources = append(sources, Source{Name: p, Data: data})
	}
	if len(errs) > 0 {
		return nil, errs
	}
	return Read(sources...)
}

// Input is the solve input of the snapshot: pods, nodes, NodePools, node
// classes and daemonsets. The caller adds the catalog, zones and prices.
func (s *Snapshot) Input() scheduling.Input {
	return scheduling.Input{
		Pods:        s.Pending,
		Nodes:       s.Nodes,
		NodePools:   s.NodePools,
		NodeClasses: s.NodeClasses,
		DaemonSets:  s.DaemonSets,
		Volumes:     s.Volumes,
	}
}

// origin is where an object was read.
type origin struct {
	source         string
	document, item int
}

func (o origin) errorf(kind, namespace, name, field, format string, args ...any) *Error {
	return &Error{Source: o.source, Document: o.document, Item: o.item, Kind: kind, Namespace: namespace, Name: name,
		Field: field, Err: fmt.Errorf(format, args...)}
}

func (o origin) String() string {
	if o.item > 0 {
		return fmt.Sprintf("%s document %d item %d", o.source, o.document, o.item)
	}
	return fmt.Sprintf("%s document %d", o.source, o.document)
}

type podEntry struct {
	pod *corev1.Pod
	at  origin
}

type nodeEntry struct {
	node *corev1.Node
	at   origin
}

type poolEntry struct {
	pool *apis.NodePool
	at   origin
}

type classEntry struct {
	class *apis.EC2NodeClass
	at    origin
}

type daemonSetEntry struct {
	ds *appsv1.DaemonSet
	at origin
}

// reader accumulates the objects of every source, then checks the
// references between them.
type reader struct {
	errs         Errors
	overlays     []*apis.NodeOverlay
	pods         []podEntry // bound and pending, in source order
	podKeys      map[string]origin
	nodes        map[string]nodeEntry
	pools        []poolEntry
	classes      []classEntry
	daemonSets   []daemonSetEntry
	dsKeys       map[string]origin
	workloads    []workload
	workloadKeys map[string]origin
	warnings     []string
	volumes      scheduling.Volumes
	volumeKeys   map[string]origin
	pendingPods  int // pending pods read (not made for workloads)
	maxPending   int // MaxPendingPods
	maxWorkload  int // MaxWorkloadPods
}

func newReader() *reader {
	return &reader{podKeys: map[string]origin{}, nodes: map[string]nodeEntry{}, dsKeys: map[string]origin{}, workloadKeys: map[string]origin{},
		volumeKeys: map[string]origin{}, maxPending: MaxPendingPods, maxWorkload: MaxWorkloadPods}
}

func (r *reader) fail(err error) { r.errs = append(r.errs, err) }

// finish expands workloads, binds pods to nodes and checks references.
func (r *reader) finish() (*Snapshot, error) {
	r.checkPools()
	r.expandWorkloads()
	s := &Snapshot{}
	byNode := map[string][]*corev1.Pod{}
	for _, e := range r.pods {
		name := e.pod.Spec.NodeName
		if name == "" {
			s.Pending = append(s.Pending, e.pod)
			continue
		}
		if _, ok := r.nodes[name]; !ok {
			r.fail(e.at.errorf("Pod", e.pod.Namespace, e.pod.Name, "spec.nodeName",
				"bound to Node %q, which is not in the snapshot (include it: kubectl get pods,nodes,...)", name))
			continue
		}
		byNode[name] = append(byNode[name], e.pod)
	}
	if len(r.errs) > 0 {
		return nil, r.errs
	}
	for name, e := range r.nodes {
		pods := byNode[name]
		sortPods(pods)
		s.Nodes = append(s.Nodes, &scheduling.Node{Node: e.node, Pods: pods})
	}
	sort.Slice(s.Nodes, func(i, j int) bool { return s.Nodes[i].Node.Name < s.Nodes[j].Node.Name })
	sortPods(s.Pending)
	for _, p := range r.pools {
		s.NodePools = append(s.NodePools, p.pool)
	}
	sort.SliceStable(s.NodePools, func(i, j int) bool { return s.NodePools[i].Name < s.NodePools[j].Name })
	for _, c := range r.classes {
		s.NodeClasses = append(s.NodeClasses, c.class)
	}
	sort.SliceStable(s.NodeClasses, func(i, j int) bool { return s.NodeClasses[i].Name < s.NodeClasses[j].Name })
	s.NodeOverlays = r.overlays
	sort.SliceStable(s.NodeOverlays, func(i, j int) bool { return s.NodeOverlays[i].Name < s.NodeOverlays[j].Name })
	for _, d := range r.daemonSets {
		s.DaemonSets = append(s.DaemonSets, d.ds)
	}
	sort.Slice(s.DaemonSets, func(i, j int) bool {
		return less(s.DaemonSets[i].Namespace, s.DaemonSets[i].Name, s.DaemonSets[j].Namespace, s.DaemonSets[j].Name)
	})
	if len(r.volumeKeys) > 0 {
		v := r.volumes
		sort.Slice(v.Claims, func(i, j int) bool {
			return less(v.Claims[i].Namespace, v.Claims[i].Name, v.Claims[j].Namespace, v.Claims[j].Name)
		})
		sort.Slice(v.Volumes, func(i, j int) bool { return v.Volumes[i].Name < v.Volumes[j].Name })
		sort.Slice(v.StorageClasses, func(i, j int) bool { return v.StorageClasses[i].Name < v.StorageClasses[j].Name })
		s.Volumes = &v
	}
	if len(s.Pending) > 0 && len(s.NodePools) == 0 {
		r.warnings = append(r.warnings, fmt.Sprintf("%d pending pods and no NodePool in the snapshot: nothing can be launched for them", len(s.Pending)))
	}
	s.Warnings = r.warnings
	return s, nil
}

// checkPools reports duplicate NodePool and EC2NodeClass names across
// sources and NodePools that reference a node class Nodewright cannot
// launch; a referenced EC2NodeClass missing from the snapshot is a warning
// (plans often start from NodePool files alone).
func (r *reader) checkPools() {
	classes := map[string]origin{}
	for _, c := range r.classes {
		if first, dup := classes[c.class.Name]; dup {
			r.fail(c.at.errorf(apis.EC2NodeClassKind, "", c.class.Name, "metadata.name", "duplicate EC2NodeClass (also in %s)", first))
			continue
		}
		classes[c.class.Name] = c.at
	}
	pools := map[string]origin{}
	for _, p := range r.pools {
		np := p.pool
		if first, dup := pools[np.Name]; dup {
			r.fail(p.at.errorf(apis.NodePoolKind, "", np.Name, "metadata.name", "duplicate NodePool (also in %s)", first))
			continue
		}
		pools[np.Name] = p.at
		ref := np.Spec.Template.Spec.NodeClassRef
		switch {
		case ref == nil:
			r.fail(p.at.errorf(apis.NodePoolKind, "", np.Name, "spec.template.spec.nodeClassRef", "required"))
		case ref.Group != apis.AWSGroup || ref.Kind != apis.EC2NodeClassKind:
			r.fail(p.at.errorf(apis.NodePoolKind, "", np.Name, "spec.template.spec.nodeClassRef",
				"group %q, kind %q: Nodewright launches only group %s, kind %s", ref.Group, ref.Kind, apis.AWSGroup, apis.EC2NodeClassKind))
		default:
			if _, ok := classes[ref.Name]; !ok {
				r.warnings = append(r.warnings, fmt.Sprintf("%s: NodePool %s: spec.template.spec.nodeClassRef.name: EC2NodeClass %q is not in the snapshot; its nodes are planned with default node settings",
					p.at.source, np.Name, ref.Name))
			}
		}
	}
}

func sortPods(pods []*corev1.Pod) {
	sort.Slice(pods, func(i, j int) bool { return less(pods[i].Namespace, pods[i].Name, pods[j].Namespace, pods[j].Name) })
}

// less orders objects by namespace, then name.
func less(ns1, name1, ns2, name2 string) bool {
	if ns1 != ns2 {
		return ns1 < ns2
	}
	return name1 < name2
}

func key(namespace, name string) string { return namespace + "/" + name }
