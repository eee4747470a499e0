package schedtest

import (
	"math"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
)

// handShape is a shape small enough to check by hand: two on-demand types,
// "small" (2 vCPU: 1930m allocatable, $1/h) and "big" (8 vCPU: 7910m,
// $3.50/h), in three zones, and Deployments of pods that ask for cpu only
// (and 100Mi, which never binds).
func handShape(t *testing.T, deployments []Deployment, daemonSets ...DaemonSetOptions) Shape {
	t.Helper()
	s := Shape{Name: "hand", Pool: "unrestricted", Zones: Zones(),
		Types: []*catalog.InstanceType{
			Type(TypeOptions{Name: "small", VCPU: 2, Price: 1}),
			Type(TypeOptions{Name: "big", VCPU: 8, Price: 3.5}),
		},
		NodePools: []*apis.NodePool{NodePool(NodePoolOptions{Name: "default", Requirements: []apis.NodeSelectorRequirementWithMinValues{
			PoolReq(apis.LabelCapacityType, corev1.NodeSelectorOpIn, apis.CapacityTypeOnDemand),
		}})},
		NodeClasses: []*apis.EC2NodeClass{NodeClass("default")},
	}
	for _, d := range deployments {
		s.Pods = append(s.Pods, d.Pods()...)
	}
	for _, ds := range daemonSets {
		s.DaemonSets = append(s.DaemonSets, DaemonSet(ds))
	}
	types, err := ShapeTypes(s)
	if err != nil {
		t.Fatal(err)
	}
	// The allocatable the cases below are worked out with (less the
	// DaemonSets').
	for _, st := range types {
		want := map[string]int64{"small": 1930, "big": 7910}[st.Name]
		for _, ds := range daemonSets {
			want -= int64(resourceMilli(ds.CPU))
		}
		if st.Alloc[0] != want {
			t.Fatalf("%s: %dm allocatable, want %dm", st.Name, st.Alloc[0], want)
		}
	}
	return s
}

func resourceMilli(q string) float64 {
	l := Resources{"cpu": q}.List()
	return float64(l.Cpu().MilliValue())
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// rootVolume is what a node of the hand shapes costs beyond its instance:
// the default 20 GiB gp3 root volume (Shape.NodeCosts).
const rootVolume = 20 * 0.08 / 730

// TestOptimum: the exhaustive search's answers on shapes worked out by hand.
func TestOptimum(t *testing.T) {
	for _, tc := range []struct {
		name        string
		deployments []Deployment
		daemonSets  []DaemonSetOptions
		want        float64 // the instances'
		ok          bool
		nodes       int // each also carries its default root volume
	}{
		// 2 pods of 900m share a small node (1800m of 1930m).
		{"two pods share a small node", []Deployment{{Name: "a", Replicas: 2, CPU: "900m", Memory: "100Mi"}}, nil, 1, true, 1},
		// 3 pods: two small nodes ($2) beat one big ($3.50).
		{"three pods on two small nodes", []Deployment{{Name: "a", Replicas: 3, CPU: "900m", Memory: "100Mi"}}, nil, 2, true, 2},
		// 8 pods: one big node holds 8 (7200m of 7910m) for $3.50; four
		// small ones cost $4.
		{"eight pods on one big node", []Deployment{{Name: "a", Replicas: 8, CPU: "900m", Memory: "100Mi"}}, nil, 3.5, true, 1},
		// 9 pods: a big node and a small one ($4.50), cheaper than five
		// small ($5) or two big ($7).
		{"nine pods on a big and a small node", []Deployment{{Name: "a", Replicas: 9, CPU: "900m", Memory: "100Mi"}}, nil, 4.5, true, 2},
		// Mixed: 1500m and 400m fit one small node together (1900m).
		{"two Deployments share a small node", []Deployment{
			{Name: "a", Replicas: 1, CPU: "1500m", Memory: "100Mi"}, {Name: "b", Replicas: 1, CPU: "400m", Memory: "100Mi"}}, nil, 1, true, 1},
		// A 200m DaemonSet leaves a small node 1730m: one 900m pod each,
		// so 3 pods cost $3 on small nodes, $3.50 on one big.
		{"a DaemonSet leaves room for one pod per small node", []Deployment{{Name: "a", Replicas: 3, CPU: "900m", Memory: "100Mi"}},
			[]DaemonSetOptions{{Name: "agent", CPU: "200m", Memory: "10Mi"}}, 3, true, 3},
		// A zonal spread is a constraint the search does not model.
		{"a zonal spread is not searched", []Deployment{{Name: "a", Replicas: 3, CPU: "900m", Memory: "100Mi", ZoneSpread: true}}, nil, 0, false, 0},
		// (100+1)·(60+1) states exceed MaxOptimumStates.
		{"too many states", []Deployment{{Name: "a", Replicas: 100, CPU: "10m", Memory: "1Mi"}, {Name: "b", Replicas: 60, CPU: "10m", Memory: "1Mi"}}, nil, 0, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok, err := Optimum(handShape(t, tc.deployments, tc.daemonSets...))
			if err != nil {
				t.Fatal(err)
			}
			if want := tc.want + float64(tc.nodes)*rootVolume; ok != tc.ok || !near(got, want) {
				t.Errorf("Optimum %v (ok %v), want %v and %d root volumes (ok %v)", got, ok, tc.want, tc.nodes, tc.ok)
			}
		})
	}
	// A pod no type holds is an error, not an optimum.
	if _, _, err := Optimum(handShape(t, []Deployment{{Name: "a", Replicas: 1, CPU: "9", Memory: "100Mi"}})); err == nil {
		t.Error("Optimum of a pod no type holds: no error")
	}
}

// TestNodeGroupBaseline: the best one-type node group on shapes worked out
// by hand.
func TestNodeGroupBaseline(t *testing.T) {
	for _, tc := range []struct {
		name        string
		deployments []Deployment
		daemonSets  []DaemonSetOptions
		want        float64 // the instances'
		wantType    string
		nodes       int // each also carries its default root volume
	}{
		// 3 pods: small nodes take 2 each (2 nodes, $2), a big one all ($3.50).
		{"three pods: small nodes", []Deployment{{Name: "a", Replicas: 3, CPU: "900m", Memory: "100Mi"}}, nil, 2, "small", 2},
		// 8 pods: 4 small ($4) or 1 big ($3.50).
		{"eight pods: one big node", []Deployment{{Name: "a", Replicas: 8, CPU: "900m", Memory: "100Mi"}}, nil, 3.5, "big", 1},
		// 9 pods: 5 small ($5) or 2 big ($7); one type only, so not the
		// optimum's big and small ($4.50).
		{"nine pods: one type only", []Deployment{{Name: "a", Replicas: 9, CPU: "900m", Memory: "100Mi"}}, nil, 5, "small", 5},
		// Largest first: 1500m pods take a small node each and the 400m
		// pods go beside them (1900m), then two to a node.
		{"first fit decreasing", []Deployment{
			{Name: "a", Replicas: 2, CPU: "1500m", Memory: "100Mi"}, {Name: "b", Replicas: 4, CPU: "400m", Memory: "100Mi"}}, nil, 3, "small", 3},
		// A zonal spread puts one of 3 pods in each zone: a node each.
		{"a zonal spread takes a node per zone", []Deployment{{Name: "a", Replicas: 3, CPU: "900m", Memory: "100Mi", ZoneSpread: true}}, nil, 3, "small", 3},
		// A 200m DaemonSet leaves one 900m pod per small node.
		{"a DaemonSet's overhead", []Deployment{{Name: "a", Replicas: 3, CPU: "900m", Memory: "100Mi"}},
			[]DaemonSetOptions{{Name: "agent", CPU: "200m", Memory: "10Mi"}}, 3, "small", 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, typ, err := NodeGroupBaseline(handShape(t, tc.deployments, tc.daemonSets...))
			if err != nil {
				t.Fatal(err)
			}
			if want := tc.want + float64(tc.nodes)*rootVolume; !near(got, want) || typ != tc.wantType {
				t.Errorf("NodeGroupBaseline %v on %s, want %v and %d root volumes on %s", got, typ, tc.want, tc.nodes, tc.wantType)
			}
		})
	}
	if _, _, err := NodeGroupBaseline(handShape(t, []Deployment{{Name: "a", Replicas: 1, CPU: "9", Memory: "100Mi"}})); err == nil {
		t.Error("NodeGroupBaseline of a pod no type holds: no error")
	}
}
