package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"sigs.k8s.io/yaml"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
)

// nodeGroup is one group of nodes Cluster Autoscaler scales today (an EKS
// managed node group or an Auto Scaling group tagged for it), as migrate
// reads it: plain values, whatever API they came from.
type nodeGroup struct {
	// Name is the group's name; Source says what it is ("managed node
	// group" or "Auto Scaling group").
	Name, Source string
	// InstanceTypes are the types it launches; CapacityTypes on-demand
	// and/or spot.
	InstanceTypes []string
	CapacityTypes []string
	// Labels and Taints are what its nodes carry (EKS's labels and taints,
	// or Cluster Autoscaler's node-template tags).
	Labels map[string]string
	Taints []corev1.Taint
	// Subnets and SecurityGroups are IDs; SecurityGroups is empty when
	// unknown.
	Subnets, SecurityGroups []string
	// MaxSize is the group's maximum node count.
	MaxSize int32
}

// migration is what migrate prints: the configuration, and what it could
// not carry over.
type migration struct {
	NodePools   []*apis.NodePool
	NodeClasses []*apis.EC2NodeClass
	Warnings    []string
}

// Cluster Autoscaler's tags on the Auto Scaling groups it scales.
const (
	caEnabledTag     = "k8s.io/cluster-autoscaler/enabled"
	caClusterTag     = "k8s.io/cluster-autoscaler/" // + cluster name
	caLabelTagPrefix = "k8s.io/cluster-autoscaler/node-template/label/"
	caTaintTagPrefix = "k8s.io/cluster-autoscaler/node-template/taint/"
	// eksClusterSGTag is on the security group EKS makes for a cluster.
	eksClusterSGTag = "aws:eks:cluster-name"
)

var notNameChars = regexp.MustCompile(`[^a-z0-9-]+`)

// objectName makes s a valid object name (lower case, DNS label).
func objectName(s string) string {
	n := strings.Trim(notNameChars.ReplaceAllString(strings.ToLower(s), "-"), "-")
	if len(n) > 63 {
		n = strings.TrimRight(n[:63], "-")
	}
	if n == "" {
		n = "group"
	}
	return n
}

// migrate turns node groups into NodePools and EC2NodeClasses that launch
// the same instance types, with the same labels and taints, into the same
// subnets and security groups: one NodePool per group, one EC2NodeClass per
// distinct set of subnets and security groups. role is the node role every
// class names; a group whose security groups are unknown (a managed node
// group without a launch template uses the cluster security group) gets
// the cluster security group, by the tag EKS puts on it. What cannot be carried over is said in Warnings, never
// dropped silently.
func migrate(groups []nodeGroup, cluster, role string, cat *catalog.Catalog) *migration {
	out := &migration{}
	sorted := slices.Clone(groups)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	classOf := map[string]string{} // subnets|groups -> class name
	poolNames := map[string]bool{}
	for _, g := range sorted {
		where := fmt.Sprintf("%s %s", g.Source, g.Name)
		var types []string
		maxCPU := int64(0)
		for _, t := range g.InstanceTypes {
			it, ok := cat.Get(t)
			if !ok {
				out.Warnings = append(out.Warnings, fmt.Sprintf("%s: instance type %s is not in Nodewright's catalog: left out", where, t))
				continue
			}
			types = append(types, t)
			maxCPU = max(maxCPU, int64(it.VCPU))
		}
		if len(types) == 0 {
			out.Warnings = append(out.Warnings, fmt.Sprintf("%s: no instance type to carry over: no NodePool made for it", where))
			continue
		}
		if len(g.Subnets) == 0 {
			out.Warnings = append(out.Warnings, fmt.Sprintf("%s: no subnet found: no NodePool made for it", where))
			continue
		}
		slices.Sort(types)
		subnets, sgs := slices.Sorted(slices.Values(g.Subnets)), slices.Sorted(slices.Values(g.SecurityGroups))
		key := strings.Join(subnets, ",") + "|" + strings.Join(sgs, ",")
		class, ok := classOf[key]
		if !ok {
			class = fmt.Sprintf("migrated-%d", len(classOf)+1)
			classOf[key] = class
			nc := &apis.EC2NodeClass{TypeMeta: metav1.TypeMeta{APIVersion: apis.EC2NodeClassAPIVersion, Kind: apis.EC2NodeClassKind},
				ObjectMeta: metav1.ObjectMeta{Name: class}}
			nc.Spec.Role = role
			nc.Spec.AMISelectorTerms = []apis.AMISelectorTerm{{Alias: "al2023@latest"}}
			for _, s := range subnets {
				nc.Spec.SubnetSelectorTerms = append(nc.Spec.SubnetSelectorTerms, apis.SubnetSelectorTerm{ID: s})
			}
			for _, s := range sgs {
				nc.Spec.SecurityGroupSelectorTerms = append(nc.Spec.SecurityGroupSelectorTerms, apis.SecurityGroupSelectorTerm{ID: s})
			}
			if len(sgs) == 0 {
				nc.Spec.SecurityGroupSelectorTerms = []apis.SecurityGroupSelectorTerm{{Tags: map[string]string{eksClusterSGTag: cluster}}}
				out.Warnings = append(out.Warnings, fmt.Sprintf("%s: its security groups are not known (no launch template names them): "+
					"EC2NodeClass %s selects the cluster security group (tag %s=%s), as EKS gives such a group's nodes; check it", where, class, eksClusterSGTag, cluster))
			}
			out.NodeClasses = append(out.NodeClasses, nc)
		}
		name := objectName(g.Name)
		for i := 2; poolNames[name]; i++ {
			name = fmt.Sprintf("%s-%d", objectName(g.Name), i)
		}
		poolNames[name] = true
		np := &apis.NodePool{TypeMeta: metav1.TypeMeta{APIVersion: apis.NodePoolAPIVersion, Kind: apis.NodePoolKind},
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"nodewright.io/migrated-from": where}}}
		np.Spec.Disruption = apis.Disruption{ConsolidationPolicy: apis.ConsolidationPolicyWhenEmptyOrUnderutilized, ConsolidateAfter: apis.DurationOf(0)}
		spec := &np.Spec.Template.Spec
		spec.NodeClassRef = &apis.NodeClassReference{Group: apis.AWSGroup, Kind: apis.EC2NodeClassKind, Name: class}
		spec.Requirements = []apis.NodeSelectorRequirementWithMinValues{
			{Key: apis.LabelInstanceType, Operator: corev1.NodeSelectorOpIn, Values: types},
		}
		cts := slices.Sorted(slices.Values(g.CapacityTypes))
		if len(cts) == 0 {
			cts = []string{apis.CapacityTypeOnDemand}
		}
		spec.Requirements = append(spec.Requirements, apis.NodeSelectorRequirementWithMinValues{
			Key: apis.LabelCapacityType, Operator: corev1.NodeSelectorOpIn, Values: cts})
		labels := map[string]string{}
		for _, k := range slices.Sorted(maps.Keys(g.Labels)) {
			if reason := labelRefused(k); reason != "" {
				out.Warnings = append(out.Warnings, fmt.Sprintf("%s: label %s=%s left out: %s", where, k, g.Labels[k], reason))
				continue
			}
			labels[k] = g.Labels[k]
		}
		if len(labels) > 0 {
			np.Spec.Template.ObjectMeta.Labels = labels
		}
		spec.Taints = slices.Clone(g.Taints)
		sort.Slice(spec.Taints, func(i, j int) bool { return spec.Taints[i].Key < spec.Taints[j].Key })
		if g.MaxSize > 0 {
			// The group's ceiling, in the unit NodePools limit: its
			// largest type's CPUs times its maximum size.
			np.Spec.Limits = apis.Limits{corev1.ResourceCPU: *resource.NewQuantity(maxCPU*int64(g.MaxSize), resource.DecimalSI)}
		}
		out.NodePools = append(out.NodePools, np)
	}
	return out
}

// labelRefused says why a NodePool may not carry the label key ("" when it
// may): the labels the loader refuses (kubernetes.io domains, which
// kubelets may not set; Karpenter's own), and the labels EKS and EC2 put
// on every node themselves.
func labelRefused(key string) string {
	if strings.HasPrefix(key, "eks.amazonaws.com/") || strings.HasPrefix(key, "alpha.eksctl.io/") {
		return "EKS sets it on its own nodes; Nodewright's nodes do not need it"
	}
	np := &apis.NodePool{}
	np.Name = "probe"
	np.Spec.Template.ObjectMeta.Labels = map[string]string{key: "x"}
	np.Spec.Template.Spec.NodeClassRef = &apis.NodeClassReference{Group: apis.AWSGroup, Kind: apis.EC2NodeClassKind, Name: "probe"}
	np.Spec.Template.Spec.Requirements = []apis.NodeSelectorRequirementWithMinValues{}
	np.Spec.Disruption = apis.Disruption{ConsolidationPolicy: apis.ConsolidationPolicyWhenEmptyOrUnderutilized, ConsolidateAfter: apis.DurationOf(0)}
	if err := np.Validate(); err != nil {
		return err.Error()
	}
	return ""
}

// caTaint reads a Cluster Autoscaler taint tag's value ("value:Effect").
func caTaint(key, value string) (corev1.Taint, error) {
	v, effect, ok := strings.Cut(value, ":")
	if !ok {
		v, effect = "", value
	}
	switch e := corev1.TaintEffect(effect); e {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectNoExecute, corev1.TaintEffectPreferNoSchedule:
		return corev1.Taint{Key: key, Value: v, Effect: e}, nil
	}
	return corev1.Taint{}, fmt.Errorf("taint %s=%s: effect %q is not NoSchedule, PreferNoSchedule or NoExecute", key, value, effect)
}

// eksTaintEffect maps EKS's taint effects (NO_SCHEDULE, ...) to Kubernetes'.
func eksTaintEffect(e string) (corev1.TaintEffect, bool) {
	switch e {
	case "NO_SCHEDULE":
		return corev1.TaintEffectNoSchedule, true
	case "NO_EXECUTE":
		return corev1.TaintEffectNoExecute, true
	case "PREFER_NO_SCHEDULE":
		return corev1.TaintEffectPreferNoSchedule, true
	}
	return "", false
}

// writeYAML prints the migration as YAML documents, EC2NodeClasses first,
// with each warning as a comment above them: output `nodewright validate`
// and `kubectl apply` read as they are.
func (m *migration) writeYAML(w io.Writer) error {
	for _, warn := range m.Warnings {
		for i, line := range strings.Split(warn, "\n") {
			prefix := "# warning: "
			if i > 0 {
				prefix = "#   "
			}
			if _, err := fmt.Fprintln(w, prefix+line); err != nil {
				return err
			}
		}
	}
	var objs []any
	for _, nc := range m.NodeClasses {
		objs = append(objs, nc)
	}
	for _, np := range m.NodePools {
		objs = append(objs, np)
	}
	for _, o := range objs {
		b, err := json.Marshal(o)
		if err != nil {
			return err
		}
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			return err
		}
		delete(doc, "status")
		prune(doc)
		y, err := yaml.Marshal(doc)
		if err != nil {
			return err
		}
		if _, err := fmt.Fprintf(w, "---\n%s", y); err != nil {
			return err
		}
	}
	return nil
}

// prune removes nulls and empty objects (creationTimestamp: null, an unset
// duration) from a decoded document, recursively.
func prune(m map[string]any) {
	for k, v := range m {
		switch x := v.(type) {
		case nil:
			delete(m, k)
		case map[string]any:
			prune(x)
			if len(x) == 0 {
				delete(m, k)
			}
		case []any:
			for _, e := range x {
				if em, ok := e.(map[string]any); ok {
					prune(em)
				}
			}
		}
	}
}
