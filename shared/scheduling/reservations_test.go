package scheduling_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/nodewright/nodewright/shared/apis"
	"github.com/nodewright/nodewright/shared/catalog"
	"github.com/nodewright/nodewright/shared/scheduling"
	st "github.com/nodewright/nodewright/shared/scheduling/schedtest"
)

// TestReservedOfferings: a pool whose EC2NodeClass selects capacity
// reservations fills them first (priced as already paid), one NodeClaim an
// instance, each narrowed to its reservation's type, zone and ID and
// labelled with them; claims beyond the reservations' room fall back to the
// pool's other capacity types, or stay pending when it allows reserved only;
// a pool of another class never launches into them.
func TestReservedOfferings(t *testing.T) {
	types := []*catalog.InstanceType{
		st.Type(st.TypeOptions{Name: "p5.48xlarge", VCPU: 192, Price: 98.32, GPUs: 8, GPUName: "h100"}),
		st.Type(st.TypeOptions{Name: "c5.4xlarge", VCPU: 16}),
	}
	gpuPod := func(name string) *corev1.Pod {
		return st.Pod(st.PodOptions{Name: name, CPU: "100", Limits: st.Resources{"nvidia.com/gpu": "8"}})
	}
	reservation := scheduling.Reservation{ID: "cr-h100", NodeClass: "gpu", InstanceType: "p5.48xlarge", Zone: "us-east-1b", Type: apis.CapacityReservationTypeDefault, Available: 2}
	block := scheduling.Reservation{ID: "cr-block", NodeClass: "gpu", InstanceType: "p5.48xlarge", Zone: "us-east-1a", Type: apis.CapacityReservationTypeCapacityBlock, Available: 1}
	pool := func(name, class string, cts ...string) *apis.NodePool {
		return st.NodePool(st.NodePoolOptions{Name: name, NodeClass: class,
			Requirements: []apis.NodeSelectorRequirementWithMinValues{st.PoolReq(apis.LabelCapacityType, corev1.NodeSelectorOpIn, cts...)}})
	}
	cases := []struct {
		name         string
		pools        []*apis.NodePool
		reservations []scheduling.Reservation
		unavailable  bool // EC2 refused the reserved offering lately
		pods         int
		// want is the capacity type (and reservation ID) of each claim, in
		// claim order; pending the pods left unschedulable.
		want    []string
		pending int
	}{
		{"reservations fill first, then on-demand", []*apis.NodePool{pool("h100", "gpu", "reserved", "on-demand")},
			[]scheduling.Reservation{reservation}, false, 3, []string{"reserved cr-h100", "reserved cr-h100", "on-demand"}, 0},
		{"a block and a reservation both fill", []*apis.NodePool{pool("h100", "gpu", "reserved", "on-demand")},
			[]scheduling.Reservation{reservation, block}, false, 3, []string{"reserved cr-block", "reserved cr-h100", "reserved cr-h100"}, 0},
		{"reserved only: the overflow stays pending", []*apis.NodePool{pool("h100", "gpu", "reserved")},
			[]scheduling.Reservation{reservation}, false, 3, []string{"reserved cr-h100", "reserved cr-h100"}, 1},
		{"a refused reservation is not used", []*apis.NodePool{pool("h100", "gpu", "reserved", "on-demand")},
			[]scheduling.Reservation{reservation}, true, 1, []string{"on-demand"}, 0},
		{"a pool without reserved pays on-demand", []*apis.NodePool{pool("h100", "gpu", "on-demand")},
			[]scheduling.Reservation{reservation}, false, 1, []string{"on-demand"}, 0},
		{"another class's reservation is not the pool's", []*apis.NodePool{pool("h100", "other", "reserved", "on-demand")},
			[]scheduling.Reservation{reservation}, false, 1, []string{"on-demand"}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := scheduling.Input{
				InstanceTypes: types, Zones: st.Zones(), NodePools: tc.pools,
				NodeClasses:  []*apis.EC2NodeClass{st.NodeClass("gpu"), st.NodeClass("other")},
				Reservations: tc.reservations,
			}
			for i := 0; i < tc.pods; i++ {
				in.Pods = append(in.Pods, gpuPod(string(rune('a'+i))))
			}
			if tc.unavailable {
				in.Unavailable = func(typ, zone, ct string) bool { return ct == apis.CapacityTypeReserved }
			}
			res, err := scheduling.Solve(in)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, nc := range res.NodeClaims {
				g := nc.CapacityType
				if nc.CapacityType == apis.CapacityTypeReserved {
					g += " " + nc.CapacityReservationID
					r := reservation
					if nc.CapacityReservationID == block.ID {
						r = block
					}
					if len(nc.InstanceTypes) != 1 || nc.InstanceTypes[0] != r.InstanceType || len(nc.Zones) != 1 || nc.Zones[0] != r.Zone {
						t.Errorf("reserved claim offers %v in %v, want only %s in %s", nc.InstanceTypes, nc.Zones, r.InstanceType, r.Zone)
					}
					if nc.Labels[apis.LabelCapacityReservationID] != r.ID || nc.Labels[apis.LabelCapacityReservationType] != r.Type {
						t.Errorf("reserved claim's labels %v, want reservation %s of type %s", nc.Labels, r.ID, r.Type)
					}
					if want := scheduling.ReservedPrice(98.32); nc.PricePerHour != want {
						t.Errorf("reserved claim priced %v, want %v", nc.PricePerHour, want)
					}
				} else if nc.CapacityReservationID != "" || nc.Labels[apis.LabelCapacityReservationID] != "" {
					t.Errorf("%s claim names reservation %q", nc.CapacityType, nc.CapacityReservationID)
				}
				got = append(got, g)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("claims %v, want %v", got, tc.want)
			}
			seen := map[string]int{}
			for _, g := range got {
				seen[g]++
			}
			for _, w := range tc.want {
				seen[w]--
			}
			for g, n := range seen {
				if n != 0 {
					t.Errorf("claims %v, want %v (%s off by %d)", got, tc.want, g, n)
				}
			}
			if len(res.Unschedulable) != tc.pending {
				t.Errorf("%d pods unschedulable (%v), want %d", len(res.Unschedulable), res.Unschedulable, tc.pending)
			}
		})
	}
}
