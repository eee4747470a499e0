package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/pricing"
	"github.com/nodewright/nodewright/shared/refdata"
	"github.com/nodewright/nodewright/shared/scheduling"
)

// euFigures are eu-west-1 figures: m5.large and c5.large priced, c5.large
// missing from eu-west-1c.
func euFigures() *pricing.Figures {
	read := time.Date(2026, 11, 20, 0, 0, 0, 0, time.UTC)
	return &pricing.Figures{Region: "eu-west-1",
		OnDemand: map[string]float64{"m5.large": 0.107, "c5.large": 0.096}, PricesRead: read,
		Zones: map[string][]string{"m5.large": {"eu-west-1a", "eu-west-1b", "eu-west-1c"}, "c5.large": {"eu-west-1a", "eu-west-1b"}}, ZonesRead: read,
	}
}

func writeFigures(t *testing.T, f *pricing.Figures) string {
	t.Helper()
	data, err := f.Encode()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), f.Region+".json")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// runWith runs the command line on c.
func runWith(c cli, stdin string, args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	code = c.run(args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

const euNode = `apiVersion: v1
kind: Node
metadata: {name: ip-10-0-1-5, labels: {topology.kubernetes.io/region: eu-west-1, topology.kubernetes.io/zone: eu-west-1a}}
status: {allocatable: {cpu: "2", memory: 8Gi, pods: "29"}}
`

func TestPlanRegionFigures(t *testing.T) {
	eu := writeFigures(t, euFigures())
	fetched := func(_ context.Context, _ awsFlags, region string) (*pricing.Figures, error) {
		f := euFigures()
		f.Region = region
		return f, nil
	}
	denied := func(context.Context, awsFlags, string) (*pricing.Figures, error) {
		return nil, errors.New("no AWS credentials")
	}
	for _, tc := range []struct {
		name   string
		read   func(context.Context, awsFlags, string) (*pricing.Figures, error)
		config string // the AWS configuration's region
		stdin  string
		args   []string
		code   int
		stderr string
		zones  []string
		source pricing.Source
		region string
	}{
		{name: "the shipped region", args: []string{"plan"}, zones: []string{"us-east-1a", "us-east-1b", "us-east-1c"}, source: pricing.SourceShipped, region: "us-east-1"},
		{name: "no figures for the region", args: []string{"plan", "--region", "eu-west-1"}, code: 1,
			stderr: "region eu-west-1 has no figures here: the built-in prices are us-east-1's only. Pass -prices FILE, written where AWS credentials allow with 'nodewright prices -region eu-west-1 -o FILE'"},
		{name: "the Pricing API cannot be read", read: denied, args: []string{"plan", "--region", "eu-west-1"}, code: 1, stderr: "could not be read: no AWS credentials"},
		{name: "the region's file", args: []string{"plan", "--region", "eu-west-1", "--prices", eu},
			zones: []string{"eu-west-1a", "eu-west-1b", "eu-west-1c"}, source: pricing.SourcePricingAPI, region: "eu-west-1"},
		{name: "another region's file", args: []string{"plan", "--region", "us-west-2", "--prices", eu}, code: 1, stderr: "holds the figures of eu-west-1, not of us-west-2"},
		{name: "another region's file for the default region", args: []string{"plan", "--prices", eu}, code: 1, stderr: "not of us-east-1"},
		{name: "the region from the snapshot", stdin: pendingPod + "---\n" + euNode, args: []string{"plan", "--prices", eu},
			zones: []string{"eu-west-1a", "eu-west-1b", "eu-west-1c"}, source: pricing.SourcePricingAPI, region: "eu-west-1"},
		{name: "the region from the AWS configuration, read from the Pricing API", read: fetched, config: "ap-southeast-2", args: []string{"plan"},
			zones: []string{"ap-southeast-2a", "ap-southeast-2b", "ap-southeast-2c"}, source: pricing.SourcePricingAPI, region: "ap-southeast-2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := &recorder{}
			c := cli{solve: rec.solve, pricesDeps: pricesDeps{read: tc.read, region: func(context.Context, awsFlags) string { return tc.config }}}
			stdin := tc.stdin
			if stdin == "" {
				stdin = pendingPod
			}
			code, stdout, stderr := runWith(c, stdin, tc.args...)
			if code != tc.code || !strings.Contains(stderr, tc.stderr) {
				t.Fatalf("exit %d, stderr %q; want %d and %q", code, stderr, tc.code, tc.stderr)
			}
			if tc.code != 0 {
				return
			}
			if !slices.Equal(rec.in.Zones, tc.zones) {
				t.Errorf("zones %v, want %v", rec.in.Zones, tc.zones)
			}
			var out struct{ Prices pricing.Choice }
			if err := json.Unmarshal([]byte(stdout), &out); err != nil {
				t.Fatal(err)
			}
			if out.Prices.Source != tc.source || out.Prices.Region != tc.region || out.Prices.PricesOf != tc.region || out.Prices.Missing {
				t.Errorf("prices %+v, want %s's from %s", out.Prices, tc.region, tc.source)
			}
			prices := map[string]float64{}
			for _, it := range rec.in.InstanceTypes {
				prices[it.Name] = it.OnDemandPrice
			}
			if tc.region == "us-east-1" {
				if prices["m5.large"] != 0.096 || !out.Prices.AsOf.Equal(catalog.ShippedPricesDate) {
					t.Errorf("shipped: m5.large at %v as of %s", prices["m5.large"], out.Prices.AsOf)
				}
				return
			}
			if prices["m5.large"] != 0.107 || prices["m5.xlarge"] != 0 {
				t.Errorf("m5.large at %v, m5.xlarge at %v: want the region's 0.107 and none (no us-east-1 price)", prices["m5.large"], prices["m5.xlarge"])
			}
		})
	}
}

// With the real solver: a type the region lacks in a zone is not planned
// there.
func TestPlanLeavesOutZonesThatLackTheType(t *testing.T) {
	eu := writeFigures(t, euFigures())
	dir := t.TempDir()
	pool := filepath.Join(dir, "pool.yaml")
	if err := os.WriteFile(pool, []byte(`apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements:
      - {key: node.kubernetes.io/instance-type, operator: In, values: [c5.large]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	nc, err := refdata.Example("ec2nodeclass-default.yaml")
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runWith(cli{solve: scheduling.Solve}, pendingPod, "plan", "--region", "eu-west-1", "--prices", eu, "-f", "-", "-f", pool, "-f", nc)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var res scheduling.Result
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		t.Fatal(err)
	}
	if len(res.NodeClaims) != 1 {
		t.Fatalf("%d NodeClaims, want 1: %s", len(res.NodeClaims), stdout)
	}
	if z := res.NodeClaims[0].Zones; !slices.Equal(z, []string{"eu-west-1a", "eu-west-1b"}) {
		t.Errorf("c5.large planned in zones %v: want eu-west-1a and eu-west-1b only (it lacks eu-west-1c)", z)
	}
	if p := res.NodeClaims[0].PricePerHour - res.NodeClaims[0].NodeCostPerHour; math.Abs(p-0.096) > 1e-9 {
		t.Errorf("instance priced %v, want eu-west-1's 0.096", p)
	}
}

func TestPricesCommandWritesWhatPlanReads(t *testing.T) {
	var asked string
	c := cli{solve: (&recorder{}).solve, pricesDeps: pricesDeps{
		read: func(_ context.Context, _ awsFlags, region string) (*pricing.Figures, error) {
			asked = region
			return euFigures(), nil
		},
		region: func(context.Context, awsFlags) string { return "eu-west-1" },
	}}
	file := filepath.Join(t.TempDir(), "eu.json")
	if code, _, stderr := runWith(c, "", "prices", "-o", file); code != 0 || asked != "eu-west-1" || !strings.Contains(stderr, "2 on-demand prices") {
		t.Fatalf("prices: exit %d, asked %q, stderr %q", code, asked, stderr)
	}
	if code, _, stderr := runWith(cli{solve: (&recorder{}).solve}, pendingPod, "plan", "--region", "eu-west-1", "--prices", file); code != 0 {
		t.Fatalf("plan on the written file: exit %d: %s", code, stderr)
	}
	for _, tc := range []struct {
		c      cli
		args   []string
		code   int
		stderr string
	}{
		{cli{}, []string{"prices", "-region", "eu-west-1"}, 1, "AWS cannot be reached"},
		{cli{pricesDeps: pricesDeps{read: c.pricesDeps.read, region: func(context.Context, awsFlags) string { return "" }}}, []string{"prices"}, 2, "no region: pass -region"},
		{cli{pricesDeps: pricesDeps{read: func(context.Context, awsFlags, string) (*pricing.Figures, error) {
			return nil, errors.New("AccessDenied")
		}}}, []string{"prices", "-region", "eu-west-1"}, 1, "eu-west-1: AccessDenied"},
	} {
		if code, _, stderr := runWith(tc.c, "", tc.args...); code != tc.code || !strings.Contains(stderr, tc.stderr) {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, stderr, tc.code, tc.stderr)
		}
	}
}
