package apis

import (
	"strings"
	"testing"
)

// A NodeOverlay loads into Config.NodeOverlays, sorted by name; what
// Karpenter's CRD and runtime validation refuse, and what Nodewright cannot
// honour, is refused with the field's path.
func TestNodeOverlayLoads(t *testing.T) {
	const head = "apiVersion: karpenter.sh/v1alpha1\nkind: NodeOverlay\nmetadata: {name: o}\n"
	cases := []struct {
		name, spec string
		want       string // "" loads
	}{
		{"price", "spec: {price: '0.25', weight: 10}", ""},
		{"percent", "spec: {priceAdjustment: '-10%', requirements: [{key: karpenter.k8s.aws/instance-family, operator: In, values: [m5]}]}", ""},
		{"absolute", "spec: {priceAdjustment: '+0.1', requirements: [{key: karpenter.sh/capacity-type, operator: In, values: [spot]}]}", ""},
		{"no price", "spec: {requirements: [{key: kubernetes.io/arch, operator: Exists}]}", ""},
		{"both prices", "spec: {price: '1', priceAdjustment: '+1'}", "spec: cannot set both price and priceAdjustment"},
		{"bad price", "spec: {price: '-1'}", `spec.price: "-1" must be a non-negative price`},
		{"bad adjustment", "spec: {priceAdjustment: '-150%'}", `spec.priceAdjustment: "-150%" must be a signed amount`},
		{"unsigned adjustment", "spec: {priceAdjustment: '10%'}", `spec.priceAdjustment: "10%" must be a signed amount`},
		{"weight", "spec: {weight: 10001}", "spec.weight: 10001 is out of range 1..10000"},
		{"NotIn without values", "spec: {requirements: [{key: kubernetes.io/arch, operator: NotIn}]}", "spec.requirements[0].values: operator NotIn needs at least one value"},
		{"Gt", "spec: {requirements: [{key: karpenter.k8s.aws/instance-cpu, operator: Gt, values: [a]}]}", "spec.requirements[0].values: operator Gt needs exactly one non-negative integer value"},
		{"nodepool key", "spec: {price: '1', requirements: [{key: karpenter.sh/nodepool, operator: In, values: [a]}]}", `spec.requirements[0].key: "karpenter.sh/nodepool": Nodewright applies a NodeOverlay to instance types by their own labels`},
		{"custom key", "spec: {price: '1', requirements: [{key: team, operator: In, values: [a]}]}", `spec.requirements[0].key: "team": Nodewright applies a NodeOverlay to instance types by their own labels`},
		{"zone with a price", "spec: {price: '1', requirements: [{key: topology.kubernetes.io/zone, operator: In, values: [us-east-1a]}]}", `spec.requirements[0].key: "topology.kubernetes.io/zone": Nodewright prices an instance type alike in every zone`},
		{"capacity", "spec: {capacity: {hugepages-2Mi: 100Mi, example.com/fpga: '1'}}", ""},
		{"capacity of a standard resource", "spec: {capacity: {memory: 1Gi}}", "spec.capacity[memory]: a NodeOverlay adds extended resources only, not memory"},
		{"unknown field", "spec: {prise: '1'}", `spec.prise`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := Parse([]byte(head+tc.spec+"\n"), "o.yaml")
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if len(c.NodeOverlays) != 1 || c.NodeOverlays[0].Name != "o" {
					t.Fatalf("NodeOverlays = %+v", c.NodeOverlays)
				}
				if err := c.Validate(); err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), "o.yaml: document 1 (NodeOverlay o): "+tc.want) {
				t.Fatalf("got %v\nwant a line with %q", err, tc.want)
			}
		})
	}
}

// Config.Validate refuses two NodeOverlays with one name, and sorts by name.
func TestNodeOverlayDuplicates(t *testing.T) {
	doc := func(name string) string {
		return "apiVersion: karpenter.sh/v1alpha1\nkind: NodeOverlay\nmetadata: {name: " + name + "}\nspec: {price: '1'}\n"
	}
	c, err := Parse([]byte(doc("b")+"---\n"+doc("a")+"---\n"+doc("b")), "o.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := c.NodeOverlays[0].Name + c.NodeOverlays[1].Name + c.NodeOverlays[2].Name; got != "abb" {
		t.Errorf("order %s, want abb", got)
	}
	err = c.Validate()
	if err == nil || !strings.Contains(err.Error(), `duplicate NodeOverlay name "b"`) {
		t.Fatalf("got %v", err)
	}
}
