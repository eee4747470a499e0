package apis

import (
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Limits from Karpenter's NodePool CRD.
const (
	MaxRequirements    = 100
	MaxTemplateLabels  = 100
	MaxBudgets         = 50
	MaxBudgetReasons   = 50
	MinMinValues       = 1
	MaxMinValues       = 50
	MinWeight          = 1
	MaxWeight          = 100
	maxAnnotationBytes = 256 * 1024
)

var budgetNodesPattern = regexp.MustCompile(`^((100|[0-9]{1,2})%|[0-9]+)$`)

// requirementOperators are the operators a requirement may use, in the order
// Karpenter documents them.
func requirementOperators() []string {
	return []string{
		string(corev1.NodeSelectorOpIn), string(corev1.NodeSelectorOpNotIn),
		string(corev1.NodeSelectorOpExists), string(corev1.NodeSelectorOpDoesNotExist),
		string(corev1.NodeSelectorOpGt), string(corev1.NodeSelectorOpLt),
		string(NodeSelectorOpGte), string(NodeSelectorOpLte),
	}
}

// taintEffects are the effects a taint may have.
func taintEffects() []string {
	return []string{
		string(corev1.TaintEffectNoSchedule), string(corev1.TaintEffectPreferNoSchedule), string(corev1.TaintEffectNoExecute),
	}
}

// Validate checks the NodePool as Karpenter's CRD schema, CEL rules and
// validation webhook would, and returns an ErrorList (nil when valid). It does
// not need Default to have run.
func (np *NodePool) Validate() error {
	v := &validator{}
	v.objectName(field.NewPath("metadata", "name"), np.Name)
	validateNodeRepair(v, field.NewPath("metadata", "annotations"), np.Annotations)
	nodeCostPerHour(v, field.NewPath("metadata", "annotations"), np.Annotations)
	spec := field.NewPath("spec")
	validateTemplate(v, spec.Child("template"), &np.Spec.Template)
	validateDisruption(v, spec.Child("disruption"), &np.Spec.Disruption)
	validateLimits(v, spec.Child("limits"), np.Spec.Limits, np.Spec.Replicas != nil)
	if np.Spec.Weight != nil {
		v.intRange(spec.Child("weight"), int64(*np.Spec.Weight), MinWeight, MaxWeight)
		if np.Spec.Replicas != nil {
			v.add(spec.Child("weight"), "not supported on a static NodePool (replicas is set)")
		}
	}
	if np.Spec.Replicas != nil {
		v.nonNegative(spec.Child("replicas"), *np.Spec.Replicas)
	}
	return withRefusals(refusalsOf(NodePoolKind, np), v.errs).asError()
}

func validateTemplate(v *validator, path *field.Path, t *NodeClaimTemplate) {
	meta := path.Child("metadata")
	validateTemplateLabels(v, meta.Child("labels"), t.ObjectMeta.Labels)
	validateAnnotations(v, meta.Child("annotations"), t.ObjectMeta.Annotations)
	spec := path.Child("spec")
	validateRequirements(v, spec.Child("requirements"), t.Spec.Requirements)
	seen := map[string]bool{}
	validateTaints(v, spec.Child("taints"), t.Spec.Taints, seen)
	validateTaints(v, spec.Child("startupTaints"), t.Spec.StartupTaints, seen)
	validateNodeClassRef(v, spec.Child("nodeClassRef"), t.Spec.NodeClassRef)
	validateNillableDuration(v, spec.Child("expireAfter"), t.Spec.ExpireAfter)
	if tgp := t.Spec.TerminationGracePeriod; tgp != nil {
		if tgp.Duration < 0 || tgp.Duration%time.Second != 0 {
			v.add(spec.Child("terminationGracePeriod"), "%q must be a non-negative duration in whole seconds (like 48h or 90s)", tgp.Duration.String())
		}
	}
}

func validateTemplateLabels(v *validator, path *field.Path, labels map[string]string) {
	if len(labels) > MaxTemplateLabels {
		v.add(path, "must have at most %d labels, has %d", MaxTemplateLabels, len(labels))
	}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		p := path.Key(k)
		if v.labelKey(p, k) {
			if reason := restrictedLabelReason(k); reason != "" {
				v.add(p, "%s", reason)
			}
		}
		v.labelValue(p, labels[k])
	}
}

func validateAnnotations(v *validator, path *field.Path, annotations map[string]string) {
	size := 0
	for _, k := range slices.Sorted(maps.Keys(annotations)) {
		size += len(k) + len(annotations[k])
		if msgs := validation.IsQualifiedName(strings.ToLower(k)); len(msgs) > 0 {
			v.add(path.Key(k), "%q is not a valid annotation key: %s", k, strings.Join(msgs, "; "))
		}
	}
	if size > maxAnnotationBytes {
		v.add(path, "annotations total %d bytes, more than the %d allowed", size, maxAnnotationBytes)
	}
}

func validateRequirements(v *validator, path *field.Path, reqs []NodeSelectorRequirementWithMinValues) {
	if reqs == nil {
		v.required(path, "a list, may be empty")
		return
	}
	v.maxItems(path, len(reqs), MaxRequirements)
	for i := range reqs {
		validateRequirement(v, path.Index(i), &reqs[i])
	}
}

func validateRequirement(v *validator, path *field.Path, r *NodeSelectorRequirementWithMinValues) {
	if r.Key == "" {
		v.required(path.Child("key"), "")
	} else if v.labelKey(path.Child("key"), r.Key) {
		if reason := restrictedLabelReason(r.Key); reason != "" {
			v.add(path.Child("key"), "%s", reason)
		}
	}
	v.oneOf(path.Child("operator"), string(r.Operator), requirementOperators(), true)
	values := path.Child("values")
	for i, val := range r.Values {
		v.labelValue(values.Index(i), val)
	}
	switch r.Operator {
	case corev1.NodeSelectorOpIn:
		if len(r.Values) == 0 {
			v.add(values, "operator In needs at least one value")
		}
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt, NodeSelectorOpGte, NodeSelectorOpLte:
		if !singleNonNegativeInteger(r.Values) {
			v.add(values, "operator %s needs exactly one non-negative integer value, got %s", r.Operator, quoteAll(r.Values))
		}
	}
	if r.MinValues != nil {
		mv := path.Child("minValues")
		v.intRange(mv, int64(*r.MinValues), MinMinValues, MaxMinValues)
		if r.Operator == corev1.NodeSelectorOpIn && *r.MinValues > len(r.Values) {
			v.add(mv, "%d is more than the number of values (%d)", *r.MinValues, len(r.Values))
		}
	}
}

func singleNonNegativeInteger(values []string) bool {
	if len(values) != 1 {
		return false
	}
	n, err := strconv.ParseInt(values[0], 10, 64)
	return err == nil && n >= 0
}

func validateTaints(v *validator, path *field.Path, taints []corev1.Taint, seen map[string]bool) {
	for i, t := range taints {
		p := path.Index(i)
		if t.Key == "" {
			v.required(p.Child("key"), "")
		} else if msgs := validation.IsQualifiedName(t.Key); len(msgs) > 0 {
			v.add(p.Child("key"), "%q is not a valid taint key: %s", t.Key, strings.Join(msgs, "; "))
		}
		if t.Value != "" {
			if msgs := validation.IsValidLabelValue(t.Value); len(msgs) > 0 {
				v.add(p.Child("value"), "%q is not a valid taint value: %s", t.Value, strings.Join(msgs, "; "))
			}
		}
		v.oneOf(p.Child("effect"), string(t.Effect), taintEffects(), true)
		id := t.Key + ":" + string(t.Effect)
		if seen[id] {
			v.add(p, "duplicate taint %q: taints and startupTaints may hold each key and effect once", id)
		}
		seen[id] = true
	}
}

func validateNodeClassRef(v *validator, path *field.Path, ref *NodeClassReference) {
	if ref == nil {
		v.required(path, "group, kind and name of the EC2NodeClass")
		return
	}
	switch {
	case ref.Group == "":
		v.required(path.Child("group"), AWSGroup)
	case strings.Contains(ref.Group, "/"):
		v.add(path.Child("group"), "%q must be an API group without a version (like %s)", ref.Group, AWSGroup)
	}
	if ref.Kind == "" {
		v.required(path.Child("kind"), EC2NodeClassKind)
	}
	if ref.Name == "" {
		v.required(path.Child("name"), "")
	}
}

// validateNillableDuration checks consolidateAfter or expireAfter text.
func validateNillableDuration(v *validator, path *field.Path, d NillableDuration) {
	if d.Raw == "" {
		if d.Duration != nil && *d.Duration < 0 {
			v.add(path, "%q must not be negative", d.Duration.String())
		}
		return
	}
	if !v.pattern(path, d.Raw, nillableDurationPattern, "must be a duration in s, m or h (like 720h or 1h30m) or Never") {
		return
	}
	if d.Duration == nil && d.Raw != Never {
		v.add(path, "%q is too long a duration", d.Raw)
	}
}

func validateDisruption(v *validator, path *field.Path, d *Disruption) {
	empty := !d.ConsolidateAfter.IsSet() && d.ConsolidationPolicy == "" && d.Budgets == nil
	if !d.ConsolidateAfter.IsSet() && !empty {
		v.required(path.Child("consolidateAfter"), "a duration like 30s, or Never")
	}
	validateNillableDuration(v, path.Child("consolidateAfter"), d.ConsolidateAfter)
	policy := path.Child("consolidationPolicy")
	if d.ConsolidationPolicy == "WhenUnderutilized" {
		v.add(policy, "%q is the v1beta1 name: Nodewright reads karpenter.sh/v1, use %s", d.ConsolidationPolicy, ConsolidationPolicyWhenEmptyOrUnderutilized)
	} else {
		v.oneOf(policy, string(d.ConsolidationPolicy), policyNames(), false)
	}
	v.maxItems(path.Child("budgets"), len(d.Budgets), MaxBudgets)
	for i := range d.Budgets {
		validateBudget(v, path.Child("budgets").Index(i), &d.Budgets[i])
	}
}

func policyNames() []string {
	out := []string{}
	for _, p := range ConsolidationPolicies() {
		out = append(out, string(p))
	}
	return out
}

func reasonNames() []string {
	out := []string{}
	for _, r := range DisruptionReasons() {
		out = append(out, string(r))
	}
	return out
}

func validateBudget(v *validator, path *field.Path, b *Budget) {
	if b.Nodes != "" && v.pattern(path.Child("nodes"), b.Nodes, budgetNodesPattern,
		"must be a node count (like 5) or a percentage from 0% to 100% (like 10%)") {
		if _, err := parseBudgetNodes(b.Nodes); err != nil {
			v.add(path.Child("nodes"), "%q is too large", b.Nodes)
		}
	}
	v.maxItems(path.Child("reasons"), len(b.Reasons), MaxBudgetReasons)
	for i, r := range b.Reasons {
		v.oneOf(path.Child("reasons").Index(i), string(r), reasonNames(), true)
	}
	switch {
	case b.Schedule != nil && b.Duration == nil:
		v.required(path.Child("duration"), "schedule and duration go together")
	case b.Schedule == nil && b.Duration != nil:
		v.required(path.Child("schedule"), "schedule and duration go together")
	}
	if b.Schedule != nil {
		validateSchedule(v, path.Child("schedule"), *b.Schedule)
	}
	if b.Duration != nil {
		if d := b.Duration.Duration; d < 0 || d%time.Minute != 0 {
			v.add(path.Child("duration"), "%q must be a non-negative duration in whole minutes (like 8h or 1h30m)", d.String())
		}
	}
}

// standardLimitNames are the resource names a limit may use besides extended
// resources (which have a domain, like nvidia.com/gpu) and hugepages-*.
func standardLimitNames() []string {
	return []string{
		string(corev1.ResourceCPU), string(corev1.ResourceMemory), string(corev1.ResourceEphemeralStorage),
		string(corev1.ResourcePods), "nodes", string(corev1.ResourceStorage),
	}
}

func validateLimits(v *validator, path *field.Path, limits Limits, static bool) {
	for _, rn := range slices.Sorted(maps.Keys(limits)) {
		name := string(rn)
		p := path.Key(name)
		q := limits[rn]
		switch {
		case strings.Contains(name, "/") || strings.HasPrefix(name, corev1.ResourceHugePagesPrefix):
			if msgs := validation.IsQualifiedName(name); len(msgs) > 0 {
				v.add(p, "%q is not a valid resource name: %s", name, strings.Join(msgs, "; "))
			}
		case !slices.Contains(standardLimitNames(), name):
			v.add(p, "%q is not a known resource: use one of %s, hugepages-<size>, or an extended resource with a domain (like nvidia.com/gpu)",
				name, strings.Join(standardLimitNames(), ", "))
		}
		v.nonNegativeQuantity(p, q)
		v.inRange(p, name, q.String(), q)
		if static && name != "nodes" {
			v.add(p, "only limits.nodes is supported on a static NodePool (replicas is set)")
		}
	}
}

// scheduleCheckFrom is a fixed instant from which validation checks that a
// schedule ever fires (the cron library looks five years ahead), so results
// do not depend on the clock.
func scheduleCheckFrom() time.Time { return time.Date(2000, time.January, 1, 0, 0, 0, 0, time.UTC) }

func validateSchedule(v *validator, path *field.Path, s string) {
	sched, err := parseSchedule(s)
	if err != nil {
		v.add(path, "%q is not a valid cron schedule: %v", s, err)
		return
	}
	if sched.Next(scheduleCheckFrom()).IsZero() {
		v.add(path, "%q never fires (no such date)", s)
	}
}
