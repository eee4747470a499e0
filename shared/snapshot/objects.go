package snapshot

import (
	"encoding/json"
	"errors"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/podstate"
)

// volumeObject reads a PersistentVolumeClaim, PersistentVolume or
// StorageClass.
func (r *reader) volumeObject(d document, at origin) {
	var obj interface {
		GetName() string
		GetNamespace() string
		SetNamespace(string)
	}
	switch d.Kind {
	case "PersistentVolumeClaim":
		obj = &corev1.PersistentVolumeClaim{}
	case "PersistentVolume":
		obj = &corev1.PersistentVolume{}
	default:
		obj = &storagev1.StorageClass{}
	}
	if !r.decodeInto(d, at, obj) {
		return
	}
	if d.Kind == "PersistentVolumeClaim" && obj.GetNamespace() == "" {
		obj.SetNamespace("default")
	}
	if obj.GetName() == "" {
		r.fail(at.errorf(d.Kind, obj.GetNamespace(), "", "metadata.name", "required"))
		return
	}
	k := d.Kind + "/" + key(obj.GetNamespace(), obj.GetName())
	if first, dup := r.volumeKeys[k]; dup {
		r.fail(at.errorf(d.Kind, obj.GetNamespace(), obj.GetName(), "metadata.name", "duplicate %s (also in %s)", d.Kind, first))
		return
	}
	r.volumeKeys[k] = at
	switch o := obj.(type) {
	case *corev1.PersistentVolumeClaim:
		r.volumes.Claims = append(r.volumes.Claims, o)
	case *corev1.PersistentVolume:
		r.volumes.Volumes = append(r.volumes.Volumes, o)
	case *storagev1.StorageClass:
		r.volumes.StorageClasses = append(r.volumes.StorageClasses, o)
	}
}

// coreKinds are the kinds read besides NodePool and EC2NodeClass, with
// the apiVersion each is read at.
var coreKinds = map[string]string{
	"Pod": "v1", "Node": "v1",
	"DaemonSet": "apps/v1", "Deployment": "apps/v1", "ReplicaSet": "apps/v1", "StatefulSet": "apps/v1",
	"Job":                   "batch/v1",
	"PersistentVolumeClaim": "v1", "PersistentVolume": "v1", "StorageClass": "storage.k8s.io/v1",
}

const supportedKinds = "Pod, Node, PersistentVolumeClaim, PersistentVolume (v1), DaemonSet, Deployment, ReplicaSet, StatefulSet (apps/v1), Job (batch/v1), StorageClass (storage.k8s.io/v1), NodePool (karpenter.sh/v1), EC2NodeClass (karpenter.k8s.aws/v1)"

// source reads one source: NodePools and EC2NodeClasses through the apis
// loader, every other document here.
func (r *reader) source(src Source) {
	before := len(r.errs)
	cfg, err := apis.Parse(src.Data, src.Name)
	if err != nil {
		var list interface{ Unwrap() []error }
		if errors.As(err, &list) {
			r.errs = append(r.errs, list.Unwrap()...)
		} else {
			r.fail(err)
		}
	}
	for _, np := range cfg.NodePools {
		d, _ := cfg.Origin(np)
		r.pools = append(r.pools, poolEntry{pool: np, at: origin{d.Source, d.Index, d.Item}})
	}
	for _, nc := range cfg.NodeClasses {
		d, _ := cfg.Origin(nc)
		r.classes = append(r.classes, classEntry{class: nc, at: origin{d.Source, d.Index, d.Item}})
	}
	r.overlays = append(r.overlays, cfg.NodeOverlays...)
	for _, d := range cfg.Other {
		r.object(d)
	}
	// Report this source's problems in document order, whichever reader
	// found them.
	mine := r.errs[before:]
	sort.SliceStable(mine, func(i, j int) bool { return position(mine[i]) < position(mine[j]) })
}

// position orders an error within its source (document, then List item).
func position(err error) int {
	var e *Error
	if errors.As(err, &e) {
		return e.Document<<20 | e.Item
	}
	var de *apis.DocumentError
	if errors.As(err, &de) {
		return de.Index<<20 | de.Item
	}
	return 0
}

// document is one document (or List item) of a source, as the apis loader
// hands over the kinds it does not read itself.
type document = apis.Document

// object reads one document (or List item) of a core kind.
func (r *reader) object(d document) {
	at := origin{d.Source, d.Index, d.Item}
	if base, ok := strings.CutSuffix(d.Kind, "List"); ok && coreKinds[base] != "" {
		r.typedList(d, base)
		return
	}
	want, known := coreKinds[d.Kind]
	switch {
	case !known:
		r.fail(at.errorf(d.Kind, d.Namespace, d.Name, "kind", "unknown kind %q (apiVersion %s): nodewright reads %s", d.Kind, d.APIVersion, supportedKinds))
		return
	case d.APIVersion != want:
		r.fail(at.errorf(d.Kind, namespaceOf(d), d.Name, "apiVersion", "%q is not supported for %s: use %s", d.APIVersion, d.Kind, want))
		return
	}
	switch d.Kind {
	case "Pod":
		r.pod(d, at)
	case "Node":
		r.node(d, at)
	case "DaemonSet":
		r.daemonSet(d, at)
	case "PersistentVolumeClaim", "PersistentVolume", "StorageClass":
		r.volumeObject(d, at)
	default:
		r.workload(d, at)
	}
}

// typedList expands a PodList, NodeList, ... (the API's own list kinds,
// whose items may leave out apiVersion and kind).
func (r *reader) typedList(d document, kind string) {
	var l struct {
		Items []json.RawMessage `json:"items"`
	}
	at := origin{d.Source, d.Index, d.Item}
	if d.Item > 0 {
		r.fail(at.errorf(d.Kind, d.Namespace, d.Name, "kind", "a %s inside a List is not supported", d.Kind))
		return
	}
	if err := json.Unmarshal(d.JSON, &l); err != nil {
		r.fail(at.errorf(d.Kind, d.Namespace, d.Name, "items", "%v", cleanJSONError(err)))
		return
	}
	for i, raw := range l.Items {
		var h struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Metadata   struct {
				Name      string `json:"name"`
				Namespace string `json:"namespace"`
			} `json:"metadata"`
		}
		_ = json.Unmarshal(raw, &h) // a malformed item is reported when it is decoded
		item := document{Source: d.Source, Index: d.Index, Item: i + 1, APIVersion: h.APIVersion, Kind: h.Kind,
			Namespace: h.Metadata.Namespace, Name: h.Metadata.Name, JSON: raw}
		if item.Kind == "" {
			item.Kind = kind
		}
		if item.APIVersion == "" {
			item.APIVersion = d.APIVersion
		}
		r.object(item)
	}
}

// decodeInto decodes d into obj, reporting a bad value with its field path.
func (r *reader) decodeInto(d document, at origin, obj any) bool {
	err := decodeLenient(d.JSON, obj)
	if err == nil {
		return true
	}
	r.fieldErrors(d, at, namespaceOf(d), []*fieldError{asFieldError(err)})
	return false
}

func (r *reader) fieldErrors(d document, at origin, namespace string, errs []*fieldError) {
	for _, fe := range errs {
		r.fail(&Error{Source: at.source, Document: at.document, Item: at.item, Kind: d.Kind, Namespace: namespace, Name: d.Name,
			Field: fe.Path, Err: fe.Err})
	}
}

func asFieldError(err error) *fieldError {
	var fe *fieldError
	if errors.As(err, &fe) {
		return fe
	}
	return &fieldError{Err: err}
}

// namespaceOf is a namespaced object's namespace ("default" when empty).
func namespaceOf(d document) string {
	if d.Kind == "Node" || d.Kind == "PersistentVolume" || d.Kind == "StorageClass" || d.Namespace != "" {
		return d.Namespace
	}
	return "default"
}

func (r *reader) pod(d document, at origin) {
	pod := &corev1.Pod{}
	if !r.decodeInto(d, at, pod) {
		return
	}
	if pod.Namespace == "" {
		pod.Namespace = "default"
	}
	if pod.Name == "" {
		r.fail(at.errorf("Pod", pod.Namespace, "", "metadata.name", "required"))
		return
	}
	if errs := validatePodSpec(&pod.Spec, "spec"); len(errs) > 0 {
		r.fieldErrors(d, at, pod.Namespace, errs)
		return
	}
	if !podstate.Active(pod) {
		return
	}
	if pod.Spec.NodeName == "" && podstate.OwnedBy(pod, "DaemonSet", "Node") {
		return
	}
	if pod.Spec.NodeName == "" {
		if r.pendingPods++; r.pendingPods > r.maxPending {
			if r.pendingPods == r.maxPending+1 {
				r.fail(at.errorf("Pod", pod.Namespace, pod.Name, "",
					"the snapshot holds more than %d pending pods: a plan takes at most %d (plan a part of the cluster, by namespace for instance)", r.maxPending, r.maxPending))
			}
			return
		}
	}
	r.addPod(pod, at)
}

func (r *reader) addPod(pod *corev1.Pod, at origin) {
	k := key(pod.Namespace, pod.Name)
	if first, dup := r.podKeys[k]; dup {
		r.fail(at.errorf("Pod", pod.Namespace, pod.Name, "metadata.name", "duplicate Pod (also in %s)", first))
		return
	}
	r.podKeys[k] = at
	r.pods = append(r.pods, podEntry{pod: pod, at: at})
}

func (r *reader) node(d document, at origin) {
	node := &corev1.Node{}
	if !r.decodeInto(d, at, node) {
		return
	}
	if node.Name == "" {
		r.fail(at.errorf("Node", "", "", "metadata.name", "required"))
		return
	}
	if len(node.Status.Allocatable) == 0 {
		node.Status.Allocatable = node.Status.Capacity
	}
	if len(node.Status.Allocatable) == 0 {
		r.fail(at.errorf("Node", "", node.Name, "status.allocatable", "required: what the node offers pods (cpu, memory, pods)"))
		return
	}
	if errs := nonNegative(node.Status.Allocatable, "status.allocatable"); len(errs) > 0 {
		r.fieldErrors(d, at, "", errs)
		return
	}
	if first, dup := r.nodes[node.Name]; dup {
		r.fail(at.errorf("Node", "", node.Name, "metadata.name", "duplicate Node (also in %s)", first.at))
		return
	}
	r.nodes[node.Name] = nodeEntry{node: node, at: at}
}

func (r *reader) daemonSet(d document, at origin) {
	ds := &appsv1.DaemonSet{}
	if !r.decodeInto(d, at, ds) {
		return
	}
	if ds.Namespace == "" {
		ds.Namespace = "default"
	}
	if errs := validatePodSpec(&ds.Spec.Template.Spec, "spec.template.spec"); len(errs) > 0 {
		r.fieldErrors(d, at, ds.Namespace, errs)
		return
	}
	k := key(ds.Namespace, ds.Name)
	if first, dup := r.dsKeys[k]; dup {
		r.fail(at.errorf("DaemonSet", ds.Namespace, ds.Name, "metadata.name", "duplicate DaemonSet (also in %s)", first))
		return
	}
	r.dsKeys[k] = at
	r.daemonSets = append(r.daemonSets, daemonSetEntry{ds: ds, at: at})
}

// workload reads a Deployment, ReplicaSet, StatefulSet or Job.
func (r *reader) workload(d document, at origin) {
	var w workload
	var ok bool
	switch d.Kind {
	case "Deployment":
		obj := &appsv1.Deployment{}
		if ok = r.decodeInto(d, at, obj); ok {
			w = deploymentWorkload(obj)
		}
	case "ReplicaSet":
		obj := &appsv1.ReplicaSet{}
		if ok = r.decodeInto(d, at, obj); ok {
			w = replicaSetWorkload(obj)
		}
	case "StatefulSet":
		obj := &appsv1.StatefulSet{}
		if ok = r.decodeInto(d, at, obj); ok {
			w = statefulSetWorkload(obj)
		}
	case "Job":
		obj := &batchv1.Job{}
		if ok = r.decodeInto(d, at, obj); ok {
			w = jobWorkload(obj)
		}
	}
	if !ok {
		return
	}
	w.at = at
	if w.name == "" {
		r.fail(at.errorf(d.Kind, w.namespace, "", "metadata.name", "required"))
		return
	}
	if errs := validatePodSpec(&w.template.Spec, "spec.template.spec"); len(errs) > 0 {
		r.fieldErrors(d, at, w.namespace, errs)
		return
	}
	if w.replicas < 0 {
		r.fail(at.errorf(d.Kind, w.namespace, w.name, w.replicasField, "%d: must be greater than or equal to 0", w.replicas))
		return
	}
	if err := w.compileSelector(); err != nil {
		r.fail(at.errorf(d.Kind, w.namespace, w.name, "spec.selector", "%v", err))
		return
	}
	k := w.kind + "/" + key(w.namespace, w.name)
	if first, dup := r.workloadKeys[k]; dup {
		r.fail(at.errorf(d.Kind, w.namespace, w.name, "metadata.name", "duplicate %s (also in %s)", w.kind, first))
		return
	}
	r.workloadKeys[k] = at
	r.workloads = append(r.workloads, w)
}
