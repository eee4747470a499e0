package main

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/nodewright/nodewright/shared/nodecost"
	"github.com/nodewright/nodewright/shared/scheduling"
)

// `plan` shows a node's price in parts: the instance, the class's volumes
// and its public IPv4 address, and the NodeClaim's price is their sum.
func TestPlanShowsTheNodesParts(t *testing.T) {
	pool := m5LargeOnDemandPool
	volumes := `  associatePublicIPAddress: true
  blockDeviceMappings:
    - deviceName: /dev/xvda
      ebs: {volumeSize: 100Gi, volumeType: gp3, iops: 4000, throughput: 125}
`
	const instance = 0.096 // m5.large on demand, us-east-1
	for _, tc := range []struct {
		name          string
		class         string
		volumes, ipv4 float64
	}{
		{"the default root volume, no address", validClass, 20 * 0.08 / nodecost.HoursPerMonth, 0},
		{"the class's volume and address", validClass + volumes, (100*0.08 + 1000*0.005) / nodecost.HoursPerMonth, 0.005},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, nil, tc.class+"---\n"+pool+"---\n"+pendingPod, "plan", "--spot-model", "off")
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			var out struct {
				scheduling.Result
				NodeCosts struct {
					Region, AsOf string
					Pools        map[string]nodecost.Parts
				} `json:"nodeCosts"`
			}
			if err := json.Unmarshal([]byte(stdout), &out); err != nil {
				t.Fatal(err)
			}
			parts := out.NodeCosts.Pools["default"]
			if math.Abs(parts.VolumesPerHour-tc.volumes) > 1e-12 || parts.PublicIPv4PerHour != tc.ipv4 ||
				out.NodeCosts.Region != "us-east-1" || out.NodeCosts.AsOf == "" {
				t.Fatalf("nodeCosts %+v, want volumes %v and public IPv4 %v at dated us-east-1 rates", out.NodeCosts, tc.volumes, tc.ipv4)
			}
			if len(out.NodeClaims) != 1 {
				t.Fatalf("plan %s, want one NodeClaim", stdout)
			}
			nc := out.NodeClaims[0]
			if math.Abs(nc.NodeCostPerHour-(tc.volumes+tc.ipv4)) > 1e-12 || math.Abs(nc.PricePerHour-(instance+tc.volumes+tc.ipv4)) > 1e-9 {
				t.Errorf("nodeClaim price %v (extras %v), want the instance's %v, the volumes' %v and the address's %v",
					nc.PricePerHour, nc.NodeCostPerHour, instance, tc.volumes, tc.ipv4)
			}
			if !strings.Contains(stdout, `"nodeCostPerHour"`) {
				t.Errorf("the plan's JSON names no nodeCostPerHour: %s", stdout)
			}
		})
	}
}
