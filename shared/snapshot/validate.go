package snapshot

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
)

// validatePodSpec checks what the API server would have refused and the
// scheduler relies on: at least one container, non-negative requests,
// well-formed node selector terms, label selectors, topology spread
// constraints and tolerations. path is where spec sits ("spec", or
// "spec.template.spec" in a workload).
func validatePodSpec(spec *corev1.PodSpec, path string) []*fieldError {
	var errs []*fieldError
	if len(spec.Containers) == 0 {
		errs = append(errs, fieldErrorf(join(path, "containers"), "required: a pod has at least one container"))
	}
	for i := range spec.InitContainers {
		errs = append(errs, validateResources(&spec.InitContainers[i].Resources, fmt.Sprintf("%s.initContainers[%d].resources", path, i))...)
	}
	for i := range spec.Containers {
		errs = append(errs, validateResources(&spec.Containers[i].Resources, fmt.Sprintf("%s.containers[%d].resources", path, i))...)
	}
	errs = append(errs, nonNegative(spec.Overhead, join(path, "overhead"))...)
	errs = append(errs, validateAffinity(spec.Affinity, join(path, "affinity"))...)
	for i, c := range spec.TopologySpreadConstraints {
		errs = append(errs, validateSpread(c, fmt.Sprintf("%s.topologySpreadConstraints[%d]", path, i))...)
	}
	for i, t := range spec.Tolerations {
		errs = append(errs, validateToleration(t, fmt.Sprintf("%s.tolerations[%d]", path, i))...)
	}
	return errs
}

func validateResources(r *corev1.ResourceRequirements, path string) []*fieldError {
	return append(nonNegative(r.Requests, join(path, "requests")), nonNegative(r.Limits, join(path, "limits"))...)
}

func nonNegative(rl corev1.ResourceList, path string) []*fieldError {
	var errs []*fieldError
	for _, name := range slices.Sorted(maps.Keys(rl)) {
		if q := rl[name]; q.Sign() < 0 {
			errs = append(errs, fieldErrorf(mapKey(path, string(name)), "%s: must be greater than or equal to 0", q.String()))
		}
	}
	return errs
}

func validateAffinity(a *corev1.Affinity, path string) []*fieldError {
	if a == nil {
		return nil
	}
	var errs []*fieldError
	if na := a.NodeAffinity; na != nil {
		p := field.NewPath(path).Child("nodeAffinity")
		if req := na.RequiredDuringSchedulingIgnoredDuringExecution; req != nil {
			_, err := nodeaffinity.NewNodeSelector(req, field.WithPath(p.Child("requiredDuringSchedulingIgnoredDuringExecution")))
			errs = append(errs, fromFieldErrors(err)...)
		}
		if pref := na.PreferredDuringSchedulingIgnoredDuringExecution; len(pref) > 0 {
			_, err := nodeaffinity.NewPreferredSchedulingTerms(pref, field.WithPath(p.Child("preferredDuringSchedulingIgnoredDuringExecution")))
			errs = append(errs, fromFieldErrors(err)...)
		}
	}
	if pa := a.PodAffinity; pa != nil {
		errs = append(errs, validateTerms(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution, join(path, "podAffinity"))...)
	}
	if pa := a.PodAntiAffinity; pa != nil {
		errs = append(errs, validateTerms(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution, join(path, "podAntiAffinity"))...)
	}
	return errs
}

func validateTerms(required []corev1.PodAffinityTerm, preferred []corev1.WeightedPodAffinityTerm, path string) []*fieldError {
	var errs []*fieldError
	for i, t := range required {
		errs = append(errs, validateTerm(t, fmt.Sprintf("%s.requiredDuringSchedulingIgnoredDuringExecution[%d]", path, i))...)
	}
	for i, w := range preferred {
		p := fmt.Sprintf("%s.preferredDuringSchedulingIgnoredDuringExecution[%d]", path, i)
		if w.Weight < 1 || w.Weight > 100 {
			errs = append(errs, fieldErrorf(join(p, "weight"), "%d: must be in the range 1-100", w.Weight))
		}
		errs = append(errs, validateTerm(w.PodAffinityTerm, join(p, "podAffinityTerm"))...)
	}
	return errs
}

func validateTerm(t corev1.PodAffinityTerm, path string) []*fieldError {
	var errs []*fieldError
	if t.TopologyKey == "" {
		errs = append(errs, fieldErrorf(join(path, "topologyKey"), "required"))
	}
	errs = append(errs, validateSelector(t.LabelSelector, join(path, "labelSelector"))...)
	return append(errs, validateSelector(t.NamespaceSelector, join(path, "namespaceSelector"))...)
}

func validateSelector(s *metav1.LabelSelector, path string) []*fieldError {
	if s == nil {
		return nil
	}
	if _, err := metav1.LabelSelectorAsSelector(s); err != nil {
		return []*fieldError{{Path: path, Err: err}}
	}
	return nil
}

func validateSpread(c corev1.TopologySpreadConstraint, path string) []*fieldError {
	var errs []*fieldError
	if c.MaxSkew < 1 {
		errs = append(errs, fieldErrorf(join(path, "maxSkew"), "%d: must be greater than zero", c.MaxSkew))
	}
	if c.TopologyKey == "" {
		errs = append(errs, fieldErrorf(join(path, "topologyKey"), "required"))
	}
	switch c.WhenUnsatisfiable {
	case corev1.DoNotSchedule, corev1.ScheduleAnyway:
	default:
		errs = append(errs, fieldErrorf(join(path, "whenUnsatisfiable"), "%q: supported values: %q, %q", c.WhenUnsatisfiable, corev1.DoNotSchedule, corev1.ScheduleAnyway))
	}
	if c.MinDomains != nil && *c.MinDomains < 1 {
		errs = append(errs, fieldErrorf(join(path, "minDomains"), "%d: must be greater than zero", *c.MinDomains))
	}
	if c.MinDomains != nil && c.WhenUnsatisfiable != corev1.DoNotSchedule {
		errs = append(errs, fieldErrorf(join(path, "minDomains"), "may only be set with whenUnsatisfiable: DoNotSchedule"))
	}
	for _, pol := range []struct {
		name   string
		policy *corev1.NodeInclusionPolicy
	}{{"nodeAffinityPolicy", c.NodeAffinityPolicy}, {"nodeTaintsPolicy", c.NodeTaintsPolicy}} {
		if p := pol.policy; p != nil && *p != corev1.NodeInclusionPolicyHonor && *p != corev1.NodeInclusionPolicyIgnore {
			errs = append(errs, fieldErrorf(join(path, pol.name), "%q: supported values: %q, %q", *p, corev1.NodeInclusionPolicyHonor, corev1.NodeInclusionPolicyIgnore))
		}
	}
	return append(errs, validateSelector(c.LabelSelector, join(path, "labelSelector"))...)
}

func validateToleration(t corev1.Toleration, path string) []*fieldError {
	var errs []*fieldError
	switch t.Operator {
	case corev1.TolerationOpExists:
		if t.Value != "" {
			errs = append(errs, fieldErrorf(join(path, "value"), "must be empty when operator is Exists"))
		}
	case corev1.TolerationOpEqual, "":
		if t.Key == "" {
			errs = append(errs, fieldErrorf(join(path, "operator"), "must be Exists when key is empty (a toleration of every taint)"))
		}
	default:
		errs = append(errs, fieldErrorf(join(path, "operator"), "%q: supported values: %q, %q", t.Operator, corev1.TolerationOpEqual, corev1.TolerationOpExists))
	}
	switch t.Effect {
	case "", corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
	default:
		errs = append(errs, fieldErrorf(join(path, "effect"), "%q: supported values: %q, %q, %q", t.Effect,
			corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute))
	}
	return errs
}

// fromFieldErrors converts component-helpers' aggregated field errors.
func fromFieldErrors(err error) []*fieldError {
	if err == nil {
		return nil
	}
	var list []error
	if agg, ok := err.(interface{ Errors() []error }); ok {
		list = agg.Errors()
	} else {
		list = []error{err}
	}
	out := make([]*fieldError, 0, len(list))
	for _, e := range list {
		var fe *field.Error
		if errors.As(e, &fe) {
			out = append(out, &fieldError{Path: fe.Field, Err: errors.New(fe.ErrorBody())})
			continue
		}
		out = append(out, &fieldError{Err: e})
	}
	return out
}
