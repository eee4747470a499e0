package main

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/nodewright/nodewright/shared/scheduling"
)

// A NodeOverlay in the snapshot reprices the plan: the node's price, the
// plan's and its lower bound are the overlaid ones, and a conflict between
// overlays is a warning.
func TestPlanUsesNodeOverlayPrices(t *testing.T) {
	pool := m5LargeOnDemandPool
	overlays := `apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: savings-plan}
spec:
  price: "0.05"
  weight: 10
  requirements: [{key: karpenter.k8s.aws/instance-family, operator: In, values: [m5]}]
---
apiVersion: karpenter.sh/v1alpha1
kind: NodeOverlay
metadata: {name: other}
spec: {priceAdjustment: "+1", weight: 10}
`
	for _, tc := range []struct {
		name, snapshot string
		want           float64
		warning        string
	}{
		{"published", validClass + "---\n" + pool + "---\n" + pendingPod, 0.096, ""},
		{"overlaid", validClass + "---\n" + pool + "---\n" + pendingPod + "---\n" + overlays, 0.05,
			"nodewright plan: warning: NodeOverlay other is not applied: it conflicts with NodeOverlay savings-plan (both weight 10) on m5.12xlarge on-demand\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, nil, tc.snapshot, "plan", "--spot-model", "off")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if stderr != tc.warning {
				t.Errorf("stderr %q, want %q", stderr, tc.warning)
			}
			var res scheduling.Result
			if err := json.Unmarshal([]byte(stdout), &res); err != nil {
				t.Fatal(err)
			}
			// The instance's part of the node's price is the overlaid one.
			if len(res.NodeClaims) != 1 || math.Abs(res.NodeClaims[0].PricePerHour-res.NodeClaims[0].NodeCostPerHour-tc.want) > 1e-9 ||
				math.Abs(res.PricePerHour-res.NodeClaims[0].PricePerHour) > 1e-6 {
				t.Fatalf("plan %s, want one m5.large at %v and its node's extras", stdout, tc.want)
			}
			if res.LowerBoundPricePerHour > res.PricePerHour {
				t.Errorf("lower bound %v above the plan's %v", res.LowerBoundPricePerHour, res.PricePerHour)
			}
		})
	}
}

// m5LargeOnDemandPool is a NodePool that launches m5.large on-demand only:
// a plan's one price to check.
const m5LargeOnDemandPool = `apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
        - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
        - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}
`
