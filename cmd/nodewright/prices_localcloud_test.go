package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nodewright/nodewright/shared/pricing"
	"github.com/nodewright/nodewright/shared/scheduling"
	"github.com/nodewright/nodewright/test/localcloud"
)

// `nodewright prices` reads eu-west-1's figures from the local cloud's
// Pricing API and EC2 (the AWS front) through the real SDK configuration
// path, and `plan -prices` plans with them: m5.large at eu-west-1's price,
// never in the zone the front does not offer it in.
func TestPricesAndPlanOnTheLocalCloud(t *testing.T) {
	lc := awsOnlyCloud(t, localcloud.Options{Region: "eu-west-1",
		MissingOfferings: []localcloud.Offering{{InstanceType: "m5.large", Zone: "eu-west-1b"}}})
	dir := t.TempDir()

	file := filepath.Join(dir, "eu-west-1.json")
	code, _, stderr := runCLI(t, nil, "", "prices", "-region", "eu-west-1", "-endpoint-url", lc.AWS.URL(), "-o", file)
	if code != 0 {
		t.Fatalf("prices: exit %d: %s", code, stderr)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	f, err := pricing.DecodeFigures(data)
	if err != nil {
		t.Fatal(err)
	}
	want := 0.096 * localcloud.RegionPriceFactor("eu-west-1")
	if p := f.OnDemand["m5.large"]; p < want-1e-6 || p > want+1e-6 || len(f.OnDemand) < 1000 {
		t.Fatalf("m5.large at %v (want %v), %d prices", p, want, len(f.OnDemand))
	}
	if z := f.Zones["m5.large"]; !slices.Equal(z, []string{"eu-west-1a", "eu-west-1c"}) {
		t.Fatalf("m5.large in %v, want eu-west-1a and eu-west-1c", z)
	}

	pool := filepath.Join(dir, "pool.yaml")
	if err := os.WriteFile(pool, []byte(`apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: node.kubernetes.io/instance-type, operator: In, values: [m5.large]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, nil, pendingPod, "plan", "-region", "eu-west-1", "-prices", file, "-f", "-", "-f", pool)
	if code != 0 {
		t.Fatalf("plan: exit %d: %s", code, stderr)
	}
	var res struct {
		scheduling.Result
		Prices pricing.Choice `json:"prices"`
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.NodeClaims) != 1 || math.Abs(res.NodeClaims[0].PricePerHour-res.NodeClaims[0].NodeCostPerHour-want) > 1e-6 ||
		!slices.Equal(res.NodeClaims[0].Zones, []string{"eu-west-1a", "eu-west-1c"}) || res.Prices.Region != "eu-west-1" {
		t.Fatalf("plan %s", strings.TrimSpace(stdout))
	}
}
