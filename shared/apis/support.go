package apis

import (
	"encoding/json"
	"fmt"
	"strings"
)

// NodeOverlayKind is Karpenter's karpenter.sh/v1alpha1 NodeOverlay.
const NodeOverlayKind = "NodeOverlay"

// Support is what Nodewright does with one field, or one value of a field,
// of Karpenter's published schemas (NodePool and EC2NodeClass v1, NodeOverlay
// v1alpha1): it honours it, and Test names a test whose assertions change
// with it (the launch request, the user data, the plan or the validation
// output), or it refuses it at load, and Fix says why and what to do instead.
//
// Path is the field's path under the object, with [] for any item of a list
// (spec.template.spec.requirements[].operator). Value is "" for the field
// itself, else one value of it: the string, or for an AMI alias its family
// (bottlerocket), or for requirement values "key=value".
type Support struct {
	Kind  string
	Path  string
	Value string
	Fix   string // refused: why, and what to do instead
	Test  string // honoured: "<package dir>.<TestName>"
}

// Honoured reports whether Nodewright acts on the field or value.
func (s Support) Honoured() bool { return s.Fix == "" }

func honoured(kind, path, test string) Support { return Support{Kind: kind, Path: path, Test: test} }
func honouredValue(kind, path, value, test string) Support {
	return Support{Kind: kind, Path: path, Value: value, Test: test}
}
func refused(kind, path, fix string) Support { return Support{Kind: kind, Path: path, Fix: fix} }
func refusedValue(kind, path, value, fix string) Support {
	return Support{Kind: kind, Path: path, Value: value, Fix: fix}
}

// Short names of the tables' kinds, and tests several rows name.
const (
	pool    = NodePoolKind
	class   = EC2NodeClassKind
	overlay = NodeOverlayKind

	planTest       = "shared/scheduling.TestNodePoolFieldsShapeThePlan"
	operatorTest   = "shared/scheduling.TestRequirementOperatorsSelectInstanceTypes"
	budgetTest     = "shared/apis.TestNodePoolAllowedDisruptions"
	decideTest     = "shared/disruption.TestDecide"
	launchTest     = "shared/fleet.TestNodeClassFieldsShapeTheLaunch"
	resolveTest    = "shared/fleet.TestResolveSelectorTerms"
	referencesTest = "shared/apis.TestConfigValidateReferences"
	networkTest    = "shared/fleet.TestNetworkFieldsShapeTheLaunch"

	overlayTest = "shared/overlay.TestApply"
	// reservedTest launches into reservations first, then overflows;
	// reservationsTest resolves the terms and launches into one.
	reservedTest     = "shared/provision.TestReservationsFillFirstThenOverflow"
	reservationsTest = "shared/fleet.TestResolveCapacityReservations"
)

// SupportTable classifies every field of Karpenter v1.14.1's NodePool and
// EC2NodeClass (spec) and NodeOverlay schemas, one row a field or value; a
// field under a refused one is refused with it. Status is Karpenter's output,
// read so that `kubectl get -o yaml` loads and never acted on.
var SupportTable = []Support{
	honoured(pool, "spec.disruption.budgets[].duration", budgetTest),
	honoured(pool, "spec.disruption.budgets[].nodes", budgetTest),
	honoured(pool, "spec.disruption.budgets[].reasons", budgetTest),
	honoured(pool, "spec.disruption.budgets[].schedule", budgetTest),
	honoured(pool, "spec.disruption.consolidateAfter", decideTest),
	honouredValue(pool, "spec.disruption.consolidationPolicy", "WhenEmpty", decideTest),
	honouredValue(pool, "spec.disruption.consolidationPolicy", "WhenEmptyOrUnderutilized", decideTest),
	honouredValue(pool, "spec.disruption.consolidationPolicy", "Balanced", "shared/disruption.TestBalancedConsolidation"),
	honoured(pool, "spec.limits", planTest),
	honoured(pool, "spec.replicas", "shared/provision.TestStaticNodePoolKeepsReplicas"),
	honoured(pool, "spec.template.metadata.annotations", "shared/provision.TestRegisteredNodeGetsTemplateAnnotations"),
	honoured(pool, "spec.template.metadata.labels", planTest),
	honoured(pool, "spec.template.spec.expireAfter", decideTest),
	honoured(pool, "spec.template.spec.nodeClassRef.group", referencesTest),
	honoured(pool, "spec.template.spec.nodeClassRef.kind", referencesTest),
	honoured(pool, "spec.template.spec.nodeClassRef.name", referencesTest),
	honoured(pool, "spec.template.spec.requirements[].key", operatorTest),
	honoured(pool, "spec.template.spec.requirements[].minValues", planTest),
	honouredValue(pool, "spec.template.spec.requirements[].operator", "In", operatorTest),
	honouredValue(pool, "spec.template.spec.requirements[].operator", "NotIn", operatorTest),
	honouredValue(pool, "spec.template.spec.requirements[].operator", "Exists", operatorTest),
	honouredValue(pool, "spec.template.spec.requirements[].operator", "DoesNotExist", operatorTest),
	honouredValue(pool, "spec.template.spec.requirements[].operator", "Gt", operatorTest),
	honouredValue(pool, "spec.template.spec.requirements[].operator", "Lt", operatorTest),
	honouredValue(pool, "spec.template.spec.requirements[].operator", "Gte", operatorTest),
	honouredValue(pool, "spec.template.spec.requirements[].operator", "Lte", operatorTest),
	honoured(pool, "spec.template.spec.requirements[].values", operatorTest),
	honouredValue(pool, "spec.template.spec.requirements[].values", LabelCapacityType+"=reserved", reservedTest),
	honoured(pool, "spec.template.spec.startupTaints[].effect", planTest),
	honoured(pool, "spec.template.spec.startupTaints[].key", planTest),
	refused(pool, "spec.template.spec.startupTaints[].timeAdded", "timeAdded is set by Kubernetes when a taint lands on a node; remove it"),
	honoured(pool, "spec.template.spec.startupTaints[].value", planTest),
	honoured(pool, "spec.template.spec.taints[].effect", planTest),
	honoured(pool, "spec.template.spec.taints[].key", planTest),
	refused(pool, "spec.template.spec.taints[].timeAdded", "timeAdded is set by Kubernetes when a taint lands on a node; remove it"),
	honoured(pool, "spec.template.spec.taints[].value", planTest),
	honoured(pool, "spec.template.spec.terminationGracePeriod", "shared/orchestration.TestTerminationGracePeriodCountsFromTheDrain"),
	honoured(pool, "spec.weight", planTest),

	honouredValue(class, "spec.amiFamily", "AL2023", launchTest),
	honouredValue(class, "spec.amiFamily", "Custom", launchTest),
	honouredValue(class, "spec.amiFamily", "AL2", launchTest),
	honouredValue(class, "spec.amiFamily", "Bottlerocket", launchTest),
	honouredValue(class, "spec.amiFamily", "Windows2019", launchTest),
	honouredValue(class, "spec.amiFamily", "Windows2022", launchTest),
	honouredValue(class, "spec.amiFamily", "Windows2025", launchTest),
	honouredValue(class, "spec.amiSelectorTerms[].alias", "al2023", launchTest),
	honouredValue(class, "spec.amiSelectorTerms[].alias", "al2", launchTest),
	honouredValue(class, "spec.amiSelectorTerms[].alias", "bottlerocket", launchTest),
	honouredValue(class, "spec.amiSelectorTerms[].alias", "windows2019", launchTest),
	honouredValue(class, "spec.amiSelectorTerms[].alias", "windows2022", launchTest),
	honouredValue(class, "spec.amiSelectorTerms[].alias", "windows2025", launchTest),
	honoured(class, "spec.amiSelectorTerms[].id", launchTest),
	honoured(class, "spec.amiSelectorTerms[].name", launchTest),
	honoured(class, "spec.amiSelectorTerms[].owner", resolveTest),
	honoured(class, "spec.amiSelectorTerms[].ssmParameter", resolveTest),
	honoured(class, "spec.amiSelectorTerms[].tags", resolveTest),
	honoured(class, "spec.associatePublicIPAddress", launchTest),
	honoured(class, "spec.blockDeviceMappings[].deviceName", launchTest),
	honoured(class, "spec.blockDeviceMappings[].ebs.deleteOnTermination", launchTest),
	honoured(class, "spec.blockDeviceMappings[].ebs.encrypted", launchTest),
	honoured(class, "spec.blockDeviceMappings[].ebs.iops", launchTest),
	honoured(class, "spec.blockDeviceMappings[].ebs.kmsKeyID", launchTest),
	honoured(class, "spec.blockDeviceMappings[].ebs.snapshotID", launchTest),
	honoured(class, "spec.blockDeviceMappings[].ebs.throughput", launchTest),
	honoured(class, "spec.blockDeviceMappings[].ebs.volumeInitializationRate", launchTest),
	honoured(class, "spec.blockDeviceMappings[].ebs.volumeSize", launchTest),
	honoured(class, "spec.blockDeviceMappings[].ebs.volumeType", launchTest),
	honoured(class, "spec.blockDeviceMappings[].rootVolume", "shared/catalog.TestSettingsForNodeClass"),
	honoured(class, "spec.capacityReservationSelectorTerms[].id", reservationsTest),
	honoured(class, "spec.capacityReservationSelectorTerms[].instanceMatchCriteria", reservationsTest),
	honoured(class, "spec.capacityReservationSelectorTerms[].ownerID", reservationsTest),
	honoured(class, "spec.capacityReservationSelectorTerms[].tags", reservationsTest),
	honoured(class, "spec.connectionTracking.tcpEstablishedTimeout", networkTest),
	honoured(class, "spec.connectionTracking.udpStreamTimeout", networkTest),
	honoured(class, "spec.connectionTracking.udpTimeout", networkTest),
	honoured(class, "spec.context", launchTest),
	honoured(class, "spec.cpuOptions.nestedVirtualization", networkTest),
	honoured(class, "spec.detailedMonitoring", launchTest),
	refused(class, "spec.instanceProfile", "Nodewright launches nodes with its stack's instance profile; remove instanceProfile and set role to the stack's node role"),
	honoured(class, "spec.instanceStorePolicy", launchTest),
	honoured(class, "spec.ipPrefixCount", networkTest),
	honoured(class, "spec.kubelet.clusterDNS", launchTest),
	honoured(class, "spec.kubelet.cpuCFSQuota", launchTest),
	honoured(class, "spec.kubelet.evictionHard", launchTest),
	honoured(class, "spec.kubelet.evictionMaxPodGracePeriod", launchTest),
	honoured(class, "spec.kubelet.evictionSoft", launchTest),
	honoured(class, "spec.kubelet.evictionSoftGracePeriod", launchTest),
	honoured(class, "spec.kubelet.imageGCHighThresholdPercent", launchTest),
	honoured(class, "spec.kubelet.imageGCLowThresholdPercent", launchTest),
	honoured(class, "spec.kubelet.kubeReserved", launchTest),
	honoured(class, "spec.kubelet.maxPods", launchTest),
	honoured(class, "spec.kubelet.podsPerCore", launchTest),
	honoured(class, "spec.kubelet.systemReserved", launchTest),
	honoured(class, "spec.metadataOptions.httpEndpoint", launchTest),
	honoured(class, "spec.metadataOptions.httpProtocolIPv6", launchTest),
	honoured(class, "spec.metadataOptions.httpPutResponseHopLimit", launchTest),
	honoured(class, "spec.metadataOptions.httpTokens", launchTest),
	honoured(class, "spec.networkInterfaces[].deviceIndex", networkTest),
	honoured(class, "spec.networkInterfaces[].interfaceType", networkTest),
	honoured(class, "spec.networkInterfaces[].networkCardIndex", networkTest),
	honoured(class, "spec.placementGroupSelector.id", networkTest),
	honoured(class, "spec.placementGroupSelector.name", networkTest),
	honoured(class, "spec.role", "infra/stack.TestCheckNodeRoles"),
	honoured(class, "spec.securityGroupSelectorTerms[].id", resolveTest),
	honoured(class, "spec.securityGroupSelectorTerms[].name", resolveTest),
	honoured(class, "spec.securityGroupSelectorTerms[].tags", resolveTest),
	honoured(class, "spec.subnetSelectorTerms[].id", resolveTest),
	honoured(class, "spec.subnetSelectorTerms[].tags", resolveTest),
	honoured(class, "spec.tags", launchTest),
	honoured(class, "spec.userData", launchTest),

	honoured(overlay, "spec.capacity", "shared/overlay.TestApplyCapacity"),
	honoured(overlay, "spec.price", overlayTest),
	honoured(overlay, "spec.priceAdjustment", overlayTest),
	honoured(overlay, "spec.requirements[].key", overlayTest),
	honouredValue(overlay, "spec.requirements[].operator", "In", overlayTest),
	honouredValue(overlay, "spec.requirements[].operator", "NotIn", overlayTest),
	honouredValue(overlay, "spec.requirements[].operator", "Exists", overlayTest),
	honouredValue(overlay, "spec.requirements[].operator", "DoesNotExist", overlayTest),
	honouredValue(overlay, "spec.requirements[].operator", "Gt", overlayTest),
	honouredValue(overlay, "spec.requirements[].operator", "Lt", overlayTest),
	honouredValue(overlay, "spec.requirements[].operator", "Gte", overlayTest),
	honouredValue(overlay, "spec.requirements[].operator", "Lte", overlayTest),
	honoured(overlay, "spec.requirements[].values", overlayTest),
	honoured(overlay, "spec.weight", overlayTest),
}

// supportIndex is SupportTable by kind and path.
var supportIndex = func() map[string][]Support {
	m := map[string][]Support{}
	for _, s := range SupportTable {
		k := s.Kind + " " + s.Path
		m[k] = append(m[k], s)
	}
	return m
}()

// Refusals returns the refused fields and values set in a document of kind
// (its JSON), each a FieldError at the field's path whose detail says what
// to do instead. A document that is not a JSON object gives none (decoding
// reports it).
func Refusals(kind string, data []byte) ErrorList {
	var doc map[string]any
	if json.Unmarshal(data, &doc) != nil {
		return nil
	}
	var errs ErrorList
	if spec, ok := doc["spec"]; ok {
		refusalsIn(kind, "spec", "spec", spec, nil, &errs)
	}
	return errs
}

// refusalsOf returns the refusals of a typed object, as its JSON shows them.
func refusalsOf(kind string, obj any) ErrorList {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil // a typed object always marshals; Validate reports the rest
	}
	return Refusals(kind, data)
}

// refusalsIn walks value v at pattern (the table's path) and concrete (the
// document's path, with list indexes); parent is the object holding v.
func refusalsIn(kind, pattern, concrete string, v any, parent map[string]any, errs *ErrorList) {
	switch c := v.(type) {
	case nil:
		return
	case map[string]any:
		if len(c) == 0 {
			return // an empty object or list sets nothing
		}
	case []any:
		if len(c) == 0 {
			return
		}
	}
	for _, s := range supportIndex[kind+" "+pattern] {
		if s.Honoured() {
			continue
		}
		if s.Value == "" {
			*errs = append(*errs, &FieldError{Field: concrete, Detail: s.Fix})
			return // nothing under a refused field is looked at
		}
		for _, got := range valuesOf(pattern, v, parent) {
			if got.key == s.Value {
				*errs = append(*errs, &FieldError{Field: concrete, Detail: fmt.Sprintf("%q: %s", got.shown, s.Fix)})
			}
		}
	}
	switch v := v.(type) {
	case map[string]any:
		for k, child := range v {
			refusalsIn(kind, pattern+"."+k, concrete+"."+k, child, v, errs)
		}
	case []any:
		for i, item := range v {
			refusalsIn(kind, pattern+"[]", fmt.Sprintf("%s[%d]", concrete, i), item, parent, errs)
		}
	}
}

// fieldValue is a value as the table names it (key) and as the user wrote
// it (shown).
type fieldValue struct{ key, shown string }

// valuesOf returns the values of a field as the table's value rows name them.
func valuesOf(pattern string, v any, parent map[string]any) []fieldValue {
	switch pattern {
	case "spec.amiSelectorTerms[].alias":
		s, _ := v.(string)
		family, _, _ := strings.Cut(s, "@")
		return []fieldValue{{family, s}}
	case "spec.template.spec.requirements[].values":
		key, _ := parent["key"].(string)
		if op, _ := parent["operator"].(string); op != "In" {
			return nil // NotIn, Exists... do not ask for the value
		}
		items, _ := v.([]any)
		var out []fieldValue
		for _, it := range items {
			if s, ok := it.(string); ok {
				out = append(out, fieldValue{NormalizeLabel(key) + "=" + s, s})
			}
		}
		return out
	}
	if s, ok := v.(string); ok {
		return []fieldValue{{s, s}}
	}
	return nil
}

// withRefusals puts refusals first and drops other errors on a refused
// field (the refusal says what to do; "unknown field" or "not one of" would
// only repeat it less helpfully).
func withRefusals(refusals, errs ErrorList) ErrorList {
	if len(refusals) == 0 {
		return errs
	}
	refusedAt := map[string]bool{}
	for _, r := range refusals {
		refusedAt[r.Field] = true
	}
	out := append(ErrorList{}, refusals...)
	for _, e := range errs {
		if !refusedAt[e.Field] && !refusedUnder(refusedAt, e.Field) {
			out = append(out, e)
		}
	}
	return out.sorted()
}

// refusedUnder reports whether path lies under a refused field.
func refusedUnder(refusedAt map[string]bool, path string) bool {
	for p := range refusedAt {
		if strings.HasPrefix(path, p+".") || strings.HasPrefix(path, p+"[") {
			return true
		}
	}
	return false
}
