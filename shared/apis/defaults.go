package apis

import "time"

// Defaults Karpenter's CRDs apply.
const (
	DefaultExpireAfter             = 720 * time.Hour
	DefaultConsolidateAfter        = 0 * time.Second
	DefaultBudgetNodes             = "10%"
	DefaultHTTPEndpoint            = "enabled"
	DefaultHTTPProtocolIPv6        = "disabled"
	DefaultHTTPPutResponseHopLimit = int64(1)
	DefaultHTTPTokens              = "required"
)

// SetDefaults applies Karpenter's defaults to every object of the config.
func SetDefaults(c *Config) {
	for _, np := range c.NodePools {
		np.Default()
	}
	for _, nc := range c.NodeClasses {
		nc.Default()
	}
}

// Default applies the defaults Karpenter's NodePool CRD declares: an absent
// (empty) disruption block becomes {consolidateAfter: 0s}; consolidationPolicy
// WhenEmptyOrUnderutilized; budgets [{nodes: "10%"}] when not given, and
// nodes "10%" in a budget that omits it; expireAfter 720h. A disruption block
// that has other fields but no consolidateAfter is left for Validate to report,
// as Karpenter's API server would.
func (np *NodePool) Default() {
	if np.APIVersion == "" && np.Kind == "" {
		np.APIVersion, np.Kind = NodePoolAPIVersion, NodePoolKind
	}
	d := &np.Spec.Disruption
	if !d.ConsolidateAfter.IsSet() && d.ConsolidationPolicy == "" && d.Budgets == nil {
		d.ConsolidateAfter = DurationOf(DefaultConsolidateAfter)
	}
	if d.ConsolidationPolicy == "" {
		d.ConsolidationPolicy = ConsolidationPolicyWhenEmptyOrUnderutilized
	}
	if d.Budgets == nil {
		d.Budgets = []Budget{{Nodes: DefaultBudgetNodes}}
	}
	for i := range d.Budgets {
		if d.Budgets[i].Nodes == "" {
			d.Budgets[i].Nodes = DefaultBudgetNodes
		}
	}
	if !np.Spec.Template.Spec.ExpireAfter.IsSet() {
		np.Spec.Template.Spec.ExpireAfter = DurationOf(DefaultExpireAfter)
	}
}

// Default applies the defaults Karpenter's EC2NodeClass CRD declares:
// metadataOptions {httpEndpoint: enabled, httpProtocolIPv6: disabled,
// httpPutResponseHopLimit: 1, httpTokens: required} when absent, and the same
// value for each of its fields left out when it is partly set (IMDSv2 with a
// hop limit of 1 unless the user says otherwise); in status, capacity
// reservations without a type or state are "default" and "active".
func (nc *EC2NodeClass) Default() {
	if nc.APIVersion == "" && nc.Kind == "" {
		nc.APIVersion, nc.Kind = EC2NodeClassAPIVersion, EC2NodeClassKind
	}
	if nc.Spec.MetadataOptions == nil {
		nc.Spec.MetadataOptions = &MetadataOptions{}
	}
	m := nc.Spec.MetadataOptions
	if m.HTTPEndpoint == nil {
		m.HTTPEndpoint = ptrTo(DefaultHTTPEndpoint)
	}
	if m.HTTPProtocolIPv6 == nil {
		m.HTTPProtocolIPv6 = ptrTo(DefaultHTTPProtocolIPv6)
	}
	if m.HTTPPutResponseHopLimit == nil {
		m.HTTPPutResponseHopLimit = ptrTo(DefaultHTTPPutResponseHopLimit)
	}
	if m.HTTPTokens == nil {
		m.HTTPTokens = ptrTo(DefaultHTTPTokens)
	}
	for i := range nc.Status.CapacityReservations {
		cr := &nc.Status.CapacityReservations[i]
		if cr.ReservationType == "" {
			cr.ReservationType = CapacityReservationTypeDefault
		}
		if cr.State == "" {
			cr.State = CapacityReservationStateActive
		}
	}
}

func ptrTo[T any](v T) *T { return &v }
