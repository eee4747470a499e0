package main

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/nodewright/nodewright/shared/nodecost"
	"github.com/nodewright/nodewright/shared/scheduling"
)

// `plan` shows a node's price in parts: the instance, the class's volumes,
// its public IPv4 address and the pool's own per-node cost, and the
// NodeClaim's price is their sum.
func TestPlanShowsTheNodesParts(t *testing.T) {
	pool := m5LargeOnDemandPool
	volumes := `  associatePublicIPAddress: true
  blockDeviceMappings:
    - deviceName: /dev/xvda
      ebs: {volumeSize: 100Gi, volumeType: gp3, iops: 4000, throughput: 125}
`
	const instance = 0.096 // m5.large on demand, us-east-1
	licensed := strings.Replace(pool, "metadata: {name: default}",
		"metadata: {name: default, annotations: {nodewright.io/node-cost-per-hour: \"0.03\"}}", 1)
	for _, tc := range []struct {
		name                 string
		class, pool          string
		volumes, ipv4, fixed float64
	}{
		{"the default root volume, no address", validClass, pool, 20 * 0.08 / nodecost.HoursPerMonth, 0, 0},
		{"the class's volume and address", validClass + volumes, pool, (100*0.08 + 1000*0.005) / nodecost.HoursPerMonth, 0.005, 0},
		{"the pool's own per-node cost", validClass, licensed, 20 * 0.08 / nodecost.HoursPerMonth, 0, 0.03},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, nil, tc.class+"---\n"+tc.pool+"---\n"+pendingPod, "plan", "--spot-model", "off")
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
			if math.Abs(parts.VolumesPerHour-tc.volumes) > 1e-12 || parts.PublicIPv4PerHour != tc.ipv4 || parts.FixedPerHour != tc.fixed ||
				out.NodeCosts.Region != "us-east-1" || out.NodeCosts.AsOf == "" {
				t.Fatalf("nodeCosts %+v, want volumes %v, public IPv4 %v and fixed %v at dated us-east-1 rates", out.NodeCosts, tc.volumes, tc.ipv4, tc.fixed)
			}
			if len(out.NodeClaims) != 1 {
				t.Fatalf("plan %s, want one NodeClaim", stdout)
			}
			nc := out.NodeClaims[0]
			extras := tc.volumes + tc.ipv4 + tc.fixed
			if math.Abs(nc.NodeCostPerHour-extras) > 1e-12 || math.Abs(nc.PricePerHour-(instance+extras)) > 1e-9 {
				t.Errorf("nodeClaim price %v (extras %v), want the instance's %v, the volumes' %v, the address's %v and the pool's %v",
					nc.PricePerHour, nc.NodeCostPerHour, instance, tc.volumes, tc.ipv4, tc.fixed)
			}
			if !strings.Contains(stdout, `"nodeCostPerHour"`) {
				t.Errorf("the plan's JSON names no nodeCostPerHour: %s", stdout)
			}
		})
	}
}

// `plan` shows what a burstable node bills above its instance in unlimited
// mode: a t3a.medium ($0.0376) for a 900m pod bills 0.5 vCPU above its
// 400m baseline at $0.05 per vCPU-hour.
func TestPlanShowsBurstableSurplus(t *testing.T) {
	pool := strings.Replace(m5LargeOnDemandPool, "values: [m5.large]", "values: [t3a.medium]", 1)
	pod := strings.Replace(pendingPod, "cpu: 500m", "cpu: 900m", 1)
	code, stdout, stderr := runCLI(t, nil, validClass+"---\n"+pool+"---\n"+pod, "plan", "--spot-model", "off")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var out scheduling.Result
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatal(err)
	}
	if len(out.NodeClaims) != 1 {
		t.Fatalf("plan %s, want one NodeClaim", stdout)
	}
	nc := out.NodeClaims[0]
	const instance, surplus = 0.0376, 0.5 * 0.05
	if math.Abs(nc.CPUSurplusPerHour-surplus) > 1e-9 || math.Abs(nc.PricePerHour-(instance+surplus+nc.NodeCostPerHour)) > 1e-9 {
		t.Errorf("nodeClaim price %v (surplus %v, extras %v), want the instance's %v and a surplus of %v", nc.PricePerHour,
			nc.CPUSurplusPerHour, nc.NodeCostPerHour, instance, surplus)
	}
	if !strings.Contains(stdout, `"cpuSurplusPerHour"`) {
		t.Errorf("the plan's JSON names no cpuSurplusPerHour: %s", stdout)
	}
}
