package scheduling

import (
	"sort"
	"testing"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/pricing"
)

func TestDbgReal(t *testing.T) {
	in := Input{Pods: diverse(10000), InstanceTypes: catalog.Default().Types(),
		Zones: []string{"us-east-1a", "us-east-1b", "us-east-1c"}, Spot: pricing.Model{Catalog: catalog.Default()}}
	in.NodePools = []*apis.NodePool{smokePool("default",
		apis.NodeSelectorRequirementWithMinValues{Key: apis.LabelInstanceCategory, Operator: "In", Values: []string{"c", "m", "r"}},
		apis.NodeSelectorRequirementWithMinValues{Key: apis.LabelInstanceSize, Operator: "In", Values: []string{"medium", "large", "xlarge", "2xlarge", "4xlarge", "8xlarge"}})}
	res, _ := Solve(in)
	count := map[string]int{}
	price := map[string]float64{}
	pods := map[string]int{}
	for _, c := range res.NodeClaims {
		k := c.InstanceTypes[0] + "/" + c.CapacityType
		count[k]++
		price[k] += c.PricePerHour
		pods[k] += len(c.Pods)
	}
	type kv struct {
		k    string
		n, p int
		pr   float64
	}
	var kvs []kv
	for k, n := range count {
		kvs = append(kvs, kv{k, n, pods[k], price[k]})
	}
	sort.Slice(kvs, func(i, j int) bool { return kvs[i].pr > kvs[j].pr })
	for _, x := range kvs[:min(25, len(kvs))] {
		t.Logf("%-30s n=%4d pods=%5d price=%.3f", x.k, x.n, x.p, x.pr)
	}
}
