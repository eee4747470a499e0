package main

import (
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/refdata"
	"github.com/nodewright/nodewright/shared/scheduling"
	"github.com/nodewright/nodewright/shared/snapshot"
)

// exampleArgs is `plan -f FILE -f inflate.yaml`, plus the EC2NodeClass
// example when FILE has NodePools but no EC2NodeClass.
func exampleArgs(t *testing.T, file string) []string {
	t.Helper()
	inflate, err := refdata.Example("inflate.yaml")
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"plan", "-f", file}
	if filepath.Base(file) != "inflate.yaml" {
		args = append(args, "-f", inflate)
	}
	s, err := snapshot.ReadFiles(file)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if len(s.NodePools) > 0 && len(s.NodeClasses) == 0 {
		nc, err := refdata.Example("ec2nodeclass-default.yaml")
		if err != nil {
			t.Fatal(err)
		}
		args = append(args, "-f", nc)
	}
	return args
}

// planExample runs plan on an example and checks the plan is sane.
func planExample(t *testing.T, name string) *scheduling.Result {
	t.Helper()
	file, err := refdata.Example(name)
	if err != nil {
		t.Fatal(err)
	}
	args := exampleArgs(t, file)
	code, stdout, stderr := runCLI(t, nil, "", args...)
	if code != 0 {
		t.Fatalf("%v: exit %d\n%s", args, code, stderr)
	}
	var keys map[string]json.RawMessage
	if err := json.Unmarshal([]byte(stdout), &keys); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, stdout)
	}
	for _, k := range []string{"nodeClaims", "existingNodes", "unschedulable", "pricePerHour", "lowerBoundPricePerHour"} {
		if _, ok := keys[k]; !ok {
			t.Errorf("output lacks %q: %s", k, stdout)
		}
	}
	res := &scheduling.Result{}
	if err := json.Unmarshal([]byte(stdout), res); err != nil {
		t.Fatal(err)
	}
	var files []string
	for i := 1; i < len(args); i += 2 {
		files = append(files, args[i+1])
	}
	s, err := snapshot.ReadFiles(files...)
	if err != nil {
		t.Fatal(err)
	}
	checkSane(t, res, s)
	return res
}

// checkSane checks what every plan must satisfy: each pending pod placed
// exactly once, NodeClaims with real, allowed offerings, prices that add up
// and a lower bound below the price.
func checkSane(t *testing.T, res *scheduling.Result, s *snapshot.Snapshot) {
	t.Helper()
	seen := map[string]int{}
	for _, p := range s.Pending {
		seen[p.Namespace+"/"+p.Name] = 0
	}
	place := func(pod string) {
		if _, ok := seen[pod]; !ok {
			t.Errorf("plan places %s, which is not a pending pod", pod)
		}
		seen[pod]++
	}
	total := 0.0
	zones := map[string]bool{"us-east-1a": true, "us-east-1b": true, "us-east-1c": true}
	for i, nc := range res.NodeClaims {
		if len(nc.InstanceTypes) == 0 || len(nc.InstanceTypes) > scheduling.DefaultMaxInstanceTypes || len(nc.Pods) == 0 || len(nc.Zones) == 0 {
			t.Errorf("nodeClaim %d: %d types, %d pods, zones %v", i, len(nc.InstanceTypes), len(nc.Pods), nc.Zones)
		}
		for _, name := range nc.InstanceTypes {
			if _, ok := catalog.Default().Get(name); !ok {
				t.Errorf("nodeClaim %d: unknown instance type %s", i, name)
			}
		}
		for _, z := range nc.Zones {
			if !zones[z] {
				t.Errorf("nodeClaim %d: zone %s", i, z)
			}
		}
		if nc.CapacityType != "spot" && nc.CapacityType != "on-demand" || nc.PricePerHour <= 0 {
			t.Errorf("nodeClaim %d: capacity type %q price %v", i, nc.CapacityType, nc.PricePerHour)
		}
		total += nc.PricePerHour
		for _, p := range nc.Pods {
			place(p)
		}
	}
	for _, n := range res.ExistingNodes {
		for _, p := range n.Pods {
			place(p)
		}
	}
	for _, u := range res.Unschedulable {
		if u.Reason == "" {
			t.Errorf("%s unschedulable without a reason", u.Pod)
		}
		place(u.Pod)
	}
	for pod, n := range seen {
		if n != 1 {
			t.Errorf("pod %s placed %d times", pod, n)
		}
	}
	if math.Abs(total-res.PricePerHour) > 1e-6 {
		t.Errorf("pricePerHour %v, NodeClaims add up to %v", res.PricePerHour, total)
	}
	if res.LowerBoundPricePerHour < 0 || res.LowerBoundPricePerHour > res.PricePerHour+1e-9 {
		t.Errorf("lower bound %v, price %v", res.LowerBoundPricePerHour, res.PricePerHour)
	}
}

func TestPlanEveryExample(t *testing.T) {
	dir, err := refdata.Examples()
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) < 7 {
		t.Fatalf("examples in %s: %v %v", dir, files, err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) { planExample(t, filepath.Base(f)) })
	}
}

// claimOf returns the NodeClaim that holds pod.
func claimOf(t *testing.T, res *scheduling.Result, pod string) scheduling.NodeClaim {
	t.Helper()
	for _, nc := range res.NodeClaims {
		for _, p := range nc.Pods {
			if p == pod {
				return nc
			}
		}
	}
	t.Fatalf("no NodeClaim for %s in %+v", pod, res)
	return scheduling.NodeClaim{}
}

func TestPlanGettingStarted(t *testing.T) {
	res := planExample(t, "getting-started.yaml")
	nc := claimOf(t, res, "default/inflate-0")
	if nc.NodePool != "default" || nc.CapacityType != "on-demand" {
		t.Errorf("pool %s capacity type %s", nc.NodePool, nc.CapacityType)
	}
	for _, name := range nc.InstanceTypes {
		it, _ := catalog.Default().Get(name)
		if !strings.Contains("cmt", it.Category) || (it.VCPU != 2 && it.VCPU != 4) || it.Arch != "amd64" || it.Generation <= 2 {
			t.Errorf("%s (category %s, %d vCPU, %s, gen %d) is outside the getting-started pool", name, it.Category, it.VCPU, it.Arch, it.Generation)
		}
	}
}

func TestPlanGPUTraining(t *testing.T) {
	res := planExample(t, "nodepool-gpu-training.yaml")
	nc := claimOf(t, res, "default/ml-training-job")
	it, _ := catalog.Default().Get(nc.InstanceTypes[0])
	if nc.NodePool != "gpu-training" || !strings.HasPrefix(it.Family, "g") || it.GPU.Count != 1 {
		t.Errorf("ml-training-job on %s (family %s, %d GPUs) from pool %s; want a 1-GPU g-family type", it.Name, it.Family, it.GPU.Count, nc.NodePool)
	}
	for _, u := range res.Unschedulable {
		if u.Pod == "default/inflate-0" && !strings.Contains(strings.ToLower(u.Reason), "taint") {
			t.Errorf("inflate-0 unschedulable for %q; the reason should name the pool's taint", u.Reason)
		}
	}
}

func TestPlanSpotAndFallback(t *testing.T) {
	res := planExample(t, "nodepool-spot-and-fallback.yaml")
	nc := claimOf(t, res, "default/inflate-0")
	it, _ := catalog.Default().Get(nc.InstanceTypes[0])
	if nc.NodePool != "spot-compute" || nc.CapacityType != "spot" || it.Arch != "arm64" {
		t.Errorf("inflate-0 on %s %s (%s) from %s; want the weight-10 arm64 spot pool", it.Name, nc.CapacityType, it.Arch, nc.NodePool)
	}
}

func TestPlanIsDeterministic(t *testing.T) {
	file, _ := refdata.Example("nodepool-default.yaml")
	args := exampleArgs(t, file)
	_, first, _ := runCLI(t, nil, "", args...)
	_, second, _ := runCLI(t, nil, "", args...)
	if first == "" || first != second {
		t.Errorf("two runs differ:\n%s\n%s", first, second)
	}
}
