package schedtest

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/scheduling"
)

// Resources is a resource list written tersely: {"cpu": "500m", "memory":
// "1Gi", "nvidia.com/gpu": "1"}.
type Resources map[string]string

// List converts r to a ResourceList; it panics on a malformed quantity (a
// mistake in the test itself).
func (r Resources) List() corev1.ResourceList {
	if len(r) == 0 {
		return nil
	}
	out := make(corev1.ResourceList, len(r))
	for k, v := range r {
		out[corev1.ResourceName(k)] = resource.MustParse(v)
	}
	return out
}

// with returns r plus cpu and memory when they are set.
func (r Resources) with(cpu, memory string) Resources {
	out := Resources{}
	for k, v := range r {
		out[k] = v
	}
	if cpu != "" {
		out[string(corev1.ResourceCPU)] = cpu
	}
	if memory != "" {
		out[string(corev1.ResourceMemory)] = memory
	}
	return out
}

// Container is an extra container of a pod: an init container, a sidecar
// (restartable init container) or a second app container.
type Container struct {
	CPU, Memory string
	Requests    Resources
	Limits      Resources
	HostPorts   []int32
}

// PodOptions describes a pod. Zero fields are left out of the pod.
type PodOptions struct {
	Name      string // required
	Namespace string // default "default"
	Labels    map[string]string
	// CPU, Memory and Requests are the requests of the pod's first container.
	CPU, Memory string
	Requests    Resources
	Limits      Resources
	// Containers are more app containers, InitContainers run before them,
	// Sidecars are restartable init containers that run beside them.
	Containers     []Container
	InitContainers []Container
	Sidecars       []Container
	Overhead       Resources
	HostPorts      []int32

	NodeSelector map[string]string
	// NodeRequirements is one required node-affinity term (ANDed);
	// NodeTerms are more terms, ORed with it.
	NodeRequirements []corev1.NodeSelectorRequirement
	NodeTerms        [][]corev1.NodeSelectorRequirement
	NodePreferences  []corev1.PreferredSchedulingTerm
	Tolerations      []corev1.Toleration
	Spread           []corev1.TopologySpreadConstraint

	Affinity              []corev1.PodAffinityTerm
	AntiAffinity          []corev1.PodAffinityTerm
	PreferredAffinity     []corev1.WeightedPodAffinityTerm
	PreferredAntiAffinity []corev1.WeightedPodAffinityTerm

	// Claims are PersistentVolumeClaim volumes (by claim name, the volume
	// named after it); EphemeralClasses are generic ephemeral volumes
	// ("eph-<i>"), each with the StorageClass its template names (nil:
	// none, the default class).
	Claims           []string
	EphemeralClasses []*string

	// NodeName binds the pod (to put it on a Node's Pods).
	NodeName string
	Phase    corev1.PodPhase
	// Owner is the controller's kind and name ("ReplicaSet/web-5d8f").
	Owner string
}

// Pod builds one pod.
func Pod(o PodOptions) *corev1.Pod {
	if o.Namespace == "" {
		o.Namespace = "default"
	}
	p := &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name: o.Name, Namespace: o.Namespace, Labels: copyLabels(o.Labels),
			UID: types.UID(o.Namespace + "/" + o.Name),
		},
		Spec: corev1.PodSpec{
			NodeName:     o.NodeName,
			NodeSelector: o.NodeSelector,
			Tolerations:  o.Tolerations,
			Containers: []corev1.Container{{
				Name:  "app",
				Image: "public.ecr.aws/eks-distro/kubernetes/pause:3.7",
				Resources: corev1.ResourceRequirements{
					Requests: o.Requests.with(o.CPU, o.Memory).List(),
					Limits:   o.Limits.List(),
				},
				Ports: ports(o.HostPorts),
			}},
			Overhead:                  o.Overhead.List(),
			TopologySpreadConstraints: o.Spread,
		},
		Status: corev1.PodStatus{Phase: o.Phase},
	}
	if p.Status.Phase == "" {
		p.Status.Phase = corev1.PodPending
		if o.NodeName != "" {
			p.Status.Phase = corev1.PodRunning
		}
	}
	for i, c := range o.Containers {
		p.Spec.Containers = append(p.Spec.Containers, container(fmt.Sprintf("app-%d", i+1), c))
	}
	for i, c := range o.InitContainers {
		p.Spec.InitContainers = append(p.Spec.InitContainers, container(fmt.Sprintf("init-%d", i), c))
	}
	always := corev1.ContainerRestartPolicyAlways
	for i, c := range o.Sidecars {
		sc := container(fmt.Sprintf("sidecar-%d", i), c)
		sc.RestartPolicy = &always
		p.Spec.InitContainers = append(p.Spec.InitContainers, sc)
	}
	if o.Owner != "" {
		kind, name, _ := strings.Cut(o.Owner, "/")
		yes := true
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: ownerAPIVersion(kind), Kind: kind, Name: name, UID: types.UID(kind + "/" + name), Controller: &yes}}
	}
	for _, c := range o.Claims {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: c,
			VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: c}}})
	}
	for i, sc := range o.EphemeralClasses {
		p.Spec.Volumes = append(p.Spec.Volumes, corev1.Volume{Name: fmt.Sprintf("eph-%d", i),
			VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
				Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: sc, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
			}}}})
	}
	p.Spec.Affinity = affinity(o)
	return p
}

// Pods builds n pods like o, named <o.Name>-0 .. <o.Name>-<n-1>.
func Pods(n int, o PodOptions) []*corev1.Pod {
	out := make([]*corev1.Pod, n)
	base := o.Name
	for i := range out {
		o.Name = fmt.Sprintf("%s-%d", base, i)
		out[i] = Pod(o)
	}
	return out
}

func container(name string, c Container) corev1.Container {
	return corev1.Container{
		Name:      name,
		Image:     "public.ecr.aws/eks-distro/kubernetes/pause:3.7",
		Resources: corev1.ResourceRequirements{Requests: c.Requests.with(c.CPU, c.Memory).List(), Limits: c.Limits.List()},
		Ports:     ports(c.HostPorts),
	}
}

func ports(hostPorts []int32) []corev1.ContainerPort {
	var out []corev1.ContainerPort
	for _, p := range hostPorts {
		out = append(out, corev1.ContainerPort{ContainerPort: p, HostPort: p, Protocol: corev1.ProtocolTCP})
	}
	return out
}

func ownerAPIVersion(kind string) string {
	switch kind {
	case "ReplicaSet", "StatefulSet", "DaemonSet", "Deployment":
		return "apps/v1"
	case "Job":
		return "batch/v1"
	}
	return "v1"
}

func affinity(o PodOptions) *corev1.Affinity {
	a := &corev1.Affinity{}
	if len(o.NodeRequirements) > 0 || len(o.NodeTerms) > 0 || len(o.NodePreferences) > 0 {
		a.NodeAffinity = &corev1.NodeAffinity{PreferredDuringSchedulingIgnoredDuringExecution: o.NodePreferences}
		var terms []corev1.NodeSelectorTerm
		if len(o.NodeRequirements) > 0 {
			terms = append(terms, corev1.NodeSelectorTerm{MatchExpressions: o.NodeRequirements})
		}
		for _, t := range o.NodeTerms {
			terms = append(terms, corev1.NodeSelectorTerm{MatchExpressions: t})
		}
		if len(terms) > 0 {
			a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: terms}
		}
	}
	if len(o.Affinity) > 0 || len(o.PreferredAffinity) > 0 {
		a.PodAffinity = &corev1.PodAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution:  o.Affinity,
			PreferredDuringSchedulingIgnoredDuringExecution: o.PreferredAffinity,
		}
	}
	if len(o.AntiAffinity) > 0 || len(o.PreferredAntiAffinity) > 0 {
		a.PodAntiAffinity = &corev1.PodAntiAffinity{
			RequiredDuringSchedulingIgnoredDuringExecution:  o.AntiAffinity,
			PreferredDuringSchedulingIgnoredDuringExecution: o.PreferredAntiAffinity,
		}
	}
	if a.NodeAffinity == nil && a.PodAffinity == nil && a.PodAntiAffinity == nil {
		return nil
	}
	return a
}

func copyLabels(l map[string]string) map[string]string {
	if l == nil {
		return nil
	}
	out := make(map[string]string, len(l))
	for k, v := range l {
		out[k] = v
	}
	return out
}

// Req is a node selector requirement.
func Req(key string, op corev1.NodeSelectorOperator, values ...string) corev1.NodeSelectorRequirement {
	return corev1.NodeSelectorRequirement{Key: key, Operator: op, Values: values}
}

// PoolReq is a NodePool requirement.
func PoolReq(key string, op corev1.NodeSelectorOperator, values ...string) apis.NodeSelectorRequirementWithMinValues {
	return apis.NodeSelectorRequirementWithMinValues{Key: key, Operator: op, Values: values}
}

// PoolReqMin is a NodePool requirement with minValues.
func PoolReqMin(minValues int, key string, op corev1.NodeSelectorOperator, values ...string) apis.NodeSelectorRequirementWithMinValues {
	r := PoolReq(key, op, values...)
	r.MinValues = &minValues
	return r
}

// Preference is a preferred node-affinity term of one or more requirements.
func Preference(weight int32, reqs ...corev1.NodeSelectorRequirement) corev1.PreferredSchedulingTerm {
	return corev1.PreferredSchedulingTerm{Weight: weight, Preference: corev1.NodeSelectorTerm{MatchExpressions: reqs}}
}

// Taint is a taint.
func Taint(key, value string, effect corev1.TaintEffect) corev1.Taint {
	return corev1.Taint{Key: key, Value: value, Effect: effect}
}

// Toleration is a toleration; op "" means Equal.
func Toleration(key string, op corev1.TolerationOperator, value string, effect corev1.TaintEffect) corev1.Toleration {
	return corev1.Toleration{Key: key, Operator: op, Value: value, Effect: effect}
}

// Spread is a topology spread constraint whose selector matches labels.
func Spread(topologyKey string, maxSkew int32, when corev1.UnsatisfiableConstraintAction, labels map[string]string) corev1.TopologySpreadConstraint {
	return corev1.TopologySpreadConstraint{
		MaxSkew: maxSkew, TopologyKey: topologyKey, WhenUnsatisfiable: when,
		LabelSelector: &metav1.LabelSelector{MatchLabels: copyLabels(labels)},
	}
}

// Term is a pod (anti-)affinity term on topologyKey whose selector matches
// labels (in the pod's own namespace).
func Term(topologyKey string, labels map[string]string) corev1.PodAffinityTerm {
	return corev1.PodAffinityTerm{TopologyKey: topologyKey, LabelSelector: &metav1.LabelSelector{MatchLabels: copyLabels(labels)}}
}

// Weighted is a preferred pod (anti-)affinity term.
func Weighted(weight int32, term corev1.PodAffinityTerm) corev1.WeightedPodAffinityTerm {
	return corev1.WeightedPodAffinityTerm{Weight: weight, PodAffinityTerm: term}
}

// NodeOptions describes an existing node, or a launched NodeClaim that has
// not registered yet (InFlight).
type NodeOptions struct {
	Name string // required; also the kubernetes.io/hostname label
	// InstanceType fills the type's well-known labels and, unless
	// Allocatable is set, its capacity and allocatable under default kubelet
	// settings.
	InstanceType *catalog.InstanceType
	Zone         string // topology.kubernetes.io/zone
	CapacityType string // karpenter.sh/capacity-type
	NodePool     string // karpenter.sh/nodepool
	Labels       map[string]string
	Taints       []corev1.Taint
	// Allocatable sets both capacity and allocatable.
	Allocatable Resources
	// Unschedulable cordons the node.
	Unschedulable bool
	InFlight      bool
	// Pods are bound to the node (their NodeName is set to it).
	Pods []*corev1.Pod
}

// Node builds a node with its pods.
func Node(o NodeOptions) *scheduling.Node {
	labels := map[string]string{corev1.LabelHostname: o.Name}
	alloc, capacity := corev1.ResourceList{}, corev1.ResourceList{}
	if o.InstanceType != nil {
		for k, v := range o.InstanceType.Labels() {
			labels[k] = v
		}
		alloc, capacity = o.InstanceType.Allocatable(nil), o.InstanceType.Capacity()
	}
	for k, v := range map[string]string{corev1.LabelTopologyZone: o.Zone, apis.LabelCapacityType: o.CapacityType, apis.LabelNodePool: o.NodePool} {
		if v != "" {
			labels[k] = v
		}
	}
	for k, v := range o.Labels {
		labels[k] = v
	}
	if o.Allocatable != nil {
		alloc = o.Allocatable.List()
		capacity = alloc
	}
	n := &corev1.Node{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Node"},
		ObjectMeta: metav1.ObjectMeta{Name: o.Name, Labels: labels, UID: types.UID("node/" + o.Name)},
		Spec:       corev1.NodeSpec{Taints: o.Taints, Unschedulable: o.Unschedulable},
		Status: corev1.NodeStatus{
			Capacity: capacity, Allocatable: alloc,
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
	if o.InFlight {
		n.Status.Conditions = nil
	}
	for _, p := range o.Pods {
		p.Spec.NodeName = o.Name
		if p.Status.Phase == corev1.PodPending {
			p.Status.Phase = corev1.PodRunning
		}
	}
	return &scheduling.Node{Node: n, Pods: o.Pods, InFlight: o.InFlight}
}

// NodePoolOptions describes a NodePool; the zero value is a pool named
// "default" with no requirements, no limits and the "default" node class.
// Scenarios that care about capacity type say so with a requirement.
type NodePoolOptions struct {
	Name          string // default "default"
	Weight        int32  // 0: unset
	Requirements  []apis.NodeSelectorRequirementWithMinValues
	Labels        map[string]string
	Taints        []corev1.Taint
	StartupTaints []corev1.Taint
	Limits        Resources
	NodeClass     string // default "default"
}

// NodePool builds a NodePool.
func NodePool(o NodePoolOptions) *apis.NodePool {
	if o.Name == "" {
		o.Name = "default"
	}
	if o.NodeClass == "" {
		o.NodeClass = "default"
	}
	np := &apis.NodePool{
		TypeMeta:   metav1.TypeMeta{APIVersion: apis.NodePoolAPIVersion, Kind: apis.NodePoolKind},
		ObjectMeta: metav1.ObjectMeta{Name: o.Name},
		Spec: apis.NodePoolSpec{
			Template: apis.NodeClaimTemplate{
				ObjectMeta: apis.TemplateMeta{Labels: copyLabels(o.Labels)},
				Spec: apis.NodeClaimTemplateSpec{
					Requirements:  o.Requirements,
					Taints:        o.Taints,
					StartupTaints: o.StartupTaints,
					NodeClassRef:  &apis.NodeClassReference{Group: apis.AWSGroup, Kind: apis.EC2NodeClassKind, Name: o.NodeClass},
				},
			},
			Disruption: apis.Disruption{ConsolidationPolicy: apis.ConsolidationPolicyWhenEmptyOrUnderutilized},
			Limits:     apis.Limits(o.Limits.List()),
		},
	}
	if o.Weight != 0 {
		w := o.Weight
		np.Spec.Weight = &w
	}
	return np
}

// NodeClass builds a minimal valid EC2NodeClass (AL2023, discovery tags).
func NodeClass(name string) *apis.EC2NodeClass {
	sel := map[string]string{"karpenter.sh/discovery": "test-cluster"}
	return &apis.EC2NodeClass{
		TypeMeta:   metav1.TypeMeta{APIVersion: apis.EC2NodeClassAPIVersion, Kind: apis.EC2NodeClassKind},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: apis.EC2NodeClassSpec{
			Role:                       "KarpenterNodeRole-test-cluster",
			AMISelectorTerms:           []apis.AMISelectorTerm{{Alias: "al2023@latest"}},
			SubnetSelectorTerms:        []apis.SubnetSelectorTerm{{Tags: sel}},
			SecurityGroupSelectorTerms: []apis.SecurityGroupSelectorTerm{{Tags: sel}},
		},
	}
}

// DaemonSetOptions describes a DaemonSet by its pod template.
type DaemonSetOptions struct {
	Name      string // required
	Namespace string // default "kube-system"
	CPU       string
	Memory    string
	Requests  Resources
	// Limits are the first container's limits (a template that sets only
	// limits requests them, as the API server defaults its pods).
	Limits         Resources
	InitContainers []Container
	Sidecars       []Container
	Overhead       Resources
	// NodeSelector, NodeRequirements and NodeTerms limit the nodes it runs
	// on; NodePreferences never do.
	NodeSelector     map[string]string
	NodeRequirements []corev1.NodeSelectorRequirement
	NodeTerms        [][]corev1.NodeSelectorRequirement
	NodePreferences  []corev1.PreferredSchedulingTerm
	Tolerations      []corev1.Toleration
	HostPorts        []int32
}

// DaemonSet builds a DaemonSet (UID "DaemonSet/<name>", as Pod's Owner
// "DaemonSet/<name>" refers to it).
func DaemonSet(o DaemonSetOptions) *appsv1.DaemonSet {
	if o.Namespace == "" {
		o.Namespace = "kube-system"
	}
	labels := map[string]string{"app.kubernetes.io/name": o.Name}
	tmpl := Pod(PodOptions{
		Name: o.Name, Namespace: o.Namespace, Labels: labels, CPU: o.CPU, Memory: o.Memory, Requests: o.Requests, Limits: o.Limits,
		InitContainers: o.InitContainers, Sidecars: o.Sidecars, Overhead: o.Overhead,
		NodeSelector: o.NodeSelector, NodeRequirements: o.NodeRequirements, NodeTerms: o.NodeTerms, NodePreferences: o.NodePreferences,
		Tolerations: o.Tolerations, HostPorts: o.HostPorts,
	})
	return &appsv1.DaemonSet{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "DaemonSet"},
		ObjectMeta: metav1.ObjectMeta{Name: o.Name, Namespace: o.Namespace, UID: types.UID("DaemonSet/" + o.Name)},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: tmpl.Spec},
		},
	}
}

// DaemonPod is a running pod of the DaemonSet, as its controller made it and
// admission changed it: o describes the pod (its requests, limits, ...); it
// gets the DaemonSet's namespace, labels and controller reference, the
// template's node selection and tolerations unless o sets its own, and the
// node affinity the DaemonSet controller adds (metadata.name of o.NodeName,
// which is required). Bind it with NodeOptions.Pods of that node.
func DaemonPod(ds *appsv1.DaemonSet, o PodOptions) *corev1.Pod {
	o.Namespace = ds.Namespace
	o.Owner = "DaemonSet/" + ds.Name
	if o.Labels == nil {
		o.Labels = ds.Spec.Template.Labels
	}
	if o.Tolerations == nil {
		o.Tolerations = ds.Spec.Template.Spec.Tolerations
	}
	if o.NodeSelector == nil {
		o.NodeSelector = ds.Spec.Template.Spec.NodeSelector
	}
	p := Pod(o)
	p.Spec.Affinity = ds.Spec.Template.Spec.Affinity.DeepCopy()
	if p.Spec.Affinity == nil {
		p.Spec.Affinity = &corev1.Affinity{}
	}
	if p.Spec.Affinity.NodeAffinity == nil {
		p.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	// The controller pins each pod to its node with matchFields.
	p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
		MatchFields: []corev1.NodeSelectorRequirement{{Key: "metadata.name", Operator: corev1.NodeSelectorOpIn, Values: []string{o.NodeName}}},
	}}}
	return p
}
