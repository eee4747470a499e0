package apis

import (
	"testing"
	"time"
)

func mustParse(t *testing.T, doc string) *Config {
	t.Helper()
	c, err := Parse([]byte(doc), "test.yaml")
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, doc)
	}
	return c
}

func TestNodePoolDefaults(t *testing.T) {
	cases := []struct {
		name  string
		extra string // YAML under spec, after a minimal template
		check func(t *testing.T, np *NodePool)
	}{
		{"no disruption", "", func(t *testing.T, np *NodePool) {
			d := np.Spec.Disruption
			eq(t, "consolidateAfter", d.ConsolidateAfter.Raw, "0s")
			eq(t, "consolidateAfter duration", *d.ConsolidateAfter.Duration, time.Duration(0))
			eq(t, "policy", d.ConsolidationPolicy, ConsolidationPolicyWhenEmptyOrUnderutilized)
			eq(t, "budgets", d.Budgets, []Budget{{Nodes: "10%"}})
			eq(t, "expireAfter", np.Spec.Template.Spec.ExpireAfter.Raw, "720h0m0s")
			eq(t, "expireAfter duration", *np.Spec.Template.Spec.ExpireAfter.Duration, 720*time.Hour)
			eq(t, "weight", np.Spec.Weight == nil, true)
			eq(t, "type", np.APIVersion+" "+np.Kind, "karpenter.sh/v1 NodePool")
		}},
		{"empty disruption", "disruption: {}\n", func(t *testing.T, np *NodePool) {
			eq(t, "consolidateAfter", *np.Spec.Disruption.ConsolidateAfter.Duration, time.Duration(0))
		}},
		{"policy kept, budgets defaulted", "disruption: {consolidateAfter: 5m, consolidationPolicy: WhenEmpty}\n", func(t *testing.T, np *NodePool) {
			eq(t, "policy", np.Spec.Disruption.ConsolidationPolicy, ConsolidationPolicyWhenEmpty)
			eq(t, "budgets", np.Spec.Disruption.Budgets, []Budget{{Nodes: "10%"}})
		}},
		{"budget without nodes", "disruption: {consolidateAfter: 5m, budgets: [{reasons: [Drifted]}]}\n", func(t *testing.T, np *NodePool) {
			eq(t, "nodes", np.Spec.Disruption.Budgets[0].Nodes, "10%")
			eq(t, "reasons", np.Spec.Disruption.Budgets[0].Reasons, []DisruptionReason{DisruptionReasonDrifted})
		}},
		{"explicit empty budgets stay empty", "disruption: {consolidateAfter: 5m, budgets: []}\n", func(t *testing.T, np *NodePool) {
			eq(t, "budgets", len(np.Spec.Disruption.Budgets), 0)
		}},
		{"Never kept", "disruption: {consolidateAfter: Never}\n", func(t *testing.T, np *NodePool) {
			eq(t, "consolidateAfter never", np.Spec.Disruption.ConsolidateAfter.IsNever(), true)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := mustParse(t, nodePoolDoc(template()+tc.extra))
			tc.check(t, c.NodePools[0])
		})
	}
}

func TestNodePoolDefaultKeepsExplicitValues(t *testing.T) {
	c := mustParse(t, nodePoolDoc(template()+"    expireAfter: Never\n"))
	np := c.NodePools[0]
	eq(t, "expireAfter never", np.Spec.Template.Spec.ExpireAfter.IsNever(), true)
	before := np.Hash()
	np.Default()
	eq(t, "idempotent", np.Hash(), before)
	eq(t, "still never", np.Spec.Template.Spec.ExpireAfter.IsNever(), true)
}

func TestEC2NodeClassDefaults(t *testing.T) {
	cases := []struct {
		name                   string
		extra                  string
		endpoint, ipv6, tokens string
		hopLimit               int64
	}{
		{"absent", "", "enabled", "disabled", "required", 1},
		{"tokens only", "metadataOptions: {httpTokens: optional}\n", "enabled", "disabled", "optional", 1},
		{"hop limit only", "metadataOptions: {httpPutResponseHopLimit: 2}\n", "enabled", "disabled", "required", 2},
		{"endpoint and ipv6", "metadataOptions: {httpEndpoint: disabled, httpProtocolIPv6: enabled}\n", "disabled", "enabled", "required", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			nc := mustParse(t, nodeClassDoc(tc.extra)).NodeClasses[0]
			m := nc.Spec.MetadataOptions
			eq(t, "httpEndpoint", *m.HTTPEndpoint, tc.endpoint)
			eq(t, "httpProtocolIPv6", *m.HTTPProtocolIPv6, tc.ipv6)
			eq(t, "httpTokens", *m.HTTPTokens, tc.tokens)
			eq(t, "hop limit", *m.HTTPPutResponseHopLimit, tc.hopLimit)
		})
	}
}

func TestSetDefaultsOnBuiltConfig(t *testing.T) {
	c := &Config{NodePools: []*NodePool{{}}, NodeClasses: []*EC2NodeClass{{}}}
	SetDefaults(c)
	eq(t, "nodepool type", c.NodePools[0].APIVersion, NodePoolAPIVersion)
	eq(t, "budgets", c.NodePools[0].Spec.Disruption.Budgets, []Budget{{Nodes: DefaultBudgetNodes}})
	eq(t, "nodeclass type", c.NodeClasses[0].Kind, EC2NodeClassKind)
	eq(t, "tokens", *c.NodeClasses[0].Spec.MetadataOptions.HTTPTokens, DefaultHTTPTokens)
}

func TestCapacityReservationStatusDefaults(t *testing.T) {
	doc := nodeClassDoc("") + "status:\n  capacityReservations:\n  - {availabilityZone: us-east-1a, id: cr-1, instanceMatchCriteria: open, instanceType: m5.large, ownerID: '123456789012'}\n"
	cr := mustParse(t, doc).NodeClasses[0].Status.CapacityReservations[0]
	eq(t, "type", cr.ReservationType, CapacityReservationTypeDefault)
	eq(t, "state", cr.State, CapacityReservationStateActive)
}

func TestAMIFamily(t *testing.T) {
	cases := []struct {
		name, spec, want string
	}{
		{"from alias", "", AMIFamilyAL2023},
		{"custom with alias", "amiFamily: Custom\n", AMIFamilyCustom},
		{"explicit without alias", "amiFamily: Custom\namiSelectorTerms: [{tags: {team: a}}]\n", AMIFamilyCustom},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var drop []string
			if tc.name == "explicit without alias" {
				drop = []string{"amiSelectorTerms"}
			}
			nc := mustParse(t, nodeClassDoc(tc.spec, drop...)).NodeClasses[0]
			eq(t, "AMIFamily", nc.AMIFamily(), tc.want)
		})
	}
	eq(t, "no alias, no family", (&EC2NodeClass{}).AMIFamily(), AMIFamilyCustom)
	// Families Nodewright refuses at load still name themselves (a built
	// object is not loaded).
	bottlerocket := &EC2NodeClass{Spec: EC2NodeClassSpec{AMISelectorTerms: []AMISelectorTerm{{Alias: "bottlerocket@v1.20.0"}}}}
	eq(t, "bottlerocket alias", bottlerocket.AMIFamily(), AMIFamilyBottlerocket)
	family, version, ok := mustParse(t, nodeClassDoc("")).NodeClasses[0].Alias()
	eq(t, "alias", []any{family, version, ok}, []any{"al2023", "latest", true})
}
