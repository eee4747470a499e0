package karpenter

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/nodecost"
	"github.com/nodewright/nodewright/shared/pricing"
	"github.com/nodewright/nodewright/shared/scheduling"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"

	corev1 "k8s.io/api/core/v1"
)

var (
	recordPath = flag.String("record", "", "write Karpenter's figures to this JSON file (the product's tests compare against it)")
	diverse    = flag.String("diverse", "1000,10000", "sizes of the diverse benchmark workload to compare (empty: none)")
)

// Record is what the comparison leaves for the product's tests and README:
// Karpenter's plan for every shape of the cost suite and for the diverse
// workload.
type Record struct {
	Karpenter string `json:"karpenter"`
	// Catalog fingerprints the instance types and prices the shapes were
	// solved against (schedtest.Shape.CatalogFingerprint).
	Catalog string                 `json:"catalog"`
	Shapes  map[string]RecordEntry `json:"shapes"`
	Diverse map[string]RecordEntry `json:"diverse"`
}

// RecordEntry is one input's figures: Karpenter's price and NodeClaims, its
// solve time, and Nodewright's price, bound and time on the same machine.
type RecordEntry struct {
	// Fingerprint identifies a shape's input (schedtest.Shape.Fingerprint):
	// the product's tests refuse a record made from other pods or pools.
	Fingerprint         string  `json:"fingerprint,omitempty"`
	KarpenterPrice      float64 `json:"karpenterPrice"`
	KarpenterNodeClaims int     `json:"karpenterNodeClaims"`
	// KarpenterNodesPerPool and NodesPerPool are each plan's NodeClaims
	// per NodePool: what each side pays its pools' node costs on.
	KarpenterNodesPerPool map[string]int `json:"karpenterNodesPerPool,omitempty"`
	KarpenterSeconds      float64        `json:"karpenterSeconds"`
	Price                 float64        `json:"price"`
	LowerBound            float64        `json:"lowerBound"`
	NodeClaims            int            `json:"nodeClaims"`
	NodesPerPool          map[string]int `json:"nodesPerPool,omitempty"`
	Seconds               float64        `json:"seconds"`
}

type compared struct {
	name        string
	in          scheduling.Input
	fingerprint string
}

// TestCompareWithKarpenter solves every shape of the cost suite and the
// diverse benchmark workload with Karpenter's scheduler and with Nodewright's,
// prints both plans' prices and times side by side, and fails if Nodewright's
// plan costs more than Karpenter's on any input, or either leaves a pod
// unplaced.
func TestCompareWithKarpenter(t *testing.T) {
	shapes, err := st.Shapes()
	if err != nil {
		t.Fatal(err)
	}
	var inputs []compared
	for _, s := range shapes {
		inputs = append(inputs, compared{s.Name, s.Input(), s.Fingerprint()})
	}
	var sizes []int
	if *diverse != "" {
		for _, f := range splitComma(*diverse) {
			var n int
			if _, err := fmt.Sscan(f, &n); err != nil || n <= 0 {
				t.Fatalf("-diverse %q: %q is not a size", *diverse, f)
			}
			sizes = append(sizes, n)
		}
	}
	diverseInputs := map[string]bool{}
	for _, n := range sizes {
		for _, w := range diverseWorkloads(t) {
			name := fmt.Sprintf("diverse-%s/pods=%d", w.name, n)
			in := w.in
			in.Pods = st.DiversePods(n, 42)
			in.NodeCosts = nodeCosts(t, in)
			inputs = append(inputs, compared{name: name, in: in})
			diverseInputs[name] = true
		}
	}
	rec := Record{Karpenter: Version, Catalog: shapes[0].CatalogFingerprint(), Shapes: map[string]RecordEntry{}, Diverse: map[string]RecordEntry{}}
	fmt.Printf("\n%-50s %10s %10s %10s %7s %10s %10s %8s\n", "input", "karpenter", "nodewright", "bound", "ratio", "k-seconds", "nw-seconds", "k/nw")
	for _, c := range inputs {
		kp, err := Solve(c.in)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		start := time.Now()
		r, err := scheduling.Solve(c.in)
		elapsed := time.Since(start)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		perPool := map[string]int{}
		for _, nc := range r.NodeClaims {
			perPool[nc.NodePool]++
		}
		e := RecordEntry{Fingerprint: c.fingerprint, KarpenterPrice: kp.Price, KarpenterNodeClaims: kp.NodeClaims, KarpenterNodesPerPool: kp.NodesPerPool,
			KarpenterSeconds: round(kp.Duration.Seconds()), Price: r.PricePerHour, LowerBound: r.LowerBoundPricePerHour, NodeClaims: len(r.NodeClaims),
			NodesPerPool: perPool, Seconds: round(elapsed.Seconds())}
		fmt.Printf("%-50s %10.4f %10.4f %10.4f %7.3f %10.3f %10.3f %8.1f\n", c.name, kp.Price, r.PricePerHour, r.LowerBoundPricePerHour,
			r.PricePerHour/max(r.LowerBoundPricePerHour, 1e-9), kp.Duration.Seconds(), elapsed.Seconds(), kp.Duration.Seconds()/max(elapsed.Seconds(), 1e-9))
		if kp.Unschedulable > 0 || len(r.Unschedulable) > 0 {
			t.Errorf("%s: unschedulable pods: karpenter %d, nodewright %d", c.name, kp.Unschedulable, len(r.Unschedulable))
		}
		if r.PricePerHour > kp.Price+1e-6 {
			t.Errorf("%s: Nodewright's plan costs %.4f/h, Karpenter's %.4f/h", c.name, r.PricePerHour, kp.Price)
		}
		if diverseInputs[c.name] {
			rec.Diverse[c.name] = e
		} else {
			rec.Shapes[c.name] = e
		}
	}
	if *recordPath != "" {
		data, err := json.MarshalIndent(rec, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(*recordPath), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(*recordPath, append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		fmt.Printf("\nrecorded in %s\n", *recordPath)
	}
}

type diverseWorkload struct {
	name string
	in   scheduling.Input
}

// diverseWorkloads are the diverse benchmark's catalogs (test/bench): the 400
// synthetic types with a spot and on-demand pool, and the real catalog with
// the production pool.
func diverseWorkloads(t *testing.T) []diverseWorkload {
	synth := st.SyntheticTypes(400)
	synthPool := st.NodePool(st.NodePoolOptions{Requirements: []apis.NodeSelectorRequirementWithMinValues{
		st.PoolReq(apis.LabelCapacityType, corev1.NodeSelectorOpIn, apis.CapacityTypeSpot, apis.CapacityTypeOnDemand),
		st.PoolReq(apis.LabelZone, corev1.NodeSelectorOpIn, st.Zones()...),
	}})
	pools, classes, err := st.ProductionPool()
	if err != nil {
		t.Fatal(err)
	}
	return []diverseWorkload{
		{"synthetic400", scheduling.Input{InstanceTypes: synth, Spot: st.SyntheticSpot(synth), Zones: st.Zones(),
			NodePools: []*apis.NodePool{synthPool}, NodeClasses: []*apis.EC2NodeClass{st.NodeClass("default")}}},
		{"catalog", scheduling.Input{InstanceTypes: catalog.Default().Types(), Spot: pricing.Model{Catalog: catalog.Default(), Seed: 0},
			Zones: st.Zones(), NodePools: pools, NodeClasses: classes}},
	}
}

// nodeCosts prices what a node of each of the input's NodePools costs
// beyond its instance (shared/nodecost at the shipped rates), so that both
// plans are priced whole.
func nodeCosts(t *testing.T, in scheduling.Input) map[string]float64 {
	rates, _ := nodecost.For(nodecost.ShippedRegion)
	parts, err := nodecost.PerPool(in.NodePools, in.NodeClasses, nil, rates)
	if err != nil {
		t.Fatal(err)
	}
	return nodecost.PerHour(parts)
}

func splitComma(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == ',' {
			if i > start {
				out = append(out, s[start:i])
			}
			start = i + 1
		}
	}
	return out
}

func round(x float64) float64 { return float64(int64(x*1000+0.5)) / 1000 }
