package disruption

import (
	"fmt"
	"math/rand"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/pricing"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
	"github.com/nodewright/nodewright/shared/state"
)

// benchCluster is a 500-node, 5,000-pod cluster on the real catalog with
// the users' production NodePool (c/m/r, medium..8xlarge, spot and
// on-demand, three zones; its limits lifted) and the deterministic spot
// price model: ten pods a node, from 100m/128Mi to 1/2Gi, a third of the
// nodes nearly idle. With packed, every node is an m5.2xlarge spot node
// 95% full in a spot-only pool of three families: nothing fits elsewhere
// and fewer than 15 spot types are ever cheaper, so every method runs to
// its end and finds nothing (the worst case: single-node simulates every
// candidate).
func benchCluster(tb testing.TB, packed bool) Inputs {
	tb.Helper()
	pool, class := productionPool(tb)
	types := []string{"m5.2xlarge", "c5.2xlarge", "r5.xlarge", "m6g.2xlarge", "c6g.4xlarge"}
	if packed {
		// Spot only, three families: fewer than 15 spot types are ever
		// cheaper than a node, so every spot-to-spot attempt is refused
		// after its simulation.
		pool.Spec.Template.Spec.Requirements = []apis.NodeSelectorRequirementWithMinValues{
			st.PoolReq(apis.LabelCapacityType, corev1.NodeSelectorOpIn, apis.CapacityTypeSpot),
			st.PoolReq(apis.LabelInstanceFamily, corev1.NodeSelectorOpIn, "m5", "c5", "r5"),
			st.PoolReq(apis.LabelInstanceSize, corev1.NodeSelectorOpIn, "large", "xlarge", "2xlarge", "4xlarge"),
		}
		types = []string{"m5.2xlarge"}
	}
	cat := catalog.Default()
	zones := []string{"us-east-1a", "us-east-1b", "us-east-1c"}
	in := Inputs{
		Now: now, NodePools: []*apis.NodePool{pool}, NodeClasses: []*apis.EC2NodeClass{class}, Catalog: cat, Zones: zones,
		Spot: pricing.Model{Catalog: cat}, SpotToSpot: true,
	}
	cpus := []string{"100m", "250m", "500m", "750m", "1"}
	mems := []string{"128Mi", "256Mi", "512Mi", "1Gi", "2Gi"}
	rng := rand.New(rand.NewSource(42))
	for i := 0; i < 500; i++ {
		it, _ := cat.Get(types[i%len(types)])
		ct := []string{apis.CapacityTypeSpot, apis.CapacityTypeOnDemand}[i%2]
		if packed {
			ct = apis.CapacityTypeSpot
		}
		zone := zones[i%3]
		name := fmt.Sprintf("ip-10-0-%d-%d.ec2.internal", i/250, i%250)
		n := st.Node(st.NodeOptions{Name: name, InstanceType: it, Zone: zone, CapacityType: ct, NodePool: "default"}).Node
		r := &state.NodeClaim{
			Name: fmt.Sprintf("default-%05d", i), NodePool: "default", NodeClass: "default", Phase: state.Initialized,
			InstanceID: fmt.Sprintf("i-%017d", i), InstanceType: it.Name, Zone: zone, CapacityType: ct, ImageID: "ami-1",
			CreatedAt: now.Add(-48 * time.Hour), InitializedAt: now.Add(-47 * time.Hour), PodsChangedAt: now.Add(-time.Hour),
			NodePoolHash: pool.Hash(), NodeClassHash: class.Hash(),
		}
		n.Spec.ProviderID = state.ProviderIDFor(zone, r.InstanceID)
		in.Nodes = append(in.Nodes, n)
		in.Records = append(in.Records, r)
		light := !packed && i%3 == 0
		for j := 0; j < 10; j++ {
			cpu, mem := cpus[rng.Intn(len(cpus))], mems[rng.Intn(len(mems))]
			if light {
				cpu, mem = "100m", "128Mi"
			} else if packed {
				cpu, mem = fmt.Sprintf("%dm", it.VCPU*1000*95/1000), "512Mi"
			}
			p := st.Pod(st.PodOptions{Name: fmt.Sprintf("app-%d-%d", i, j), CPU: cpu, Memory: mem, NodeName: name,
				Owner: fmt.Sprintf("ReplicaSet/app-%d", j), Labels: map[string]string{"app": fmt.Sprintf("app-%d", j)}})
			p.Status.Phase = corev1.PodRunning
			in.Pods = append(in.Pods, p)
		}
	}
	return in
}

// BenchmarkDecide measures one decision on a 500-node, 5,000-pod cluster.
func BenchmarkDecide(b *testing.B) {
	for _, tc := range []struct {
		name   string
		packed bool
	}{{"underutilized", false}, {"packed", true}} {
		b.Run(tc.name, func(b *testing.B) {
			in := benchCluster(b, tc.packed)
			cmds, rep := Decide(in)
			method, nodes := Method("none"), 0
			if len(cmds) > 0 {
				method, nodes = cmds[0].Method, len(cmds[0].Nodes)
			}
			b.Logf("%s: %d candidates, %d commands, first %s of %d nodes", tc.name, rep.Candidates, len(cmds), method, nodes)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				Decide(in)
			}
		})
	}
}

// TestBenchClusterDecides keeps the benchmark's clusters honest: the
// underutilized one consolidates, the packed one cannot (and every
// candidate was tried).
func TestBenchClusterDecides(t *testing.T) {
	cmds, rep := Decide(benchCluster(t, false))
	if len(cmds) == 0 || cmds[0].Method != MethodMultiNode || len(cmds[0].Nodes) < 2 {
		t.Fatalf("underutilized cluster: %q (rejected %d)", summaries(cmds), len(rep.Rejected))
	}
	if rep.Candidates != 500 {
		t.Errorf("candidates %d, want 500", rep.Candidates)
	}
	t.Logf("underutilized: %s", cmds[0].Explanation)
	cmds, rep = Decide(benchCluster(t, true))
	if len(cmds) != 0 || rep.Candidates != 500 || len(rep.Rejected) != 500 {
		t.Fatalf("packed cluster: %q, %d candidates, %d rejected", summaries(cmds), rep.Candidates, len(rep.Rejected))
	}
}
