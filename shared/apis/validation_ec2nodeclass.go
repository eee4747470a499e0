package apis

import (
	"fmt"
	"maps"
	"net"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Limits from Karpenter's EC2NodeClass CRD.
const (
	MaxSelectorTerms       = 30
	MaxBlockDeviceMappings = 50
	MinHopLimit            = 1
	MaxHopLimit            = 64
	maxAliasLength         = 30
	maxTagKeyLength        = 128
	maxTagValueLength      = 256
)

var (
	amiIDPattern    = regexp.MustCompile(`^ami-[0-9a-z]+$`)
	subnetIDPattern = regexp.MustCompile(`^subnet-[0-9a-z]+$`)
	sgIDPattern     = regexp.MustCompile(`^sg-[0-9a-z]+$`)
	crIDPattern     = regexp.MustCompile(`^cr-[0-9a-z]+$`)
	ownerIDPattern  = regexp.MustCompile(`^[0-9]{12}$`)
	aliasPattern    = regexp.MustCompile(`^[a-zA-Z0-9]+@.+$`)
)

// Enumerations of the EC2NodeClass schema.
func enabledDisabled() []string  { return []string{"enabled", "disabled"} }
func httpTokensValues() []string { return []string{"required", "optional"} }
func volumeTypes() []string      { return []string{"standard", "io1", "io2", "gp2", "sc1", "st1", "gp3"} }
func matchCriteria() []string    { return []string{"open", "targeted"} }
func reservedKeys() []string     { return []string{"cpu", "memory", "ephemeral-storage", "pid"} }
func evictionSignals() []string {
	return []string{"memory.available", "nodefs.available", "nodefs.inodesFree", "imagefs.available", "imagefs.inodesFree", "pid.available"}
}

// aliasFamilyNames() are the families an amiSelectorTerms alias may name.
func aliasFamilyNames() []string {
	return []string{"al2", "al2023", "bottlerocket", "windows2019", "windows2022", "windows2025"}
}

// aliasFamily maps an alias family to its spec.amiFamily value, or "".
func aliasFamily(family string) string {
	switch family {
	case "al2":
		return AMIFamilyAL2
	case "al2023":
		return AMIFamilyAL2023
	case "bottlerocket":
		return AMIFamilyBottlerocket
	case "windows2019":
		return AMIFamilyWindows2019
	case "windows2022":
		return AMIFamilyWindows2022
	case "windows2025":
		return AMIFamilyWindows2025
	}
	return ""
}

// Validate checks the EC2NodeClass as Karpenter's CRD schema, CEL rules and
// validation webhook would, and returns an ErrorList (nil when valid).
func (nc *EC2NodeClass) Validate() error {
	v := &validator{}
	v.objectName(field.NewPath("metadata", "name"), nc.Name)
	spec := field.NewPath("spec")
	s := &nc.Spec
	validateIdentity(v, spec, s)
	validateAMITerms(v, spec.Child("amiSelectorTerms"), s.AMISelectorTerms)
	validateAMIFamily(v, spec.Child("amiFamily"), s)
	validateSubnetTerms(v, spec.Child("subnetSelectorTerms"), s.SubnetSelectorTerms)
	validateSecurityGroupTerms(v, spec.Child("securityGroupSelectorTerms"), s.SecurityGroupSelectorTerms)
	validateCapacityReservationTerms(v, spec.Child("capacityReservationSelectorTerms"), s.CapacityReservationSelectorTerms)
	validateTags(v, spec.Child("tags"), s.Tags)
	validateMetadataOptions(v, spec.Child("metadataOptions"), s.MetadataOptions)
	validateBlockDeviceMappings(v, spec.Child("blockDeviceMappings"), s.BlockDeviceMappings)
	if s.Kubelet != nil {
		validateKubelet(v, spec.Child("kubelet"), s.Kubelet)
	}
	if s.InstanceStorePolicy != nil {
		v.oneOf(spec.Child("instanceStorePolicy"), string(*s.InstanceStorePolicy), []string{string(InstanceStorePolicyRAID0)}, true)
	}
	if s.IPPrefixCount != nil {
		v.nonNegative(spec.Child("ipPrefixCount"), int64(*s.IPPrefixCount))
	}
	validateNetworking(v, spec, s)
	return withRefusals(refusalsOf(EC2NodeClassKind, nc), v.errs).asError()
}

func validateIdentity(v *validator, spec *field.Path, s *EC2NodeClassSpec) {
	switch {
	case s.Role != "" && s.InstanceProfile != nil:
		v.add(spec.Child("instanceProfile"), "must not be set together with role: set exactly one of role, instanceProfile")
	case s.Role == "" && s.InstanceProfile == nil:
		v.required(spec.Child("role"), "or instanceProfile: exactly one of them")
	case s.InstanceProfile != nil && *s.InstanceProfile == "":
		v.add(spec.Child("instanceProfile"), "must not be empty")
	}
}

// termField is one field of a selector term and whether it is set.
type termField struct {
	name string
	set  bool
}

// termFields lists a selector term's fields in a fixed order.
type termFields []termField

func (t termFields) isSet(name string) bool {
	return slices.ContainsFunc(t, func(f termField) bool { return f.name == name && f.set })
}

// exclusive reports the term field `name` set together with any of others.
func (v *validator) exclusive(path *field.Path, fields termFields, name string, others ...string) bool {
	if !fields.isSet(name) {
		return false
	}
	var clash []string
	for _, f := range fields {
		if f.set && slices.Contains(others, f.name) {
			clash = append(clash, f.name)
		}
	}
	if len(clash) == 0 {
		return false
	}
	v.add(path.Child(name), "must not be combined with %s in the same term", strings.Join(clash, ", "))
	return true
}

// selectorTerms checks the list-level rules shared by all selector terms.
func (v *validator) selectorTerms(path *field.Path, n int, required bool, example string) {
	if n == 0 && required {
		v.required(path, "at least one term, like "+example)
	}
	v.maxItems(path, n, MaxSelectorTerms)
}

// anyOf reports a term that sets none of the selecting fields.
func (v *validator) anyOf(path *field.Path, fields termFields, selecting ...string) {
	for _, f := range fields {
		if f.set && slices.Contains(selecting, f.name) {
			return
		}
	}
	v.add(path, "must set one of %s", strings.Join(selecting, ", "))
}

func validateAMITerms(v *validator, path *field.Path, terms []AMISelectorTerm) {
	v.selectorTerms(path, len(terms), true, "{alias: al2023@latest}")
	aliases := 0
	for i, t := range terms {
		p := path.Index(i)
		f := termFields{{"alias", t.Alias != ""}, {"id", t.ID != ""}, {"name", t.Name != ""}, {"owner", t.Owner != ""},
			{"ssmParameter", t.SSMParameter != ""}, {"tags", len(t.Tags) > 0}}
		v.anyOf(p, f, "alias", "id", "name", "ssmParameter", "tags")
		if !v.exclusive(p, f, "id", "alias", "name", "owner", "tags") {
			v.exclusive(p, f, "alias", "id", "name", "owner", "tags")
		}
		if t.Alias != "" {
			aliases++
			validateAlias(v, p.Child("alias"), t.Alias)
		}
		if t.ID != "" {
			v.pattern(p.Child("id"), t.ID, amiIDPattern, "must look like ami-0123456789abcdef0")
		}
		v.nonEmptyTags(p.Child("tags"), t.Tags)
	}
	if aliases > 0 && len(terms) > 1 {
		v.add(path, "a term with an alias must be the only term (has %d terms)", len(terms))
	}
}

// parseAlias splits family@version.
func parseAlias(alias string) (family, version string, ok bool) {
	if !aliasPattern.MatchString(alias) {
		return "", "", false
	}
	family, version, _ = strings.Cut(alias, "@")
	return family, version, true
}

func validateAlias(v *validator, path *field.Path, alias string) {
	family, version, ok := parseAlias(alias)
	switch {
	case len(alias) > maxAliasLength:
		v.add(path, "%q is longer than %d characters", alias, maxAliasLength)
	case !ok:
		v.add(path, "%q must have the form family@version (like al2023@latest)", alias)
	case aliasFamily(family) == "":
		v.add(path, "%q: family %q is not one of %s", alias, family, strings.Join(aliasFamilyNames(), ", "))
	case strings.HasPrefix(family, "windows") && version != AliasVersionLatest:
		v.add(path, "%q: windows families support only version latest (like %s@latest)", alias, family)
	}
}

func validateAMIFamily(v *validator, path *field.Path, s *EC2NodeClassSpec) {
	fromAlias := ""
	hasAlias := false
	for _, t := range s.AMISelectorTerms {
		if t.Alias == "" {
			continue
		}
		hasAlias = true
		if f, _, ok := parseAlias(t.Alias); ok {
			fromAlias = aliasFamily(f)
		}
		break
	}
	if s.AMIFamily == nil {
		if !hasAlias && len(s.AMISelectorTerms) > 0 {
			v.required(path, "amiSelectorTerms have no alias, so the family must be named: one of "+strings.Join(AMIFamilies(), ", "))
		}
		return
	}
	if !v.oneOf(path, *s.AMIFamily, AMIFamilies(), true) {
		return
	}
	if fromAlias != "" && *s.AMIFamily != fromAlias && *s.AMIFamily != AMIFamilyCustom {
		v.add(path, "%q does not match the alias family %s: set %s or %s, or leave it unset", *s.AMIFamily, fromAlias, fromAlias, AMIFamilyCustom)
	}
}

func validateSubnetTerms(v *validator, path *field.Path, terms []SubnetSelectorTerm) {
	v.selectorTerms(path, len(terms), true, "{tags: {karpenter.sh/discovery: my-cluster}}")
	for i, t := range terms {
		p := path.Index(i)
		f := termFields{{"id", t.ID != ""}, {"tags", len(t.Tags) > 0}}
		v.anyOf(p, f, "id", "tags")
		v.exclusive(p, f, "id", "tags")
		if t.ID != "" {
			v.pattern(p.Child("id"), t.ID, subnetIDPattern, "must look like subnet-0123456789abcdef0")
		}
		v.nonEmptyTags(p.Child("tags"), t.Tags)
	}
}

func validateSecurityGroupTerms(v *validator, path *field.Path, terms []SecurityGroupSelectorTerm) {
	v.selectorTerms(path, len(terms), true, "{tags: {karpenter.sh/discovery: my-cluster}}")
	for i, t := range terms {
		p := path.Index(i)
		f := termFields{{"id", t.ID != ""}, {"name", t.Name != ""}, {"tags", len(t.Tags) > 0}}
		v.anyOf(p, f, "id", "name", "tags")
		if !v.exclusive(p, f, "id", "name", "tags") {
			v.exclusive(p, f, "name", "id", "tags")
		}
		if t.ID != "" {
			v.pattern(p.Child("id"), t.ID, sgIDPattern, "must look like sg-0123456789abcdef0")
		}
		v.nonEmptyTags(p.Child("tags"), t.Tags)
	}
}

func validateCapacityReservationTerms(v *validator, path *field.Path, terms []CapacityReservationSelectorTerm) {
	v.selectorTerms(path, len(terms), false, "")
	for i, t := range terms {
		p := path.Index(i)
		f := termFields{{"id", t.ID != ""}, {"instanceMatchCriteria", t.InstanceMatchCriteria != ""},
			{"ownerID", t.OwnerID != ""}, {"tags", len(t.Tags) > 0}}
		v.anyOf(p, f, "id", "instanceMatchCriteria", "tags")
		v.exclusive(p, f, "id", "instanceMatchCriteria", "ownerID", "tags")
		if t.ID != "" {
			v.pattern(p.Child("id"), t.ID, crIDPattern, "must look like cr-0123456789abcdef0")
		}
		if t.OwnerID != "" {
			v.pattern(p.Child("ownerID"), t.OwnerID, ownerIDPattern, "must be a 12-digit AWS account ID")
		}
		v.oneOf(p.Child("instanceMatchCriteria"), t.InstanceMatchCriteria, matchCriteria(), false)
		v.nonEmptyTags(p.Child("tags"), t.Tags)
	}
}

// restrictedTagReason says why an EC2NodeClass may not set tag key k.
func restrictedTagReason(k string) string {
	switch {
	case k == TagKeyNodePool, k == TagKeyNodeClaim, k == TagKeyEC2NodeClass, k == TagKeyEKSClusterName,
		strings.HasPrefix(k, TagKeyClusterPrefix):
		return fmt.Sprintf("tag key %q is restricted: Nodewright sets it on the instances it launches", k)
	case strings.HasPrefix(strings.ToLower(k), "aws:"):
		return fmt.Sprintf("tag key %q is reserved: keys starting with aws: belong to AWS", k)
	}
	return ""
}

func validateTags(v *validator, path *field.Path, tags map[string]string) {
	for _, k := range slices.Sorted(maps.Keys(tags)) {
		p := path.Key(k)
		switch {
		case k == "":
			v.add(p, "tag key must not be empty")
		case len(k) > maxTagKeyLength:
			v.add(p, "tag key is %d characters, more than %d", len(k), maxTagKeyLength)
		case restrictedTagReason(k) != "":
			v.add(p, "%s", restrictedTagReason(k))
		}
		if len(tags[k]) > maxTagValueLength {
			v.add(p, "tag value is %d characters, more than %d", len(tags[k]), maxTagValueLength)
		}
	}
}

func validateMetadataOptions(v *validator, path *field.Path, m *MetadataOptions) {
	if m == nil {
		return
	}
	if m.HTTPEndpoint != nil {
		v.oneOf(path.Child("httpEndpoint"), *m.HTTPEndpoint, enabledDisabled(), true)
	}
	if m.HTTPProtocolIPv6 != nil {
		v.oneOf(path.Child("httpProtocolIPv6"), *m.HTTPProtocolIPv6, enabledDisabled(), true)
	}
	if m.HTTPPutResponseHopLimit != nil {
		v.intRange(path.Child("httpPutResponseHopLimit"), *m.HTTPPutResponseHopLimit, MinHopLimit, MaxHopLimit)
	}
	if m.HTTPTokens != nil {
		v.oneOf(path.Child("httpTokens"), *m.HTTPTokens, httpTokensValues(), true)
	}
}

func validateBlockDeviceMappings(v *validator, path *field.Path, bdms []*BlockDeviceMapping) {
	v.maxItems(path, len(bdms), MaxBlockDeviceMappings)
	roots := 0
	for i, m := range bdms {
		p := path.Index(i)
		if m == nil {
			v.add(p, "must not be null")
			continue
		}
		if m.RootVolume {
			roots++
			if roots == 2 {
				v.add(p.Child("rootVolume"), "only one block device mapping may be the root volume")
			}
		}
		if m.EBS != nil {
			validateEBS(v, p.Child("ebs"), m.EBS)
		}
	}
}

func validateEBS(v *validator, path *field.Path, b *BlockDevice) {
	if b.SnapshotID == nil && b.VolumeSize == nil {
		v.required(path.Child("volumeSize"), "or snapshotID")
	}
	if b.VolumeType != nil {
		v.oneOf(path.Child("volumeType"), *b.VolumeType, volumeTypes(), true)
	}
	if b.VolumeSize != nil {
		validateVolumeSize(v, path.Child("volumeSize"), *b.VolumeSize)
	}
	if r := b.VolumeInitializationRate; r != nil {
		v.intRange(path.Child("volumeInitializationRate"), int64(*r), 100, 300)
		if b.SnapshotID == nil || *b.SnapshotID == "" {
			v.required(path.Child("snapshotID"), "volumeInitializationRate needs a snapshot")
		}
	}
}

// Volume sizes Karpenter's CRD accepts: whole Gi (1..59000) or G (1..64000),
// or the same in Ti and T.
const (
	gib           = int64(1) << 30
	gb            = int64(1_000_000_000)
	maxVolumeGi   = 59000 * gib
	maxVolumeG    = 64000 * gb
	volumeSizeMsg = "must be whole Gi, G, Ti or T, from 1Gi to 59000Gi (or 1G to 64000G), like 100Gi"
)

func validateVolumeSize(v *validator, path *field.Path, q resource.Quantity) {
	bytes, ok := q.AsInt64()
	if !ok {
		v.add(path, "%q %s", q.String(), volumeSizeMsg)
		return
	}
	unit, limit := gb, maxVolumeG
	if q.Format == resource.BinarySI {
		unit, limit = gib, maxVolumeGi
	}
	if bytes < unit || bytes > limit || bytes%unit != 0 {
		v.add(path, "%q %s", q.String(), volumeSizeMsg)
	}
}

func validateKubelet(v *validator, path *field.Path, k *KubeletConfiguration) {
	validateReserved(v, path.Child("systemReserved"), k.SystemReserved)
	validateReserved(v, path.Child("kubeReserved"), k.KubeReserved)
	validateEviction(v, path.Child("evictionHard"), k.EvictionHard)
	validateEviction(v, path.Child("evictionSoft"), k.EvictionSoft)
	grace := path.Child("evictionSoftGracePeriod")
	for _, sig := range slices.Sorted(maps.Keys(k.EvictionSoftGracePeriod)) {
		if v.oneOf(grace.Key(sig), sig, evictionSignals(), true) {
			if d := k.EvictionSoftGracePeriod[sig].Duration; d < 0 {
				v.add(grace.Key(sig), "%q must not be negative", d.String())
			}
		}
		if _, ok := k.EvictionSoft[sig]; !ok {
			v.add(grace.Key(sig), "has no matching evictionSoft threshold")
		}
	}
	for _, sig := range slices.Sorted(maps.Keys(k.EvictionSoft)) {
		if _, ok := k.EvictionSoftGracePeriod[sig]; !ok {
			v.add(path.Child("evictionSoft").Key(sig), "has no matching evictionSoftGracePeriod")
		}
	}
	validateImageGC(v, path, k)
	if k.MaxPods != nil {
		v.nonNegative(path.Child("maxPods"), int64(*k.MaxPods))
	}
	if k.PodsPerCore != nil {
		v.nonNegative(path.Child("podsPerCore"), int64(*k.PodsPerCore))
	}
	for i, ip := range k.ClusterDNS {
		if net.ParseIP(ip) == nil {
			v.add(path.Child("clusterDNS").Index(i), "%q is not an IP address", ip)
		}
	}
}

func validateImageGC(v *validator, path *field.Path, k *KubeletConfiguration) {
	hi, lo := k.ImageGCHighThresholdPercent, k.ImageGCLowThresholdPercent
	if hi != nil {
		v.intRange(path.Child("imageGCHighThresholdPercent"), int64(*hi), 0, 100)
	}
	if lo != nil {
		v.intRange(path.Child("imageGCLowThresholdPercent"), int64(*lo), 0, 100)
	}
	if hi != nil && lo != nil && *hi <= *lo {
		v.add(path.Child("imageGCHighThresholdPercent"), "%d must be greater than imageGCLowThresholdPercent (%d)", *hi, *lo)
	}
}

func validateReserved(v *validator, path *field.Path, m map[string]string) {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		p := path.Key(k)
		if !v.oneOf(p, k, reservedKeys(), true) {
			continue
		}
		q, err := parseQuantity(m[k])
		switch {
		case err != nil:
			v.add(p, "%q is not a valid quantity", m[k])
		case q.Sign() < 0:
			v.add(p, "%q must not be negative", m[k])
		default:
			v.inRange(p, k, m[k], q)
		}
	}
}

func validateEviction(v *validator, path *field.Path, m map[string]string) {
	for _, k := range slices.Sorted(maps.Keys(m)) {
		p := path.Key(k)
		if !v.oneOf(p, k, evictionSignals(), true) {
			continue
		}
		val := m[k]
		if pct, ok := strings.CutSuffix(val, "%"); ok {
			f, err := strconv.ParseFloat(pct, 64)
			if err != nil || f < 0 || f > 100 {
				v.add(p, "%q must be a percentage from 0%% to 100%%", val)
			}
			continue
		}
		q, err := parseQuantity(val)
		switch {
		case err != nil:
			v.add(p, "%q must be a quantity (like 500Mi) or a percentage (like 10%%)", val)
		case q.Sign() < 0:
			v.add(p, "%q must not be negative", val)
		default:
			v.inRange(p, k, val, q)
		}
	}
}
